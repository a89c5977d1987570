"""What the host has for a build target: the CANN toolkit, its compiler, an NPU (options.py
decides the target from it)."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from recsdk_build.proc import probe

DEFAULT_CANN_ROOTS = (
    "/usr/local/Ascend/ascend-toolkit/latest",
    "/usr/local/Ascend/cann/latest",
    "~/Ascend/ascend-toolkit/latest",
)


@dataclass(frozen=True)
class CannToolkit:
    root: Path
    version: str
    compiler: Path | None


def find_cann() -> CannToolkit | None:
    """The CANN toolkit named by the usual environment variables or default paths."""
    candidates = [
        os.environ.get(var)
        for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_CANN_PACKAGE_PATH")
    ] + list(DEFAULT_CANN_ROOTS)
    for candidate in candidates:
        if not candidate:
            continue
        root = Path(candidate).expanduser()
        if (root / "include" / "acl" / "acl.h").is_file() or (root / "compiler").is_dir():
            return CannToolkit(root.resolve(), _cann_version(root), _cann_compiler(root))
    return None


def _cann_version(root: Path) -> str:
    for info in [root / "version.cfg", *root.glob("*-linux/ascend_toolkit_install.info")]:
        if info.is_file():
            text = info.read_text(errors="replace")
            match = re.search(r"(?:^|\n)\s*(?:version|toolkit_version)\s*=\s*\[?([^\]\s]+)", text)
            if match:
                return match.group(1)
    return "unknown"


def _cann_compiler(root: Path) -> Path | None:
    for rel in (
        "compiler/ccec_compiler/bin/ccec",
        "compiler/ccec_compiler/bin/bisheng",
        "tools/ccec_compiler/bin/ccec",
    ):
        if (root / rel).is_file():
            return root / rel
    return None


def npu_soc() -> str | None:
    """The Ascend chip name reported by npu-smi, or None without an NPU driver."""
    smi = shutil.which("npu-smi")
    if smi is None:
        return None
    out = probe([smi, "info"])
    if out is None:
        return None
    match = re.search(r"\b(910[A-Z0-9_]*|310[A-Z0-9]*|950[A-Z0-9]*)\b", out)
    return f"Ascend{match.group(1)}" if match else None


def dist_version(name: str) -> str | None:
    """An installed distribution's version, without importing it (torch_npu needs CANN)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return None
