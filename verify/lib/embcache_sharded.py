"""One rank of the sharded EmbCache tests (test_embcache_sharded.py on npu ranks;
tests/embcache/test_sharded.py on CPU ranks): trains the sharded collection (row-wise,
table-wise, table-row-wise or a mix, built by hand or by DistributedModelParallel) and, on
every rank, the unsharded collection fed every rank's batch (the reference), then compares each
step's outputs, and every row with its optimiser state."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import npu_dist
import torch
import torch.distributed as dist

# layout -> (table -> dim, table -> features). "toy": two tables, one of them fed by two
# features; "dlrm": DLRM's 26 sparse features, a table of D = 64 each.
LAYOUTS = {
    "toy": ({"t0": 16, "t1": 8}, {"t0": ["a", "b"], "t1": ["c"]}),
    "dlrm": ({f"t{i}": 64 for i in range(26)}, {f"t{i}": [f"cat_{i}"] for i in range(26)}),
    "trio": ({"t0": 16, "t1": 8, "t2": 12}, {"t0": ["a", "b"], "t1": ["c"], "t2": ["d"]}),
    # The sequence collection's tables share one dim (torchrec's rule).
    "seq": ({"t0": 8, "t1": 8, "t2": 8}, {"t0": ["a", "b"], "t1": ["c"], "t2": ["d"]}),
}


# (rtol, atol) of the comparisons. Each owner pools its ids of a bag and the bag's rank adds
# the partial sums: float32 sums in another order than the reference's one sum per bag. At the
# DLRM shape (52,000 ids a rank per step, 4 Adagrad steps) that moved 1 of 1,703,936 outputs
# by 1.6e-6 (3.3e-5 relative to a small value), past the toy tolerance.
TOLERANCE = {"toy": (1e-5, 1e-6), "dlrm": (1e-4, 1e-5), "trio": (1e-5, 1e-6), "seq": (1e-5, 1e-6)}

# Sharding specs: "rw", "tw", "twrw" (every table so), "mixed" (table-wise, row-wise and
# table-row-wise in turn over the tables).
_SPEC_TYPES = {"rw": ["row_wise"], "tw": ["table_wise"], "twrw": ["table_row_wise"]}
_SPEC_TYPES["mixed"] = ["table_wise", "row_wise", "table_row_wise"]


def tables(
    layout: str = "toy",
    cache_slots: int | dict[str, int] | None = None,
    sequence: bool = False,
    **options: Any,
) -> list[Any]:
    """The layout's configs (of the sequence collection with ``sequence``); ``cache_slots``
    the same for every table or per table."""
    from torchrec_embcache import EmbCacheEmbeddingBagConfig, EmbCacheEmbeddingConfig

    dims, features = LAYOUTS[layout]
    slots = cache_slots if isinstance(cache_slots, dict) else dict.fromkeys(dims, cache_slots)
    config = EmbCacheEmbeddingConfig if sequence else EmbCacheEmbeddingBagConfig
    return [
        config(
            name=t,
            embedding_dim=d,
            num_embeddings=1,
            feature_names=features[t],
            cache_slots=slots[t],
            **options,
        )
        for t, d in dims.items()
    ]


def sharding_types(spec: str, layout: str = "toy") -> dict[str, str]:
    """Table -> torchrec sharding type of a spec."""
    kinds = _SPEC_TYPES[spec]
    return {t: kinds[i % len(kinds)] for i, t in enumerate(LAYOUTS[layout][0])}


def placements(types: dict[str, str], world: int, local: int) -> dict[str, Any]:
    """Hand-made placements of ``types`` over ``world`` ranks in hosts of ``local``: table i
    table-wise on rank W - 1 - i (mod W), table-row-wise on host H - 1 - i (mod H) (so that
    tables land apart, and with 3 ranks and 2 table-wise tables rank 0 holds none)."""
    from torchrec_embcache.sharded import Placement

    hosts = world // local
    out = {}
    for i, (name, kind) in enumerate(types.items()):
        if kind == "table_wise":
            out[name] = Placement.table_wise((world - 1 - i) % world, world)
        elif kind == "table_row_wise":
            host = (hosts - 1 - i) % hosts
            out[name] = Placement.table_row_wise(range(host * local, (host + 1) * local), world)
        else:
            out[name] = Placement.row_wise(world)
    return out


@dataclass(frozen=True)
class Case:
    """What one sharded training run does (see :func:`run_case`)."""

    optimizer: str
    steps: int
    size: int
    weighted: bool
    device_type: str
    cache_slots: int | dict[str, int] | None = None
    dmp: bool = False
    policies: bool = False
    layout: str = "toy"
    spec: str = "rw"
    mean: bool = False  # table-wise tables pool with MEAN (the others need SUM)
    local_world_size: int | None = None  # ranks per host (default: the world is one host)
    sequence: bool = False  # EmbCacheEmbeddingCollection (a row per id) instead of bags


def batch(rank: int, step: int, size: int, weighted: bool, layout: str = "toy") -> Any:
    """Zipf-like ids with repeats within and across ranks; batch sizes differ by rank."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(100 * step + rank)
    dims, features = LAYOUTS[layout]
    keys = [f for t in dims for f in features[t]]
    b = size + rank  # unequal batch sizes
    lengths = torch.randint(0, 5, (len(keys) * b,), generator=g)
    ranks = torch.randint(1, 1 << 12, (int(lengths.sum()),), generator=g)
    values = (1 << 20) // ranks * 7919 - (1 << 40)  # repeats, negative ids too
    weights = torch.rand(values.numel(), generator=g) if weighted else None
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys, values=values, lengths=lengths, weights=weights
    )


