"""The examples of docs/torchrec_embcache.md run as written, in order, in one namespace (each
builds on the ones before, as a reader would run them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "torchrec_embcache.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_examples_run() -> None:
    pytest.importorskip("torchrec")
    blocks = python_blocks()
    assert len(blocks) >= 5
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    for index, code in enumerate(blocks):
        exec(compile(code, f"{DOC.name}[{index}]", "exec"), namespace)


def test_sharding_is_marked_as_not_available() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "## Sharded training (not available yet)" in text
    import torchrec_embcache

    names = [n for n in dir(torchrec_embcache) if "shard" in n.lower()]
    assert names == [], names
