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

import contextlib
import json
import os
import shlex
import stat
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recsdk_build import bundle, trust
from recsdk_build.bundle import NPU_LOCK
from recsdk_build.errors import InstallError
from recsdk_build.interpreters import Interpreter
from recsdk_build.lock import LOCK
from recsdk_build.options import Target
from recsdk_build.proc import StageLog, probe
from recsdk_build.toolchain import find_cann
from recsdk_build.trust import Contents, check_environment
from recsdk_build.ui import UI

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
    """The install record of ``python``'s environment; None when recsdk-build never installed
    into it, an InstallError when there is one that cannot be read."""
    path = record_path(python)
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InstallError(
            f"the install record {path} cannot be read: {exc}",
            hint="make it readable, or install the bundle again with `recsdk-build install`",
        ) from None
    if not (
        isinstance(record, dict)
        and isinstance(record.get("bundle"), str)
        and isinstance(record.get("manifest"), dict)
    ):
        raise InstallError(f"the install record {path} is malformed")
    return record


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


def check_fits(contents: Contents, python: Interpreter, has: dict[str, bool]) -> None:
    """Refuse a bundle that cannot work in this environment, before touching it."""
    check_environment(contents, python)
    name, target = contents.bundle, contents.target
    where = f"the environment of {python.path}"
    if target is Target.SIM and has.get(target.other_device_module):
        raise InstallError(
            f"refusing to install the sim bundle {name} into {where}: it has the real "
            "torch_npu (the simulated npu device refuses to load next to it)",
            hint="install the cann bundle there, or the sim bundle into an environment "
            "without torch_npu",
        )
    if target is Target.CANN and has.get(target.other_device_module):
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


def _vendors_of(line: str) -> list[str]:
    return [v.strip() for v in line.split("=", 1)[1].split(",") if v.strip()]


def merged_config(text: str, ours: Sequence[str]) -> str:
    """``config.ini`` with our vendors first in ``load_priority=`` (every vendor already
    listed kept) and every other line as it was."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip().startswith("load_priority="):
            existing = _vendors_of(line)
            order = [*ours, *(v for v in existing if v not in ours)]
            ending = "\n" if line.endswith("\n") else ""
            lines[i] = "load_priority=" + ",".join(order) + ending
            return "".join(lines)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines) + "load_priority=" + ",".join(ours) + "\n"


def merged_priority(config: Path, ours: Sequence[str]) -> str:
    """``config.ini``'s new text (see merged_config)."""
    text = config.read_text(encoding="utf-8") if config.is_file() else ""
    return merged_config(text, ours)


