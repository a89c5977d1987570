"""Worker processes for DistributedModelParallel at the size users train (test_npu_dmp_at_scale).

Each rank trains a DLRM-shaped model: 13 dense features through a dense arch, 26 sparse
features (tables of 10^4 to 10^5 rows, D = 64) in two EmbeddingBagCollections, one unweighted
(half the tables sum-pooled, half mean-pooled) and one weighted (per-sample weights, sum), an
over arch to one logit and a binary cross-entropy loss. The batch is 1024 samples per rank with
Zipf-distributed ids (hot rows repeat within and across ranks).

All tables are sharded one way (table-, row-, column-, table-row-wise or data parallel) with the
fused optimizer that sharding is tested with, and every rank trains three steps, with a plain
loop or with torchrec's TrainPipelineSparseDist. Every rank also trains the unsharded model on
the CPU on the batches of all ranks, with the optimizers written out here, and checks its
logits at every step and its shards (and replicas) of every table afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from npu_dist import finish_rank, fused_params, start_rank
from torch import nn
from torchrec.streamable import Pipelineable
from workloads import zipf_ids

DENSE_FEATURES = 13
SPARSE_FEATURES = 26
WEIGHTED_FEATURES = 8
DIM = 64
BATCH_PER_RANK = 1024
MAX_IDS_PER_BAG = 8
STEPS = 3
LEARNING_RATE = 0.05
DENSE_LEARNING_RATE = 0.05
EPS = 1e-6
BETA1, BETA2 = 0.9, 0.999
# Float32 sums of up to thousands of gradient rows (hot ids) in another order than the CPU
# reference, and mean pooling's divisor (TorchRec divides by length + 1e-6), over three steps.
RTOL, ATOL = 1e-4, 1e-5

# Sharding type -> the fused optimizer its tables train with (data-parallel tables are dense
# parameters: DDP all-reduces their gradients and they step with the dense SGD).
OPTIMIZERS = {
    "table_wise": "sgd",
    "row_wise": "adagrad",
    "column_wise": "adam",
    "table_row_wise": "rowwise_adagrad",
    "data_parallel": "dense_sgd",
}


def table_specs() -> dict[str, tuple[int, bool, str]]:
    """name -> (rows, weighted, pooling): 10^4 to 10^5 rows, geometrically spaced."""
    specs = {}
    for t in range(SPARSE_FEATURES):
        rows = round(10 ** (4 + t / (SPARSE_FEATURES - 1)))
        weighted = t >= SPARSE_FEATURES - WEIGHTED_FEATURES
        pooling = "sum" if weighted or t % 2 == 0 else "mean"
        specs[f"t{t}"] = (rows, weighted, pooling)
    return specs


@dataclass
class DlrmBatch(Pipelineable):
    """What the data loader yields: the pipeline moves it to the device and records its use on
    the pipeline's streams."""

    dense: torch.Tensor
    sparse: Any  # KeyedJaggedTensor, unweighted features
    weighted: Any  # KeyedJaggedTensor with per-sample weights
    labels: torch.Tensor

    def to(self, device: torch.device, non_blocking: bool = False) -> DlrmBatch:
        return DlrmBatch(
            self.dense.to(device, non_blocking=non_blocking),
            self.sparse.to(device, non_blocking=non_blocking),
            self.weighted.to(device, non_blocking=non_blocking),
            self.labels.to(device, non_blocking=non_blocking),
        )

    def record_stream(self, stream: Any) -> None:
        self.dense.record_stream(stream)
        self.sparse.record_stream(stream)
        self.weighted.record_stream(stream)
        self.labels.record_stream(stream)

    def pin_memory(self) -> DlrmBatch:
        return DlrmBatch(
            self.dense.pin_memory(),
            self.sparse.pin_memory(),
            self.weighted.pin_memory(),
            self.labels.pin_memory(),
        )


