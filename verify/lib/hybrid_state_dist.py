"""Workers of test_hybrid_state.py: gradient accumulation and resharded checkpoints of hybrid
sharded collections, one process per npu rank (hccl for the device, gloo for the host).

Both build their models, batches and float64 reference as hybrid_dist.py does.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import hybrid_dist
import npu_dist
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
    """Trains (no load_dir) or loads the directory checkpoint of another world size, checks
    the probe's outputs against those the checkpoint's ranks saw, and saves its own."""
    import torch.distributed as dist
    from hybrid_torchrec.distributed import load_sharded_checkpoint, save_sharded_checkpoint

    dmp = hybrid_dist._build(case, world_size, device, host_env)
    if load_dir is None:
        for step in range(TRAIN_STEPS):
            _loss(case, dmp(hybrid_dist.batch(case, rank, step))).backward()
    else:
        load_sharded_checkpoint(dmp, load_dir / str(case) / "ckpt")
    outputs = _probe_outputs(case, dmp)
    state = _state_by_id(dmp, host_env.process_group, world_size)
    if load_dir is not None:
        _compare_outputs(case, outputs, torch.load(load_dir / str(case) / "outputs.pt"))
        want = torch.load(load_dir / str(case) / "state.pt")
        assert state.keys() == want.keys(), str(case)
        for table, by_id in want.items():
            assert state[table].keys() == by_id.keys(), (str(case), table)
            for i, (stats, optim) in by_id.items():
                got_stats, got_optim = state[table][i]
                assert got_stats == stats, (str(case), table, i, got_stats, stats)
                assert torch.equal(got_optim, optim), (str(case), table, i)
    _check_ids_held(case, dmp, host_env.process_group, world_size)
    target = save_dir / str(case)
    target.mkdir(parents=True, exist_ok=True)
    save_sharded_checkpoint(dmp, target / "ckpt")
    if rank == 0:
        torch.save(outputs, target / "outputs.pt")
        torch.save(state, target / "state.pt")
    dist.barrier(group=host_env.process_group)


def _state_by_id(dmp: Any, host_pg: Any, world_size: int) -> dict[str, Any]:
    """Per table and id, joined over the ranks: (count, last use, mapper step) and the fused
    optimiser's state of its row (Adagrad's sums, column shards side by side; empty for SGD):
    what a checkpoint must carry with the row to another world size."""
    import torch.distributed as dist

    sharded = hybrid_dist._sharded_module(dmp)
    mine: dict[str, dict[int, Any]] = {}
    for table, mapper in sharded.mappers().items():
        state = mapper.state()
        _, _, states = sharded._fused_optimizer(table)
        columns = [c for c, _ in sharded._local_columns(table)]
        rows = state.rows.tolist()
        per_id = mine.setdefault(table, {})
        for k, i in enumerate(state.ids.tolist()):
            stats = (int(state.counts[k]), int(state.last_used[k]), state.step)
            pieces = {
                c: [t.detach()[rows[k]].cpu().reshape(-1) for t in s]
                for c, s in zip(columns, states, strict=True)
            }
            per_id[i] = (stats, pieces)
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, mine, group=host_pg)
    out: dict[str, Any] = {}
    for held in everyone:
        for table, by_id in held.items():
            joined = out.setdefault(table, {})
            for i, (stats, pieces) in by_id.items():
                old_stats, old_pieces = joined.get(i, (stats, {}))
                assert old_stats == stats, (table, i, "ranks disagree")
                joined[i] = (stats, {**old_pieces, **pieces})
    return {
        table: {
            i: (stats, torch.cat([t for c in sorted(p) for t in p[c]] or [torch.empty(0)]))
            for i, (stats, p) in by_id.items()
        }
        for table, by_id in out.items()
    }


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


# ---- directory checkpoints on CPU ranks (tests/hybrid_torchrec/test_sharded_checkpoint.py) ----

CPU_DIMS = {"t0": 4, "t1": 8}  # t0 table-wise on rank 0, t1 column-wise over every rank


def _cpu_model(world_size: int, host_env: Any, resumable: bool = False) -> Any:
    """A Hash EBC of two tables sharded by DMP with the hybrid sharders on CPU ranks (torchrec
    has no row-wise sharding on CPU: table- and column-wise). ``resumable``: tables of 16 rows
    that evict (LRU) and Adagrad, initialised to a constant (the rows of any world size start
    alike), for the resume checks."""
    import hybrid_torchrec as hy
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from hybrid_torchrec.distributed import get_default_hybrid_sharders
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.sharding_plan import (
        column_wise,
        construct_module_sharding_plan,
        table_wise,
    )
    from torchrec.distributed.types import ShardingPlan

    options: dict[str, Any] = {"num_embeddings": 64}
    optimizer = EmbOptimType.EXACT_SGD
    if resumable:
        init = functools.partial(torch.nn.init.constant_, val=0.05)
        options = {"num_embeddings": 16, "eviction": hy.EvictionPolicy("lru"), "init_fn": init}
        optimizer = EmbOptimType.EXACT_ADAGRAD
    configs = [
        hy.HashEmbeddingBagConfig(name=t, embedding_dim=d, feature_names=[t], **options)
        for t, d in CPU_DIMS.items()
    ]
    module = hy.HashEmbeddingBagCollection(configs, device=torch.device("meta"))
    fused: dict[str, Any] = {"optimizer": optimizer, "learning_rate": 0.1}
    if resumable:
        fused["eps"] = 1e-8
    sharders = get_default_hybrid_sharders(host_env, fused_params=fused)
    sharder = next(s for s in sharders if s.module_type is hy.HashEmbeddingBagCollection)
    per_table = {"t0": table_wise(rank=0), "t1": column_wise(ranks=list(range(world_size)))}
    plan = construct_module_sharding_plan(
        module,
        per_table,
        local_size=world_size,
        world_size=world_size,
        device_type="cpu",
        sharder=sharder,  # type: ignore[arg-type]
    )
    for sharding in plan.values():  # torchrec's helpers pick the dense kernel on CPU
        sharding.compute_kernel = "fused"
    return DistributedModelParallel(
        module, device=torch.device("cpu"), plan=ShardingPlan({"": plan}), sharders=sharders
    )


def _cpu_batch(rank: int, step: int) -> Any:
    from torchrec import KeyedJaggedTensor

    g = torch.Generator().manual_seed(1000 * step + rank)
    pool = torch.randint(-(2**62), 2**62, (40,), generator=torch.Generator().manual_seed(7))
    lengths = torch.randint(0, 4, (2 * 4,), generator=g)
    ids = pool[torch.randint(0, 40, (int(lengths.sum()),), generator=g)]
    return KeyedJaggedTensor.from_lengths_sync(keys=list(CPU_DIMS), values=ids, lengths=lengths)


def _cpu_step(dmp: Any, rank: int, step: int) -> None:
    dmp(_cpu_batch(rank, step)).values().square().sum().backward()


def _rows_by_id(dmp: Any, world_size: int) -> dict[str, dict[int, torch.Tensor]]:
    """Per table, every id any rank holds and its whole vector, joined from the column
    shards of every rank (read from the mappings and weights, not from a checkpoint). Also
    checks that every rank holding a shard of a table holds the same ids."""
    import torch.distributed as dist

    sharded = dmp.module
    mine: dict[str, dict[int, dict[int, torch.Tensor]]] = {}
    for table, mapper in sharded.mappers().items():
        state = mapper.state()
        pieces = mine.setdefault(table, {})
        for shard in sharded._model_parallel_name_to_local_shards[table]:
            c0 = int(shard.metadata.shard_offsets[1])
            for i, row in zip(state.ids.tolist(), state.rows.tolist(), strict=True):
                pieces.setdefault(i, {})[c0] = shard.tensor[row].detach().clone()
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, mine)
    out: dict[str, dict[int, torch.Tensor]] = {}
    for table, dim in CPU_DIMS.items():
        held = [r[table] for r in everyone if table in r]
        assert held, table
        assert all(set(h) == set(held[0]) for h in held), (table, "ranks hold other ids")
        joined: dict[int, dict[int, torch.Tensor]] = {}
        for h in held:
            for i, parts in h.items():
                joined.setdefault(i, {}).update(parts)
        out[table] = {i: torch.cat([p[c] for c in sorted(p)]) for i, p in joined.items()}
        assert all(v.numel() == dim for v in out[table].values()), table
    return out


def run_directory_checkpoint_save(rank: int, world_size: int, port: int, directory: str) -> None:
    """Trains on ``world_size`` CPU ranks and saves: synchronously, then once with rank 1
    unable to write (every rank raises the same CheckpointError; the previous checkpoint stays
    the latest), then in the background while training goes on. Rank 0 keeps the rows by id
    of the background save's moment as ``reference.pt``."""
    import pytest
    import torch.distributed as dist
    from hybrid_torchrec.distributed import (
        CheckpointError,
        load_sharded_checkpoint,
        save_sharded_checkpoint,
        save_sharded_checkpoint_in_background,
    )
    from hybrid_torchrec.distributed.checkpoint import read_global
    from torchrec.distributed.types import ShardingEnv

    npu_dist.start_rank(rank, world_size, port, "cpu")
    host_env = ShardingEnv.from_process_group(dist.new_group(backend="gloo"))
    dmp = _cpu_model(world_size, host_env)
    root = Path(directory)
    ckpt = root / "ckpt"
    for step in range(2):
        _cpu_step(dmp, rank, step)
    first = _rows_by_id(dmp, world_size)
    assert save_sharded_checkpoint(dmp, ckpt)["chain"] == 1

    blocker = ckpt / "chain-000002" / "rank-00001"  # a file where rank 1's directory goes
    if rank == 1:
        blocker.parent.mkdir(parents=True)
        blocker.write_bytes(b"")
    dist.barrier()
    with pytest.raises(CheckpointError, match=r"cannot write .*rank-00001") as failed:
        save_sharded_checkpoint(dmp, ckpt)
    assert str(failed.value).startswith("cannot write" if rank == 1 else "rank 1: cannot write")
    assert read_global(ckpt)["chain"] == 1
    if rank == 1:
        blocker.unlink()
    dist.barrier()

    _cpu_step(dmp, rank, 2)
    reference = _rows_by_id(dmp, world_size)
    pending = save_sharded_checkpoint_in_background(dmp, ckpt)
    _cpu_step(dmp, rank, 3)  # changes rows the background save must not see
    assert pending.result()["chain"] == 2
    assert not _equal(_rows_by_id(dmp, world_size), reference)  # what the checks tell apart
    assert not _equal(first, reference)
    if rank == 0:
        torch.save(reference, root / "reference.pt")
    assert sorted(p.name for p in ckpt.glob("chain-*")) == ["chain-000002"]
    # Back to the rows of the background save's moment, on the same layout.
    load_sharded_checkpoint(dmp, ckpt)
    assert _equal(_rows_by_id(dmp, world_size), reference)
    resume_save(rank, world_size, host_env, root)
    npu_dist.finish_rank("cpu", None, rank)