def concat(batches: list[Any]) -> Any:
    """Every rank's batch as one KJT, ranks' bags in rank order per feature."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    keys = batches[0].keys()
    per = [b.to_dict() for b in batches]
    weighted = batches[0].weights_or_none() is not None
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys,
        values=torch.cat([p[k].values() for k in keys for p in per]),
        lengths=torch.cat([p[k].lengths() for k in keys for p in per]),
        weights=torch.cat([p[k].weights() for k in keys for p in per]) if weighted else None,
    )


def run(
    rank: int,
    world: int,
    port: int,
    optimizer: str,
    steps: int,
    size: int,
    weighted: bool,
    device_type: str,
    cache_slots: int | None = None,
    dmp: bool = False,
    policies: bool = False,
    layout: str = "toy",
    report: str | None = None,
) -> None:
    """A row-wise :class:`Case` (the arguments are its fields)."""
    case = Case(optimizer, steps, size, weighted, device_type, cache_slots, dmp, policies, layout)
    run_case(rank, world, port, case, report)


def run_case(rank: int, world: int, port: int, case: Case, report: str | None = None) -> None:
    """npu: the device group is hccl and the host group a gloo group of the same ranks; cpu:
    one gloo group serves both. ``cache_slots``: each rank's tables keep that many rows in a
    device cache (the reference keeps every row on the host). ``dmp``: the sharded collection
    comes from DistributedModelParallel, planned by torchrec's planner (constraints force each
    table's sharding type), instead of being built by hand. ``policies``: admission (a row at
    an id's second sighting) and eviction (rows unseen for 2 steps) in every table, the
    reference's included. ``spec``: the sharding types (see :func:`sharding_types`).
    ``sequence``: the sequence collection (a row per id) instead of the bag collection."""
    import torchrec_embcache as ec

    provider, device = npu_dist.start_rank(rank, world, port, case.device_type)
    host = dist.new_group(backend="gloo") if case.device_type == "npu" else dist.group.WORLD
    rules = {"admission": ec.Admission(2), "eviction": ec.EvictionPolicy("lfu", ttl_steps=2)}
    rules = rules if case.policies else {}
    types = sharding_types(case.spec, case.layout)
    configs = _pooled(tables(case.layout, case.cache_slots, case.sequence, **rules), types, case)
    sharded = _build(case, configs, host, device, types, world)
    _check_layout(sharded, rank, types)
    reference = _build_reference(
        case, _pooled(tables(case.layout, None, case.sequence, **rules), types, case)
    )
    tolerance = TOLERANCE[case.layout]
    for step in range(case.steps):
        batches = [batch(r, step, case.size, case.weighted, case.layout) for r in range(world)]
        got = _outputs(sharded(batches[rank]))
        want_all = _outputs(reference(concat(batches)))
        first = sum(b.stride() for b in batches[:rank])
        assert list(got) == list(want_all), (list(got), list(want_all))
        for key, want in want_all.items():
            part = want.slice(first, batches[rank].stride())
            torch.testing.assert_close(
                got[key].lengths().cpu(), part.lengths(), rtol=0, atol=0, msg=key
            )
            torch.testing.assert_close(
                got[key].values().detach().cpu(),
                part.values().detach(),
                rtol=tolerance[0],
                atol=tolerance[1],
                msg=lambda m, k=key: f"{k}: {m}",
            )
        # Each rank's loss over its own bags; the reference's over all bags, divided by the
        # world size: the sharded collection divides its gradients so, as torchrec's do.
        _loss(got).backward()
        _loss(want_all).div(world).backward()
    compare_rows(sharded, reference, rank, world, host, tolerance)
    held = list(table_modules(sharded.local).values())
    if case.policies:  # both policies acted somewhere (the counts are the reference's, summed)
        mine = torch.tensor([sum(int(m.table.host.evicted_total) for m in held)])
        dist.all_reduce(mine, group=host)
        theirs = [m.table.host for m in table_modules(reference).values()]
        assert int(mine[0]) == sum(int(h.evicted_total) for h in theirs) > 0
    if case.cache_slots is not None and held:  # the caches were too small: rows moved out
        assert any(m.table.counters.rows_swapped_out for m in held), "no row swapped"
    npu_dist.finish_rank(provider, report, rank)


class _Jagged:
    """One output's values per bag, whatever the collection: a [B, D] block of pooled rows
    (a bag a row) or a JaggedTensor's rows; ``slice`` keeps bags [first, first + n)."""

    def __init__(self, values: torch.Tensor, lengths: torch.Tensor) -> None:
        self._values, self._lengths = values, lengths

    def values(self) -> torch.Tensor:
        return self._values

    def lengths(self) -> torch.Tensor:
        return self._lengths

    def slice(self, first: int, n: int) -> _Jagged:
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), self._lengths.cpu().cumsum(0)])
        lo, hi = int(offsets[first]), int(offsets[first + n])
        return _Jagged(self._values[lo:hi], self._lengths[first : first + n])


