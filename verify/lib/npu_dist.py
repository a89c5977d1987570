"""Worker processes for the npu DistributedModelParallel tests (test_npu_dmp.py).

Each worker is one rank: it sets up its npu device and an hccl process group on localhost,
shards a small EmbeddingBagCollection or EmbeddingCollection with DistributedModelParallel
under a plan of one sharding type, loads known weights into the shards, and checks its local
batch's output against the unsharded module on the CPU with the same weights.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

import torch
from tbe_reference import emb_optim_type

# name -> (rows, dim); EmbeddingCollection tables need one common dim.
EBC_TABLES = {"t0": (40, 8), "t1": (24, 16), "t2": (60, 8)}
EC_TABLES = {"t0": (40, 8), "t1": (24, 8), "t2": (60, 8)}
BATCH_SIZE = 3


def import_npu_provider() -> str:
    """Import whatever gives torch its npu device here (torch_npu, else the simulator), then
    the operator adapter, as a user's training script does: ``import fbgemm_npu_api``."""
    provider = None
    for module in ("torch_npu", "npu_sim"):
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)
            provider = module
            break
    if provider is None:
        raise RuntimeError("neither torch_npu nor npu_sim is installed")
    if importlib.util.find_spec("fbgemm_npu_api") is not None:
        importlib.import_module("fbgemm_npu_api")
    return provider


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def reference_weights(tables: dict[str, tuple]) -> dict[str, torch.Tensor]:
    """The same weights in every process: a fixed generator, on the CPU."""
    generator = torch.Generator().manual_seed(20250130)
    return {
        name: torch.rand(rows, dim, generator=generator) - 0.5
        for name, (rows, dim) in tables.items()
    }


def local_batch(rank: int, tables: dict[str, tuple]) -> Any:
    """A different batch on each rank; ids are in range, bags have 0 to 3 ids."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    keys, values, lengths = [], [], []
    for t, (name, (rows, _)) in enumerate(sorted(tables.items())):
        keys.append(f"f_{name}")
        for b in range(BATCH_SIZE):
            n = (rank + t + b) % 4
            lengths.append(n)
            values.extend((7 * rank + 5 * t + 3 * b + 11 * i) % rows for i in range(n))
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys,
        values=torch.tensor(values, dtype=torch.int64),
        lengths=torch.tensor(lengths, dtype=torch.int64),
    )


def make_collection(kind: str, tables: dict[str, tuple], device: torch.device) -> torch.nn.Module:
    """An EmbeddingBagCollection (``kind`` "ebc") or EmbeddingCollection ("ec"), one feature
    ``f_<name>`` per table, tables in the order given (plans depend on it)."""
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

    config, collection = (
        (EmbeddingBagConfig, EmbeddingBagCollection)
        if kind == "ebc"
        else (EmbeddingConfig, EmbeddingCollection)
    )
    configs = [
        config(name=name, num_embeddings=rows, embedding_dim=dim, feature_names=[f"f_{name}"])
        for name, (rows, dim) in tables.items()
    ]
    return collection(tables=configs, device=device)


def make_module(kind: str, tables: dict[str, tuple], device: torch.device) -> torch.nn.Module:
    return make_collection(kind, dict(sorted(tables.items())), device)


def _local_pieces(
    state: dict[str, Any], tables: dict[str, torch.Tensor]
) -> Iterator[tuple[str, torch.Tensor, torch.Tensor]]:
    """(state key, local tensor, the matching slice of the full table) for every local shard of
    each table's weight, or its replica for data-parallel tables."""
    from torch.distributed._shard.sharded_tensor import ShardedTensor

    for key, value in state.items():
        table = key.split(".")[-2]
        if not key.endswith(".weight") or table not in tables:
            continue
        full = tables[table]
        if not isinstance(value, ShardedTensor):  # data-parallel: a plain replicated tensor
            yield key, value, full
            continue
        for shard in value.local_shards():
            (r0, c0), (nr, nc) = shard.metadata.shard_offsets, shard.metadata.shard_sizes
            yield key, shard.tensor, full[r0 : r0 + nr, c0 : c0 + nc]


def _load_weights(state: dict[str, Any], weights: dict[str, torch.Tensor]) -> int:
    """Copy each table's weights into its local shards (or its replica); count the copies."""
    copied = 0
    for _, local, expected in _local_pieces(state, weights):
        local.copy_(expected)
        copied += 1
    return copied


# Fused optimizers the training step checks, as TorchRec names them, with their settings.
LEARNING_RATE = 0.1
EPS = 1e-8


def fused_params(optimizer: str, lr: float = LEARNING_RATE, eps: float = EPS) -> dict[str, Any]:
    """TorchRec's fused_params for one of the fused optimizers the tests train with (Adam with
    fbgemm's default betas, 0.9 and 0.999)."""
    params: dict[str, Any] = {"optimizer": emb_optim_type(optimizer), "learning_rate": lr}
    if optimizer != "sgd":
        params["eps"] = eps
    return params


