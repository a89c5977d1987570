"""hybrid_torchrec sharded by DistributedModelParallel over two npu processes at the size users
train: 26 Hash tables of D = 64 and 128, 1024 bags a rank per feature with Zipf ids over 10^8
values, a mixed table-wise / row-wise / column-wise plan, fused Adagrad, LRU eviction active on
8 tables (hybrid_at_scale.py says what each rank compares). The step count (4) is the dimension
shrunk for the emulation's time; the toy-shape cases of every layout are test_hybrid_dmp.py's.
"""

from __future__ import annotations

import hybrid_at_scale
import npu_dist
import pytest
import torch


@pytest.mark.requires_npu
@pytest.mark.requires_npu_ops(
    "fbgemm::asynchronous_complete_cumsum",
    "fbgemm::bounds_check_indices",
    "fbgemm::split_embedding_codegen_lookup_adagrad_function",
)
def test_hybrid_dmp_at_scale_trains_like_the_unsharded_reference() -> None:
    npu_dist.spawn_ranks(hybrid_at_scale.worker, 2, "npu")


def test_the_batches_have_repeats_and_overflow_the_evicting_tables() -> None:
    """What the scale is for: repeated ids within and across ranks, and more distinct ids over
    the steps than an evicting table holds, while one step's fit."""
    specs = hybrid_at_scale.tables()
    evicting = [t for t in specs if t.evicting]
    assert {t.sharding_type for t in evicting} == {"row_wise", "column_wise"}
    seen: set[int] = set()
    t = evicting[0]
    for step in range(hybrid_at_scale.STEPS):
        ids = torch.cat([hybrid_at_scale.batch(r, step)[t.feature].values() for r in range(2)])
        distinct = torch.unique(ids)
        assert distinct.numel() < 0.9 * ids.numel()
        # One step fits even a row-wise shard: the hash splits ~1,300 ids about evenly over the
        # two shards of rows / 2 = 1,024 rows each.
        assert distinct.numel() <= 0.7 * t.rows
        seen.update(distinct.tolist())
    assert len(seen) > t.rows
