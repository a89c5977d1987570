"""Worker for a model that regroups pooled features and has variable batch per feature,
trained under DistributedModelParallel through TrainPipelineSparseDist (test_regroup_vbe.py).

The model: an EmbeddingBagCollection of 8 tables (10^4 to 8 * 10^4 rows, D = 64; even tables
table-wise, odd tables row-wise, or every table table-row-wise across hosts), its pooled
output regrouped with ``KeyedTensor.regroup`` into two groups of four features, a tower per
group, an over arch to one logit and binary cross-entropy. Each rank's batch is 1024 samples
with variable batch per feature: feature f has its own number of distinct rows (a quarter to
all of the samples, ``stride_per_key_per_rank``) and ``inverse_indices`` maps the samples onto
them, as a user deduplicating per-user features does.

Every rank trains three steps through TrainPipelineSparseDist (fused exact SGD for the tables,
SGD for the dense part) and checks its logits at every step, and its shards of every table
after the last one, against the unsharded model trained on the CPU on every rank's batches.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from dlrm_dist import _local_pieces
from torch import nn
from torchrec.streamable import Pipelineable
from workloads import zipf_ids

TABLES = 8
DIM = 64
BATCH_PER_RANK = 1024
MAX_IDS_PER_BAG = 6
STEPS = 3
LEARNING_RATE = 0.05
GROUPS = [[f"f{t}" for t in range(0, TABLES, 2)], [f"f{t}" for t in range(1, TABLES, 2)]]
RTOL, ATOL = 1e-4, 1e-5


def rows(t: int) -> int:
    return 10_000 * (1 + t)


@dataclass
class VbeBatch(Pipelineable):
    sparse: Any  # KeyedJaggedTensor with variable batch per feature
    labels: torch.Tensor

    def to(self, device: torch.device, non_blocking: bool = False) -> VbeBatch:
        return VbeBatch(
            self.sparse.to(device, non_blocking=non_blocking),
            self.labels.to(device, non_blocking=non_blocking),
        )

    def record_stream(self, stream: Any) -> None:
        self.sparse.record_stream(stream)
        self.labels.record_stream(stream)

    def pin_memory(self) -> VbeBatch:
        return VbeBatch(self.sparse.pin_memory(), self.labels.pin_memory())


def make_batch(rank: int, step: int) -> VbeBatch:
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(104_729 * step + 31 * rank + 5)
    keys = [f"f{t}" for t in range(TABLES)]
    strides, lengths, values, inverse = [], [], [], []
    for t in range(TABLES):
        distinct = int(torch.randint(BATCH_PER_RANK // 4, BATCH_PER_RANK + 1, (1,), generator=g))
        strides.append([distinct])
        n = torch.randint(0, MAX_IDS_PER_BAG + 1, (distinct,), generator=g)
        lengths.append(n)
        values.append(zipf_ids(rows(t), int(n.sum()), g))
        # Every distinct row is some sample's, the rest of the samples repeat them.
        inv = torch.cat(
            [
                torch.randperm(distinct, generator=g),
                torch.randint(0, distinct, (BATCH_PER_RANK - distinct,), generator=g),
            ]
        )
        inverse.append(inv[torch.randperm(BATCH_PER_RANK, generator=g)])
    kjt = KeyedJaggedTensor(
        keys=keys,
        values=torch.cat(values),
        lengths=torch.cat(lengths),
        stride_per_key_per_rank=strides,
        inverse_indices=(keys, torch.stack(inverse)),
    )
    # All-zero labels keep every row's gradient terms of one sign (see dlrm_dist.make_batch).
    return VbeBatch(kjt, torch.zeros(BATCH_PER_RANK))


class RegroupModel(nn.Module):
    def __init__(self, device: torch.device) -> None:
        from torchrec.modules.embedding_configs import EmbeddingBagConfig
        from torchrec.modules.embedding_modules import EmbeddingBagCollection

        super().__init__()
        self.ebc = EmbeddingBagCollection(
            tables=[
                EmbeddingBagConfig(
                    name=f"t{t}", embedding_dim=DIM, num_embeddings=rows(t), feature_names=[f"f{t}"]
                )
                for t in range(TABLES)
            ],
            device=device,
        )
        dense = device if device.type != "meta" else torch.device("cpu")
        self.towers = nn.ModuleList(
            [nn.Linear(len(group) * DIM, 32, device=dense) for group in GROUPS]
        )
        self.over = nn.Linear(32 * len(GROUPS), 1, device=dense)

    def forward(self, batch: VbeBatch) -> tuple[torch.Tensor, torch.Tensor]:
        from torchrec.sparse.jagged_tensor import KeyedTensor

        pooled = self.ebc(batch.sparse)
        groups = KeyedTensor.regroup([pooled], GROUPS)
        # Indexed, not iterated: TrainPipelineSparseDist traces this forward with torch.fx,
        # where the regrouped list is a Proxy (a Proxy cannot be iterated).
        hidden = torch.cat([torch.relu(t(groups[i])) for i, t in enumerate(self.towers)], 1)
        logits = self.over(hidden).squeeze(1)
        loss = F.binary_cross_entropy_with_logits(logits, batch.labels)
        return loss, logits.detach()


def initial_state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(20250131)
    model = RegroupModel(torch.device("cpu"))
    state = {}
    for key, value in model.state_dict().items():
        state[key] = (torch.rand(value.shape, generator=g) - 0.5) * (0.2 if "ebc" in key else 0.5)
    return state


def reference(world_size: int, batches: list[list[VbeBatch]]) -> tuple[list, dict]:
    """The unsharded model on the CPU: each step sums the ranks' losses and takes the mean
    over ranks of both gradients: torchrec divides the embedding gradients coming back through
    its collectives by the world size (comm_ops.GRADIENT_DIVISION, on by default) and DDP
    averages the dense ones."""
    model = RegroupModel(torch.device("cpu"))
    model.load_state_dict(initial_state())
    tables = [p for n, p in model.named_parameters() if n.startswith("ebc.")]
    dense = [p for n, p in model.named_parameters() if not n.startswith("ebc.")]
    opt_tables = torch.optim.SGD(tables, lr=LEARNING_RATE / world_size)
    opt_dense = torch.optim.SGD(dense, lr=LEARNING_RATE / world_size)
    logits = []
    for per_rank in batches:
        opt_tables.zero_grad()
        opt_dense.zero_grad()
        total = torch.zeros(())
        step_logits = []
        for batch in per_rank:
            loss, out = model(batch)
            total = total + loss
            step_logits.append(out)
        total.backward()
        opt_tables.step()
        opt_dense.step()
        logits.append(step_logits)
    return logits, {k: v.detach().clone() for k, v in model.state_dict().items()}


def plan(world_size: int, local_world_size: int, layout: str) -> tuple[Any, Any]:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    def kind(t: int) -> str:
        if layout == "twrw":
            return "table_row_wise"
        return "table_wise" if t % 2 == 0 else "row_wise"

    sharder = EmbeddingBagCollectionSharder(
        fused_params={"optimizer": _exact_sgd(), "learning_rate": LEARNING_RATE}
    )
    planner = EmbeddingShardingPlanner(
        topology=Topology(
            world_size=world_size, local_world_size=local_world_size, compute_device="npu"
        ),
        constraints={
            f"t{t}": ParameterConstraints(sharding_types=[kind(t)]) for t in range(TABLES)
        },
    )
    return planner.collective_plan(RegroupModel(torch.device("meta")), [sharder]), sharder


def _exact_sgd() -> Any:
    from fbgemm_gpu.split_embedding_configs import EmbOptimType

    return EmbOptimType.EXACT_SGD


def train_and_check(rank: int, world_size: int, device: torch.device, layout: str) -> None:
    """The sharded model trained through TrainPipelineSparseDist against the reference; the
    process group is up and ``device`` is this rank's npu."""
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.train_pipeline import TrainPipelineSparseDist
    from torchrec.optim.keyed import KeyedOptimizerWrapper
    from torchrec.optim.optimizers import in_backward_optimizer_filter

    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    sharding_plan, sharder = plan(world_size, local_world_size, layout)
    batches = [[make_batch(r, s) for r in range(world_size)] for s in range(STEPS)]
    expected, final = reference(world_size, batches)

    dmp = DistributedModelParallel(
        RegroupModel(torch.device("meta")), device=device, plan=sharding_plan, sharders=[sharder]
    )
    state = initial_state()
    with torch.no_grad():
        loaded = [key for key, local, full in _local_pieces(dmp.state_dict(), state)]
        for _, local, full in _local_pieces(dmp.state_dict(), state):
            local.copy_(full)
    assert sum(".ebc." not in k and not k.startswith("ebc.") for k in loaded) >= 6, loaded
    optimizer = KeyedOptimizerWrapper(
        dict(in_backward_optimizer_filter(dmp.named_parameters())),
        lambda params: torch.optim.SGD(params, lr=LEARNING_RATE),
    )
    dmp.train()
    pipeline = TrainPipelineSparseDist(dmp, optimizer, device)
    loader = iter([per_rank[rank] for per_rank in batches])
    where = f"rank {rank}/{world_size} ({layout})"
    for step in range(STEPS):
        logits = pipeline.progress(loader)
        assert logits.device.type == device.type, logits.device
        torch.testing.assert_close(
            logits.cpu(),
            expected[step][rank],
            rtol=RTOL,
            atol=ATOL,
            msg=lambda m, s=step: f"{where}: logits at step {s}: {m}",
        )
    tables = 0
    for key, local, want in _local_pieces(dmp.state_dict(), final):
        torch.testing.assert_close(
            local.detach().cpu(),
            want,
            rtol=RTOL,
            atol=ATOL,
            msg=lambda m, key=key: f"{where}: {key} after {STEPS} steps: {m}",
        )
        tables += "embedding_bags" in key
    assert tables > 0, f"{where}: no table shard compared"


def spawned_rank(rank: int, world_size: int, port: int, layout: str) -> None:
    """A rank of ``npu_dist.spawn_ranks`` (one host)."""
    import torch.distributed as dist
    from npu_dist import finish_rank, start_rank

    provider, device = start_rank(rank, world_size, port, "npu")
    try:
        train_and_check(rank, world_size, device, layout)
        finish_rank(provider, None, rank)
    finally:
        dist.destroy_process_group()


def torchrun_main() -> None:
    """A rank started by torchrun (``--nnodes 2 --nproc-per-node 2`` on localhost): device
    ``npu:LOCAL_RANK``; table-row-wise sharding spans the two hosts."""
    import torch.distributed as dist
    from npu_dist import import_npu_provider

    import_npu_provider()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    assert os.environ["LOCAL_WORLD_SIZE"] == "2", os.environ["LOCAL_WORLD_SIZE"]
    torch.npu.set_device(local_rank)  # type: ignore[attr-defined]
    dist.init_process_group("hccl")
    train_and_check(rank, world, torch.device("npu", local_rank), "twrw")
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # see npu_dist._rank_main: no gloo teardown at interpreter exit


if __name__ == "__main__":
    torchrun_main()
