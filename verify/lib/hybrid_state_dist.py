"""Workers of test_hybrid_state.py: gradient accumulation and resharded checkpoints of hybrid
sharded collections, one process per npu rank (hccl for the device, gloo for the host).

Both build their models, batches and float64 reference as hybrid_dist.py does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hybrid_dist
import torch

Case = hybrid_dist.Case
MICRO_BATCHES = 3
TRAIN_STEPS = 2


def _loss(case: Case, result: Any) -> torch.Tensor:
    out = hybrid_dist._outputs(case, result)
    return 0.5 * sum((v**2).sum() for v in out.values())  # type: ignore[return-value]


def run_accumulation_case(
    case: Case, rank: int, world_size: int, device: torch.device, host_env: Any
) -> int:
    """Three micro-batches inside accumulate_gradients against the float64 reference's one
    step on every rank's three batches joined: rows and Adagrad's state by id (or row).
    Returns how many rows were compared."""
    from hybrid_torchrec.distributed import accumulate_gradients
    from hybrid_torchrec.distributed.accumulate import join_batches

    dmp = hybrid_dist._build(case, world_size, device, host_env)
    micro = {
        r: [hybrid_dist.batch(case, r, s) for s in range(MICRO_BATCHES)] for r in range(world_size)
    }
    with accumulate_gradients(dmp):
        for kjt in micro[rank]:
            _loss(case, dmp(kjt)).backward()
    reference = hybrid_dist.Reference(case)
    reference.step([join_batches(micro[r]) for r in range(world_size)])
    sharded = hybrid_dist._sharded_module(dmp)
    dims = {t: d for t, (_, d, _) in hybrid_dist.tables_of(case.kind).items()}

    def fresh(table: str, g: int) -> torch.Tensor:
        return hybrid_dist.initial_row(table, dims[table], case.hashed, g)

    def zero(table: str, g: int) -> torch.Tensor:
        return torch.zeros(dims[table], dtype=torch.float64)

    weights = hybrid_dist._pieces(dmp.state_dict())
    checked = hybrid_dist._compare_rows(
        "accumulated weights", case, weights, sharded, reference.rows, fresh
    )
    sums = hybrid_dist._optimizer_pieces(dmp, case)
    return checked + hybrid_dist._compare_rows(
        "accumulated Adagrad state", case, sums, sharded, reference.sums, zero
    )


def _probe(case: Case) -> Any:
    """A batch of ids every case has trained on (rank 0's first batch), fed to every rank."""
    return hybrid_dist.batch(case, 0, 0)


def _probe_outputs(case: Case, dmp: Any) -> dict[str, torch.Tensor]:
    # Evaluation: a sharded table refuses ids it has no row for, so a rank that lost an id
    # in resharding fails here instead of reading a fresh row.
    dmp.eval()
    with torch.no_grad():
        out = hybrid_dist._outputs(case, dmp(_probe(case)))
    dmp.train()
    return {k: v.detach().cpu() for k, v in out.items()}


def run_checkpoint_case(
    case: Case,
    rank: int,
    world_size: int,
    device: torch.device,
    host_env: Any,
    load_dir: Path | None,
    save_dir: Path,
) -> None:
    """Trains (no load_dir) or loads the portable checkpoint of another world size, checks
    the probe's outputs against those the checkpoint's ranks saw, and saves its own."""
    import torch.distributed as dist
    from hybrid_torchrec.distributed import portable_state_dict

    dmp = hybrid_dist._build(case, world_size, device, host_env)
    if load_dir is None:
        for step in range(TRAIN_STEPS):
            _loss(case, dmp(hybrid_dist.batch(case, rank, step))).backward()
    else:
        files = sorted((load_dir / str(case)).glob("rank*.pt"))
        dmp.load_state_dict(portable_state_dict(*(torch.load(f) for f in files)))
    outputs = _probe_outputs(case, dmp)
    if load_dir is not None:
        _compare_outputs(case, outputs, torch.load(load_dir / str(case) / "outputs.pt"))
    _check_ids_held(case, dmp, host_env.process_group, world_size)
    target = save_dir / str(case)
    target.mkdir(parents=True, exist_ok=True)
    # One file per rank: the id rows are per-rank tensors of different lengths under the same
    # keys, which torch.distributed.checkpoint would take for replicas and write once.
    torch.save(portable_state_dict(dmp.state_dict()), target / f"rank{rank}.pt")
    if rank == 0:
        torch.save(outputs, target / "outputs.pt")
    dist.barrier(group=host_env.process_group)


def _compare_outputs(
    case: Case, got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]
) -> None:
    assert sorted(got) == sorted(want), (str(case), sorted(got), sorted(want))
    for key, value in want.items():
        if case.sharding_type == "row_wise" and case.kind == "ebc":
            # A bag's ids are summed on the ranks holding them and the partial sums added in
            # the output distribution: another world size adds in another order.
            torch.testing.assert_close(got[key], value, rtol=1e-6, atol=1e-6)
        else:
            assert torch.equal(got[key], value), (str(case), key, got[key], value)


def _check_ids_held(case: Case, dmp: Any, host_pg: Any, world_size: int) -> None:
    """Every id of the table on exactly the ranks that must hold it."""
    import torch.distributed as dist

    sharded = hybrid_dist._sharded_module(dmp)
    held = {t: m.state().ids.tolist() for t, m in sharded.mappers().items()}
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, held, group=host_pg)
    for table in hybrid_dist.tables_of(case.kind):
        per_rank = [set(h[table]) for h in everyone if table in h]
        union = set().union(*per_rank)
        if case.sharding_type == "row_wise":
            assert sum(map(len, per_rank)) == len(union), (str(case), table, "held twice")
        else:
            assert all(ids == union for ids in per_rank), (str(case), table)


def worker(
    rank: int,
    world_size: int,
    port: int,
    accumulation_cases: list[Case],
    checkpoint_cases: list[Case],
    load_dir: str | None,
    save_dir: str | None,
) -> None:
    with hybrid_dist.hybrid_rank(rank, world_size, port, None) as (device, host_env):
        for case in accumulation_cases:
            checked = run_accumulation_case(case, rank, world_size, device, host_env)
            hybrid_dist.assert_some_rank_checked(case, checked, host_env, world_size)
        for case in checkpoint_cases:
            assert save_dir is not None
            source = Path(load_dir) if load_dir is not None else None
            run_checkpoint_case(case, rank, world_size, device, host_env, source, Path(save_dir))
