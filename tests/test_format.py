"""One formatting for the whole tree, enforced: `ruff format` for Python. Fix a failure with
`ruff format .`. (`.clang-format` is the C++ style; it is not enforced yet: see issue 10.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_python_is_ruff_formatted() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
