"""Worker processes for test_ebc_optimizers_at_scale.py: torchrec's EmbeddingBagCollection
sharded table-wise by DistributedModelParallel over two npu ranks, its tables split between
three fused optimizers set per table with ``apply_optimizer_in_backward`` (torchrec groups the
tables by optimizer into one fused TBE each): SGD, exact row-wise Adagrad and Adam.

Each rank trains two steps on its own batch and checks, for the tables it owns, the pooled
outputs of its batch at each step and the weights after the second step against the same
tables trained on the CPU on both ranks' batches: by fbgemm's CPU TBE for SGD and row-wise
Adagrad, by Adam written out in float64 (fbgemm's CPU has no Adam).
"""

from __future__ import annotations

from typing import Any

import torch
from npu_dist import finish_rank, start_rank
from tbe_reference import AdamReference, split_tbe
from workloads import zipf_ids

OPTIMIZERS = ("sgd", "rowwise_adagrad", "adam")
TABLES_PER_OPTIMIZER = 8
BATCH_PER_RANK = 2048
MAX_IDS_PER_BAG = 8
STEPS = 2
# SGD's step grows with a row's count (thousands for the hottest ids): a smaller rate keeps the
# weights of the second step in range; Adagrad's and Adam's steps are about lr per element.
LEARNING_RATES = {"sgd": 1e-3, "rowwise_adagrad": 0.05, "adam": 0.05}
EPS = 1e-6
# Float32 sums of thousands of gradient rows (hot ids) in another order than the reference's.
RTOL, ATOL = 1e-4, 1e-5


def table_specs() -> dict[str, tuple[int, int, str]]:
    """name -> (rows, dim, optimizer): 3 * 8 tables of 10^3 to 1.6 * 10^4 rows (geometrically
    spaced), D alternating 64 and 128, optimizers interleaved so each has big and small tables
    (and, placed alternately, tables on each rank)."""
    count = TABLES_PER_OPTIMIZER * len(OPTIMIZERS)
    specs = {}
    for t in range(count):
        rows = round(10 ** (3 + 1.2 * t / (count - 1)))
        specs[f"t{t}"] = (rows, 64 if t % 2 == 0 else 128, OPTIMIZERS[t % len(OPTIMIZERS)])
    return specs


def initial_weights(name: str) -> torch.Tensor:
    rows, dim, _ = table_specs()[name]
    g = torch.Generator().manual_seed(1000 + int(name[1:]))
    return (torch.rand(rows, dim, generator=g) - 0.5) * 0.2


