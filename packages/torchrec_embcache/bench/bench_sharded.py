"""DLRM-style training sharded over 2 processes: EmbCache against torchrec (issue 14); prints
figures (a benchmark, never a test).

Model, the same for both collections: 13 dense features through Linear(13, 64) + ReLU, 26
sparse features with a table of D = 64 each (sum pooling), an over arch Linear(27 x 64, 1) and
a binary cross-entropy loss. The tables train with fused Adagrad (lr 0.05, eps 1e-8; --optimizer
sgd: fused SGD), the dense layers with SGD (DistributedModelParallel wraps them in DDP).
Traffic: per rank and step --batch samples with --ids-per-bag ids per sparse feature (Criteo's
DLRM has one), Zipf(--zipf) over --universe ids per table, scattered over the int64 range and
different in every table (bench_embcache.zipf_ids, then a per-table XOR).

--world processes (spawned), each on its own device:
  npu  the simulated npu device (npu_sim, from the verify environment): hccl carries the pooled
       embeddings, their gradients and DDP's all-reduce; a gloo group of the same ranks the ids;
  cpu  one gloo group for everything (runs wherever torch, torchrec and torchrec_embcache do).
Each rank uses one torch thread and one embcache thread: the ranks share this machine.

It prints (rank 0):
1. steps/s of the job (a step's time is the slowest rank's; median of --steps steps after
   --warmup; the models take turns step by step, with a barrier before each step, so that load
   from other processes hits them alike):
   - EmbCacheEmbeddingBagCollection sharded row-wise by bucket through DistributedModelParallel
     with torchrec's planner and EmbCacheEmbeddingBagCollectionSharder, its device caches
     holding 10 % and 50 % of the working set (fp32 rows), and 50 % with bf16 rows;
   - torchrec's EmbeddingBagCollection sharded row-wise by DistributedModelParallel (its
     planner, with torchrec's sharder offering row-wise only: upstream offers it on cuda alone;
     fused TBE), on the same batches. torchrec's tables need ids in
     [0, num_embeddings): before timing, every table's distinct ids of the whole run are
     numbered in ascending order (torch.unique), and num_embeddings is their count. That is
     the collision-free table of exactly the rows EmbCache creates, something only a
     benchmark can build: it needs every id known in advance, which EmbCache does not.
2. the cache hit rate of the job (hits / lookups over every table, rank and step, warm-up
   included: the caches start empty) with device caches of 10 % and 50 % as many slots as the
   working set (the distinct ids a rank's table sees over the run; slots = the share of the
   largest rank's, at least one batch's distinct ids), measured by ShardedEmbCacheMetrics,
   next to what torchrec_embcache.cache_sizing predicts from each rank's ids (the same when
   nothing is evicted and nothing waits for admission, as here);
3. host memory per row, fp32 against bf16 rows: the job's host memory over its host rows, as
   the tables report them, against the stored row (D x 4 or D x 2 bytes, plus D x 4 of
   Adagrad state) and the overhead the table's layout adds (a 16-byte row header, 16-byte
   index slots at 35-70 % load, and each of 32 shards' partly used last block of rows, at most
   64 KiB: at this size tens of bytes a row, at 10^5 rows a table and rank a few).

What the steps/s say. With --device cpu they compare the host code of both collections on the
same cores. On the simulated npu they are the simulator's: every aten operator without a native
npu_sim kernel (index_copy_ and index_select on the device cache among them) runs through a
CPU fallback that copies its whole tensors to the CPU and back, so
an EmbCache step there costs time in proportion to the cache's size, and torchrec's TBE runs
the emulated AscendC kernels. Neither is what an Ascend NPU does; the npu run shows that the
sharded EmbCache trains under DMP with hccl next to torchrec's, and gives its hit rates.

Run, from the repository's root (the npu run needs the verify environment's npu_sim; its
installed torchrec_embcache lacks sharded_metrics until the next build, hence PYTHONPATH):
  PYTHONPATH=packages/torchrec_embcache/src \\
      build/verify/venv/bin/python packages/torchrec_embcache/bench/bench_sharded.py
  PYTHONPATH=packages/torchrec_embcache/src:<dir holding torchrec> \\
      python packages/torchrec_embcache/bench/bench_sharded.py --device cpu
(tests/extpackage.py keeps the pinned torchrec in .pytest_cache/d/recsdk-torchrec/.)

The defaults (2 ranks, 1024 samples a rank, 20 timed steps after 3 warm-up steps, Zipf 1.05
over 10^7 ids) take about 40 s on npu and 25 s with --device cpu on this 2-core machine when
nothing else runs (measured 2026-11-24; up to twice that with other work on the cores).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_embcache import zipf_ids

DENSE_FEATURES = 13
LR, EPS, DENSE_LR = 0.05, 1e-8, 0.05
# The host table's layout (csrc/host_table.cpp): 32 shards (shard_bits 5), each storing rows in
# blocks of at most 64 KiB, a 16-byte header per row, 16-byte index slots.
SHARDS, BLOCK_LIMIT, ROW_HEADER, INDEX_SLOT = 32, 64 << 10, 16, 16


@dataclass(frozen=True)
class Variant:
    """One model of the comparison."""

    label: str
    kind: str  # "embcache" or "torchrec"
    share: float = 0.0  # device cache slots / working set (embcache)
    dtype: str = "fp32"


@dataclass
class Batches:
    """The run's batches as every rank sees them: per step and rank, the dense features, the
    labels and per table the ids of its feature ([batch * ids_per_bag], bag-major)."""

    dense: list[list[torch.Tensor]]
    labels: list[list[torch.Tensor]]
    ids: list[list[list[torch.Tensor]]]  # [step][rank][table]


# ---- data ------------------------------------------------------------------------------------


def make_batches(args: argparse.Namespace) -> Batches:
    """Every rank's batches of every step (the same in each process: fixed seeds)."""
    steps, world, tables = args.warmup + args.steps, args.world, args.tables
    per_table = args.batch * args.ids_per_bag
    ids = zipf_ids(steps * world * tables * per_table, args.universe, args.zipf, seed=11)
    ids = ids.view(steps, world, tables, per_table)
    # XOR with a per-table constant is a bijection of int64: tables get different id sets.
    salt = torch.arange(tables, dtype=torch.int64) * 0x2545F4914F6CDD1D
    ids = ids ^ salt.view(1, 1, tables, 1)
    g = torch.Generator().manual_seed(12)
    dense = [
        [torch.randn(args.batch, DENSE_FEATURES, generator=g) for _ in range(world)]
        for _ in range(steps)
    ]
    labels = [
        [torch.randint(0, 2, (args.batch,), generator=g).float() for _ in range(world)]
        for _ in range(steps)
    ]
    return Batches(dense, labels, [[list(ids[s, r]) for r in range(world)] for s in range(steps)])