def write_keeping_mode(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Replace ``path`` atomically; the new file keeps the old one's permission bits (an OPP
    tree's config.ini is read by every training user), else gets ``mode``."""
    owner: tuple[int, int] | None = None
    with contextlib.suppress(FileNotFoundError):
        old = path.stat()
        mode, owner = stat.S_IMODE(old.st_mode), (old.st_uid, old.st_gid)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            if owner is not None and (os.geteuid() == 0 or owner[0] == os.geteuid()):
                with contextlib.suppress(OSError):  # a group we are not in: keep ours
                    os.fchown(fh.fileno(), *owner)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pip(python: Interpreter, *args: str) -> tuple[str, ...]:
    # The option before the command: after "--" everything is a requirement or a file.
    return (python.path, "-m", "pip", "--disable-pip-version-check", *args)


def make_plan(
    top: Path, contents: Contents, python: Interpreter, *, opp: Path | None, manifest: dict
) -> Plan:
    """Every step, in order, from the derived ``contents``; ``opp`` is required for a cann
    bundle (its runtime has torch-npu, which needs the toolkit, and its operator packages
    go into the OPP tree). ``manifest`` only goes into the install record."""
    packages = contents.operator_packages
    if contents.target is not None and contents.target.ships_operator_packages and opp is None:
        raise InstallError(
            f"{contents.bundle} is a cann bundle (torch-npu, operator packages) but no OPP "
            "directory was found ($ASCEND_OPP_PATH is not set and no CANN toolkit was found)",
            hint="install on a host with the CANN toolkit: source <cann>/set_env.sh first, or "
            "pass --opp-path DIR",
        )
    # "--" ends pip's options: whatever follows is a requirement or a file, never an option.
    steps: list[Step] = []
    if contents.locked:
        steps.append(
            Step(
                "the verified runtime (hash-locked)",
                pip(python, "install", "--require-hashes", "--no-deps", "-r", f"./{LOCK}"),
                PIP_ENV,
            )
        )
    if contents.npu_locked:
        # --no-deps: its one requirement, torch, is the locked one installed just before.
        steps.append(
            Step(
                "torch-npu (hash-locked)",
                pip(python, "install", "--require-hashes", "--no-deps", "-r", f"./{NPU_LOCK}"),
                PIP_ENV,
            )
        )
    steps += [
        Step(
            "torchrec (--no-deps) and the extension wheels",
            pip(
                python,
                "install",
                "--no-deps",
                "--force-reinstall",
                "--",
                *(f"./{w}" for w in [*contents.torchrec, *contents.wheels]),
            ),
            PIP_ENV,
        ),
    ]
    if packages:
        assert opp is not None
        for path, _ in packages:
            steps.append(
                Step(
                    f"operator package {Path(path).name}",
                    ("bash", f"./{path}", "--quiet", f"--install-path={opp}"),
                )
            )
        config = opp / "vendors" / "config.ini"
        vendors = tuple(v for _, v in packages)
        steps.append(
            Step(
                "the operators' load priority",
                write=config,
                text=merged_priority(config, vendors),
                vendors=vendors,
                shown="load_priority=" + ",".join(vendors) + ",<the vendors already listed>",
            )
        )
    record = {"bundle": contents.bundle, "opp": str(opp) if opp else None, "manifest": manifest}
    steps.append(
        Step(
            "the install record",
            write=record_path(python),
            text=json.dumps(record, indent=2, sort_keys=True) + "\n",
            shown=f"the install record of {contents.bundle} (its manifest.json and the OPP path)",
        )
    )
    return Plan(contents.bundle, top, python, opp, tuple(steps))


def execute(plan: Plan, log: StageLog) -> None:
    for step in plan.steps:
        with log.ui.status(f"installing {step.what}"):
            if step.write is not None:
                text = merged_priority(step.write, step.vendors) if step.vendors else step.text
                write_keeping_mode(step.write, text)
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


# --- the command ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What `recsdk-build install` was asked: the archive, how it is trusted, where to."""

    archive: Path
    python: Interpreter
    digest: str | None  # the bundle's sha256 from outside it; None: made here, or insecure
    opp: Path | None
    dry_run: bool


def install_bundle(request: Request, ui: UI, scratch: Path) -> dict[str, Any]:
    """Check ``request.archive`` (outer digest, then every file, then every manifest field
    against the file list and the environment), then install it or print the plan."""
    target = request.python
    if request.digest is not None:
        trust.check_digest(request.archive, request.digest)
        ui.info(f"{request.archive.name}: sha256 matches the one given")
    top, data = bundle.open_bundle(request.archive, scratch / "unpacked")
    contents = trust.derive(top, data, sorted(bundle.listed(top)))
    ui.info(f"{contents.bundle}: every file matches {bundle.SUMS}")
    check_fits(contents, target, environment_has(target))
    opp = request.opp
    if opp is None and contents.target is not None and contents.target.ships_operator_packages:
        opp = default_opp()
    plan = make_plan(top, contents, target, opp=opp, manifest=data)
    if request.dry_run:
        say = ui.console.print
        say(f"# would install {plan.bundle} into the environment of {target.path}")
        say(f"# commands run in the unpacked bundle ({len(plan.steps)} steps)")
        for step in plan.steps:
            say(step.shell(), markup=False, highlight=False, soft_wrap=True)
    else:
        log = StageLog(log_path(target), ui)
        try:
            execute(plan, log)
        finally:
            log.close()
        ui.info(
            f"installed {plan.bundle} (log: {log.path}); check it with "
            f"`recsdk-build verify --python {target.path}`"
        )
    return {
        "bundle": plan.bundle,
        "python": target.path,
        "dry_run": request.dry_run,
        "digest_checked": request.digest is not None,
        "steps": [step.shell() for step in plan.steps],
    }


def log_path(python: Interpreter) -> Path:
    """One log per install, beside the record in the environment it changed (a node that
    installs has no build directory, and an earlier install's log is kept)."""
    now = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9)) + f".{now % 10**9:09d}Z"
    return Path(python.prefix) / "share" / "recsdk" / "logs" / f"install-{stamp}.log"
