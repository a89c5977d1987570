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


def test_sharding_says_what_exists_and_what_does_not() -> None:
    text = DOC.read_text(encoding="utf-8")
    shard = text[text.index("## Sharded training: by bucket") :]
    for offered in ("ShardedEmbCacheEmbeddingBagCollection", "ShardedEmbCacheEmbeddingCollection"):
        assert offered in shard
    for layout in ("row-wise", "table-wise", "table-row-wise"):
        assert f"**{layout}**" in shard
    missing = shard[shard.index("### Not available yet") :]
    for pending in ("variable batch sizes per feature", "one host's"):
        assert pending in missing
    import torchrec_embcache

    # Sharding lives in its modules (placement, sharded, sharded_sequence, sharded_checkpoint,
    # sharded_metrics), not at the top level.
    names = {n for n in dir(torchrec_embcache) if "shard" in n.lower()}
    allowed = {"sharded", "sharded_sequence", "sharded_checkpoint", "sharded_metrics"}
    assert names <= allowed, names