def _outputs(result: Any) -> dict[str, _Jagged]:
    """Per output key: a KeyedTensor's pooled [B, D] as B bags of one row each, or a
    sequence collection's JaggedTensor."""
    if isinstance(result, dict):
        return {k: _Jagged(jt.values(), jt.lengths()) for k, jt in result.items()}
    pooled = result.to_dict()
    return {
        k: _Jagged(v, torch.ones(v.shape[0], dtype=torch.int64, device=v.device))
        for k, v in pooled.items()
    }


def _loss(outputs: dict[str, _Jagged]) -> torch.Tensor:
    return sum((out.values() ** 2).sum().mul(0.5) for out in outputs.values())  # type: ignore[return-value]


def _build(
    case: Case, configs: list[Any], host: Any, device: torch.device, types: dict, world: int
) -> Any:
    """The sharded collection of ``case``, by DMP or by hand."""
    from torchrec_embcache.sharded import ShardedEmbCacheEmbeddingBagCollection
    from torchrec_embcache.sharded_sequence import ShardedEmbCacheEmbeddingCollection

    local = case.local_world_size or world
    options: dict[str, Any] = {"optimizer": _opt(case.optimizer), "seed": 5, "device": device}
    if not case.sequence:
        options["is_weighted"] = case.weighted
    if case.dmp:
        return _through_dmp(configs, host, device, options, types, local, case.sequence)
    device_group = None if case.device_type == "cpu" else dist.group.WORLD
    kind = (
        ShardedEmbCacheEmbeddingCollection
        if case.sequence
        else ShardedEmbCacheEmbeddingBagCollection
    )
    return kind(configs, host, device_group, placements=placements(types, world, local), **options)


