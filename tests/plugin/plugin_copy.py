"""A throwaway copy of torch_plugin/ for tests that run its setup.py against a configuration
of their own, so the checkout never collects their build_config.json or generated files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[2] / "torch_plugin"


def copy_plugin(tmp_path: Path) -> Path:
    """torch_plugin/ copied to tmp_path/torch_plugin, without build products."""
    copy = tmp_path / "torch_plugin"
    shutil.copytree(PLUGIN, copy, ignore=shutil.ignore_patterns("build", "*.so", "_ops"))
    return copy


def setup_name(copy: Path) -> subprocess.CompletedProcess[str]:
    """``setup.py --name`` in the copy: runs everything setup.py checks before building."""
    return subprocess.run(
        [sys.executable, "setup.py", "--name"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
    )
