"""The examples of docs/hybrid_torchrec.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "hybrid_torchrec.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_example_runs(index: int) -> None:
    code = python_blocks()[index]
    exec(compile(code, f"{DOC.name}[{index}]", "exec"), {"__name__": "__doc_example__"})


def test_phase_two_is_marked_as_not_available() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "## Phase 2 (not available yet)" in text
    import hybrid_torchrec

    for name in ("get_default_hybrid_sharders", "HybridTrainPipeline"):
        assert not hasattr(hybrid_torchrec, name)