def dense_row_numbers(batches: Batches, tables: int) -> list[torch.Tensor]:
    """Per table, its distinct ids of the whole run in ascending order: an id's row in
    torchrec's table is its index here."""
    return [
        torch.unique(torch.cat([per_rank[t] for step in batches.ids for per_rank in step]))
        for t in range(tables)
    ]


def kjt(ids: list[torch.Tensor], keys: list[str], ids_per_bag: int) -> Any:
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    values = torch.cat(ids)
    lengths = torch.full((values.numel() // ids_per_bag,), ids_per_bag, dtype=torch.int64)
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=lengths)


# ---- the model -------------------------------------------------------------------------------


class SmallDLRM(nn.Module):
    """Dense arch, a sparse collection, an over arch on the concatenation, BCE loss."""

    def __init__(self, collection: nn.Module, keys: list[str], dim: int) -> None:
        super().__init__()
        self.dense_arch = nn.Sequential(nn.Linear(DENSE_FEATURES, dim), nn.ReLU())
        self.sparse = collection
        self.over_arch = nn.Linear(dim * (len(keys) + 1), 1)
        self._keys = keys

    def forward(self, dense: torch.Tensor, sparse: Any, labels: torch.Tensor) -> torch.Tensor:
        pooled = self.sparse(sparse).to_dict()  # by key: a sharded collection may reorder keys
        features = [self.dense_arch(dense)] + [pooled[k] for k in self._keys]
        logits = self.over_arch(torch.cat(features, dim=1)).squeeze(1)
        return F.binary_cross_entropy_with_logits(logits, labels)


def embcache_collection(
    args: argparse.Namespace, keys: list[str], slots: list[int], rows: list[int], dtype: str
) -> nn.Module:
    import torchrec_embcache as ec
    from torchrec import DataType
    from torchrec_embcache import EmbCacheEmbeddingBagCollection, EmbCacheEmbeddingBagConfig

    configs = [
        EmbCacheEmbeddingBagConfig(
            name=f"t{t}",
            embedding_dim=args.dim,
            num_embeddings=rows[t],  # what the planner sees; the table grows as ids come
            feature_names=[key],
            data_type=DataType.BF16 if dtype == "bf16" else DataType.FP32,
            cache_slots=slots[t],
        )
        for t, key in enumerate(keys)
    ]
    if args.optimizer == "adagrad":
        optimizer: ec.SparseAdagrad | ec.SparseSGD = ec.SparseAdagrad(lr=LR, eps=EPS)
    else:
        optimizer = ec.SparseSGD(lr=LR)
    return EmbCacheEmbeddingBagCollection(
        configs, device=torch.device("meta"), optimizer=optimizer, seed=1
    )


def torchrec_collection(args: argparse.Namespace, keys: list[str], rows: list[int]) -> nn.Module:
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig

    configs = [
        EmbeddingBagConfig(
            name=f"t{t}", embedding_dim=args.dim, num_embeddings=rows[t], feature_names=[key]
        )
        for t, key in enumerate(keys)
    ]
    return EmbeddingBagCollection(tables=configs, device=torch.device("meta"))


def shard(model: nn.Module, sharder: Any, device: torch.device, tables: int) -> Any:
    """The model through torchrec's planner (all ranks plan together), every table row-wise,
    and DMP."""
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    world = dist.get_world_size()
    topology = Topology(world_size=world, local_world_size=world, compute_device=device.type)
    row_wise = {f"t{t}": ParameterConstraints(sharding_types=["row_wise"]) for t in range(tables)}
    planner = EmbeddingShardingPlanner(topology=topology, constraints=row_wise)
    plan = planner.collective_plan(model, [sharder])
    kinds = {ps.sharding_type for per_module in plan.plan.values() for ps in per_module.values()}
    assert kinds == {"row_wise"}, kinds
    return DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])


