"""Row-wise sharding of the EmbCache bag collection by stable hash buckets: the bucket hash
against splitmix64 written with Python integers, the bucket map, the refusals, and 2 and 3
CPU processes (gloo) training like the unsharded collection fed every rank's batch."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import torch

pytest.importorskip("torchrec")

import torch.distributed as dist
from torchrec.modules.embedding_configs import PoolingType
from torchrec_embcache.sharded import (
    BucketMap,
    EmbCacheEmbeddingBagCollectionSharder,
    RowWiseEmbCacheEmbeddingBagCollection,
    ShardingError,
    bucket_of,
)

# The worker is the verify suite's (verify/embcache_sharded.py), run here on CPU ranks.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify"))
import embcache_sharded as sharded_worker
import npu_dist

M64 = (1 << 64) - 1


def splitmix64_bucket(x: int, buckets: int) -> int:
    """The reference: splitmix64's finaliser on the id's uint64 bit pattern."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z = z ^ (z >> 31)
    return (z >> 1) % buckets


def test_bucket_of_is_splitmix64() -> None:
    g = torch.Generator().manual_seed(3)
    ids = torch.cat(
        [
            torch.randint(-(2**63), 2**63 - 1, (500,), generator=g),
            torch.tensor([0, 1, -1, 2**63 - 1, -(2**63), 4096, -4096]),
        ]
    )
    for buckets in (1, 7, 4096, 2**31 - 1):
        want = [splitmix64_bucket(x & M64, buckets) for x in ids.tolist()]
        assert bucket_of(ids, buckets).tolist() == want


