"""CI runs exactly what README's quick start tells a newcomer to run."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _quick_start() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, "README's quick start has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _ci_commands() -> list[str]:
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    skip = ("#", "set -", 'cd "$(dirname "$0")/.."')
    return [line for line in lines if line.strip() and not line.startswith(skip)]


def test_ci_runs_exactly_the_readme_quick_start() -> None:
    quick = _quick_start()
    assert len(quick) == 2, quick
    assert _ci_commands() == quick
