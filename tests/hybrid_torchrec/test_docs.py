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


def test_what_the_docs_call_unavailable_does_not_exist_and_the_rest_does() -> None:
    text = DOC.read_text(encoding="utf-8")
    head, sep, unavailable = text.partition("## Not available yet")
    assert sep, "the docs must say what is not available yet"
    import hybrid_torchrec

    for name in ("get_default_hybrid_sharders", "HybridTrainPipeline"):
        exists = hasattr(hybrid_torchrec, name)
        assert (f"`{name}" in unavailable) != exists, name
        assert (f"`{name}" in head) == exists, name