def _build_reference(case: Case, configs: list[Any]) -> Any:
    """The unsharded collection on the CPU, every row on the host."""
    import torchrec_embcache as ec

    options = {"optimizer": _opt(case.optimizer), "seed": 5, "device": torch.device("cpu")}
    if case.sequence:
        return ec.EmbCacheEmbeddingCollection(configs, **options)
    return ec.EmbCacheEmbeddingBagCollection(configs, case.weighted, **options)


def table_modules(collection: Any) -> dict[str, Any]:
    """A collection's table modules by table name (bags or sequence)."""
    tables_ = getattr(collection, "embedding_bags", None)
    if tables_ is None:
        tables_ = collection.embeddings
    return dict(tables_.items())


def _pooled(configs: list[Any], types: dict[str, str], case: Case) -> list[Any]:
    """``case.mean``: the table-wise tables pool with MEAN."""
    from torchrec.modules.embedding_configs import PoolingType

    for config in configs:
        if case.mean and types[config.name] == "table_wise":
            config.pooling = PoolingType.MEAN
    return configs


def _check_layout(sharded: Any, rank: int, types: dict[str, str]) -> None:
    """Every table has the sharding type asked for, and this rank built exactly the tables
    it owns buckets of (no device cache for a table whose ids never come here)."""
    got = {name: p.sharding_type for name, p in sharded.placements.items()}
    assert got == types, (got, types)
    held = {name for name, p in sharded.placements.items() if rank in p.ranks}
    built = set(table_modules(sharded.local))
    assert built == held, (sorted(built), held)


def compare_rows(
    sharded: Any,
    reference: Any,
    rank: int,
    world: int,
    host: Any,
    tolerance: tuple[float, float] = TOLERANCE["toy"],
) -> None:
    """Every row this rank holds equals the reference's row of the id; the ranks together hold
    every id the reference holds, each in the rank its bucket names in its table's
    placement."""
    held = 0
    bags = table_modules(sharded.local)
    for name, ref_bag in table_modules(reference).items():
        theirs = ref_bag.table.export()
        mine = bags[name].table.export() if name in bags else None
        ids = mine["ids"] if mine is not None else torch.empty(0, dtype=torch.int64)
        counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(counts, torch.tensor([ids.numel()]), group=host)
        assert sum(int(c) for c in counts) == theirs["ids"].numel(), name
        if mine is None:
            continue
        index = {int(i): k for k, i in enumerate(theirs["ids"].tolist())}
        assert bool((sharded.placements[name].bucket_map.rank_of(ids) == rank).all()), name
        rows = torch.tensor([index[int(i)] for i in ids.tolist()], dtype=torch.int64)
        for key in ("weight", "optimizer_state"):
            what = f"{name} {key}"
            torch.testing.assert_close(
                mine[key],
                theirs[key][rows],
                rtol=tolerance[0],
                atol=tolerance[1],
                msg=lambda m, w=what: f"{w}: {m}",
            )
        held += ids.numel()
    assert held > 0 or not bags


class _Sparse(torch.nn.Module):
    def __init__(self, collection: torch.nn.Module) -> None:
        super().__init__()
        self.sparse = collection

    def forward(self, kjt: Any) -> Any:
        return self.sparse(kjt)


