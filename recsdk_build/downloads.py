"""Fetching one wheel from the package registry (through pip, so its cache and config apply)."""

from __future__ import annotations

import sys
from pathlib import Path

from packaging.requirements import Requirement

from recsdk_build.errors import RecsdkError
from recsdk_build.proc import StageLog, run_pip


def download_wheel(
    log: StageLog,
    spec: str,
    dest: Path,
    *,
    error: type[RecsdkError],
    why: str,
    python: str | Path | None = None,
) -> Path:
    """Download the wheel ``spec`` names (no dependencies) into ``dest`` and return it; the
    command goes to ``log``, progress to its UI. ``python`` (default: this one) is the
    interpreter whose pip chooses among compiled wheels, so they fit it."""
    dest.mkdir(parents=True, exist_ok=True)
    with log.ui.status(f"downloading {spec} from the package registry ({why})"):
        run_pip(
            log,
            python or sys.executable,
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            dest,
            spec,
            error=error,
            what=f"downloading {spec}",
        )
    name = Requirement(spec).name
    wheels = sorted(dest.glob(f"{name}-*.whl")) or sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise error(f"pip download of {spec} left {len(wheels)} wheels in {dest}, expected one")
    return wheels[0]
