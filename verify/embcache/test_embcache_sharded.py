"""torchrec_embcache sharded by stable hash buckets on npu ranks (hccl for the pooled partial
sums or looked-up rows and their gradients, gloo for the ids), row-wise, table-wise and
table-row-wise, bag and sequence collections: every step's outputs, then every row and its
optimiser state, equal one unsharded collection fed every rank's batch (embcache_sharded.py
says what each rank checks).

Batches of 512 bags a rank (unequal sizes across ranks), Zipf-like ids with repeats within
and across ranks, three tables' worth of features with D = 16 and 8: the dims are small so that
four simulated ranks stay within a minute; the bag count is what users run. The device caches
hold more than one step's distinct ids of a rank's shard (at most 661 with 2 ranks, 417 with
4) and fewer than the first four steps bring (at least 798 and 429): rows swap in and out.
"""

from __future__ import annotations

import embcache_sharded
import npu_dist
import pytest

STEPS = 5
BAGS = 512


@pytest.mark.requires_npu
@pytest.mark.parametrize(
    ("world", "optimizer", "weighted", "cache_slots", "dmp", "policies"),
    [
        (2, "sgd", False, None, True, True),
        (2, "adagrad", True, 700, False, False),
        (4, "adam", False, 420, True, True),
    ],
    ids=["2-sgd-host-dmp-policies", "2-adagrad-weighted-cache", "4-adam-cache-dmp-policies"],
)
def test_row_wise_buckets_train_like_one_table(
    world: int, optimizer: str, weighted: bool, cache_slots: int | None, dmp: bool, policies: bool
) -> None:
    # dmp: DistributedModelParallel shards a model built on meta, with torchrec's planner's
    # plan (topology "npu") and the EmbCache sharder; otherwise the module is built by hand.
    # policies: admission at the second sighting and eviction after 2 unseen steps, as the
    # tables grow over the 5 steps.
    args = (optimizer, STEPS, BAGS, weighted, "npu", cache_slots, dmp, policies)
    npu_dist.spawn_ranks(embcache_sharded.run, world, "npu", *args)


@pytest.mark.requires_npu
@pytest.mark.parametrize(("saved", "loaded"), [(4, 2), (2, 4)], ids=["4-to-2", "2-to-4"])
def test_checkpoint_moves_buckets_between_world_sizes(tmp_path, saved: int, loaded: int) -> None:
    # A full and an incremental save on `saved` npu ranks, loaded on `loaded` ranks, which train
    # on: outputs and rows equal one collection trained on every step (run_reshard).
    npu_dist.spawn_ranks(
        embcache_sharded.run_reshard, saved, "npu", str(tmp_path), "save", "npu", saved
    )
    npu_dist.spawn_ranks(
        embcache_sharded.run_reshard, loaded, "npu", str(tmp_path), "load", "npu", saved
    )
    victim = sorted(tmp_path.glob("chain-*/rank-00001/*.emb"))[-1]
    victim.write_bytes(victim.read_bytes()[:-3])  # torn: refused on every rank, nothing loaded
    npu_dist.spawn_ranks(
        embcache_sharded.run_reshard, loaded, "npu", str(tmp_path), "refuse", "npu", loaded,
        f"{victim} (table",
    )  # fmt: skip


@pytest.mark.requires_npu
def test_dlrm_shape_with_device_caches_through_dmp() -> None:
    # DLRM's 26 sparse features, a D = 64 table each, 1024 bags a rank, 2 npu ranks built by
    # DistributedModelParallel, device caches of 2048 slots a table, Adagrad with admission and
    # eviction; 4 steps (the dimension shrunk for the simulated device).
    args = ("adagrad", 4, 1024, False, "npu", 2048, True, True, "dlrm")
    npu_dist.spawn_ranks(embcache_sharded.run, 2, "npu", *args)


# Mixed plans: torchrec's planner, with constraints making the three tables of the "trio"
# layout table-wise, row-wise and table-row-wise, shards them through DMP (topology "npu").
# 2 ranks: Adam, device caches per table sized between one step's and five steps' distinct ids
# of the rank's share (table-wise: the whole table's, up to 1329 and 1782), admission and
# eviction. 4 ranks in 2 hosts of 2: the table-row-wise table on one host's ranks, SGD on host
# tables, admission and eviction. "seq": the sequence collection (EmbCacheEmbeddingCollection,
# tables of D = 8, a row per id), the same plan, Adagrad with device caches.
MIXED_SLOTS = {"t0": 1400, "t1": 700, "t2": 700}


@pytest.mark.requires_npu
@pytest.mark.parametrize(
    ("world", "optimizer", "cache_slots", "local_world_size", "layout"),
    [
        (2, "adam", MIXED_SLOTS, None, "trio"),
        (4, "sgd", None, 2, "trio"),
        (2, "adagrad", MIXED_SLOTS, None, "seq"),
    ],
    ids=["2-adam-cache", "4-sgd-2-hosts", "2-seq-adagrad-cache"],
)
def test_mixed_plans_through_dmp_train_like_one_table(
    world: int,
    optimizer: str,
    cache_slots: dict | None,
    local_world_size: int | None,
    layout: str,
) -> None:
    case = embcache_sharded.Case(
        optimizer,
        STEPS,
        BAGS,
        False,
        "npu",
        cache_slots,
        dmp=True,
        policies=True,
        layout=layout,
        spec="mixed",
        local_world_size=local_world_size,
        sequence=layout == "seq",
    )
    npu_dist.spawn_ranks(embcache_sharded.run_case, world, "npu", case)


@pytest.mark.requires_npu
def test_checkpoint_moves_buckets_between_layouts(tmp_path) -> None:
    # Saved table-wise on 2 npu ranks (t0 on rank 1, t1 on rank 0), loaded into t0 table-wise
    # on rank 1 (its files load as they are) and t1 row-wise (its buckets move to both ranks);
    # training goes on like one collection trained on every step (run_reshard).
    run = embcache_sharded.run_reshard
    npu_dist.spawn_ranks(run, 2, "npu", str(tmp_path), "save", "npu", 2, None, "tw")
    npu_dist.spawn_ranks(run, 2, "npu", str(tmp_path), "load", "npu", 2, None, "mixed")