def test_even_map_spreads_buckets_in_runs() -> None:
    m = BucketMap.even(3, 10)
    assert m.owners == (0, 0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert m.num_buckets == 10
    ids = torch.arange(-50, 50)
    assert m.rank_of(ids).tolist() == [m.owners[b] for b in bucket_of(ids, 10).tolist()]
    with pytest.raises(ShardingError, match="every rank needs at least one"):
        BucketMap.even(4, 3)
    with pytest.raises(ShardingError, match=r"rank\(s\) \[5\] outside a world of 2"):
        BucketMap((0, 5, 1), 2)


@pytest.fixture(scope="module")
def gloo_world():
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(str(Path(tmp) / "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            yield dist.group.WORLD
        finally:
            dist.destroy_process_group()


def test_mean_pooling_and_mismatched_maps_are_refused(gloo_world) -> None:
    tables = sharded_worker.tables()
    tables[1].pooling = PoolingType.MEAN
    with pytest.raises(ShardingError, match="'t1': row-wise sharding needs SUM pooling"):
        RowWiseEmbCacheEmbeddingBagCollection(tables, gloo_world)
    with pytest.raises(ShardingError, match="bucket_map is for 2 ranks, the groups have 1"):
        RowWiseEmbCacheEmbeddingBagCollection(
            sharded_worker.tables(), gloo_world, bucket_map=BucketMap.even(2, 8)
        )


def test_one_rank_is_the_unsharded_collection(gloo_world) -> None:
    import torchrec_embcache as ec

    sharded = RowWiseEmbCacheEmbeddingBagCollection(sharded_worker.tables(), gloo_world, seed=5)
    plain = ec.EmbCacheEmbeddingBagCollection(sharded_worker.tables(), seed=5)
    kjt = sharded_worker.batch(0, 0, 64, False)
    assert torch.equal(sharded(kjt).values(), plain(kjt).values())


@pytest.mark.parametrize(
    ("world", "optimizer", "weighted", "dmp", "policies"),
    [
        (2, "sgd", False, False, True),
        (2, "adagrad", True, True, False),
        (3, "adam", False, False, True),
    ],
    ids=["2-sgd-policies", "2-adagrad-weighted-dmp", "3-adam-policies"],
)
def test_ranks_train_like_the_unsharded_collection(
    world: int, optimizer: str, weighted: bool, dmp: bool, policies: bool
) -> None:
    # 5 steps of batches of 256 bags a rank (Zipf-like ids, repeats across ranks): outputs per
    # step, then every row and its optimiser state, against one unsharded collection.
    # dmp: built by DistributedModelParallel from torchrec's planner's plan; policies:
    # admission at the second sighting, eviction after 2 unseen steps (5 steps).
    args = (optimizer, 5, 256, weighted, "cpu", None, dmp, policies)
    npu_dist.spawn_ranks(sharded_worker.run, world, "cpu", *args)


def test_sharder_offers_row_wise_with_stand_in_parameters(gloo_world) -> None:
    import torchrec_embcache as ec
    from torchrec.distributed.types import ParameterSharding, ShardingEnv

    env = ShardingEnv.from_process_group(gloo_world)
    sharder = EmbCacheEmbeddingBagCollectionSharder(env)
    module = ec.EmbCacheEmbeddingBagCollection(sharded_worker.tables(), device="meta")
    assert sharder.module_type is ec.EmbCacheEmbeddingBagCollection
    assert sharder.sharding_types("npu") == ["row_wise"]
    stand_ins = sharder.shardable_parameters(module)
    assert {k: tuple(v.shape) for k, v in stand_ins.items()} == {"t0": (1, 16), "t1": (1, 8)}
    assert all(v.device.type == "meta" for v in stand_ins.values())
    assert sharder.storage_usage(torch.empty(10, 16), "npu", "fused") == {"ddr": 640}
    plan = {
        "t0": ParameterSharding(sharding_type="row_wise", compute_kernel="fused", ranks=[0]),
        "t1": ParameterSharding(sharding_type="table_wise", compute_kernel="fused", ranks=[0]),
    }
    with pytest.raises(ShardingError, match="'t1': the plan asks for 'table_wise'"):
        sharder.shard(module, plan, env, torch.device("cpu"))
    plan["t1"] = plan["t0"]
    sharded = sharder.shard(module, plan, env, torch.device("cpu"))
    assert sorted(sharded.state_dict()) == sorted(
        ec.EmbCacheEmbeddingBagCollection(sharded_worker.tables()).state_dict()
    )


def test_sharder_needs_a_gloo_host_group() -> None:
    from torchrec.distributed.types import ShardingEnv

    with pytest.raises(ShardingError, match="gloo process group"):
        EmbCacheEmbeddingBagCollectionSharder(ShardingEnv(1, 0, None))


def _spawn_reshard(world: int, directory: Path, phase: str, save_world: int, refusal=None):
    args = (str(directory), phase, "cpu", save_world, refusal)
    npu_dist.spawn_ranks(sharded_worker.run_reshard, world, "cpu", *args)


@pytest.mark.parametrize(("saved", "loaded"), [(3, 2), (2, 3), (2, 2)])
def test_checkpoint_of_w_ranks_loads_into_w_prime(tmp_path: Path, saved: int, loaded: int):
    # Full + incremental save on `saved` ranks; load on `loaded` ranks and train on: outputs
    # and rows equal one collection trained on every step (run_reshard).
    _spawn_reshard(saved, tmp_path, "save", saved)
    _spawn_reshard(loaded, tmp_path, "load", saved)


def test_damaged_checkpoints_are_refused_on_every_rank(tmp_path: Path) -> None:
    _spawn_reshard(2, tmp_path, "save", 2)
    files = sorted(tmp_path.glob("chain-*/rank-00001/*.emb"))
    assert len(files) == 4  # 2 tables: a full and an incremental file each
    victim = files[-1]
    good = victim.read_bytes()
    victim.write_bytes(good[:-7])  # truncated
    _spawn_reshard(2, tmp_path, "refuse", 2, f"{victim} (table")
    victim.write_bytes(good[:100] + bytes([good[100] ^ 0xFF]) + good[101:])  # corrupted
    _spawn_reshard(2, tmp_path, "refuse", 2, victim.name)
    # A foreign delta: the same file name from another run's checkpoint.
    other = tmp_path / "other"
    _spawn_reshard(2, other, "save", 2)
    shutil.copy(other / victim.relative_to(tmp_path), victim)
    _spawn_reshard(2, tmp_path, "refuse", 2, victim.name)


def test_dlrm_shape_trains_like_the_unsharded_collection() -> None:
    # What users run: DLRM's 26 sparse features with a D = 64 table each, 1024 bags a rank
    # (about 52,000 Zipf-like ids a rank per step), 2 ranks, Adagrad with admission and
    # eviction (rows unseen for 2 steps go); 4 steps (the step count is the dimension shrunk).
    args = ("adagrad", 4, 1024, False, "cpu", None, False, True, "dlrm")
    npu_dist.spawn_ranks(sharded_worker.run, 2, "cpu", *args)