Rows = dict[str, dict[int, torch.Tensor]]


def _equal(got: Rows, want: Rows) -> bool:
    """The same tables, ids and vectors (bit for bit)."""
    return got.keys() == want.keys() and all(
        got[t].keys() == want[t].keys()
        and all(torch.equal(got[t][i], v) for i, v in want[t].items())
        for t in want
    )


def run_directory_checkpoint_load(rank: int, world_size: int, port: int, directory: str) -> None:
    """Loads the checkpoint of run_directory_checkpoint_save on ``world_size`` CPU ranks (a
    fresh model): every table's ids and vectors equal the saving ranks' rows; a damaged file
    is then refused on every rank, the rows staying as they are."""
    import pytest
    import torch.distributed as dist
    from hybrid_torchrec.distributed import CheckpointError, load_sharded_checkpoint
    from torchrec.distributed.types import ShardingEnv

    npu_dist.start_rank(rank, world_size, port, "cpu")
    host_env = ShardingEnv.from_process_group(dist.new_group(backend="gloo"))
    dmp = _cpu_model(world_size, host_env)
    root = Path(directory)
    reference = torch.load(root / "reference.pt")
    load_sharded_checkpoint(dmp, root / "ckpt")
    assert _equal(_rows_by_id(dmp, world_size), reference)
    dist.barrier()
    if rank == 0:
        (victim,) = (root / "ckpt").glob("chain-*/rank-00001/t1-*.rows")
        data = bytearray(victim.read_bytes())
        data[-1] ^= 0xFF
        victim.write_bytes(bytes(data))
    dist.barrier()
    with pytest.raises(CheckpointError, match=r"rank-00001/t1-.*does not match the manifest"):
        load_sharded_checkpoint(dmp, root / "ckpt")
    assert _equal(_rows_by_id(dmp, world_size), reference)
    if rank == 0:
        data[-1] ^= 0xFF
        victim.write_bytes(bytes(data))
    resume_load(rank, world_size, host_env, root)
    npu_dist.finish_rank("cpu", None, rank)