def _through_dmp(
    configs: list[Any],
    host: Any,
    device: torch.device,
    options: dict,
    types: dict[str, str] | None = None,
    local: int | None = None,
    sequence: bool = False,
) -> Any:
    """The collection (the sequence collection with ``sequence``) built on meta inside a
    model, planned by torchrec's planner (``types``: constraints forcing each table's sharding
    type; ``local``: ranks per host of the topology) and sharded by DistributedModelParallel
    with the EmbCache sharder; returns the rank's sharded module."""
    import torchrec_embcache as ec
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints
    from torchrec.distributed.types import ShardingEnv
    from torchrec_embcache.sharded import (
        EmbCacheEmbeddingBagCollectionSharder,
        ShardedEmbCacheBase,
    )
    from torchrec_embcache.sharded_sequence import EmbCacheEmbeddingCollectionSharder

    meta = torch.device("meta")
    table_options = {"optimizer": options["optimizer"], "seed": options["seed"]}
    if sequence:
        collection = ec.EmbCacheEmbeddingCollection(configs, meta, **table_options)
        kind: Any = EmbCacheEmbeddingCollectionSharder
    else:
        collection = ec.EmbCacheEmbeddingBagCollection(
            configs, options["is_weighted"], meta, **table_options
        )
        kind = EmbCacheEmbeddingBagCollectionSharder
    model = _Sparse(collection)
    sharder = kind(ShardingEnv.from_process_group(host))
    world = dist.get_world_size()
    topology = Topology(
        world_size=world, local_world_size=local or world, compute_device=device.type
    )
    constraints = {
        name: ParameterConstraints(sharding_types=[kind]) for name, kind in (types or {}).items()
    }
    planner = EmbeddingShardingPlanner(topology=topology, constraints=constraints)
    plan = planner.collective_plan(model, [sharder])
    dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])
    sharded = dmp.module.sparse
    assert isinstance(sharded, ShardedEmbCacheBase), type(sharded)
    return sharded


def _opt(name: str) -> Any:
    import torchrec_embcache as ec

    return {
        "sgd": ec.SparseSGD(lr=0.1),
        "adagrad": ec.SparseAdagrad(lr=0.1),
        "adam": ec.SparseAdam(lr=0.01),
    }[name]


def _train(sharded: Any, reference: Any, rank: int, worlds: list[int], steps: range) -> None:
    """Steps of the sharded collection (this rank's batches of the current world) and of the
    reference (every rank's batches of the world each step was trained with)."""
    for step in steps:
        world = worlds[step]
        batches = [batch(r, step, 128, False) for r in range(world)]
        want_all = reference(concat(batches))
        (want_all.values() ** 2).sum().mul(0.5).div(world).backward()  # torchrec's scale
        if sharded is None:
            continue
        got = sharded(batches[rank])
        first = sum(b.stride() for b in batches[:rank])
        want = want_all.values()[first : first + batches[rank].stride()]
        torch.testing.assert_close(got.values().detach().cpu(), want.detach(), rtol=1e-5, atol=1e-6)
        (got.values() ** 2).sum().mul(0.5).backward()


