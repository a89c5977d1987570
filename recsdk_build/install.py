"""Installing a bundle into an existing environment (``recsdk-build install``).

The way README tells users to do it by hand, as one checked plan: the runtime pins, torchrec
``--no-deps`` (every torchrec release requires the CUDA fbgemm-gpu), the extension wheels;
on cann each operator package into the OPP tree and its vendor first in ``config.ini``'s
``load_priority``. Everything that can be refused is refused before anything is installed:
a file that does not match SHA256SUMS, a bundle for another Python or architecture, sim
artifacts where the real torch_npu is installed and cann artifacts where the simulated device
is. The last step writes an install record into the environment, which ``recsdk-build verify
--python`` finds to verify that environment as it is.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recsdk_build.errors import InstallError
from recsdk_build.interpreters import Interpreter, wheel_misfits
from recsdk_build.pipeline.atomic import write_text_atomic
from recsdk_build.proc import StageLog, probe
from recsdk_build.toolchain import find_cann

RECORD = Path("share") / "recsdk" / "install.json"
PIP_ENV = {"PIP_NO_INPUT": "1"}

_PROBE_ENV = (
    "import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) is not None "
    "for m in ('torch_npu', 'npu_sim')}))"
)


@dataclass(frozen=True)
class Step:
    """One thing install does: a command (run in the bundle's directory) or a file write."""

    what: str
    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    write: Path | None = None
    text: str = ""
    # load_priority: recomputed when written, in case an operator installer changed it.
    vendors: tuple[str, ...] = ()
    shown: str = ""  # what a dry run prints for a long write

    def shell(self) -> str:
        if self.write is not None:
            return f"write {self.write}: {self.shown or self.text.strip()}"
        prefix = " ".join(f"{k}={v}" for k, v in sorted(self.env.items()))
        return (prefix + " " if prefix else "") + shlex.join(self.argv)


@dataclass(frozen=True)
class Plan:
    bundle: str
    top: Path  # the unpacked bundle: commands run there, paths are relative to it
    python: Interpreter
    opp: Path | None
    steps: tuple[Step, ...]


def record_path(python: Interpreter) -> Path:
    return Path(python.prefix) / RECORD


def read_record(python: Interpreter) -> dict[str, Any] | None:
    """The install record of ``python``'s environment, if recsdk-build installed into it."""
    path = record_path(python)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def environment_has(python: Interpreter) -> dict[str, bool]:
    """Which npu providers the environment has installed (found, not imported)."""
    out = probe([python.path, "-c", _PROBE_ENV])
    try:
        found = json.loads((out or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise InstallError(
            f"cannot inspect the environment of {python.describe()}: {(out or '').strip()}"
        ) from None
    return {k: bool(v) for k, v in found.items()}


def check_fits(data: dict[str, Any], python: Interpreter, has: dict[str, bool]) -> None:
    """Refuse a bundle that cannot work in this environment, before touching it."""
    name, target = data["bundle"], data["target"]
    inst = data["install"]
    misfits = wheel_misfits([*inst["torchrec"], *inst["wheels"]], python)
    if misfits:
        raise InstallError(
            f"{name} is for {data['python']['tag']} on {data['python']['machine']}; "
            f"{python.describe()} is {python.tag} on {python.machine}",
            hint=f"use a bundle made with `recsdk-build all --python {python.short}`",
        )
    where = f"the environment of {python.path}"
    if target == "sim" and has.get("torch_npu"):
        raise InstallError(
            f"refusing to install the sim bundle {name} into {where}: it has the real "
            "torch_npu (the simulated npu device refuses to load next to it)",
            hint="install the cann bundle there, or the sim bundle into an environment "
            "without torch_npu",
        )
    if target == "cann" and has.get("npu_sim"):
        raise InstallError(
            f"refusing to install the cann bundle {name} into {where}: it has npu_sim, the "
            "simulated npu device of a sim build",
            hint="install into a fresh environment, or `pip uninstall npu_sim fbgemm_npu_api`",
        )


def default_opp() -> Path | None:
    """The toolkit's OPP tree: $ASCEND_OPP_PATH (set by CANN's set_env.sh), else <toolkit>/opp."""
    if env := os.environ.get("ASCEND_OPP_PATH"):
        return Path(env)
    toolkit = find_cann()
    return toolkit.root / "opp" if toolkit is not None else None


def merged_priority(config: Path, ours: Sequence[str]) -> str:
    """``load_priority=`` with our vendors first and every vendor already listed kept."""
    existing: list[str] = []
    if config.is_file():
        for line in config.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("load_priority="):
                existing = [v.strip() for v in line.split("=", 1)[1].split(",") if v.strip()]
    order = [*ours, *(v for v in existing if v not in ours)]
    return "load_priority=" + ",".join(order) + "\n"


def pip(python: Interpreter, *args: str) -> tuple[str, ...]:
    return (python.path, "-m", "pip", *args, "--disable-pip-version-check")


def make_plan(top: Path, data: dict[str, Any], python: Interpreter, *, opp: Path | None) -> Plan:
    """Every step, in order; ``opp`` is required when the bundle has operator packages."""
    inst = data["install"]
    packages = inst["operator_packages"]
    if packages and opp is None:
        raise InstallError(
            f"{data['bundle']} has operator packages but no OPP directory was found "
            "($ASCEND_OPP_PATH is not set and no CANN toolkit was found)",
            hint="source <cann>/set_env.sh first, or pass --opp-path DIR",
        )
    steps = [
        Step("the pinned runtime", pip(python, "install", *inst["runtime"]), PIP_ENV),
        Step(
            "torchrec (--no-deps) and the extension wheels",
            pip(
                python,
                "install",
                "--no-deps",
                "--force-reinstall",
                *inst["torchrec"],
                *inst["wheels"],
            ),
            PIP_ENV,
        ),
    ]
    if packages:
        assert opp is not None
        for package in packages:
            steps.append(
                Step(
                    f"operator package {Path(package['path']).name}",
                    ("bash", package["path"], "--quiet", f"--install-path={opp}"),
                )
            )
        config = opp / "vendors" / "config.ini"
        vendors = tuple(p["vendor"] for p in packages)
        steps.append(
            Step(
                "the operators' load priority",
                write=config,
                text=merged_priority(config, vendors),
                vendors=vendors,
            )
        )
    record = {"bundle": data["bundle"], "opp": str(opp) if opp else None, "manifest": data}
    steps.append(
        Step(
            "the install record",
            write=record_path(python),
            text=json.dumps(record, indent=2, sort_keys=True) + "\n",
            shown=f"the install record of {data['bundle']} (its manifest.json and the OPP path)",
        )
    )
    return Plan(data["bundle"], top, python, opp, tuple(steps))


def execute(plan: Plan, log: StageLog) -> None:
    for step in plan.steps:
        with log.ui.status(f"installing {step.what}"):
            if step.write is not None:
                text = merged_priority(step.write, step.vendors) if step.vendors else step.text
                write_text_atomic(step.write, text)
                log.write(f"wrote {step.write}")
            else:
                log.run(
                    step.argv,
                    cwd=plan.top,
                    env=step.env,
                    error=InstallError,
                    what=f"installing {step.what}",
                )
        log.ui.info(f"  installed {step.what}")