def make_batch(rank: int, step: int) -> DlrmBatch:
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(7919 * step + rank)
    kjts = {}
    for weighted in (False, True):
        names = [n for n, (_, w, _) in table_specs().items() if w == weighted]
        lengths = torch.randint(0, MAX_IDS_PER_BAG + 1, (len(names), BATCH_PER_RANK), generator=g)
        values = torch.cat(
            [
                zipf_ids(table_specs()[name][0], int(n), g)
                for name, n in zip(names, lengths.sum(1).tolist(), strict=True)
            ]
        )
        kjts[weighted] = KeyedJaggedTensor.from_lengths_sync(
            keys=[f"f_{n}" for n in names],
            values=values,
            lengths=lengths.view(-1),
            weights=torch.rand(values.numel(), generator=g) + 0.5 if weighted else None,
        )
    return DlrmBatch(
        dense=torch.randn(BATCH_PER_RANK, DENSE_FEATURES, generator=g),
        sparse=kjts[False],
        weighted=kjts[True],
        # All-zero labels: every sample's loss gradient (sigmoid(z) - 0) is positive, so the
        # gradient of an embedding row sums terms of one sign (per dimension) and float32 sums in
        # another order than the reference's stay within a few ulps. With random labels, rows
        # whose terms cancel to about zero make exact Adagrad's and Adam's update,
        # lr * g / (|g| + eps), depend on the summation order itself.
        labels=torch.zeros(BATCH_PER_RANK),
    )


class ScaleDLRM(nn.Module):
    def __init__(self, device: torch.device) -> None:
        from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
        from torchrec.modules.embedding_modules import EmbeddingBagCollection

        super().__init__()

        def configs(weighted: bool) -> list[EmbeddingBagConfig]:
            return [
                EmbeddingBagConfig(
                    name=name,
                    num_embeddings=rows,
                    embedding_dim=DIM,
                    feature_names=[f"f_{name}"],
                    pooling=PoolingType.SUM if pooling == "sum" else PoolingType.MEAN,
                )
                for name, (rows, w, pooling) in table_specs().items()
                if w == weighted
            ]

        dense_device = torch.device("cpu") if device.type == "meta" else device
        self.dense_arch = nn.Sequential(
            nn.Linear(DENSE_FEATURES, DIM, device=dense_device), nn.ReLU()
        )
        self.ebc = EmbeddingBagCollection(tables=configs(False), device=device)
        self.wbc = EmbeddingBagCollection(tables=configs(True), is_weighted=True, device=device)
        self.over_arch = nn.Linear(DIM * (1 + SPARSE_FEATURES), 1, device=dense_device)
        self._keys = [f"f_{n}" for n, (_, w, _) in table_specs().items() if not w]
        self._wkeys = [f"f_{n}" for n, (_, w, _) in table_specs().items() if w]

    def forward(self, batch: DlrmBatch) -> tuple[torch.Tensor, torch.Tensor]:
        dense = self.dense_arch(batch.dense)
        # By key, never KeyedTensor.values(): a sharded collection orders its keys by pooling
        # type, the unsharded one by table.
        pooled = self.ebc(batch.sparse).to_dict()
        weighted = self.wbc(batch.weighted).to_dict()
        features = [dense] + [pooled[k] for k in self._keys] + [weighted[k] for k in self._wkeys]
        logits = self.over_arch(torch.cat(features, dim=1)).squeeze(1)
        return F.binary_cross_entropy_with_logits(logits, batch.labels), logits.detach()


def initial_state() -> dict[str, torch.Tensor]:
    """The same initial parameters in every process."""
    g = torch.Generator().manual_seed(20261123)
    state = {
        f"{'wbc' if w else 'ebc'}.embedding_bags.{name}.weight": torch.rand(rows, DIM, generator=g)
        - 0.5
        for name, (rows, w, _) in table_specs().items()
    }
    # Shapes only: the tables of a meta model take no memory.
    for key, value in ScaleDLRM(torch.device("meta")).state_dict().items():
        if key not in state:
            state[key] = (torch.rand(value.shape, generator=g) - 0.5) * 0.2
    return state


# ---- the CPU reference ---------------------------------------------------------------------


