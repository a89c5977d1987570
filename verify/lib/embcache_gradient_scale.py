"""Worker processes: the gradient scale of the EmbCache and hybrid sharded collections against
torchrec's own sharded EmbeddingBagCollection, trained side by side on the same batches.

torchrec divides every embedding gradient that comes back through its output distribution by
the world size (``torchrec.distributed.comm_ops.GRADIENT_DIVISION``, on by default, read at
backward time), and DDP averages the dense gradients: a job trains on the mean of its ranks'
losses. A collection that summed instead would train its tables with W times the learning
rate. Each rank here trains torchrec's EBC (sharded table-wise by DMP with fused SGD: SGD, as
Adagrad and Adam hide a gradient's scale) and the package's collection (the same tables,
initial rows and optimiser) on its own batch, and checks the outputs of every step and,
after the last, every row; once with the flag on (the default) and once with it off.

Run on CPU ranks (gloo) by tests/embcache/test_gradient_scale.py and
tests/hybrid_torchrec/test_gradient_scale.py.
"""

from __future__ import annotations

from typing import Any

import npu_dist
import torch
import torch.distributed as dist

ROWS = 32
DIMS = {"t0": 8, "t1": 4}
FEATURES = {"t0": ["f0"], "t1": ["f1", "f2"]}  # t1: two features share the table
KEYS = [f for t in DIMS for f in FEATURES[t]]
BATCH = 6  # torchrec needs one batch size on every rank
LR = 0.1
STEPS = 3


def batch(rank: int, step: int) -> Any:
    """Ids in [0, ROWS) (torchrec's rows), 0 to 3 per bag, repeats within and across ranks."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(1000 * step + rank)
    lengths = torch.randint(0, 4, (len(KEYS) * BATCH,), generator=g)
    values = torch.randint(0, ROWS, (int(lengths.sum()),), generator=g)
    return KeyedJaggedTensor.from_lengths_sync(keys=KEYS, values=values, lengths=lengths)


def probe() -> Any:
    """Every id once per feature, one bag each: pooled outputs are the rows themselves."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    ids = torch.arange(ROWS).repeat(len(KEYS))
    return KeyedJaggedTensor.from_lengths_sync(
        keys=KEYS, values=ids, lengths=torch.ones(len(KEYS) * ROWS, dtype=torch.int64)
    )


def torchrec_dmp(world: int, rows: dict[str, torch.Tensor]) -> Any:
    """torchrec's EBC sharded by DMP: t0 table-wise on rank 0, t1 on the last rank (gloo has
    no reduce-scatter, so torchrec's row-wise output distribution does not run on CPU
    ranks), fused SGD, the weights set to ``rows``."""
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan, table_wise
    from torchrec.distributed.types import ShardingPlan

    configs = [
        EmbeddingBagConfig(name=t, embedding_dim=d, num_embeddings=ROWS, feature_names=FEATURES[t])
        for t, d in DIMS.items()
    ]
    module = EmbeddingBagCollection(configs, device=torch.device("meta"))
    sharder = EmbeddingBagCollectionSharder(
        fused_params={"optimizer": EmbOptimType.EXACT_SGD, "learning_rate": LR}
    )
    per_table = {
        "t0": table_wise(rank=0),
        "t1": table_wise(rank=world - 1),
    }
    module_plan = construct_module_sharding_plan(
        module, per_table, local_size=world, world_size=world, device_type="cpu", sharder=sharder
    )
    dmp = DistributedModelParallel(
        module,
        device=torch.device("cpu"),
        plan=ShardingPlan({"": _fused(module_plan)}),
        sharders=[sharder],  # type: ignore[list-item]
    )
    with torch.no_grad():
        for table, weight in _torchrec_weights(dmp).items():
            for shard in weight.local_shards():
                r0, c0 = shard.metadata.shard_offsets
                n, d = shard.metadata.shard_sizes
                shard.tensor.copy_(rows[table][r0 : r0 + n, c0 : c0 + d])
    return dmp


