"""Sharding of the EmbCache bag collection by stable hash buckets: the bucket hash against
splitmix64 written with Python integers, bucket maps and placements (row-wise, table-wise,
table-row-wise), plans turned into placements, the refusals, and 2, 3 and 4 CPU processes
(gloo) training like the unsharded collection fed every rank's batch; checkpoints across world
sizes and layouts."""

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
    Placement,
    RowWiseEmbCacheEmbeddingBagCollection,
    ShardedEmbCacheEmbeddingBagCollection,
    ShardingError,
    bucket_of,
    placement_from_plan,
)

# The worker is the verify suite's (verify/lib/embcache_sharded.py), run here on CPU ranks.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify" / "lib"))
import embcache_sharded as sharded_worker
import npu_dist
from torchrec_embcache.sharded_checkpoint import GLOBAL, read_global

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


# Buckets recorded before bucket_of moved into the C++ core (recsdk_ext::hash_bucket): a
# checkpoint's bucket map is only valid while every id keeps its bucket.
PINNED_IDS = [0, 1, -1, 2, 4095, 4096, -4096, 123456789, -987654321, 2**31 - 1, 2**32]
PINNED_IDS += [2**63 - 1, -(2**63)]
PINNED_BUCKETS = {
    4096: [1751, 3680, 1552, 2919, 1665, 3939, 3718, 2876, 2158, 1523, 156, 3923, 2541],
    7: [4, 4, 0, 2, 2, 0, 2, 2, 5, 0, 3, 4, 6],
}


def test_bucket_of_is_unchanged_on_pinned_ids() -> None:
    ids = torch.tensor(PINNED_IDS)
    for buckets, want in PINNED_BUCKETS.items():
        assert [splitmix64_bucket(x & M64, buckets) for x in PINNED_IDS] == want
        assert bucket_of(ids, buckets).tolist() == want
    # Any shape, any integer dtype; the result keeps the shape.
    grid = bucket_of(ids[:10].to(torch.int32).view(2, 5), 4096)
    assert grid.shape == (2, 5)
    assert grid.flatten().tolist() == PINNED_BUCKETS[4096][:10]
    with pytest.raises(ValueError, match="num_buckets must be positive, got 0"):
        bucket_of(ids, 0)


def test_shared_python_is_packages_common_and_raises_this_packages_errors() -> None:
    """collective.py is shipped from packages/common/python into torchrec_embcache._shared:
    the copy under test is that file, and its errors are this package's."""
    from torchrec_embcache import collective, errors
    from torchrec_embcache._shared import collective as shared

    common = Path(__file__).resolve().parents[2] / "packages" / "common" / "python"
    assert Path(shared.__file__).read_text() == (common / "collective.py").read_text()
    assert collective.collective_step is shared.collective_step
    assert shared.CollectiveError is errors.CollectiveError


def test_distributed_layout_names_the_same_objects_as_the_old_paths() -> None:
    """torchrec's layout, as hybrid_torchrec.distributed: the types in
    torchrec_embcache.distributed.types, importing no implementation module; the package and the
    old module paths name the same objects."""
    import re

    from torchrec_embcache import distributed, placement, sharded, sharded_checkpoint
    from torchrec_embcache.distributed import types

    assert placement.BucketMap is types.BucketMap is distributed.BucketMap is sharded.BucketMap
    assert placement.bucket_of is types.bucket_of is distributed.bucket_of
    assert distributed.Placement is placement.Placement
    assert distributed.load_sharded_checkpoint is sharded_checkpoint.load_sharded_checkpoint
    sharder = distributed.EmbCacheEmbeddingBagCollectionSharder
    assert sharder is sharded.EmbCacheEmbeddingBagCollectionSharder
    assert sorted(distributed.__all__) == sorted(
        n for n in distributed.__all__ if getattr(distributed, n) is not None
    )
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        distributed.nothing  # noqa: B018
    source = Path(types.__file__).read_text()
    allowed = "__future__ collections.abc dataclasses functools typing torch torchrec_embcache._ext"
    allowed += " torchrec_embcache.errors"
    assert {
        a or b for a, b in re.findall(r"^(?:from ([\w.]+) import|import ([\w.]+)$)", source, re.M)
    } <= set(allowed.split())


