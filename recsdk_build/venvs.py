"""Virtual environments the pipeline creates: requirement layers that are reused while the
pins are unchanged, because installing the pinned torch (about 3 GB) dominates every run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from recsdk_build.errors import RecsdkError
from recsdk_build.hashing import sha256_text
from recsdk_build.interpreters import Interpreter
from recsdk_build.proc import StageLog, run_pip
from recsdk_build.ui import UI

MARKER = ".recsdk-runtime.json"


def install_report(venv: Path) -> Path:
    """pip's ``--report`` of the requirement layer's install: what it installed, from which file,
    with the file's sha256."""
    return venv / "install-report.json"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def layer_stamp(requirements: list[str], python: Interpreter) -> str:
    # sys.version, not only X.Y: a rebuilt interpreter of the same version gets a new layer.
    return sha256_text(json.dumps({"req": requirements, "python": python.sys_version}))


def ensure_venv(
    venv: Path,
    requirements: list[str],
    *,
    python: Interpreter,
    log: StageLog,
    ui: UI,
    error: type[RecsdkError],
    fresh: bool = False,
    purpose: str,
    byte_compile: bool = True,
) -> bool:
    """Create ``venv`` with ``requirements`` unless it already has exactly that layer.

    ``python`` is the interpreter it is created from. Returns True when an existing
    environment was reused. ``byte_compile=False`` skips compiling the layer's ~7000 modules
    (about 35 s of CPU): right for an environment whose processes may write bytecode, since
    Python then compiles and caches the few hundred a run imports.
    """
    stamp = layer_stamp(requirements, python)
    marker = venv / MARKER
    recorded = json.loads(marker.read_text()) if marker.is_file() else {}
    if (
        not fresh
        and venv_python(venv).exists()
        and recorded.get("stamp") == stamp
        and recorded.get("packages")
    ):
        ui.detail(f"  reusing {purpose} in {venv} (pins unchanged)")
        return True
    if venv.exists():
        shutil.rmtree(venv)
    with ui.status(f"creating {purpose} in {venv}"):
        log.run(
            [python.path, "-m", "venv", venv],
            error=error,
            what=f"creating {purpose} from {python.describe()}",
        )
    shown = ", ".join(requirements[:3])
    with ui.status(
        f"installing {shown}, … into {purpose}: about 3 GB the first time, then from the pip cache"
    ):
        run_pip(
            log,
            venv_python(venv),
            "install",
            "--progress-bar",
            "off",
            *([] if byte_compile else ["--no-compile"]),
            "--report",
            install_report(venv),
            *requirements,
            error=error,
            what=f"installing the pinned requirements into {purpose}",
        )
    marker.write_text(
        json.dumps(
            {
                "stamp": stamp,
                "requirements": requirements,
                "packages": sorted(installed(venv, log, error)),
            }
        )
    )
    return False


def installed(venv: Path, log: StageLog, error: type[RecsdkError]) -> set[str]:
    out = run_pip(
        log, venv_python(venv), "list", "--format=json", error=error, what="listing an environment"
    ).stdout
    return {item["name"].lower() for item in json.loads(out[out.index("[") :])}


def restore_layer(venv: Path, log: StageLog, error: type[RecsdkError]) -> list[str]:
    """Uninstall what was added on top of the recorded requirement layer; return the names."""
    base = set(json.loads((venv / MARKER).read_text()).get("packages", []))
    extra = sorted(installed(venv, log, error) - base)
    if extra:
        run_pip(
            log,
            venv_python(venv),
            "uninstall",
            "-y",
            *extra,
            error=error,
            what="removing packages of an earlier run",
        )
    return extra