def embcache_sharder(host: Any, world: int) -> Any:
    """EmbCache's sharder; its row-wise tables spread the buckets evenly over the ranks, the
    map the working sets were measured with (owned_ids)."""
    from torchrec.distributed.types import ShardingEnv
    from torchrec_embcache.sharded import BucketMap, EmbCacheEmbeddingBagCollectionSharder

    return EmbCacheEmbeddingBagCollectionSharder(
        ShardingEnv.from_process_group(host), bucket_map=BucketMap.even(world)
    )


def torchrec_sharder(args: argparse.Namespace) -> Any:
    """torchrec's EBC sharder offering row-wise sharding only (upstream torchrec offers it on
    cuda alone, the patched one also on npu), with the fused optimizer."""
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.types import ShardingType

    class RowWiseSharder(EmbeddingBagCollectionSharder):
        def sharding_types(self, compute_device_type: str) -> list[str]:
            return [ShardingType.ROW_WISE.value]

    fused: dict[str, Any] = {"learning_rate": LR}
    if args.optimizer == "adagrad":
        fused.update(optimizer=EmbOptimType.EXACT_ADAGRAD, eps=EPS)
    else:
        fused.update(optimizer=EmbOptimType.EXACT_SGD)
    return RowWiseSharder(fused_params=fused)


def dense_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    """SGD on the dense parameters (the tables update themselves in backward)."""
    from torchrec.optim.optimizers import in_backward_optimizer_filter

    params = [p for _, p in in_backward_optimizer_filter(model.named_parameters())]
    return torch.optim.SGD(params, lr=DENSE_LR)


# ---- the ranks -------------------------------------------------------------------------------


def start_rank(rank: int, world: int, port: int, device_type: str) -> tuple[torch.device, Any]:
    """This process's device and process groups: (device, host group)."""
    torch.set_num_threads(1)
    import torchrec_embcache as ec

    ec.set_num_threads(1)
    backend = "gloo"
    device = torch.device("cpu")
    if device_type == "npu":
        import npu_sim  # noqa: F401  (the simulated npu device)

        try:
            import fbgemm_npu_api  # noqa: F401  (npu kernels of torchrec's TBE)
        except ImportError as exc:
            raise SystemExit(f"--device npu needs the operator adapter: {exc}") from exc
        torch.npu.set_device(rank)  # type: ignore[attr-defined]
        device, backend = torch.device("npu", rank), "hccl"
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    host = dist.new_group(backend="gloo") if device_type == "npu" else dist.group.WORLD
    return device, host