# ---- resuming training on CPU ranks (tests/hybrid_torchrec/test_sharded_checkpoint.py) ------

RESUME_STEPS = 3  # steps before the checkpoint and after it
GLOBAL_BATCH = 4  # samples per feature and step, split over the ranks


def _global_step(dmp: Any, rank: int, world_size: int, step: int) -> None:
    """One step on rank ``rank``'s part of the global batch of ``step``: every world size
    trains on the same samples in the same order. The loss is scaled by the world size, which
    torchrec's gradient division (on by default) divides by again: in every world size each
    row's gradient is the sum over the global batch (powers of two: exact)."""
    from torchrec import KeyedJaggedTensor

    g = torch.Generator().manual_seed(5000 + step)
    pool = torch.randint(-(2**62), 2**62, (40,), generator=torch.Generator().manual_seed(7))
    lengths = torch.randint(0, 5, (len(CPU_DIMS), GLOBAL_BATCH), generator=g)
    ids = pool[torch.randint(0, 40, (int(lengths.sum()),), generator=g)]
    per_feature = ids.split(lengths.sum(1).tolist())
    part = GLOBAL_BATCH // world_size
    mine = slice(rank * part, (rank + 1) * part)
    values = []
    for feature, feature_ids in enumerate(per_feature):
        starts = torch.cat([torch.zeros(1, dtype=torch.int64), lengths[feature].cumsum(0)])
        values.append(feature_ids[int(starts[mine.start]) : int(starts[mine.stop])])
    kjt = KeyedJaggedTensor.from_lengths_sync(
        keys=list(CPU_DIMS), values=torch.cat(values), lengths=lengths[:, mine].reshape(-1)
    )
    (world_size * dmp(kjt).values().square().sum()).backward()


