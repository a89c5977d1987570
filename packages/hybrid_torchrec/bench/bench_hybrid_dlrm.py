"""The share of a DLRM training step spent on host id work, with and without HybridTrainPipeline.

A DLRM-style model (13 dense features, 26 sparse features of one id each, Zipf(1.05) ids over
10^8 values) whose HashEmbeddingBagCollection is sharded row-wise by the hybrid sharders over
``--ranks`` npu processes (hccl for the device, gloo for the host); the dense part is DDP.

* Without the pipeline, a step is the host work (input distribution over the host group, id
  mapping, copy to the device) followed by the device step (lookups, dense model, backward with
  the fused Adagrad, dense SGD); the share is host / (host + device), both timed per step.
* With HybridTrainPipeline, the host work of batch i+1 runs on a host thread during batch i's
  device step; what is left exposed is the time ``progress`` waits for it; the share is that
  wait over the step.

Run with an environment that has the npu device (torch_npu, or npu_sim and fbgemm_npu_api),
torchrec 1.1.0 and hybrid_torchrec, e.g. recsdk-build's verify environment:
``build/verify/venv/bin/python packages/hybrid_torchrec/bench/bench_hybrid_dlrm.py``.
Rank 0 prints the figures (medians over the timed steps).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import socket
import statistics
import time
from typing import Any

import torch

DENSE = 13
SPARSE = 26


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _batches(args: argparse.Namespace, rank: int, count: int) -> list[Any]:
    from hybrid_torchrec.workload import zipf_ids
    from torchrec.datasets.utils import Batch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(1234 + rank)
    out = []
    for _ in range(count):
        ids = zipf_ids(args.batch * SPARSE, 10**8, 1.05, generator=g)
        out.append(
            Batch(
                dense_features=torch.rand(args.batch, DENSE, generator=g),
                sparse_features=KeyedJaggedTensor.from_lengths_sync(
                    keys=[f"f{i}" for i in range(SPARSE)],
                    values=ids,
                    lengths=torch.ones(args.batch * SPARSE, dtype=torch.int64),
                ),
                labels=torch.randint(0, 2, (args.batch,), generator=g),
            )
        )
    return out


def _model(args: argparse.Namespace, world: int, device: torch.device, host_env: Any) -> Any:
    import hybrid_torchrec as hy
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from hybrid_torchrec.distributed import get_default_hybrid_sharders
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints
    from torchrec.models.dlrm import DLRM, DLRMTrain

    tables = [
        hy.HashEmbeddingBagConfig(
            name=f"t{i}",
            embedding_dim=args.dim,
            num_embeddings=args.rows,
            feature_names=[f"f{i}"],
        )
        for i in range(SPARSE)
    ]
    ebc = hy.HashEmbeddingBagCollection(tables, device=torch.device("meta"))
    model = DLRMTrain(
        DLRM(
            embedding_bag_collection=ebc,
            dense_in_features=DENSE,
            dense_arch_layer_sizes=[64, args.dim],
            over_arch_layer_sizes=[64, 1],
            dense_device=device,
        )
    )
    fused = {"optimizer": EmbOptimType.EXACT_ADAGRAD, "learning_rate": 0.01, "eps": 1e-8}
    sharders = get_default_hybrid_sharders(host_env, fused_params=fused)
    constraints = {
        t.name: ParameterConstraints(sharding_types=["row_wise"], compute_kernels=["fused"])
        for t in tables
    }
    planner = EmbeddingShardingPlanner(
        topology=Topology(world_size=world, local_world_size=world, compute_device="npu"),
        constraints=constraints,
    )
    plan = planner.plan(model, sharders)
    return DistributedModelParallel(model, device=device, plan=plan, sharders=sharders)


def _worker(rank: int, world: int, port: int, args: argparse.Namespace) -> None:
    import torch.distributed as dist
    from hybrid_torchrec.distributed import HybridTrainPipeline
    from hybrid_torchrec.distributed.sharders import HybridShardedEmbeddingBagCollection
    from torchrec.distributed.types import ShardingEnv

    for module in ("torch_npu", "npu_sim", "fbgemm_npu_api"):
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)
    torch.npu.set_device(rank)  # type: ignore[attr-defined]
    device = torch.device("npu", rank)
    dist.init_process_group(
        "hccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    host_env = ShardingEnv.from_process_group(dist.new_group(backend="gloo"))
    steps = args.warmup + args.steps
    batches = _batches(args, rank, 2 * steps)

    def to_device(batch: Any) -> Any:
        return type(batch)(
            dense_features=batch.dense_features.to(device),
            sparse_features=batch.sparse_features,
            labels=batch.labels.to(device),
        )

    # Without the pipeline: host work, then the device step, timed apart.
    dmp = _model(args, world, device, host_env)
    sharded = next(m for m in dmp.modules() if isinstance(m, HybridShardedEmbeddingBagCollection))
    optimizer = torch.optim.SGD([p for p in dmp.parameters() if p.requires_grad], lr=0.01)
    host_times, device_times = [], []
    for i, batch in enumerate(batches[:steps]):
        dist.barrier()
        t0 = time.perf_counter()
        with torch.no_grad():
            sharded.prefetch(sharded.host_work(batch.sparse_features))
        t1 = time.perf_counter()
        optimizer.zero_grad()
        loss, _ = dmp(to_device(batch))
        loss.backward()
        optimizer.step()
        loss.item()  # the device step is done
        t2 = time.perf_counter()
        if i >= args.warmup:
            host_times.append(t1 - t0)
            device_times.append(t2 - t1)

    # With the pipeline: the wait for the next batch's host work is what stays exposed.
    dmp = _model(args, world, device, host_env)
    optimizer = torch.optim.SGD([p for p in dmp.parameters() if p.requires_grad], lr=0.01)
    pipeline = HybridTrainPipeline(dmp, optimizer, to_device=to_device)
    waits: list[float] = []
    step_times = []
    it = iter(batches[steps:])
    for i in range(steps):
        dist.barrier()
        t0 = time.perf_counter()
        # The pipeline's own wait comes first in progress(); timing it here is the same wait.
        future = pipeline._next[1] if pipeline._next is not None else None
        w0 = time.perf_counter()
        if future is not None:
            future.result()
        w1 = time.perf_counter()
        output = pipeline.progress(it)
        output[0].item()
        t1 = time.perf_counter()
        if i >= args.warmup:
            step_times.append(t1 - t0)
            waits.append(w1 - w0)
    pipeline.close()

    if rank == 0:
        host, dev = statistics.median(host_times), statistics.median(device_times)
        wait, step = statistics.median(waits), statistics.median(step_times)
        print(
            f"DLRM step, {world} npu ranks, batch {args.batch} per rank, 26 x {args.rows} rows "
            f"x D {args.dim}, {args.steps} timed steps (medians):"
        )
        print(
            f"  plain loop: host id work {host * 1e3:.1f} ms + device step {dev * 1e3:.1f} ms; "
            f"host share {host / (host + dev):.1%}"
        )
        print(
            f"  HybridTrainPipeline: step {step * 1e3:.1f} ms, exposed host wait "
            f"{wait * 1e3:.1f} ms; host share {wait / step:.1%}"
        )
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--batch", type=int, default=512, help="samples per rank")
    parser.add_argument("--rows", type=int, default=1 << 16, help="rows per table")
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    import torch.multiprocessing as mp

    mp.spawn(_worker, args=(args.ranks, _free_port(), args), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
