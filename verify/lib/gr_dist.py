"""The GR model of gr_model.py trained two ways from the same initial state on the same batches:
sharded by DistributedModelParallel over npu processes on hccl (``gr_worker``, one rank each),
and unsharded on the CPU (``train_on_cpu``, the reference test_gr_model.py compares with).

Both step as DMP does: the gradient of the mean over ranks of each rank's loss (TorchRec
divides the embedding gradients coming back through its collectives by the world size, DDP
averages the dense ones), SGD on every parameter: fbgemm's fused EXACT_SGD on the sharded
tables, torch's SGD on the rest and on the whole CPU model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from gr_model import GenerativeRecommender, initial_state, user_batch
from npu_dist import finish_rank, fused_params, start_rank

STEPS = 10
EMBEDDING_LR = 0.5  # hot rows move by up to ~0.2 in 10 steps, a few by 10^-3
DENSE_LR = 0.1
# The item table is split by rows over the ranks, the small action table lives on one rank.
SHARDING = {"t_item": "row_wise", "t_action": "table_wise"}


def _is_embedding(key: str) -> bool:
    return key.startswith("ec.")


# ---- the CPU reference ---------------------------------------------------------------------


def train_on_cpu(world_size: int) -> tuple[list[list[float]], dict[str, torch.Tensor]]:
    """Each step's loss of every rank ([step][rank]) and the parameters after ``STEPS`` steps."""
    model = GenerativeRecommender(torch.device("cpu"))
    model.load_state_dict(initial_state())
    named = dict(model.named_parameters())
    optimizer = torch.optim.SGD(
        [
            {"params": [p for k, p in named.items() if _is_embedding(k)], "lr": EMBEDDING_LR},
            {"params": [p for k, p in named.items() if not _is_embedding(k)], "lr": DENSE_LR},
        ]
    )
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        per_rank = [model(user_batch(rank, step).kjt()) for rank in range(world_size)]
        (sum(per_rank) / world_size).backward()  # type: ignore[operator]
        optimizer.step()
        losses.append([float(loss) for loss in per_rank])
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}


# ---- the sharded model ---------------------------------------------------------------------


def _plan(device_type: str, world_size: int) -> tuple[Any, Any]:
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    sharder = EmbeddingCollectionSharder(fused_params=fused_params("sgd", lr=EMBEDDING_LR))
    planner = EmbeddingShardingPlanner(
        topology=Topology(
            world_size=world_size, local_world_size=world_size, compute_device=device_type
        ),
        constraints={
            table: ParameterConstraints(sharding_types=[kind]) for table, kind in SHARDING.items()
        },
    )
    plan = planner.collective_plan(GenerativeRecommender(torch.device("meta")), [sharder])
    for module_plan in plan.plan.values():
        for table, ps in module_plan.items():  # type: ignore[attr-defined]
            assert ps.sharding_type == SHARDING[table], (table, ps.sharding_type)
    return plan, sharder


def local_pieces(state: dict[str, Any]) -> Iterator[tuple[str, int, int, torch.Tensor]]:
    """(key, first row, first column, tensor) of every parameter piece this rank holds: the
    local shards of sharded tables, whole replicas of the dense parameters."""
    from torch.distributed._shard.sharded_tensor import ShardedTensor

    for key, value in state.items():
        if not isinstance(value, ShardedTensor):
            yield key, 0, 0, value
            continue
        for shard in value.local_shards():
            r0, c0 = shard.metadata.shard_offsets
            yield key, r0, c0, shard.tensor


def matching_piece(full: torch.Tensor, r0: int, c0: int, shape: torch.Size) -> torch.Tensor:
    """The part of ``full`` a piece of ``shape`` at (r0, c0) holds (c0 unused for vectors)."""
    return full[tuple(slice(o, o + n) for o, n in zip((r0, c0)[: len(shape)], shape, strict=True))]


def _shard(device: torch.device, world_size: int) -> Any:
    """The sharded model holding ``initial_state()``."""
    from torchrec.distributed.model_parallel import DistributedModelParallel

    plan, sharder = _plan(device.type, world_size)
    dmp = DistributedModelParallel(
        GenerativeRecommender(torch.device("meta")), device=device, plan=plan, sharders=[sharder]
    )
    state = initial_state()
    loaded = set()
    with torch.no_grad():
        for key, r0, c0, local in local_pieces(dmp.state_dict()):
            local.copy_(matching_piece(state[key], r0, c0, local.shape))
            loaded.add(key)
    dense = {k for k in state if not _is_embedding(k)}
    assert dense <= loaded and len(loaded) > len(dense), f"loaded: {sorted(loaded)}"
    return dmp


def _dense_optimizer(dmp: Any) -> Any:
    """SGD on what the fused optimizer does not step (DMP's replicated dense parameters)."""
    from torchrec.optim.keyed import KeyedOptimizerWrapper
    from torchrec.optim.optimizers import in_backward_optimizer_filter

    return KeyedOptimizerWrapper(
        dict(in_backward_optimizer_filter(dmp.named_parameters())),
        lambda params: torch.optim.SGD(params, lr=DENSE_LR),
    )


def gr_worker(rank: int, world_size: int, port: int, device_type: str, out_dir: str) -> None:
    """One rank: trains ``STEPS`` steps on its own batches, then saves to
    ``out_dir/rank<r>.pt`` its losses and every parameter piece it holds; rank 0 also writes
    ``out_dir/fallbacks.json``, the aten operators the simulated device ran on the CPU."""
    import torch.distributed as dist

    provider, device = start_rank(rank, world_size, port, device_type)
    try:
        dmp = _shard(device, world_size)
        optimizer = _dense_optimizer(dmp)
        if provider == "npu_sim":
            import npu_sim

            npu_sim.reset_fallback_stats()  # count what training runs, not the setup
        losses = []
        for step in range(STEPS):
            optimizer.zero_grad()
            loss = dmp(user_batch(rank, step).kjt().to(device))
            loss.backward()
            optimizer.step()
            assert loss.device.type == device.type, loss.device
            losses.append(float(loss))
        pieces = [
            (key, r0, c0, local.detach().cpu().clone())
            for key, r0, c0, local in local_pieces(dmp.state_dict())
        ]
        torch.save({"losses": losses, "pieces": pieces}, Path(out_dir) / f"rank{rank}.pt")
        finish_rank(provider, str(Path(out_dir) / "fallbacks.json"), rank)
    finally:
        dist.destroy_process_group()