def batch_ids(rank: int, step: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per table, a rank's (lengths [B], ids) at a step: 0 to 8 ids per bag, Zipf ids."""
    g = torch.Generator().manual_seed(104729 * step + rank)
    out = {}
    for name, (rows, _, _) in table_specs().items():
        lengths = torch.randint(0, MAX_IDS_PER_BAG + 1, (BATCH_PER_RANK,), generator=g)
        out[name] = (lengths, zipf_ids(rows, int(lengths.sum()), g))
    return out


def loss_weights(rank: int, step: int, name: str) -> torch.Tensor:
    """Per output element a weight in [1, 2]: the loss sum(w * out + out^2 / 4) has the gradient
    w + out / 2, which depends on the output (the second step sees the first one's update) and
    stays positive for the Adagrad and Adam tables (weights within 0.1 + 2 * 0.05, so
    |out| <= 1.6), so a row's gradient sums terms of one sign and their g / sqrt(g^2) does not
    hinge on float32's summation order."""
    dim = table_specs()[name][1]
    g = torch.Generator().manual_seed(31 * (104729 * step + rank) + int(name[1:]))
    return 1.0 + torch.rand(BATCH_PER_RANK, dim, generator=g)


def _kjt(ids: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> Any:
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    names = list(table_specs())
    return KeyedJaggedTensor.from_lengths_sync(
        keys=[f"f_{n}" for n in names],
        values=torch.cat([ids[n][1] for n in names]),
        lengths=torch.cat([ids[n][0] for n in names]),
    )


def _model(device: torch.device) -> Any:
    """The EBC with each table's optimizer attached to its weight, as torchrec's users set
    per-table fused optimizers."""
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.optim import RowWiseAdagrad
    from torchrec.optim.apply_optimizer_in_backward import apply_optimizer_in_backward

    ebc = EmbeddingBagCollection(
        tables=[
            EmbeddingBagConfig(
                name=name, num_embeddings=rows, embedding_dim=dim, feature_names=[f"f_{name}"]
            )
            for name, (rows, dim, _) in table_specs().items()
        ],
        device=device,
    )
    classes = {"sgd": torch.optim.SGD, "rowwise_adagrad": RowWiseAdagrad, "adam": torch.optim.Adam}
    for name, (_, _, optimizer) in table_specs().items():
        kwargs: dict[str, Any] = {"lr": LEARNING_RATES[optimizer]}
        if optimizer != "sgd":
            kwargs["eps"] = EPS
        apply_optimizer_in_backward(classes[optimizer], [ebc.embedding_bags[name].weight], kwargs)
    return ebc


class Reference:
    """The tables one rank owns, trained on the CPU on every rank's batch."""

    def __init__(self, owned: list[str], world_size: int) -> None:
        self.world_size = world_size
        specs = table_specs()
        self.groups = {opt: [n for n in owned if specs[n][2] == opt] for opt in OPTIMIZERS}
        self.modules: dict[str, Any] = {}
        for opt, names in self.groups.items():
            if not names:
                continue
            dims = [(specs[n][0], specs[n][1]) for n in names]
            if opt == "adam":
                self.modules[opt] = AdamReference(
                    dims,
                    BATCH_PER_RANK * world_size,
                    [initial_weights(n).double() for n in names],
                    lr=LEARNING_RATES[opt],
                    eps=EPS,
                )
            else:
                tbe = split_tbe(dims, "cpu", opt, learning_rate=LEARNING_RATES[opt])
                for w, n in zip(tbe.split_embedding_weights(), names, strict=True):
                    w.copy_(initial_weights(n))
                self.modules[opt] = tbe

    def step(self, step: int) -> dict[str, torch.Tensor]:
        """One step on both ranks' batches; returns each owned table's pooled output
        [world_size * B, D] before the update."""
        ids = [batch_ids(r, step) for r in range(self.world_size)]
        pooled: dict[str, torch.Tensor] = {}
        for opt, names in self.groups.items():
            if not names:
                continue
            lengths = torch.cat(
                [torch.cat([ids[r][n][0] for r in range(self.world_size)]) for n in names]
            )
            indices = torch.cat(
                [torch.cat([ids[r][n][1] for r in range(self.world_size)]) for n in names]
            )
            offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64)
            offsets[1:] = lengths.cumsum(0)
            weights = torch.cat(
                [
                    torch.cat([loss_weights(r, step, n) for r in range(self.world_size)])
                    for n in names
                ],
                dim=1,
            )
            module = self.modules[opt]
            if opt == "adam":
                out = self._adam_forward(module, names, indices, offsets)
                module.step(step, indices, offsets, (weights.double() + out / 2) / self.world_size)
            else:
                out = module(indices, offsets)
                out.backward((weights + out.detach() / 2) / self.world_size)
                out = out.detach()
            column = 0
            for n in names:
                dim = table_specs()[n][1]
                pooled[n] = out[:, column : column + dim].float()
                column += dim
        return pooled

    def _adam_forward(
        self, module: AdamReference, names: list[str], indices: torch.Tensor, offsets: torch.Tensor
    ) -> torch.Tensor:
        batch = BATCH_PER_RANK * self.world_size
        outs = []
        for t in range(len(names)):
            lo, hi = int(offsets[t * batch]), int(offsets[(t + 1) * batch])
            outs.append(
                torch.nn.functional.embedding_bag(
                    indices[lo:hi],
                    module.weights[t],
                    offsets[t * batch : (t + 1) * batch] - lo,
                    mode="sum",
                )
            )
        return torch.cat(outs, dim=1)

    def weights(self) -> dict[str, torch.Tensor]:
        out = {}
        for opt, names in self.groups.items():
            if not names:
                continue
            module = self.modules[opt]
            tables = module.weights if opt == "adam" else module.split_embedding_weights()
            for n, w in zip(names, tables, strict=True):
                out[n] = w.detach().float()
        return out


def ebc_optimizers_worker(rank: int, world_size: int, port: int, report: str | None) -> None:
    import torch.distributed as dist
    from torch.distributed._shard.sharded_tensor import ShardedTensor
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan, table_wise
    from torchrec.distributed.types import ShardingPlan

    provider, device = start_rank(rank, world_size, port, "npu")
    try:
        sharder = EmbeddingBagCollectionSharder()
        model = _model(torch.device("meta"))
        # Tables alternate between the ranks (the planner's choice costs seconds per rank, and
        # its placement is not what is tested here).
        module_plan = construct_module_sharding_plan(
            model,
            per_param_sharding={
                name: table_wise(rank=t % world_size) for t, name in enumerate(table_specs())
            },
            sharder=sharder,
            local_size=world_size,
            world_size=world_size,
            device_type="npu",
        )
        plan = ShardingPlan({"": module_plan})
        dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])

        # This rank's tables (whole, table-wise) get the known initial weights.
        owned: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            for key, value in dmp.state_dict().items():
                name = key.split(".")[-2]
                if not key.endswith(".weight") or name not in table_specs():
                    continue
                assert isinstance(value, ShardedTensor), key
                for shard in value.local_shards():
                    assert tuple(shard.metadata.shard_sizes) == tuple(value.size()), key
                    shard.tensor.copy_(initial_weights(name))
                    owned[name] = shard.tensor
        assert owned, f"rank {rank} owns no table"

        if provider == "npu_sim":
            import npu_sim

            npu_sim.reset_fallback_stats()
        reference = Reference(sorted(owned, key=lambda n: int(n[1:])), world_size)
        for step in range(1, STEPS + 1):
            ids = batch_ids(rank, step)
            pooled = dmp(_kjt(ids).to(device)).to_dict()
            loss = sum(
                (loss_weights(rank, step, key[2:]).to(device) * out + out * out / 4).sum()
                for key, out in pooled.items()
            )
            loss.backward()  # type: ignore[union-attr]
            want = reference.step(step)
            rows = slice(rank * BATCH_PER_RANK, (rank + 1) * BATCH_PER_RANK)
            for name, out in want.items():
                torch.testing.assert_close(
                    pooled[f"f_{name}"].detach().cpu(),
                    out[rows],
                    rtol=RTOL,
                    atol=ATOL,
                    msg=lambda m, name=name, step=step: f"rank {rank} {name} step {step}: {m}",
                )
        for name, want in reference.weights().items():
            optimizer = table_specs()[name][2]
            torch.testing.assert_close(
                owned[name].detach().cpu(),
                want,
                rtol=RTOL,
                atol=ATOL,
                msg=lambda m, name=name, opt=optimizer: f"rank {rank} {name} ({opt}) weights: {m}",
            )
        finish_rank(provider, report, rank)
    finally:
        dist.destroy_process_group()