def run_reshard(
    rank: int,
    world: int,
    port: int,
    directory: str,
    phase: str,
    device_type: str,
    save_world: int,
    refusal: str | None = None,
    spec: str = "rw",
    local_world_size: int | None = None,
) -> None:
    """``save``: 3 steps on ``save_world`` ranks, a full sharded checkpoint after the second
    and an incremental one after the third; an incremental save by a collection of another
    layout is refused. ``load``: a fresh collection on ``world`` ranks loads it (buckets move
    when the world or the placements changed) and trains 2 more steps: outputs and rows equal
    one unsharded collection trained on all 5 steps. ``refuse``: the load must fail on every
    rank with ``refusal`` in the message, and leave the tables as they were. ``spec``: this
    phase's sharding types (:func:`sharding_types`), in hosts of ``local_world_size`` ranks."""
    import torchrec_embcache as ec
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint,
    )

    provider, device = npu_dist.start_rank(rank, world, port, device_type)
    host = dist.new_group(backend="gloo") if device_type == "npu" else dist.group.WORLD
    device_group = None if device_type == "cpu" else dist.group.WORLD

    def build(spec: str) -> Any:
        from torchrec_embcache.sharded import ShardedEmbCacheEmbeddingBagCollection

        layout = placements(sharding_types(spec), world, local_world_size or world)
        options = {"optimizer": _opt("adagrad"), "seed": 5, "device": device}
        return ShardedEmbCacheEmbeddingBagCollection(
            tables(), host, device_group, placements=layout, **options
        )

    sharded = build(spec)
    reference = ec.EmbCacheEmbeddingBagCollection(tables(), optimizer=_opt("adagrad"), seed=5)
    worlds = [save_world] * 3 + [world] * 2
    if phase == "save":
        _train(sharded, reference, rank, worlds, range(2))
        save_sharded_checkpoint(sharded, directory)
        _train(sharded, reference, rank, worlds, range(2, 3))
        save_sharded_checkpoint(sharded, directory, incremental=True)
        other = build("tw" if spec == "rw" else "rw")
        try:
            save_sharded_checkpoint(other, directory, incremental=True)
            raise AssertionError("an incremental save onto another layout was accepted")
        except ec.CheckpointError as exc:
            assert "have another placement" in str(exc), str(exc)
    elif phase == "load":
        _train(None, reference, rank, worlds, range(3))  # the reference catches up
        load_sharded_checkpoint(sharded, directory)
        _train(sharded, reference, rank, worlds, range(3, 5))
        compare_rows(sharded, reference, rank, world, host)
    else:
        _train(sharded, reference, rank, [world] * 5, range(1))
        before = {n: b.table.export() for n, b in sharded.local.embedding_bags.items()}
        try:
            load_sharded_checkpoint(sharded, directory)
            raise AssertionError("the damaged checkpoint was loaded")
        except ec.CheckpointError as exc:
            assert refusal in str(exc), str(exc)
        for name, bag in sharded.local.embedding_bags.items():
            after = bag.table.export()
            assert all(torch.equal(before[name][k], after[k]) for k in after), name
    npu_dist.finish_rank(provider, None, rank)


def run_mismatched_placements(rank: int, world: int, port: int) -> None:
    """Rank 0 asks for t0 table-wise, the others row-wise: every rank refuses to build."""
    from torchrec_embcache.sharded import (
        Placement,
        ShardedEmbCacheEmbeddingBagCollection,
        ShardingError,
    )

    npu_dist.start_rank(rank, world, port, "cpu")
    kind = Placement.table_wise(0, world) if rank == 0 else Placement.row_wise(world)
    try:
        ShardedEmbCacheEmbeddingBagCollection(tables(), dist.group.WORLD, placements={"t0": kind})
        raise AssertionError("ranks with different placements built the collection")
    except ShardingError as exc:
        assert "were given other tables or placements" in str(exc), str(exc)
    # No destroy_process_group: after the refused construction, tearing the group down hung
    # in one full run (py-spy: waiting on a futex); npu_dist ends the process without it.