def _fused(module_plan: Any) -> Any:
    """The plan with fused kernels: on CPU torchrec's plan helpers pick the dense kernel,
    which has no fused optimiser (the tables would never move)."""
    for sharding in module_plan.values():
        sharding.compute_kernel = "fused"
    return module_plan


def _torchrec_weights(dmp: Any) -> dict[str, Any]:
    out = {}
    for key, value in dmp.state_dict().items():
        for table in DIMS:
            if key.endswith(f"embedding_bags.{table}.weight"):
                out[table] = value
    return out


def _pooled(result: Any) -> Any:
    """A KeyedTensor, or the awaitable DMP returns."""
    return result.wait() if hasattr(result, "wait") and not hasattr(result, "values") else result


def _check(got: Any, want: Any, what: str) -> None:
    got, want = _pooled(got), _pooled(want)
    assert got.keys() == want.keys(), (what, got.keys(), want.keys())
    torch.testing.assert_close(
        got.values().detach(), want.values().detach(), rtol=1e-5, atol=1e-6, msg=what
    )


def side_by_side(rank: int, world: int, build: Any, rows: dict[str, torch.Tensor]) -> None:
    """STEPS training steps of torchrec's DMP and of ``build()`` on this rank's batches
    (outputs compared every step), then the rows compared through :func:`probe`."""
    theirs = torchrec_dmp(world, rows)
    ours = build()
    for step in range(STEPS):
        kjt = batch(rank, step)
        want, got = _pooled(theirs(kjt)), _pooled(ours(kjt))
        _check(got, want, f"rank {rank}, step {step}: outputs")
        want.values().square().sum().mul(0.5).backward()
        got.values().square().sum().mul(0.5).backward()
    # In training (ids not seen yet get their rows), with a zero loss (SGD moves nothing).
    want, got = _pooled(theirs(probe())), _pooled(ours(probe()))
    _check(got, want, f"rank {rank}: rows after {STEPS} steps")
    (want.values().sum() + got.values().sum()).mul(0).backward()


def _both_flags(rank: int, world: int, build: Any, rows: dict[str, torch.Tensor]) -> None:
    from torchrec.distributed import comm_ops

    assert comm_ops.get_gradient_division(), "torchrec's default is to divide"
    side_by_side(rank, world, build, rows)
    comm_ops.set_gradient_division(False)
    try:
        side_by_side(rank, world, build, rows)
    finally:
        comm_ops.set_gradient_division(True)


def run_embcache(rank: int, world: int, port: int) -> None:
    """The EmbCache collection: t0 row-wise by bucket, t1 table-wise on the last rank."""
    import torchrec_embcache as ec
    from torchrec_embcache.sharded import Placement, ShardedEmbCacheEmbeddingBagCollection

    npu_dist.start_rank(rank, world, port, "cpu")
    configs = [
        ec.EmbCacheEmbeddingBagConfig(
            name=t, embedding_dim=d, num_embeddings=ROWS, feature_names=FEATURES[t]
        )
        for t, d in DIMS.items()
    ]
    # The rows EmbCache starts from (a function of the seed and the id, wherever the id
    # lives), read from an unsharded collection of the same seed.
    start = ec.EmbCacheEmbeddingBagCollection(configs, optimizer=ec.SparseSGD(lr=LR), seed=7)
    start(probe()).values().sum().mul(0).backward()  # the rows are made, SGD moves none
    rows = {}
    for t in DIMS:
        exported = start.embedding_bags[t].table.export()
        assert exported["ids"].tolist() == list(range(ROWS))
        rows[t] = exported["weight"].float()

    def build() -> Any:
        return ShardedEmbCacheEmbeddingBagCollection(
            configs,
            dist.group.WORLD,
            placements={"t1": Placement.table_wise(world - 1, world)},
            optimizer=ec.SparseSGD(lr=LR),
            seed=7,
        )

    _both_flags(rank, world, build, rows)
    dist.barrier()


