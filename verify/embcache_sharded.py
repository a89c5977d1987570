"""One rank of the row-wise sharded EmbCache tests (test_embcache_sharded.py on npu ranks;
tests/embcache/test_sharded.py on CPU ranks): trains the sharded collection and, on every rank,
the unsharded collection fed every rank's batch (the reference), then compares each step's
outputs, and every row with its optimiser state."""

from __future__ import annotations

import os
import sys
from typing import Any

import npu_dist
import torch
import torch.distributed as dist

# layout -> (table -> dim, table -> features). "toy": two tables, one of them fed by two
# features; "dlrm": DLRM's 26 sparse features, a table of D = 64 each.
LAYOUTS = {
    "toy": ({"t0": 16, "t1": 8}, {"t0": ["a", "b"], "t1": ["c"]}),
    "dlrm": ({f"t{i}": 64 for i in range(26)}, {f"t{i}": [f"cat_{i}"] for i in range(26)}),
}


# (rtol, atol) of the comparisons. Each owner pools its ids of a bag and the bag's rank adds
# the partial sums: float32 sums in another order than the reference's one sum per bag. At the
# DLRM shape (52,000 ids a rank per step, 4 Adagrad steps) that moved 1 of 1,703,936 outputs
# by 1.6e-6 (3.3e-5 relative to a small value), past the toy tolerance.
TOLERANCE = {"toy": (1e-5, 1e-6), "dlrm": (1e-4, 1e-5)}


def tables(layout: str = "toy", **options: Any) -> list[Any]:
    from torchrec_embcache import EmbCacheEmbeddingBagConfig

    dims, features = LAYOUTS[layout]
    return [
        EmbCacheEmbeddingBagConfig(
            name=t, embedding_dim=d, num_embeddings=1, feature_names=features[t], **options
        )
        for t, d in dims.items()
    ]


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
    """npu: the device group is hccl and the host group a gloo group of the same ranks; cpu:
    one gloo group serves both. ``cache_slots``: each rank's tables keep that many rows in a
    device cache (the reference keeps every row on the host). ``dmp``: the sharded collection
    comes from DistributedModelParallel, planned by torchrec's planner, instead of being built
    by hand. ``policies``: admission (a row at an id's second sighting) and eviction (rows
    unseen for 2 steps) in every table, the reference's included."""
    import torchrec_embcache as ec
    from torchrec_embcache.sharded import RowWiseEmbCacheEmbeddingBagCollection

    provider, device = npu_dist.start_rank(rank, world, port, device_type)
    host = dist.new_group(backend="gloo") if device_type == "npu" else dist.group.WORLD
    opt = _opt(optimizer)
    options = {"optimizer": opt, "seed": 5, "device": device, "is_weighted": weighted}
    rules = {"admission": ec.Admission(2), "eviction": ec.Eviction(ttl_steps=2)} if policies else {}
    configs = tables(layout, cache_slots=cache_slots, **rules)
    if dmp:
        sharded = _through_dmp(configs, host, device, options)
    else:
        device_group = None if device_type == "cpu" else dist.group.WORLD
        sharded = RowWiseEmbCacheEmbeddingBagCollection(configs, host, device_group, **options)
    reference = ec.EmbCacheEmbeddingBagCollection(
        tables(layout, **rules), weighted, optimizer=opt, seed=5, device=torch.device("cpu")
    )
    for step in range(steps):
        batches = [batch(r, step, size, weighted, layout) for r in range(world)]
        got = sharded(batches[rank])
        want_all = reference(concat(batches))
        first = sum(b.stride() for b in batches[:rank])
        want = want_all.values()[first : first + batches[rank].stride()]
        rtol, atol = TOLERANCE[layout]
        torch.testing.assert_close(got.values().detach().cpu(), want.detach(), rtol=rtol, atol=atol)
        # Each rank's loss over its own bags; the reference's over all bags: the same gradients.
        (got.values() ** 2).sum().mul(0.5).backward()
        (want_all.values() ** 2).sum().mul(0.5).backward()
    compare_rows(sharded, reference, rank, world, host, TOLERANCE[layout])
    if policies:  # both policies acted somewhere (the counts are the reference's, summed)
        hosts = [bag.table.host for bag in sharded.local.embedding_bags.values()]
        mine = torch.tensor([sum(int(h.evicted_total) for h in hosts), len(hosts)])
        dist.all_reduce(mine, group=host)
        theirs = [bag.table.host for bag in reference.embedding_bags.values()]
        assert int(mine[0]) == sum(int(h.evicted_total) for h in theirs) > 0
    if cache_slots is not None:  # the cache was too small for every row: rows moved out
        tables_ = sharded.local.embedding_bags.values()
        assert any(bag.table.counters.rows_swapped_out for bag in tables_), "no row swapped"
    npu_dist.finish_rank(provider, report, rank)
    _exit_rank()