def start_rank(rank: int, world_size: int, port: int, device_type: str) -> tuple[str | None, Any]:
    """This process's device (npu:rank over hccl, or the CPU over gloo) and process group;
    returns (the npu provider imported, the device)."""
    import torch.distributed as dist

    provider = None
    if device_type == "npu":
        provider = import_npu_provider()
        torch.npu.set_device(rank)  # type: ignore[attr-defined]
        device, backend = torch.device("npu", rank), "hccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size
    )
    return provider, device


def finish_rank(provider: str | None, report: str | None, rank: int) -> None:
    """Rank 0 writes, as JSON to ``report``, which aten operators the simulated device ran
    through its CPU fallback; then every rank meets the others before teardown."""
    import torch.distributed as dist

    if provider == "npu_sim" and report and rank == 0:
        import json

        import npu_sim

        with open(report, "w", encoding="utf-8") as f:
            json.dump(npu_sim.fallback_stats(), f, indent=1, sort_keys=True)
    # Both ranks finish every collective (DDP's last gradient all-reduce included) before
    # either tears its process group down: a rank leaving early aborted the other
    # ("terminate called without an active exception") in one of eight CI runs.
    dist.barrier()


# What every rank imports before it touches a device, imported once by the forkserver the ranks
# are forked from rather than by each rank: about 6 s of CPU per process, for some 150 rank
# processes a verify run starts. No device runtime and no adapter among them: torch_npu (or
# npu_sim) and fbgemm_npu_api are imported by each rank, so every rank's device runtime starts
# anew, as it did with spawn. Upstream's harness (MultiProcessTestBase) uses the forkserver too.
FORKSERVER_PRELOAD = (
    "torch",
    "torch.distributed",
    "fbgemm_gpu",
    "torchrec",
    "torchrec.distributed.model_parallel",
    "torchrec.distributed.train_pipeline",
    "torchrec.distributed.planner",
)


def preload_forkserver() -> None:
    """Name the forkserver's preloaded modules; before the first process is started (the
    forkserver starts once per test session)."""
    import multiprocessing

    multiprocessing.set_forkserver_preload(list(FORKSERVER_PRELOAD))


def spawn_ranks(worker: Any, world_size: int, device_type: str, *args: Any) -> None:
    """Run ``worker(rank, world_size, port, *args)`` in ``world_size`` fresh processes, forked
    from the forkserver (see FORKSERVER_PRELOAD); skips where fewer npu devices exist."""
    import pytest
    import torch.multiprocessing as mp

    if device_type == "npu":
        npu = getattr(torch, "npu", None)
        if npu is None or npu.device_count() < world_size:
            pytest.skip(f"needs {world_size} npu devices, one per rank")
    mp.start_processes(
        _rank_main,
        args=(dict(os.environ), worker, world_size, free_port(), *args),
        nprocs=world_size,
        start_method="forkserver",
    )


def use_environment(environ: dict[str, str]) -> None:
    """Make a forked rank's environment the one its test started it with: a forkserver child
    inherits the server's environment, fixed when the server started (the session's first
    spawn), not the starting process's current one as spawn gives."""
    if dict(os.environ) != environ:
        os.environ.clear()
        os.environ.update(environ)