def run_hybrid(rank: int, world: int, port: int) -> None:
    """The hybrid Hash collection sharded by DMP with the hybrid sharders: t0 table-wise on
    rank 0, t1 column-wise. Its rows go to ids in order of first sighting, so every row
    starts as the same vector (per table), as do torchrec's."""
    import hybrid_torchrec as hy
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from hybrid_torchrec.distributed import get_default_hybrid_sharders
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.sharding_plan import (
        column_wise,
        construct_module_sharding_plan,
        table_wise,
    )
    from torchrec.distributed.types import ShardingEnv, ShardingPlan

    npu_dist.start_rank(rank, world, port, "cpu")
    host_env = ShardingEnv.from_process_group(dist.new_group(backend="gloo"))
    rows = {t: (torch.arange(d) + 1).float().div(10).expand(ROWS, d) for t, d in DIMS.items()}

    def build() -> Any:
        configs = [
            hy.HashEmbeddingBagConfig(
                name=t, embedding_dim=d, num_embeddings=ROWS, feature_names=FEATURES[t]
            )
            for t, d in DIMS.items()
        ]
        module = hy.HashEmbeddingBagCollection(configs, device=torch.device("meta"))
        fused = {"optimizer": EmbOptimType.EXACT_SGD, "learning_rate": LR}
        sharders = get_default_hybrid_sharders(host_env, fused_params=fused)
        sharder = next(s for s in sharders if s.module_type is hy.HashEmbeddingBagCollection)
        per_table = {
            "t0": table_wise(rank=0),
            "t1": column_wise(ranks=list(range(world))),
        }
        module_plan = construct_module_sharding_plan(
            module,
            per_table,
            local_size=world,
            world_size=world,
            device_type="cpu",
            sharder=sharder,  # type: ignore[arg-type]
        )
        dmp = DistributedModelParallel(
            module,
            device=torch.device("cpu"),
            plan=ShardingPlan({"": _fused(module_plan)}),
            sharders=sharders,
        )
        with torch.no_grad():
            for table, weight in _torchrec_weights(dmp).items():
                for shard in weight.local_shards():
                    c0, d = shard.metadata.shard_offsets[1], shard.metadata.shard_sizes[1]
                    shard.tensor.copy_(rows[table][: shard.tensor.shape[0], c0 : c0 + d])
        return dmp

    _both_flags(rank, world, build, rows)
    dist.barrier()


# ---- one rank fails in a step every rank takes: every rank raises the same error ----------

TIMEOUT_S = 60  # the process groups' timeout: a rank left waiting fails the test with it


def _start_with_timeout(rank: int, world: int, port: int) -> None:
    from datetime import timedelta

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=TIMEOUT_S),
    )


def _expect_same_error(rank: int, world: int, step: Any, kind: type, needle: str) -> None:
    """``step()`` raises ``kind`` on every rank, with one message (compared across ranks)
    naming ``needle``; a rank waiting for another instead fails with gloo's timeout."""
    try:
        step()
    except kind as exc:
        message = str(exc)
    else:
        raise AssertionError(f"rank {rank}: the step did not fail")
    assert needle in message, message
    everyone: list[Any] = [None] * world
    dist.all_gather_object(everyone, message)
    assert all(m == message for m in everyone), everyone