def _resume_state(dmp: Any, world_size: int) -> dict[str, Any]:
    """Per table, joined over the ranks: the mapping (ids in eviction order, counts, last
    uses, step) and each id's whole row and whole Adagrad state (column shards side by side).
    Every rank that holds a table must hold the same mapping."""
    import torch.distributed as dist

    sharded = dmp.module
    mine: dict[str, Any] = {}
    for table, mapper in sharded.mappers().items():
        state = mapper.state()
        _, _, states = sharded._fused_optimizer(table)
        columns = sharded._local_columns(table)
        mine[table] = {
            "mapping": (state.ids, state.counts, state.last_used, state.step),
            "pieces": {
                c: (w.detach()[state.rows].clone(), s[0][state.rows].clone())
                for (c, w), s in zip(columns, states, strict=True)
            },
        }
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, mine)
    out = {}
    for table in CPU_DIMS:
        held = [r[table] for r in everyone if table in r]
        ids, counts, last_used, step = held[0]["mapping"]
        for other in held[1:]:
            assert all(
                torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
                for a, b in zip(other["mapping"], held[0]["mapping"], strict=True)
            ), (table, "ranks hold other mappings")
        pieces = {c: v for h in held for c, v in h["pieces"].items()}
        order = sorted(pieces)
        out[table] = {
            "ids": ids.tolist(),
            "counts": counts.tolist(),
            "last_used": last_used.tolist(),
            "step": step,
            "rows": torch.cat([pieces[c][0] for c in order], dim=1),
            "adagrad": torch.cat([pieces[c][1] for c in order], dim=1),
        }
    return out