def _exit_rank() -> None:
    """Ends this rank's process once its work is checked. Not by returning: tearing a gloo
    group down at the end of the function deadlocked in one run of ten (py-spy: the group's
    destructor, holding the GIL, joins its worker thread, which is freeing a finished
    collective's tensor and waits for the GIL). Everything that matters is done: exit now."""
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def compare_rows(
    sharded: Any,
    reference: Any,
    rank: int,
    world: int,
    host: Any,
    tolerance: tuple[float, float] = TOLERANCE["toy"],
) -> None:
    """Every row this rank holds equals the reference's row of the id; the ranks together hold
    every id the reference holds, each in the rank its bucket names."""
    held = 0
    for name, bag in sharded.local.embedding_bags.items():
        mine = bag.table.export()
        theirs = reference.embedding_bags[name].table.export()
        index = {int(i): k for k, i in enumerate(theirs["ids"].tolist())}
        ids = mine["ids"]
        assert bool((sharded.bucket_map.rank_of(ids) == rank).all()), name
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
        counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(counts, torch.tensor([ids.numel()]), group=host)
        assert sum(int(c) for c in counts) == theirs["ids"].numel(), name
        held += ids.numel()
    assert held > 0


class _Sparse(torch.nn.Module):
    def __init__(self, collection: torch.nn.Module) -> None:
        super().__init__()
        self.sparse = collection

    def forward(self, kjt: Any) -> Any:
        return self.sparse(kjt)


def _through_dmp(configs: list[Any], host: Any, device: torch.device, options: dict) -> Any:
    """The collection built on meta inside a model, planned by torchrec's planner and sharded
    by DistributedModelParallel with the EmbCache sharder; returns the rank's sharded module."""
    import torchrec_embcache as ec
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.types import ShardingEnv
    from torchrec_embcache.sharded import (
        EmbCacheEmbeddingBagCollectionSharder,
        RowWiseEmbCacheEmbeddingBagCollection,
    )

    model = _Sparse(
        ec.EmbCacheEmbeddingBagCollection(
            configs,
            options["is_weighted"],
            torch.device("meta"),
            optimizer=options["optimizer"],
            seed=options["seed"],
        )
    )
    sharder = EmbCacheEmbeddingBagCollectionSharder(ShardingEnv.from_process_group(host))
    world = dist.get_world_size()
    topology = Topology(world_size=world, local_world_size=world, compute_device=device.type)
    plan = EmbeddingShardingPlanner(topology=topology).collective_plan(model, [sharder])
    dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])
    sharded = dmp.module.sparse
    assert isinstance(sharded, RowWiseEmbCacheEmbeddingBagCollection), type(sharded)
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
        (want_all.values() ** 2).sum().mul(0.5).backward()
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
) -> None:
    """``save``: 3 steps on ``save_world`` ranks, a full sharded checkpoint after the second
    and an incremental one after the third. ``load``: a fresh collection on ``world`` ranks
    loads it (buckets move when the world changed) and trains 2 more steps: outputs and rows
    equal one unsharded collection trained on all 5 steps. ``refuse``: the load must fail on
    every rank with ``refusal`` in the message, and leave the tables as they were."""
    import torchrec_embcache as ec
    from torchrec_embcache.sharded import RowWiseEmbCacheEmbeddingBagCollection
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint,
    )

    provider, device = npu_dist.start_rank(rank, world, port, device_type)
    host = dist.new_group(backend="gloo") if device_type == "npu" else dist.group.WORLD
    device_group = None if device_type == "cpu" else dist.group.WORLD
    options = {"optimizer": _opt("adagrad"), "seed": 5, "device": device}
    sharded = RowWiseEmbCacheEmbeddingBagCollection(tables(), host, device_group, **options)
    reference = ec.EmbCacheEmbeddingBagCollection(tables(), optimizer=_opt("adagrad"), seed=5)
    worlds = [save_world] * 3 + [world] * 2
    if phase == "save":
        _train(sharded, reference, rank, worlds, range(2))
        save_sharded_checkpoint(sharded, directory)
        _train(sharded, reference, rank, worlds, range(2, 3))
        save_sharded_checkpoint(sharded, directory, incremental=True)
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
    _exit_rank()