def run_one_rank_fails(rank: int, world: int, port: int, directory: str) -> None:
    """A mistake or a failure on one rank only is raised on every rank, none waits for it:
    at construction (a placement naming a table the collection lacks), in a batch (a missing
    feature) and in a load (the rank's checkpoint directory replaced by a file)."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    from torchrec_embcache.errors import CheckpointError
    from torchrec_embcache.sharded import (
        Placement,
        ShardedEmbCacheEmbeddingBagCollection,
        ShardingError,
    )
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint,
    )

    npu_dist.start_rank(rank, world, port, "cpu")
    group = dist.group.WORLD
    configs = tables()
    wrong = {"no_such_table": Placement.row_wise(world)} if rank == 1 else None
    try:
        ShardedEmbCacheEmbeddingBagCollection(configs, group, placements=wrong)
        raise AssertionError("a collection was built with one rank's placements refused")
    except ShardingError as exc:
        expected = "no_such_table" if rank == 1 else "rank 1 could not build the collection"
        assert expected in str(exc), str(exc)
    sharded = ShardedEmbCacheEmbeddingBagCollection(configs, group, seed=3)
    good = batch(rank, 0, 64, False)
    features = good.keys()[1:] if rank == 1 else good.keys()
    partial = KeyedJaggedTensor.from_jt_dict({k: good[k] for k in features})
    try:
        sharded(partial)
        raise AssertionError("a batch without a feature was routed")
    except ShardingError as exc:
        expected = "has no feature" if rank == 1 else "rank(s) [1] got a batch"
        assert expected in str(exc), str(exc)
    none = torch.empty(0, dtype=torch.int64)
    empty = KeyedJaggedTensor.from_lengths_sync(keys=good.keys(), values=none, lengths=none)
    try:
        sharded(empty if rank == 1 else good)
        raise AssertionError("a batch of no samples was routed")
    except ShardingError as exc:
        expected = "has no samples" if rank == 1 else "rank(s) [1] got a batch"
        assert expected in str(exc), str(exc)
    sharded(good).values().sum().backward()
    save_sharded_checkpoint(sharded, directory)
    before = {name: bag.table.export() for name, bag in sharded.local.embedding_bags.items()}
    sharded(batch(rank, 1, 64, False)).values().sum().backward()  # the tables move on
    after = {name: bag.table.export() for name, bag in sharded.local.embedding_bags.items()}
    dist.barrier()
    if rank == 1:  # this rank's files become unreadable (a file where its directory was)
        (rank_dir,) = Path(directory).glob("chain-*/rank-00001")
        shutil.rmtree(rank_dir)
        rank_dir.write_text("not a directory")
    dist.barrier()
    try:
        load_sharded_checkpoint(sharded, directory)
        raise AssertionError("a checkpoint loaded with one rank's files unreadable")
    except CheckpointError as exc:
        expected = "NotADirectoryError" if rank == 1 else "rank 1: NotADirectoryError"
        assert expected in str(exc), str(exc)
    for name, bag in sharded.local.embedding_bags.items():  # nothing was loaded
        now = bag.table.export()
        assert all(torch.equal(after[name][k], now[k]) for k in now), name
        assert not all(torch.equal(before[name][k], now[k]) for k in now), name
    npu_dist.finish_rank("cpu", None, rank)


def run_back_to_back_saves(rank: int, world: int, port: int, directory: str) -> None:
    """Saves in quick succession keep a loadable checkpoint: two full saves with rank 0 slow
    to remove the old chain (the next save must not start before it is done), and a
    synchronous save started while a background save into the same directory still writes."""
    from torchrec_embcache import sharded_checkpoint as sc
    from torchrec_embcache.sharded import ShardedEmbCacheEmbeddingBagCollection

    npu_dist.start_rank(rank, world, port, "cpu")
    sharded = ShardedEmbCacheEmbeddingBagCollection(tables(), dist.group.WORLD, seed=3)
    sharded(batch(rank, 0, 64, False)).values().sum().backward()
    remove = sc.shutil.rmtree

    def slow_remove(path: Any, *args: Any, **kwargs: Any) -> None:
        time.sleep(1.0)
        remove(path, *args, **kwargs)

    if rank == 0:
        sc.shutil.rmtree = slow_remove  # type: ignore[assignment]
    try:
        sc.save_sharded_checkpoint(sharded, directory)
        sc.save_sharded_checkpoint(sharded, directory)
        pending = sc.save_sharded_checkpoint_in_background(sharded, directory)
        sc.save_sharded_checkpoint(sharded, directory)  # waits for the background save
        pending.result()
    finally:
        sc.shutil.rmtree = remove  # type: ignore[assignment]
    dist.barrier()
    manifest = sc.read_global(directory)
    assert manifest["chain"] == 4, manifest["chain"]
    held = sorted(p.name for p in Path(directory, manifest["base"]).iterdir())
    assert held == [f"rank-{r:05d}" for r in range(world)], held
    assert sorted(p.name for p in Path(directory).glob("chain-*")) == [manifest["base"]]
    sc.load_sharded_checkpoint(sharded, directory)
    npu_dist.finish_rank("cpu", None, rank)