def owned_ids(batches: Batches, rank: int, world: int) -> list[list[torch.Tensor]]:
    """[step][table]: the ids of every rank's batch whose bucket this rank owns."""
    from torchrec_embcache.sharded import BucketMap

    bucket_map = BucketMap.even(world)
    out = []
    for step in batches.ids:
        per_table = []
        for t in range(len(step[0])):
            ids = torch.cat([per_rank[t] for per_rank in step])
            per_table.append(ids[bucket_map.rank_of(ids) == rank])
        out.append(per_table)
    return out


def sizing(batches: Batches, rank: int, world: int, host: Any) -> tuple[Any, list, list]:
    """This rank's cache sizing per table, and per table the largest rank's working set and
    the most distinct ids of one batch on any rank."""
    import torchrec_embcache as ec

    mine = owned_ids(batches, rank, world)
    sample = [{f"t{t}": ids for t, ids in enumerate(step)} for step in mine]
    sized = ec.cache_sizing(sample)
    local = torch.tensor([[s.working_set, s.min_slots] for s in sized.values()])
    dist.all_reduce(local, op=dist.ReduceOp.MAX, group=host)
    return sized, local[:, 0].tolist(), local[:, 1].tolist()


def cache_slots(share: float, working_sets: list[int], min_slots: list[int]) -> list[int]:
    return [max(m, round(share * w)) for w, m in zip(working_sets, min_slots, strict=True)]


def sync(device: torch.device) -> None:
    module = torch.get_device_module(device.type) if device.type != "cpu" else None
    if module is not None:
        module.synchronize()


def train_step(
    model: nn.Module, opt: torch.optim.Optimizer, inputs: tuple, device: torch.device, host: Any
) -> float:
    """One training step from the host batch; its seconds on this rank."""
    dist.barrier(group=host)
    start = time.perf_counter()
    dense, sparse, labels = inputs
    opt.zero_grad()
    loss = model(dense.to(device), sparse.to(device), labels.to(device))
    loss.backward()
    opt.step()
    sync(device)
    return time.perf_counter() - start


def variants_of(args: argparse.Namespace) -> list[Variant]:
    last = args.shares[-1]
    out = [Variant(f"EmbCache, cache {share:.0%}", "embcache", share) for share in args.shares]
    out.append(Variant(f"EmbCache, cache {last:.0%}, bf16 rows", "embcache", last, "bf16"))
    out.append(Variant("torchrec EBC (rows numbered)", "torchrec"))
    return out


def build(
    args: argparse.Namespace, v: Variant, host: Any, device: torch.device, sizes: dict[str, list]
) -> tuple[Any, torch.optim.Optimizer, Any]:
    """One variant's sharded model, its dense optimiser and (EmbCache) its metrics."""
    from torchrec_embcache.sharded_metrics import ShardedEmbCacheMetrics

    keys = [f"cat_{t}" for t in range(args.tables)]
    world = dist.get_world_size()
    if v.kind == "torchrec":
        model = SmallDLRM(torchrec_collection(args, keys, sizes["rows"]), keys, args.dim)
        dmp = shard(model, torchrec_sharder(args), device, args.tables)
        return dmp, dense_optimizer(dmp), None
    slots = cache_slots(v.share, sizes["working_sets"], sizes["min_slots"])
    collection = embcache_collection(args, keys, slots, sizes["rows"], v.dtype)
    model = SmallDLRM(collection, keys, args.dim)
    dmp = shard(model, embcache_sharder(host, world), device, args.tables)
    return dmp, dense_optimizer(dmp), ShardedEmbCacheMetrics(dmp, host)