def _rank_main(rank: int, environ: dict[str, str], worker: Any, *args: Any) -> None:
    """One rank's process: the worker, then an immediate exit once it returned (its checks
    passed). Not by returning: tearing a gloo group down at interpreter exit deadlocked about
    one run in ten (py-spy: the group's destructor, holding the GIL, joins gloo's worker
    thread, which is freeing a finished collective's tensor and waits for the GIL); nothing
    of the process is needed any more. A worker that raises goes through torch's own error
    reporting as before."""
    use_environment(environ)
    worker(rank, *args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _outputs(kind: str, result: Any) -> dict[str, torch.Tensor]:
    """Per feature: pooled [B, D] (bags) or the sequence values [L, D]."""
    if kind == "ebc":
        return dict(result.to_dict())
    result = result.wait() if hasattr(result, "wait") else result
    return {key: jt.values() for key, jt in result.items()}


def _loss(outputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return 0.5 * sum((out**2).sum() for out in outputs.values())  # type: ignore[return-value]


def expected_update(
    kind: str,
    tables: dict[str, tuple],
    weights: dict[str, torch.Tensor],
    world_size: int,
    optimizer: str,
) -> dict[str, torch.Tensor]:
    """The weights after one step of ``optimizer`` on the unsharded CPU module, every rank's
    loss being 0.5 * sum(output ** 2) of its own batch.

    TorchRec divides the embedding gradients coming back through its collectives by the world
    size (comm_ops.GRADIENT_DIVISION), and DDP averages data-parallel gradients: either way the
    step uses the mean over ranks of the per-rank gradients.
    """
    reference = make_module(kind, tables, torch.device("cpu"))
    modules = reference.embedding_bags if kind == "ebc" else reference.embeddings
    with torch.no_grad():
        for name, weight in weights.items():
            modules[name].weight.copy_(weight)
    total = sum(_loss(_outputs(kind, reference(local_batch(r, tables)))) for r in range(world_size))
    total.backward()  # type: ignore[union-attr]
    updated = {}
    for name in tables:
        w = weights[name]
        g = modules[name].weight.grad / world_size
        if optimizer == "sgd":
            updated[name] = w - LEARNING_RATE * g
        elif optimizer == "adagrad":
            updated[name] = w - LEARNING_RATE * g / ((g * g).sqrt() + EPS)
        elif optimizer == "adam":
            # The first step from zero moments: bias correction makes m_hat = g and
            # v_hat = g * g (no weight decay).
            updated[name] = w - LEARNING_RATE * g / ((g * g).sqrt() + EPS)
        else:  # row-wise Adagrad: one accumulator per row, the mean of the squared gradient
            m = (g * g).mean(dim=1, keepdim=True)
            updated[name] = w - LEARNING_RATE * g / (m.sqrt() + EPS)
    return updated


def _check_weights(state: dict[str, Any], want: dict[str, torch.Tensor]) -> int:
    """Compare each table's local shards (or replica) with ``want``; count the comparisons."""
    checked = 0
    for key, local, expected in _local_pieces(state, want):
        torch.testing.assert_close(
            local.detach().cpu(),
            expected,
            rtol=1e-5,
            atol=1e-6,
            msg=lambda m, key=key: f"{key} after one step: {m}",
        )
        checked += 1
    return checked


def dmp_worker(
    rank: int,
    world_size: int,
    port: int,
    kind: str,
    sharding_type: str,
    device_type: str,
    optimizer: str | None = None,
    report: str | None = None,
) -> None:
    """One rank of the test; raises (and so fails the spawning test) on any mismatch.

    device_type "npu" uses hccl; "cpu" (gloo) runs the same checks anywhere, which keeps
    this harness itself tested where no npu exists. With ``optimizer`` the rank also trains
    one step (the fused optimizer for sharded tables, SGD for data-parallel ones) and checks
    the weights against the same step on the CPU. With ``report`` rank 0 writes there, as
    JSON, which aten operators the simulated device ran through its CPU fallback.
    """
    import torch.distributed as dist
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    provider, device = start_rank(rank, world_size, port, device_type)
    try:
        tables = EBC_TABLES if kind == "ebc" else EC_TABLES
        weights = reference_weights(tables)
        fused = None
        if optimizer and sharding_type != "data_parallel":
            fused = fused_params(optimizer)
        sharder = (
            EmbeddingBagCollectionSharder(fused_params=fused)
            if kind == "ebc"
            else EmbeddingCollectionSharder(fused_params=fused)
        )
        planner = EmbeddingShardingPlanner(
            topology=Topology(
                world_size=world_size, local_world_size=world_size, compute_device=device_type
            ),
            constraints={
                name: ParameterConstraints(sharding_types=[sharding_type]) for name in tables
            },
        )
        model = make_module(kind, tables, torch.device("meta"))
        plan = planner.plan(model, [sharder])
        # Every rank plans alone; the plans agree because planning is deterministic.
        for module_plan in plan.plan.values():
            for name, ps in module_plan.items():  # type: ignore[attr-defined]
                assert ps.sharding_type == sharding_type, (name, ps.sharding_type)
                if ps.sharding_spec is not None:
                    for shard in ps.sharding_spec.shards:
                        r = shard.placement.rank()
                        where = "cpu" if device_type == "cpu" else f"{device_type}:{r % world_size}"
                        assert str(shard.placement.device()) == where, shard.placement
        dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])
        with torch.no_grad():
            copied = _load_weights(dmp.state_dict(), weights)
        assert copied > 0, "no table weights found in the sharded state dict"

        reference = make_module(kind, tables, torch.device("cpu"))
        with torch.no_grad():
            for name, weight in weights.items():
                bags = reference.embedding_bags if kind == "ebc" else reference.embeddings
                bags[name].weight.copy_(weight)

        if provider == "npu_sim":
            import npu_sim

            npu_sim.reset_fallback_stats()
        batch = local_batch(rank, tables)
        expected = reference(batch)
        got = dmp(batch.to(device))
        if kind == "ebc":
            want = expected.to_dict()
            have = {k: v.cpu() for k, v in got.to_dict().items()}
            assert sorted(have) == sorted(want)
            for key in want:
                torch.testing.assert_close(have[key], want[key], rtol=1e-5, atol=1e-6)
        else:
            got = got.wait() if hasattr(got, "wait") else got
            assert sorted(got) == sorted(expected)
            for key, jt in expected.items():
                assert got[key].lengths().cpu().tolist() == jt.lengths().tolist(), key
                torch.testing.assert_close(
                    got[key].values().cpu(), jt.values(), rtol=1e-5, atol=1e-6
                )

        if optimizer:
            _loss(_outputs(kind, got)).backward()
            if sharding_type == "data_parallel":
                step = torch.optim.SGD(
                    [p for p in dmp.parameters() if p.requires_grad], lr=LEARNING_RATE
                )
                step.step()
            want_weights = expected_update(kind, tables, weights, world_size, optimizer)
            assert _check_weights(dmp.state_dict(), want_weights) > 0

        finish_rank(provider, report, rank)
    finally:
        dist.destroy_process_group()