class Reference:
    """The unsharded model on the CPU, stepping as DMP does: the gradient of the mean over ranks
    of each rank's loss (TorchRec divides embedding gradients by the world size, DDP averages
    dense ones), the fused optimizer on the tables, SGD on the dense parameters."""

    def __init__(self, optimizer: str, world_size: int) -> None:
        self.model = ScaleDLRM(torch.device("cpu"))
        self.model.load_state_dict(initial_state())
        self.optimizer = optimizer
        self.world_size = world_size
        self.state: dict[str, list[torch.Tensor]] = {}
        self.iteration = 0

    def step(self, batches: list[DlrmBatch]) -> list[torch.Tensor]:
        self.model.zero_grad()
        losses, logits = zip(*(self.model(b) for b in batches), strict=True)
        (sum(losses) / self.world_size).backward()  # type: ignore[union-attr]
        self.iteration += 1
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                if ".embedding_bags." in name and self.optimizer != "dense_sgd":
                    touched = self._touched(name, batches)
                    self._fused(name, p, p.grad, touched)
                else:
                    p -= DENSE_LEARNING_RATE * p.grad
        return list(logits)

    @staticmethod
    def _touched(param: str, batches: list[DlrmBatch]) -> torch.Tensor:
        table = param.split(".")[-2]
        kjt_of = "weighted" if param.startswith("wbc") else "sparse"
        ids = [getattr(b, kjt_of)[f"f_{table}"].values() for b in batches]
        return torch.unique(torch.cat(ids))

    def _fused(self, name: str, w: torch.Tensor, g: torch.Tensor, touched: torch.Tensor) -> None:
        lr = LEARNING_RATE
        if self.optimizer == "sgd":
            w -= lr * g
            return
        if self.optimizer == "adagrad":
            (acc,) = self.state.setdefault(name, [torch.zeros_like(w)])
            acc += g * g
            w -= lr * g / (acc.sqrt() + EPS)
            return
        if self.optimizer == "rowwise_adagrad":
            (acc,) = self.state.setdefault(name, [torch.zeros(w.shape[0], 1)])
            acc += (g * g).mean(dim=1, keepdim=True)
            w -= lr * g / (acc.sqrt() + EPS)
            return
        # Adam on the rows the step touched (fbgemm's sparse Adam leaves the rest alone).
        m1, m2 = self.state.setdefault(name, [torch.zeros_like(w), torch.zeros_like(w)])
        gt = g[touched]
        m1[touched] = BETA1 * m1[touched] + (1 - BETA1) * gt
        m2[touched] = BETA2 * m2[touched] + (1 - BETA2) * gt * gt
        m_hat = m1[touched] / (1 - BETA1**self.iteration)
        v_hat = m2[touched] / (1 - BETA2**self.iteration)
        w[touched] -= lr * m_hat / (v_hat.sqrt() + EPS)


# ---- the sharded model ----------------------------------------------------------------------


def _fused_params(optimizer: str) -> dict[str, Any] | None:
    if optimizer == "dense_sgd":
        return None
    return fused_params(optimizer, lr=LEARNING_RATE, eps=EPS)


def _plan(sharding_type: str, device_type: str, world_size: int) -> tuple[Any, Any]:
    """Every table sharded ``sharding_type`` (rank 0 plans, every rank gets its plan)."""
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    sharder = EmbeddingBagCollectionSharder(fused_params=_fused_params(OPTIMIZERS[sharding_type]))
    planner = EmbeddingShardingPlanner(
        topology=Topology(
            world_size=world_size, local_world_size=world_size, compute_device=device_type
        ),
        constraints={
            name: ParameterConstraints(sharding_types=[sharding_type]) for name in table_specs()
        },
    )
    plan = planner.collective_plan(ScaleDLRM(torch.device("meta")), [sharder])
    for module_plan in plan.plan.values():
        for name, ps in module_plan.items():  # type: ignore[attr-defined]
            assert ps.sharding_type == sharding_type, (name, ps.sharding_type)
    return plan, sharder


def _shard(plan: Any, sharder: Any, device: torch.device, state: dict[str, torch.Tensor]) -> Any:
    """A fresh sharded model holding ``state``."""
    from torchrec.distributed.model_parallel import DistributedModelParallel

    model = ScaleDLRM(torch.device("meta"))
    dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])
    copied = set()
    with torch.no_grad():
        for key, local, full in _local_pieces(dmp.state_dict(), state):
            local.copy_(full)
            copied.add(key)
    dense = {k for k in copied if ".embedding_bags." not in k}
    assert len(dense) == 4 and len(copied) > 4, f"parameters loaded into the model: {copied}"
    return dmp


