"""doctor: what this host has, and which target ``auto`` would pick."""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from recsdk_build.errors import ToolMissingError
from recsdk_build.options import Target, resolve_target
from recsdk_build.proc import probe
from recsdk_build.toolchain import dist_version, find_cann, npu_soc
from recsdk_build.ui import UI


@dataclass(frozen=True)
class Check:
    name: str
    found: bool
    detail: str
    needed_by: tuple[str, ...]  # targets that cannot work without it


def _tool_version(cmd: str, args: tuple[str, ...] = ("--version",)) -> tuple[bool, str]:
    path = shutil.which(cmd)
    if path is None:
        return False, "not found on PATH"
    out = probe([path, *args])
    if out is None:
        return False, f"{path}: could not run `{path} {' '.join(args)}`"
    text = out.strip().splitlines()
    first = text[0] if text else ""
    match = re.search(r"\d+(\.\d+)+", first)
    return True, f"{match.group(0) if match else first} ({path})"


# A full `recsdk-build all`: two ~5 GB torch environments (build and verify), the downloads and
# the artifacts, measured at ~11 GB; the rest is headroom for pip's temporary unpacking.
FULL_BUILD_BYTES = 15 * 1024**3


def disk_check(build_dir: Path) -> Check:
    """Free space where the build directory lives (or would be created). Advisory: single
    stages need far less, so no target is refused for it."""
    where = build_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    gib = free / 1024**3
    enough = free >= FULL_BUILD_BYTES
    detail = f"{gib:.1f} GiB free at {where}"
    if not enough:
        detail += f"; a full `recsdk-build all` needs about {FULL_BUILD_BYTES // 1024**3} GiB"
    return Check("free disk", enough, detail, ())


_BOTH = (Target.SIM.value, Target.CANN.value)
_CANN = (Target.CANN.value,)


def run_checks(build_dir: Path | None = None) -> list[Check]:
    checks = [
        Check(
            "python",
            sys.version_info >= (3, 10),
            f"{sys.version.split()[0]} ({sys.executable})",
            _BOTH,
        ),
    ]
    for name, targets in (
        ("git", _BOTH),
        ("g++", _BOTH),
        ("cmake", _BOTH),
        ("makeself", _CANN),
    ):
        found, detail = _tool_version(name)
        checks.append(Check(name, found, detail, targets))
    for dist in ("torch", "fbgemm-gpu-cpu", "torchrec"):
        ver = dist_version(dist)
        checks.append(
            Check(
                dist,
                ver is not None,
                ver or "not installed (only the verify environment needs it)",
                (),
            )
        )
    npu_ver = dist_version("torch-npu")
    checks.append(
        Check(
            "torch_npu",
            npu_ver is not None,
            npu_ver or "not installed (needed on NPU hosts only)",
            (),
        )
    )
    cann = find_cann()
    checks.append(
        Check(
            "CANN toolkit",
            cann is not None,
            f"{cann.version} ({cann.root})"
            if cann
            else "not found ($ASCEND_TOOLKIT_HOME unset, no /usr/local/Ascend/ascend-toolkit)",
            _CANN,
        )
    )
    if cann is not None:
        checks.append(
            Check(
                "AscendC compiler",
                cann.compiler is not None,
                str(cann.compiler or "not found in the toolkit"),
                _CANN,
            )
        )
    soc = npu_soc()
    checks.append(Check("NPU (npu-smi)", soc is not None, soc or "no Ascend NPU driver", ()))
    if build_dir is not None:
        checks.append(disk_check(build_dir))
    return checks


def missing_for(checks: list[Check], target: str) -> list[Check]:
    return [c for c in checks if not c.found and target in c.needed_by]


def doctor_report(ui: UI, build_dir: Path, target: str) -> dict[str, Any]:
    """Print the host table and the target ``target`` resolves to; refuse when that target
    lacks a tool it cannot work without."""
    checks = run_checks(build_dir)
    # doctor reports a missing toolkit itself (with the full table), so the toolkit is not
    # required to resolve the target here.
    chosen = resolve_target(target, require_toolkit=False).target.value
    table = Table(title="host", title_justify="left")
    for col in ("check", "status", "detail", "needed by"):
        table.add_column(col)
    for c in checks:
        status = (
            "[green]ok[/green]"
            if c.found
            else ("[red]missing[/red]" if chosen in c.needed_by else "[dim]absent[/dim]")
        )
        table.add_row(c.name, status, c.detail, ", ".join(c.needed_by) or "-")
    ui.console.print(table)
    how = "auto picks" if target == "auto" else "requested"
    ui.info(f"target: [bold]{chosen}[/bold] ({how})")
    missing = missing_for(checks, chosen)
    if missing:
        raise ToolMissingError(
            f"target {chosen} needs: " + ", ".join(f"{m.name} ({m.detail})" for m in missing),
            hint="install the missing tools (see README.md, 'Requirements')",
        )
    return {"target": chosen, "checks": [c.__dict__ for c in checks]}