def train(
    args: argparse.Namespace,
    models: dict[Variant, tuple[Any, torch.optim.Optimizer, Any]],
    batches: Batches,
    numbering: list[torch.Tensor],
    device: torch.device,
    host: Any,
) -> dict[Variant, list[float]]:
    """Every model trains on this rank's batches, taking turns step by step; the timed steps'
    seconds per model."""
    rank = dist.get_rank()
    keys = [f"cat_{t}" for t in range(args.tables)]
    times: dict[Variant, list[float]] = {v: [] for v in models}
    for step in range(args.warmup + args.steps):
        dense, labels = batches.dense[step][rank], batches.labels[step][rank]
        ids = batches.ids[step][rank]
        rows = [torch.searchsorted(n, i) for n, i in zip(numbering, ids, strict=True)]
        inputs = {
            "embcache": (dense, kjt(ids, keys, args.ids_per_bag), labels),
            "torchrec": (dense, kjt(rows, keys, args.ids_per_bag), labels),
        }
        for v, (dmp, opt, _) in models.items():
            seconds = train_step(dmp, opt, inputs[v.kind], device, host)
            if step >= args.warmup:
                times[v].append(seconds)
    return times


def run_rank(rank: int, world: int, port: int, args: argparse.Namespace) -> None:
    device, host = start_rank(rank, world, port, args.device)
    started = time.perf_counter()
    batches = make_batches(args)
    sized, working_sets, min_slots = sizing(batches, rank, world, host)
    numbering = dense_row_numbers(batches, args.tables)
    sizes = {
        "rows": [n.numel() for n in numbering],
        "working_sets": working_sets,
        "min_slots": min_slots,
    }
    models = {v: build(args, v, host, device, sizes) for v in variants_of(args)}
    times = train(args, models, batches, numbering, device, host)
    report(args, host, models, times, sized, sizes, started)
    dist.barrier(group=host)
    dist.destroy_process_group()


# ---- the figures -----------------------------------------------------------------------------


def steps_per_second(times: list[float], host: Any) -> float:
    """1 / the median over steps of the slowest rank's step time."""
    slowest = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=host)
    return 1.0 / statistics.median(slowest.tolist())


def predicted_hits(sized: dict[str, Any], slots: list[int], host: Any) -> tuple[int, int]:
    """(hits, lookups) of the job that cache_sizing predicts for these slot counts."""
    mine = torch.tensor(
        [
            sum(s.hits(n) for s, n in zip(sized.values(), slots, strict=True)),
            sum(s.lookups for s in sized.values()),
        ]
    )
    dist.all_reduce(mine, group=host)
    return int(mine[0]), int(mine[1])


def hit_rates(metrics: Any) -> tuple[int, int, float, float]:
    """The job's (hits, lookups) over all tables, and the lowest and highest table's rate."""
    per_table = metrics.global_lifetime().values()
    rates = [s.cache_hit_rate for s in per_table]
    hits = sum(s.cache_hits for s in per_table)
    return hits, sum(s.cache_lookups for s in per_table), min(rates), max(rates)


def block_bytes(row_bytes: int) -> int:
    """Bytes of one block of a shard's rows: the most rows (2^4 to 2^12) within 64 KiB."""
    per_row = ROW_HEADER + row_bytes
    log2 = 4
    while log2 < 12 and (2 << log2) * per_row <= BLOCK_LIMIT:
        log2 += 1
    return (1 << log2) * per_row


def memory_line(args: argparse.Namespace, metrics: Any, dtype: str) -> str:
    """Host bytes per row of the job against the stored row and the layout's overhead."""
    per_table = list(metrics.global_lifetime().values())
    rows = sum(s.host_rows for s in per_table)
    per_row = sum(s.host_memory_bytes for s in per_table) / rows
    value_bytes = 2 if dtype == "bf16" else 4
    state = args.dim * 4 if args.optimizer == "adagrad" else 0
    stored = args.dim * value_bytes + state
    assert per_table[0].row_bytes == stored, (per_table[0].row_bytes, stored)
    # Per row: its header and its index slot at 70 % (just grown) to 35 % (about to grow)
    # load; per shard of every rank's table: up to one unused block.
    tails = SHARDS * block_bytes(stored) * args.world * len(per_table) / rows
    low = stored + ROW_HEADER + INDEX_SLOT / 0.7
    high = stored + ROW_HEADER + INDEX_SLOT / 0.35 + tails
    verdict = "within" if low <= per_row <= high else "OUTSIDE"
    what = f"{args.dim} x {value_bytes} B" + (f" + {state} B Adagrad state" if state else "")
    return (
        f"  {dtype}: {per_row:6.1f} B/row over {rows} rows = stored {stored} B ({what}) + "
        f"{per_row - stored:.1f} B; {verdict} [{low:.0f}, {high:.0f}] B = stored + "
        f"{ROW_HEADER} B header + {INDEX_SLOT} B index / load 0.7-0.35 + 0-{tails:.0f} B "
        "of unused block tails"
    )