def _local_pieces(state: dict[str, Any], full: dict[str, torch.Tensor]) -> Any:
    """(key, local tensor, matching part of the full tensor) for every parameter this rank holds:
    the local shards of sharded tables, replicas of everything else."""
    from torch.distributed._shard.sharded_tensor import ShardedTensor

    for key, value in state.items():
        if key not in full:
            continue
        if not isinstance(value, ShardedTensor):
            yield key, value, full[key]
            continue
        for shard in value.local_shards():
            (r0, c0), (nr, nc) = shard.metadata.shard_offsets, shard.metadata.shard_sizes
            yield key, shard.tensor, full[key][r0 : r0 + nr, c0 : c0 + nc]


def _dense_optimizer(dmp: Any) -> torch.optim.Optimizer:
    from torchrec.optim.keyed import KeyedOptimizerWrapper
    from torchrec.optim.optimizers import in_backward_optimizer_filter

    return KeyedOptimizerWrapper(
        dict(in_backward_optimizer_filter(dmp.named_parameters())),
        lambda params: torch.optim.SGD(params, lr=DENSE_LEARNING_RATE),
    )


def _train(variant: str, dmp: Any, batches: list[DlrmBatch], device: torch.device) -> list:
    """Three steps with a plain loop or with TrainPipelineSparseDist; the logits of each."""
    optimizer = _dense_optimizer(dmp)
    dmp.train()
    logits = []
    if variant == "pipeline":
        from torchrec.distributed.train_pipeline import TrainPipelineSparseDist

        pipeline = TrainPipelineSparseDist(dmp, optimizer, device)
        loader = iter(batches)
        for _ in range(STEPS):
            logits.append(pipeline.progress(loader))
        try:
            pipeline.progress(loader)
        except StopIteration:
            return logits
        raise AssertionError("the pipeline produced more steps than batches")
    for batch in batches:
        optimizer.zero_grad()
        loss, out = dmp(batch.to(device))
        loss.backward()
        optimizer.step()
        logits.append(out)
    return logits


def _check(
    variant: str,
    rank: int,
    device: torch.device,
    dmp: Any,
    logits: list,
    expected: list,
    final: dict[str, Any],
) -> None:
    where = f"rank {rank}, {variant}"
    for step, (have, want) in enumerate(zip(logits, expected, strict=True)):
        assert have.device.type == device.type, have.device
        torch.testing.assert_close(
            have.cpu(),
            want,
            rtol=RTOL,
            atol=ATOL,
            msg=lambda m, s=step: f"{where}: logits at step {s}: {m}",
        )
    checked = 0
    for key, local, want in _local_pieces(dmp.state_dict(), final):
        torch.testing.assert_close(
            local.detach().cpu(),
            want,
            rtol=RTOL,
            atol=ATOL,
            msg=lambda m, key=key: f"{where}: {key} after {STEPS} steps: {m}",
        )
        checked += 1
    assert checked > 4, f"{where}: only {checked} parameters compared"


def dlrm_worker(
    rank: int,
    world_size: int,
    port: int,
    sharding_type: str,
    device_type: str,
    variants: tuple[str, ...],
    report: str | None,
) -> None:
    """One rank; raises (so the spawning test fails) on any mismatch. ``variants``: "loop"
    and/or "pipeline", each training a fresh sharded model from the same initial state on the
    same batches (the plan and the CPU reference are computed once)."""
    import torch.distributed as dist

    provider, device = start_rank(rank, world_size, port, device_type)
    try:
        plan, sharder = _plan(sharding_type, device_type, world_size)
        state = initial_state()
        reference = Reference(OPTIMIZERS[sharding_type], world_size)
        batches = [[make_batch(r, s) for r in range(world_size)] for s in range(STEPS)]
        expected = [reference.step(per_rank)[rank] for per_rank in batches]
        final = reference.model.state_dict()
        mine = [per_rank[rank] for per_rank in batches]
        if provider == "npu_sim":
            import npu_sim

            npu_sim.reset_fallback_stats()
        for variant in variants:
            dmp = _shard(plan, sharder, device, state)
            logits = _train(variant, dmp, mine, device)
            _check(variant, rank, device, dmp, logits, expected, final)
            del dmp
        finish_rank(provider, report, rank)
    finally:
        dist.destroy_process_group()