def _train_held(dmp: Any, rank: int, world_size: int, steps: range) -> list[Any]:
    """Trains the global steps ``steps``; after each, the ids every table holds in eviction
    order (which ids each step evicted)."""
    held = []
    for step in steps:
        _global_step(dmp, rank, world_size, step)
        held.append({t: m.state().ids.tolist() for t, m in dmp.module.mappers().items()})
    return held


def _assert_resumed(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Bit for bit: mappings, rows and Adagrad's state by id."""
    assert got.keys() == want.keys()
    for table, w in want.items():
        g = got[table]
        for key in ("ids", "counts", "last_used", "step"):
            assert g[key] == w[key], (table, key)
        assert torch.equal(g["rows"], w["rows"]), (table, "rows")
        assert torch.equal(g["adagrad"], w["adagrad"]), (table, "adagrad")


def resume_save(rank: int, world_size: int, host_env: Any, root: Path) -> None:
    """RESUME_STEPS global steps, a checkpoint, RESUME_STEPS more (rank 0 keeps what the
    uninterrupted run ends with and which ids each later step held as ``resume.pt``); then a
    fresh model of this world size loads the checkpoint and trains the later steps: it must
    end bit for bit where the uninterrupted run did, evicting the same ids at every step."""
    from hybrid_torchrec.distributed import load_sharded_checkpoint, save_sharded_checkpoint

    later = range(RESUME_STEPS, 2 * RESUME_STEPS)
    dmp = _cpu_model(world_size, host_env, resumable=True)
    _train_held(dmp, rank, world_size, range(RESUME_STEPS))
    save_sharded_checkpoint(dmp, root / "resume")
    held = _train_held(dmp, rank, world_size, later)
    want = _resume_state(dmp, world_size)
    evicted = [set(a["t1"]) - set(b["t1"]) for a, b in itertools.pairwise(held)]
    assert any(evicted), "the steps after the checkpoint evict nothing"
    if rank == 0:
        torch.save({"held": held, "state": want}, root / "resume.pt")
    resumed = _cpu_model(world_size, host_env, resumable=True)
    load_sharded_checkpoint(resumed, root / "resume")
    assert _train_held(resumed, rank, world_size, later) == held
    _assert_resumed(_resume_state(resumed, world_size), want)


def resume_load(rank: int, world_size: int, host_env: Any, root: Path) -> None:
    """A fresh model of another world size loads run_resume_save's checkpoint and trains the
    later global steps: the same ids evicted at every step, and bit for bit the rows,
    Adagrad's state and the mappings the uninterrupted run ended with."""
    from hybrid_torchrec.distributed import load_sharded_checkpoint

    reference = torch.load(root / "resume.pt")
    resumed = _cpu_model(world_size, host_env, resumable=True)
    load_sharded_checkpoint(resumed, root / "resume")
    later = range(RESUME_STEPS, 2 * RESUME_STEPS)
    got = _train_held(resumed, rank, world_size, later)
    # Every rank holds a column shard of t1, rank 0 alone the table-wise t0.
    assert got == [{t: h[t] for t in step} for h, step in zip(reference["held"], got, strict=True)]
    _assert_resumed(_resume_state(resumed, world_size), reference["state"])