def speed_lines(
    args: argparse.Namespace, host: Any, times: dict[Variant, list[float]]
) -> list[str]:
    speed = {v: steps_per_second(t, host) for v, t in times.items()}
    base = speed[next(v for v in speed if v.kind == "torchrec")]
    lines = [f"steps/s ({args.steps} steps after {args.warmup} warm-up, median, job):"]
    for v, value in speed.items():
        lines.append(f"  {v.label:34s} {value:7.2f} steps/s  ({value / base:.2f}x torchrec)")
    return lines


def hit_rate_lines(
    args: argparse.Namespace,
    host: Any,
    models: dict[Variant, tuple[Any, Any, Any]],
    sized: dict[str, Any],
    sizes: dict[str, list],
) -> list[str]:
    working_sets, min_slots = sizes["working_sets"], sizes["min_slots"]
    steps = args.warmup + args.steps
    head = f"cache hit rate over all {steps} steps (the caches start empty), {args.tables} tables:"
    lines = [head]
    for v, (_, _, metrics) in models.items():
        if v.kind != "embcache" or v.dtype != "fp32":
            continue
        slots = cache_slots(v.share, working_sets, min_slots)
        hits, lookups, low, high = hit_rates(metrics)
        p_hits, p_lookups = predicted_hits(sized, slots, host)
        raised = sum(n > round(v.share * w) for n, w in zip(slots, working_sets, strict=True))
        lines.append(
            f"  slots {v.share:.0%} of the working set ({sum(slots) / len(slots):.0f} a table"
            f"{f', {raised} raised to one batch' if raised else ''}): hit rate "
            f"{hits / lookups:.3f} (tables {low:.3f}-{high:.3f}; {hits}/{lookups}); "
            f"cache_sizing predicted {p_hits / p_lookups:.3f}"
        )
    ceiling, lookups = predicted_hits(sized, working_sets, host)
    lines.append(
        f"  ceiling, every id of the run cached (first sightings miss): {ceiling / lookups:.3f}"
    )
    return lines


def report(
    args: argparse.Namespace,
    host: Any,
    models: dict[Variant, tuple[Any, Any, Any]],
    times: dict[Variant, list[float]],
    sized: dict[str, Any],
    sizes: dict[str, list],
    started: float,
) -> None:
    """Collective over the ranks; rank 0 prints."""
    lines = speed_lines(args, host, times)
    lines += hit_rate_lines(args, host, models, sized, sizes)
    lines.append("host memory per row (the tables' own report, all tables and ranks):")
    for v, (_, _, metrics) in models.items():
        if v.kind == "embcache" and v.share == args.shares[-1]:
            lines.append(memory_line(args, metrics, v.dtype))
    if dist.get_rank() == 0:
        print("\n".join(lines))
        print(f"({time.perf_counter() - started:.0f} s in the ranks)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=("npu", "cpu"), default="npu")
    parser.add_argument("--world", type=int, default=2, help="processes (ranks)")
    parser.add_argument("--batch", type=int, default=1024, help="samples a rank per step")
    parser.add_argument("--ids-per-bag", type=int, default=1, help="ids per feature and sample")
    parser.add_argument("--tables", type=int, default=26, help="sparse features, a table each")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--universe", type=int, default=10_000_000, help="Zipf support (ids)")
    parser.add_argument("--zipf", type=float, default=1.05, help="Zipf exponent")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--shares", type=float, nargs="+", default=[0.1, 0.5])
    parser.add_argument("--optimizer", choices=("adagrad", "sgd"), default="adagrad")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    import torchrec_embcache as ec

    print("command: python " + " ".join([sys.argv[0], *sys.argv[1:]]))
    print(
        f"torch {torch.__version__}, torchrec_embcache {ec.__version__} "
        f"({Path(ec.__file__).parent}), device {args.device}, {args.world} ranks, "
        f"{args.tables} tables of D = {args.dim}, {args.batch} samples x {args.ids_per_bag} "
        f"id(s) a feature per rank, Zipf({args.zipf}) over {args.universe:.0e} ids, "
        f"{args.optimizer}"
    )
    sys.stdout.flush()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    mp.spawn(run_rank, args=(args.world, free_port(), args), nprocs=args.world, join=True)
    print(f"wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