def run_embcache_rank_fails(rank: int, world: int, port: int) -> None:
    """A table-wise table on the last rank whose device cache (8 slots) is too small for the
    batch's 12 distinct ids of it: the lookups fail on that rank only."""
    import torchrec_embcache as ec
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    from torchrec_embcache.sharded import Placement, ShardedEmbCacheEmbeddingBagCollection

    _start_with_timeout(rank, world, port)
    configs = [
        ec.EmbCacheEmbeddingBagConfig(
            name="small", embedding_dim=4, num_embeddings=64, feature_names=["f"], cache_slots=8
        ),
        ec.EmbCacheEmbeddingBagConfig(
            name="rows", embedding_dim=4, num_embeddings=64, feature_names=["g"]
        ),
    ]
    sharded = ShardedEmbCacheEmbeddingBagCollection(
        configs,
        dist.group.WORLD,
        placements={"small": Placement.table_wise(world - 1, world)},
        optimizer=ec.SparseSGD(lr=LR),
    )
    kjt = KeyedJaggedTensor.from_lengths_sync(
        keys=["f", "g"],
        values=torch.arange(12 * 2) + 100 * rank,
        lengths=torch.tensor([6, 6, 6, 6]),
    )
    _expect_same_error(
        rank, world, lambda: sharded(kjt), ec.CacheCapacityError, f"rank(s) [{world - 1}]"
    )
    # A plan torchrec's planner refuses (EmbCache tables are not sharded column-wise): rank 0
    # plans, and the refusal reaches every rank.
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints
    from torchrec.distributed.types import ShardingEnv
    from torchrec_embcache.sharded import EmbCacheEmbeddingBagCollectionSharder, collective_plan

    planner = EmbeddingShardingPlanner(
        topology=Topology(world_size=world, compute_device="cpu"),
        constraints={"rows": ParameterConstraints(sharding_types=["column_wise"])},
    )
    module = ec.EmbCacheEmbeddingBagCollection(configs, device=torch.device("meta"))
    sharder = EmbCacheEmbeddingBagCollectionSharder(
        ShardingEnv.from_process_group(dist.group.WORLD)
    )
    _expect_same_error(
        rank,
        world,
        lambda: collective_plan(planner, module, [sharder]),
        RuntimeError,
        "planning on rank 0 of",
    )
    dist.barrier()


def run_hybrid_rank_fails(rank: int, world: int, port: int) -> None:
    """A Hash table table-wise on the last rank with 8 rows and no eviction, fed 12 distinct
    ids: its mapping fails (CapacityError) on that rank only."""
    import hybrid_torchrec as hy
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from hybrid_torchrec.distributed import get_default_hybrid_sharders
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan, table_wise
    from torchrec.distributed.types import ShardingEnv, ShardingPlan
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    _start_with_timeout(rank, world, port)
    host_env = ShardingEnv.from_process_group(dist.new_group(backend="gloo"))
    configs = [
        hy.HashEmbeddingBagConfig(
            name="small", embedding_dim=4, num_embeddings=8, feature_names=["f"]
        ),
        hy.HashEmbeddingBagConfig(
            name="big", embedding_dim=4, num_embeddings=64, feature_names=["g"]
        ),
    ]
    module = hy.HashEmbeddingBagCollection(configs, device=torch.device("meta"))
    fused = {"optimizer": EmbOptimType.EXACT_SGD, "learning_rate": LR}
    sharders = get_default_hybrid_sharders(host_env, fused_params=fused)
    sharder = next(s for s in sharders if s.module_type is hy.HashEmbeddingBagCollection)
    module_plan = construct_module_sharding_plan(
        module,
        {"small": table_wise(rank=world - 1), "big": table_wise(rank=0)},
        local_size=world,
        world_size=world,
        device_type="cpu",
        sharder=sharder,  # type: ignore[arg-type]
    )
    dmp = DistributedModelParallel(
        module,
        device=torch.device("cpu"),
        plan=ShardingPlan({"": _fused(module_plan)}),
        sharders=sharders,
    )
    kjt = KeyedJaggedTensor.from_lengths_sync(
        keys=["f", "g"],
        values=torch.arange(12 * 2) + 100 * rank,
        lengths=torch.tensor([6, 6, 6, 6]),
    )
    _expect_same_error(
        rank, world, lambda: dmp(kjt).wait(), hy.CapacityError, f"rank(s) [{world - 1}]"
    )
    # A plan the planner refuses (no data-parallel Hash tables): rank 0 plans, and the
    # refusal reaches every rank.
    from hybrid_torchrec.distributed import collective_plan
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    planner = EmbeddingShardingPlanner(
        topology=Topology(world_size=world, compute_device="cpu"),
        constraints={"big": ParameterConstraints(sharding_types=["data_parallel"])},
    )
    module = hy.HashEmbeddingBagCollection(configs, device=torch.device("meta"))
    _expect_same_error(
        rank,
        world,
        lambda: collective_plan(planner, module, sharders),
        RuntimeError,
        "planning on rank 0 of",
    )
    dist.barrier()