def test_even_map_spreads_buckets_in_runs() -> None:
    m = BucketMap.even(3, 10)
    assert m.owners == (0, 0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert m.num_buckets == 10
    # Printed as runs: a default map has 4096 buckets.
    assert repr(m) == "BucketMap(world_size=3, owners=[0 x 4, 1 x 3, 2 x 3])"
    ids = torch.arange(-50, 50)
    assert m.rank_of(ids).tolist() == [m.owners[b] for b in bucket_of(ids, 10).tolist()]
    with pytest.raises(ShardingError, match="every rank needs at least one"):
        BucketMap.even(4, 3)
    with pytest.raises(ShardingError, match=r"rank\(s\) \[5\] outside a world of 2"):
        BucketMap((0, 5, 1), 2)
    with pytest.raises(ShardingError, match="owners must be int ranks, got '1'"):
        BucketMap.over(("1",), 2)
    with pytest.raises(ShardingError, match=r"num_buckets must be an int, got 8\.0"):
        BucketMap.even(2, 8.0)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def gloo_world():
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(str(Path(tmp) / "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            yield dist.group.WORLD
        finally:
            dist.destroy_process_group()


def test_placements_are_bucket_maps() -> None:
    tw = Placement.table_wise(2, 4, num_buckets=8)
    assert tw.ranks == (2,) and tw.bucket_map.owners == (2,) * 8
    ids = torch.arange(-20, 20)
    assert tw.bucket_map.rank_of(ids).tolist() == [2] * 40
    twrw = Placement.table_row_wise([2, 3], 4, num_buckets=8)
    assert twrw.bucket_map.owners == (2, 2, 2, 2, 3, 3, 3, 3)
    assert set(twrw.bucket_map.rank_of(ids).tolist()) == {2, 3}
    rw = Placement.row_wise(3, num_buckets=10)
    assert rw.bucket_map == BucketMap.even(3, 10) and rw.sharding_type == "row_wise"
    for p in (tw, twrw, rw):
        assert Placement.from_json(p.to_json(), p.world_size) == p
    assert twrw.to_json()["owners"] == [[2, 4], [3, 4]]  # runs, not one entry per bucket
    with pytest.raises(ShardingError, match="table_wise placement has one owner rank"):
        Placement("table_wise", BucketMap.even(2, 4))
    with pytest.raises(ShardingError, match="unknown EmbCache sharding type 'column_wise'"):
        Placement("column_wise", BucketMap.even(2, 4))
    with pytest.raises(ShardingError, match=r"name a rank twice"):
        BucketMap.over([1, 1], 2)


def test_plans_become_placements() -> None:
    from torchrec.distributed.types import ParameterSharding

    def plan(kind: str, ranks: list[int] | None) -> ParameterSharding:
        return ParameterSharding(sharding_type=kind, compute_kernel="fused", ranks=ranks)

    assert placement_from_plan("t", plan("table_wise", [3]), 4) == Placement.table_wise(3, 4)
    assert placement_from_plan("t", plan("table_row_wise", [2, 3]), 4) == (
        Placement.table_row_wise([2, 3], 4)
    )
    assert placement_from_plan("t", plan("row_wise", [0, 1, 2, 3]), 4) == Placement.row_wise(4)
    given = BucketMap((1, 0, 1), 2)
    assert placement_from_plan("t", plan("row_wise", [0, 1]), 2, given).bucket_map is given
    with pytest.raises(ShardingError, match=r"'t': the plan asks for 'column_wise'.*splitting"):
        placement_from_plan("t", plan("column_wise", [0, 1]), 2)
    with pytest.raises(ShardingError, match=r"'t': the plan asks for 'data_parallel'.*replica"):
        placement_from_plan("t", plan("data_parallel", None), 2)
    with pytest.raises(ShardingError, match="'t': the plan asks for None"):
        placement_from_plan("t", None, 2)
    # Hosts of 2 ranks: table-row-wise stays on one host's ranks when the sharder knows them.
    twrw = plan("table_row_wise", [2, 3])
    assert placement_from_plan("t", twrw, 4, local_world_size=2) == (
        Placement.table_row_wise([2, 3], 4)
    )
    across = plan("table_row_wise", [1, 2])
    with pytest.raises(ShardingError, match=r"'t': .* ranks \[1, 2\] are on hosts \[0, 1\]"):
        placement_from_plan("t", across, 4, local_world_size=2)
    assert placement_from_plan("t", across, 4).ranks == (1, 2)  # hosts unknown: as planned


def test_mean_pooling_and_mismatched_maps_are_refused(gloo_world) -> None:
    tables = sharded_worker.tables()
    tables[1].pooling = PoolingType.MEAN
    with pytest.raises(ShardingError, match="'t1': row_wise sharding needs SUM pooling"):
        ShardedEmbCacheEmbeddingBagCollection(tables, gloo_world)
    twrw = {"t1": Placement.table_row_wise([0], 1)}
    with pytest.raises(ShardingError, match="'t1': table_row_wise sharding needs SUM pooling"):
        ShardedEmbCacheEmbeddingBagCollection(tables, gloo_world, placements=twrw)
    # Table-wise, one rank pools whole bags: MEAN is the unsharded collection's.
    tw = ShardedEmbCacheEmbeddingBagCollection(
        tables, gloo_world, placements={"t1": Placement.table_wise(0, 1)}, seed=5
    )
    import torchrec_embcache as ec

    kjt = sharded_worker.batch(0, 0, 64, False)
    plain = ec.EmbCacheEmbeddingBagCollection(tables, seed=5)
    assert torch.equal(tw(kjt).values(), plain(kjt).values())
    with pytest.raises(ShardingError, match="'t0': its bucket map is for 2 ranks, the groups"):
        RowWiseEmbCacheEmbeddingBagCollection(
            sharded_worker.tables(), gloo_world, bucket_map=BucketMap.even(2, 8)
        )
    with pytest.raises(ShardingError, match=r"placements name table\(s\) \['nope'\]"):
        ShardedEmbCacheEmbeddingBagCollection(
            sharded_worker.tables(), gloo_world, placements={"nope": Placement.row_wise(1)}
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


# Table-wise and table-row-wise, alone and mixed with row-wise (sharded_worker.Case; specs:
# sharded_worker.sharding_types). 5 steps of 256 bags a rank with admission and eviction.
# "3-tw-mean": tables on ranks 2 and 1, rank 0 holds none (it builds no table and still takes
# part in every exchange), and the table-wise tables pool with MEAN. "4-mixed-dmp-2-hosts":
# torchrec's planner, constrained to table-wise, row-wise and table-row-wise for the three
# tables, on a topology of 2 hosts of 2 ranks (the table-row-wise table on one host's ranks).
LAYOUT_CASES = {
    "2-tw-adagrad-weighted": (2, dict(optimizer="adagrad", weighted=True, spec="tw")),
    "3-tw-sgd-mean": (3, dict(optimizer="sgd", weighted=False, spec="tw", mean=True)),
    "4-twrw-adam-2-hosts": (
        4,
        dict(optimizer="adam", weighted=False, spec="twrw", local_world_size=2),
    ),
    "4-mixed-adagrad-dmp-2-hosts": (
        4,
        dict(
            optimizer="adagrad",
            weighted=False,
            spec="mixed",
            layout="trio",
            dmp=True,
            local_world_size=2,
        ),
    ),
    # The sequence collection (a row per id back to the sender, in its order), the three types
    # mixed: by hand on 3 ranks, through DMP and the planner on 2.
    "3-seq-mixed-adam": (
        3,
        dict(optimizer="adam", weighted=False, spec="mixed", layout="seq", sequence=True),
    ),
    "2-seq-mixed-sgd-dmp": (
        2,
        dict(optimizer="sgd", weighted=False, spec="mixed", layout="seq", sequence=True, dmp=True),
    ),
}


@pytest.mark.parametrize("name", list(LAYOUT_CASES))
def test_layouts_train_like_the_unsharded_collection(name: str) -> None:
    world, fields = LAYOUT_CASES[name]
    case = sharded_worker.Case(steps=5, size=256, device_type="cpu", policies=True, **fields)
    npu_dist.spawn_ranks(sharded_worker.run_case, world, "cpu", case)


def test_ranks_with_different_placements_refuse_to_build() -> None:
    npu_dist.spawn_ranks(sharded_worker.run_mismatched_placements, 2, "cpu")


def test_one_rank_sequence_is_the_unsharded_collection(gloo_world, tmp_path: Path) -> None:
    # Rows per id with the ids as weights (need_indices); then a sharded checkpoint of the
    # sequence tables (keyed embeddings.<table>) saved row-wise loads table-wise.
    import torchrec_embcache as ec
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint,
    )
    from torchrec_embcache.sharded_sequence import ShardedEmbCacheEmbeddingCollection

    configs = sharded_worker.tables("seq", sequence=True)
    sharded = ShardedEmbCacheEmbeddingCollection(configs, gloo_world, need_indices=True, seed=5)
    plain = ec.EmbCacheEmbeddingCollection(configs, need_indices=True, seed=5)
    kjt = sharded_worker.batch(0, 0, 64, False, "seq")
    got, want = sharded(kjt), plain(kjt)
    assert list(got) == list(want) == ["a", "b", "c", "d"]
    for key in want:
        for part in ("values", "lengths", "weights"):
            assert torch.equal(getattr(got[key], part)(), getattr(want[key], part)()), key
    sum(jt.values().sum() for jt in got.values()).backward()
    save_sharded_checkpoint(sharded, tmp_path)
    assert sorted(read_global(tmp_path)["placements"]) == [f"embeddings.t{i}" for i in range(3)]
    tw = {name: Placement.table_wise(0, 1) for name in ("t0", "t1", "t2")}
    loaded = ShardedEmbCacheEmbeddingCollection(configs, gloo_world, placements=tw, seed=5)
    load_sharded_checkpoint(loaded, tmp_path)
    for name, emb in sharded.embeddings.items():
        want_rows, got_rows = emb.table.export(), loaded.embeddings[name].table.export()
        assert all(torch.equal(want_rows[k], got_rows[k]) for k in want_rows), name


def test_sharder_offers_three_layouts_with_stand_in_parameters(gloo_world) -> None:
    import torchrec_embcache as ec
    from torchrec.distributed.types import ParameterSharding, ShardingEnv

    env = ShardingEnv.from_process_group(gloo_world)
    sharder = EmbCacheEmbeddingBagCollectionSharder(env)
    module = ec.EmbCacheEmbeddingBagCollection(sharded_worker.tables(), device="meta")
    assert sharder.module_type is ec.EmbCacheEmbeddingBagCollection
    assert sharder.sharding_types("npu") == ["table_wise", "row_wise", "table_row_wise"]
    stand_ins = sharder.shardable_parameters(module)
    assert {k: tuple(v.shape) for k, v in stand_ins.items()} == {"t0": (1, 16), "t1": (1, 8)}
    assert all(v.device.type == "meta" for v in stand_ins.values())
    assert sharder.storage_usage(torch.empty(10, 16), "npu", "fused") == {"ddr": 640}
    plan = {
        "t0": ParameterSharding(sharding_type="row_wise", compute_kernel="fused", ranks=[0]),
        "t1": ParameterSharding(sharding_type="column_wise", compute_kernel="fused", ranks=[0]),
    }
    with pytest.raises(ShardingError, match="'t1': the plan asks for 'column_wise'"):
        sharder.shard(module, plan, env, torch.device("cpu"))
    plan["t1"] = ParameterSharding(sharding_type="table_wise", compute_kernel="fused", ranks=[0])
    sharded = sharder.shard(module, plan, env, torch.device("cpu"))
    assert {n: p.sharding_type for n, p in sharded.placements.items()} == {
        "t0": "row_wise",
        "t1": "table_wise",
    }
    assert sorted(sharded.state_dict()) == sorted(
        ec.EmbCacheEmbeddingBagCollection(sharded_worker.tables()).state_dict()
    )


def test_sharder_needs_a_gloo_host_group() -> None:
    from torchrec.distributed.types import ShardingEnv

    with pytest.raises(ShardingError, match="gloo process group"):
        EmbCacheEmbeddingBagCollectionSharder(ShardingEnv(1, 0, None))


def _spawn_reshard(
    world: int, directory: Path, phase: str, save_world: int, refusal=None, spec: str = "rw"
):
    args = (str(directory), phase, "cpu", save_world, refusal, spec)
    npu_dist.spawn_ranks(sharded_worker.run_reshard, world, "cpu", *args)


@pytest.mark.parametrize(("saved", "loaded"), [(3, 2), (2, 3), (2, 2)])
def test_checkpoint_of_w_ranks_loads_into_w_prime(tmp_path: Path, saved: int, loaded: int):
    # Full + incremental save on `saved` ranks; load on `loaded` ranks and train on: outputs
    # and rows equal one collection trained on every step (run_reshard).
    _spawn_reshard(saved, tmp_path, "save", saved)
    _spawn_reshard(loaded, tmp_path, "load", saved)


def test_checkpoint_moves_buckets_between_layouts(tmp_path: Path) -> None:
    # Table-wise on 2 ranks (each table whole on one rank; an incremental save by a row-wise
    # collection onto it is refused), loaded row-wise on 3: every rank gets its buckets of
    # both tables, and training goes on like one collection trained on every step.
    _spawn_reshard(2, tmp_path, "save", 2, spec="tw")
    saved = read_global(tmp_path)
    assert {n: p["sharding_type"] for n, p in saved["placements"].items()} == {
        "embedding_bags.t0": "table_wise",
        "embedding_bags.t1": "table_wise",
    }
    assert [sorted(r["tables"]) for r in saved["ranks"]] == [
        ["embedding_bags.t1"],
        ["embedding_bags.t0"],
    ]
    _spawn_reshard(3, tmp_path, "load", 2, spec="rw")


def test_a_version_1_checkpoint_loads_and_a_newer_one_is_refused(gloo_world, tmp_path: Path):
    # Version 1 (one row-wise bucket map, every rank holding every table) as the previous
    # release wrote GLOBAL.json: its rank files are version 2's, so a row-wise save rewritten
    # in version 1's terms is one. It loads into a table-wise collection.
    import torchrec_embcache as ec
    from torchrec_embcache.checkpoint import write_manifest
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint,
    )

    options = {"optimizer": ec.SparseAdagrad(lr=0.1), "seed": 5}
    saved = ShardedEmbCacheEmbeddingBagCollection(sharded_worker.tables(), gloo_world, **options)
    saved(sharded_worker.batch(0, 0, 64, False)).values().sum().backward()
    save_sharded_checkpoint(saved, tmp_path)
    body = read_global(tmp_path)
    v1 = {k: v for k, v in body.items() if k not in ("placements", "checksum")}
    write_manifest(tmp_path, {**v1, "version": 1, "owners": list(BucketMap.even(1).owners)}, GLOBAL)
    tw = {name: Placement.table_wise(0, 1) for name in ("t0", "t1")}
    loaded = ShardedEmbCacheEmbeddingBagCollection(
        sharded_worker.tables(), gloo_world, placements=tw, **options
    )
    load_sharded_checkpoint(loaded, tmp_path)
    for name, bag in saved.local.embedding_bags.items():
        want, got = bag.table.export(), loaded.local.embedding_bags[name].table.export()
        assert all(torch.equal(want[k], got[k]) for k in want), name
    write_manifest(tmp_path, {**v1, "version": 3}, GLOBAL)
    with pytest.raises(ec.CheckpointError, match=r"format version 3; this .* reads version 1 or 2"):
        load_sharded_checkpoint(loaded, tmp_path)


def test_a_checkpoint_with_tables_the_module_lacks_loads_only_when_not_strict(
    gloo_world, tmp_path: Path
) -> None:
    import torchrec_embcache as ec
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint,
    )

    options = {"optimizer": ec.SparseSGD(lr=0.1), "seed": 5}
    both = ShardedEmbCacheEmbeddingBagCollection(sharded_worker.tables(), gloo_world, **options)
    both(sharded_worker.batch(0, 0, 64, False)).values().sum().backward()
    save_sharded_checkpoint(both, tmp_path)
    first = [c for c in sharded_worker.tables() if c.name == "t0"]
    one = ShardedEmbCacheEmbeddingBagCollection(first, gloo_world, **options)
    with pytest.raises(ec.CheckpointError, match=r"holds table\(s\) \['embedding_bags.t1'\]"):
        load_sharded_checkpoint(one, tmp_path)
    assert len(one.local.embedding_bags["t0"].table) == 0  # nothing loaded
    load_sharded_checkpoint(one, tmp_path, strict=False)
    want, got = (
        both.local.embedding_bags["t0"].table.export(),
        one.local.embedding_bags["t0"].table.export(),
    )
    assert all(torch.equal(want[k], got[k]) for k in want)


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


def test_one_rank_failing_fails_every_rank(tmp_path: Path) -> None:
    # Construction, a batch and a load that fail on rank 1 only raise on both ranks (before,
    # rank 0 waited in the next collective until gloo's timeout), and nothing is loaded.
    npu_dist.spawn_ranks(sharded_worker.run_one_rank_fails, 2, "cpu", str(tmp_path))


def test_back_to_back_saves_keep_a_loadable_checkpoint(tmp_path: Path) -> None:
    # Before: rank 0 removed old chains after the commit's barrier, so a rank already writing
    # the next save lost its files to that removal; and a save during a background save
    # picked the same chain directory. Both left a GLOBAL.json naming missing files.
    npu_dist.spawn_ranks(sharded_worker.run_back_to_back_saves, 2, "cpu", str(tmp_path))
