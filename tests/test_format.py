"""One formatting for the whole tree, enforced: `ruff format` for Python and `.clang-format` for
C++. Fix a failure with `ruff format .` and `git ls-files '*.cpp' '*.h' | xargs clang-format -i`
(clang-format 18.1.8 comes with the test extras, so the style does not drift between versions)."""

from __future__ import annotations

import shutil
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


CXX_SUFFIXES = (".cpp", ".cc", ".h", ".hpp")


def _cxx_files() -> list[str]:
    # Tracked and new (not ignored) files: a fresh file is held to the style before its first
    # commit, and build output under ignored directories is never checked.
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return sorted(f for f in listed if f.endswith(CXX_SUFFIXES) and (REPO / f).is_file())


def _clang_format() -> str:
    beside = Path(sys.executable).with_name("clang-format")
    found = str(beside) if beside.exists() else shutil.which("clang-format")
    assert found, (
        "clang-format is not installed: pip install -e '.[test]' brings clang-format 18.1.8"
    )
    return found


def test_cxx_is_clang_formatted() -> None:
    files = _cxx_files()
    assert len(files) > 100, f"expected the kernels, adapter and packages' C++, found {len(files)}"
    result = subprocess.run(
        [_clang_format(), "--dry-run", "--Werror", *files],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    offenders = sorted(
        {line.split(":", 1)[0] for line in result.stderr.splitlines() if ": error:" in line}
    )
    assert result.returncode == 0, (
        "not clang-formatted: " + ", ".join(offenders) + "\n" + result.stderr[:2000]
    )
