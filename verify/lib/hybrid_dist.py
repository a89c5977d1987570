"""Workers of the hybrid_torchrec distributed tests (test_hybrid_dmp.py).

Each worker is one rank: an npu device with an hccl process group for the device and a gloo
group for the host. For every case (collection kind, Hash or row-number ids, sharding type,
optimizer) it shards a small collection with DistributedModelParallel and the hybrid sharders,
trains it three steps on its own batches, and after each step compares with an independent
reference computed in float64 on the CPU: the unsharded model fed every rank's batch, its ids
mapped to rows by a plain dict, trained with the optimizer's formula written out.

* outputs: this rank's output of the step, against the reference's for this rank's batch;
* weights: every local shard, row by row: a Hash table's row through this rank's mapping (each
  mapped id's row equals the reference's row of that id), a plain table's row by its number;
* optimizer state (Adagrad's sum) the same way;
* mappings: every id the reference has seen is mapped on exactly the ranks that must hold it
  (one rank for row-wise, every shard holder for table- and column-wise).

Initial rows: a Hash table's rows all start equal (a vector per table with distinct columns),
so which free row an id takes cannot matter; a plain table's row g starts at c + s * g.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import npu_dist
import torch

LR = npu_dist.LEARNING_RATE
EPS = npu_dist.EPS
STEPS = 3
BATCH = 3

# table -> (rows, dim, features). One feature per table: the npu TBE kernel cannot yet take
# two features of one table (see test_hybrid_dmp.py).
EBC_TABLES = {"t0": (64, 16, ("a",)), "t1": (48, 8, ("c",))}
EC_TABLES = {"t0": (64, 16, ("a",)), "t1": (48, 16, ("c",))}
# Column-wise shards of 8 columns: 16-wide tables in 2, the EBC's 8-wide t1 stays one shard.
CW_COLUMNS = 8
# Distinct arbitrary ids a Hash table's batches draw from (negative, huge, near the limits).
POOL_SIZE = 24
# Eviction cases (LRU): tables of 12 rows per rank fed from 96 ids over 5 steps, so that ids
# lose their rows and come back (each rank's batches bring ~20 distinct ids per table), while
# one step's distinct ids still fit every shard (at most 11 per table with 2 ranks, 19 with 4,
# spread over the row-wise shards by hash).
EVICT_ROWS_PER_RANK = 12
EVICT_POOL = 96
EVICT_STEPS = 5
# Their rows all start at this value: torchrec applies a table's init_fn to each column shard
# on its own, so the value an evicted row is reset to cannot depend on the column.
EVICT_INIT = 0.25


@dataclasses.dataclass(frozen=True)
class Case:
    kind: str  # "ebc" or "ec"
    hashed: bool
    sharding_type: str
    optimizer: str  # "sgd" or "adagrad"
    evicting: bool = False  # Hash tables with LRU eviction (EVICT_ROWS_PER_RANK rows a rank)

    def __str__(self) -> str:
        hashed = "-hash" if self.hashed else ""
        lru = "-lru" if self.evicting else ""
        return f"{self.kind}{hashed}-{self.sharding_type}-{self.optimizer}{lru}"

    @property
    def steps(self) -> int:
        return EVICT_STEPS if self.evicting else STEPS

    @property
    def pool_size(self) -> int:
        return EVICT_POOL if self.evicting else POOL_SIZE


def tables_of(kind: str) -> dict[str, tuple]:
    return EBC_TABLES if kind == "ebc" else EC_TABLES


def _pool(table: str, size: int) -> list[int]:
    g = torch.Generator().manual_seed(sum(map(ord, table)))
    ids = torch.randint(-(2**62), 2**62, (size - 3,), generator=g).tolist()
    return [*ids, -1, 2**63 - 1, -(2**63)]


def batch(case: Case, rank: int, step: int) -> Any:
    """This rank's batch of a step: bags of 0-3 ids, a repeat within a bag, ids shared
    between ranks and steps."""
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(1000 * step + 17 * rank + len(str(case)))
    keys, values, lengths = [], [], []
    for table, (rows, _, features) in sorted(tables_of(case.kind).items()):
        pool = _pool(table, case.pool_size)
        for feature in features:
            keys.append(feature)
            for b in range(BATCH):
                n = int(torch.randint(0, 4, (1,), generator=g))
                picks = torch.randint(0, case.pool_size if case.hashed else rows, (n,), generator=g)
                bag = [pool[i] if case.hashed else int(i) for i in picks.tolist()]
                if b == 0 and bag:
                    bag.append(bag[0])  # a duplicate within a bag
                lengths.append(len(bag))
                values.extend(bag)
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys,
        values=torch.tensor(values, dtype=torch.int64),
        lengths=torch.tensor(lengths, dtype=torch.int64),
    )


def _base(table: str, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(7 + sum(map(ord, table)))
    return torch.rand(dim, generator=g, dtype=torch.float64) - 0.5, torch.full(
        (dim,), 1e-3, dtype=torch.float64
    )


def initial_row(table: str, dim: int, hashed: bool, row: int, evicting: bool = False):
    if evicting:
        return torch.full((dim,), EVICT_INIT, dtype=torch.float64)
    c, s = _base(table, dim)
    return c if hashed else c + s * row


class Reference:
    """The unsharded model in float64: per table a dict key -> row (key: the id for Hash
    tables, the row number otherwise), the rows, and Adagrad's sums."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.tables = tables_of(case.kind)
        self.rows: dict[str, dict[int, torch.Tensor]] = {t: {} for t in self.tables}
        self.sums: dict[str, dict[int, torch.Tensor]] = {t: {} for t in self.tables}

    def forget(self, table: str, ids: set[int]) -> None:
        """Evicted ids: seen again, they start from the initial row and no Adagrad sum."""
        for key in ids:
            del self.rows[table][key], self.sums[table][key]

    def _row(self, table: str, key: int) -> torch.Tensor:
        rows = self.rows[table]
        if key not in rows:
            dim = self.tables[table][1]
            rows[key] = initial_row(table, dim, self.case.hashed, key, self.case.evicting).clone()
            self.sums[table][key] = torch.zeros(dim, dtype=torch.float64)
        return rows[key]

    def _forward(
        self, kjt: Any, leaves: dict[tuple[str, int], torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        feature_table = {f: t for t, (_, _, fs) in self.tables.items() for f in fs}
        out: dict[str, torch.Tensor] = {}
        for key, jt in kjt.to_dict().items():
            table = feature_table[key]
            vecs = []
            for i in jt.values().tolist():
                leaf = leaves.get((table, i))
                if leaf is None:
                    leaf = self._row(table, i).clone().requires_grad_()
                    leaves[(table, i)] = leaf
                vecs.append(leaf)
            dim = self.tables[table][1]
            rows = torch.stack(vecs) if vecs else torch.zeros(0, dim, dtype=torch.float64)
            if self.case.kind == "ec":
                out[key] = rows
            else:
                bags = rows.split(jt.lengths().tolist())
                out[key] = torch.stack(
                    [b.sum(0) if len(b) else torch.zeros(dim, dtype=torch.float64) for b in bags]
                )
        return out

    def step(self, batches: list[Any]) -> list[dict[str, torch.Tensor]]:
        """One training step on every rank's batch; returns each rank's outputs."""
        leaves: dict[tuple[str, int], torch.Tensor] = {}
        outputs = [self._forward(kjt, leaves) for kjt in batches]
        # torchrec divides the gradients by the world size (and DDP averages): the mean loss.
        loss = sum(0.5 * sum((o**2).sum() for o in out.values()) for out in outputs)
        (loss / len(batches)).backward()  # type: ignore[operator]
        with torch.no_grad():
            for (table, key), leaf in leaves.items():
                g = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
                row = self.rows[table][key]
                if self.case.optimizer == "sgd":
                    row -= LR * g
                else:
                    state = self.sums[table][key]
                    state += g * g
                    row -= LR * g / (state.sqrt() + EPS)
        return [{k: v.detach() for k, v in out.items()} for out in outputs]


def _plan(case: Case, model: torch.nn.Module, sharder: Any, world_size: int) -> Any:
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    kernel = "dense" if case.sharding_type == "data_parallel" else "fused"
    constraints = {
        name: ParameterConstraints(
            sharding_types=[case.sharding_type],
            compute_kernels=[kernel],
            min_partition=CW_COLUMNS,
        )
        for name in tables_of(case.kind)
    }
    planner = EmbeddingShardingPlanner(
        topology=Topology(world_size=world_size, local_world_size=world_size, compute_device="npu"),
        constraints=constraints,
    )
    plan = planner.plan(model, [sharder])
    for module_plan in plan.plan.values():
        for name, ps in module_plan.items():  # type: ignore[attr-defined]
            assert ps.sharding_type == case.sharding_type, (name, ps.sharding_type)
            if case.sharding_type == "column_wise":
                # Real column shards: 8 columns each, so the 16-wide t0 is split in two.
                widths = {s.shard_sizes[1] for s in ps.sharding_spec.shards}
                assert widths == {CW_COLUMNS}, (name, widths)
    return plan


def make_model(case: Case, device: torch.device, world_size: int = 1) -> torch.nn.Module:
    import hybrid_torchrec as hy
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

    ebc = case.kind == "ebc"
    if case.hashed:
        config = hy.HashEmbeddingBagConfig if ebc else hy.HashEmbeddingConfig
        cls = hy.HashEmbeddingBagCollection if ebc else hy.HashEmbeddingCollection
    else:
        config = EmbeddingBagConfig if ebc else EmbeddingConfig
        cls = EmbeddingBagCollection if ebc else EmbeddingCollection
    configs = [
        config(name=t, num_embeddings=r, embedding_dim=d, feature_names=list(fs))
        for t, (r, d, fs) in sorted(tables_of(case.kind).items())
    ]
    if case.evicting:
        for c in configs:
            c.num_embeddings = EVICT_ROWS_PER_RANK * world_size
            c.eviction = hy.EvictionPolicy("lru")
            c.init_fn = FillWith(EVICT_INIT)
    return cls(tables=configs, device=device)


class FillWith:
    """init_fn of an evicting Hash table: what a row taken from an evicted id is reset to."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():  # as torch.nn.init does: torchrec passes parameters
            return t.fill_(self.value)


def _pieces(
    state: dict[str, Any], suffix: str = ".weight"
) -> list[tuple[str, int, int, torch.Tensor]]:
    """(table, first row, first column, local tensor) of every local shard or replica."""
    from torch.distributed._shard.sharded_tensor import ShardedTensor

    out = []
    for key, value in state.items():
        if not key.endswith(suffix):
            continue
        table = key.split(".")[-2]
        if isinstance(value, ShardedTensor):
            for shard in value.local_shards():
                r0, c0 = shard.metadata.shard_offsets
                out.append((table, int(r0), int(c0), shard.tensor))
        else:
            out.append((table, 0, 0, value))
    return out


def _sharded_module(dmp: torch.nn.Module) -> Any:
    from hybrid_torchrec.distributed import (
        HybridShardedEmbeddingBagCollection,
        HybridShardedEmbeddingCollection,
    )

    for module in dmp.modules():
        if isinstance(
            module, (HybridShardedEmbeddingBagCollection, HybridShardedEmbeddingCollection)
        ):
            return module
    raise AssertionError("no hybrid sharded collection in the model")


def _rows_of(sharded: Any, case: Case, table: str, nrows: int) -> dict[int, int]:
    """Reference key -> local row of this rank's shard."""
    if not case.hashed:
        return {}
    state = sharded.mappers()[table].state()
    rows = state.rows.tolist()
    assert all(0 <= r < nrows for r in rows), (table, rows, nrows)
    return dict(zip(state.ids.tolist(), rows, strict=True))


def _compare_rows(
    what: str,
    case: Case,
    pieces: list[tuple[str, int, int, torch.Tensor]],
    sharded: Any,
    reference: dict[str, dict[int, torch.Tensor]],
    fresh: Any,
) -> int:
    checked = 0
    for table, r0, c0, local in pieces:
        local = local.detach().cpu().double()
        nrows, ncols = local.shape
        want_rows = reference[table]
        if case.hashed:
            mapping = _rows_of(sharded, case, table, nrows)
            for key, row in mapping.items():
                assert key in want_rows, f"{case}: {table} maps id {key} the reference never saw"
                torch.testing.assert_close(
                    local[row],
                    want_rows[key][c0 : c0 + ncols],
                    rtol=1e-5,
                    atol=1e-6,
                    msg=lambda m, t=table, k=key: f"{case} {what} {t} id {k}: {m}",
                )
                checked += 1
        else:
            for i in range(nrows):
                g = r0 + i
                want = want_rows[g] if g in want_rows else fresh(table, g)
                torch.testing.assert_close(
                    local[i],
                    want[c0 : c0 + ncols],
                    rtol=1e-5,
                    atol=1e-6,
                    msg=lambda m, t=table, g=g: f"{case} {what} {t} row {g}: {m}",
                )
                checked += 1
    return checked


def _optimizer_pieces(dmp: Any, case: Case) -> list[tuple[str, int, int, torch.Tensor]]:
    """Adagrad's sums, as local pieces like the weights'."""
    out = []
    if case.sharding_type == "data_parallel":
        for name, param in dmp.named_parameters():
            state = dmp._hybrid_dense_optimizer.state.get(param, {})
            if "sum" in state:
                out.append((name.split(".")[-2], 0, 0, state["sum"]))
        return out
    return fused_state_pieces(dmp)


def fused_state_pieces(dmp: Any) -> list[tuple[str, int, int, torch.Tensor]]:
    """The fused optimizer's per-row state (Adagrad's sums) as local pieces like the weights'."""
    from torch.distributed._shard.sharded_tensor import ShardedTensor

    out = []
    for key, per_param in dmp.fused_optimizer.state_dict()["state"].items():
        table = key.split(".")[-2]
        for name, value in per_param.items():
            if not str(name).endswith("momentum1"):
                continue
            assert isinstance(value, ShardedTensor), (key, name, type(value))
            for shard in value.local_shards():
                r0, c0 = shard.metadata.shard_offsets
                out.append((table, int(r0), int(c0), shard.tensor))
    return out


def _set_initial_weights(dmp: Any, case: Case) -> None:
    with torch.no_grad():
        for table, r0, c0, local in _pieces(dmp.state_dict()):
            nrows, ncols = local.shape
            dim = tables_of(case.kind)[table][1]
            rows = torch.stack(
                [
                    initial_row(table, dim, case.hashed, r0 + i, case.evicting)[c0 : c0 + ncols]
                    for i in range(nrows)
                ]
            )
            local.copy_(rows.to(local.dtype))


def _outputs(case: Case, result: Any) -> dict[str, torch.Tensor]:
    if case.kind == "ebc":
        return dict(result.to_dict())
    result = result.wait() if hasattr(result, "wait") else result
    return {key: jt.values() for key, jt in result.items()}


def _check_mapping_coverage(
    sharded: Any, case: Case, reference: Reference, host_pg: Any, world_size: int
) -> None:
    import torch.distributed as dist

    sizes = {t: m.size for t, m in sharded.mappers().items()}
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, sizes, group=host_pg)
    for table in reference.tables:
        seen = len(reference.rows[table])
        held = [s[table] for s in everyone if table in s]
        if case.sharding_type == "row_wise":
            assert len(held) == world_size and sum(held) == seen, (str(case), table, held, seen)
        else:  # every holder of a table or column shard maps every id
            assert held and all(h == seen for h in held), (str(case), table, held, seen)


def run_case(case: Case, rank: int, world_size: int, device: torch.device, host_env: Any) -> int:
    """Trains one case three steps; returns how many rows were compared."""
    dmp = _build(case, world_size, device, host_env)
    if case.sharding_type == "data_parallel":
        params = [p for p in dmp.parameters() if p.requires_grad]
        dmp._hybrid_dense_optimizer = (
            torch.optim.SGD(params, lr=LR)
            if case.optimizer == "sgd"
            else torch.optim.Adagrad(params, lr=LR, eps=EPS)
        )
    sharded = _sharded_module(dmp)
    reference = Reference(case)
    dim_of = {t: d for t, (_, d, _) in tables_of(case.kind).items()}

    def fresh(table: str, g: int) -> torch.Tensor:
        return initial_row(table, dim_of[table], case.hashed, g, case.evicting)

    def zero(table: str, g: int) -> torch.Tensor:
        return torch.zeros(dim_of[table], dtype=torch.float64)

    checked = evicted = 0
    mapped = _mapped_ids(sharded, case, host_env.process_group, world_size)
    for step in range(case.steps):
        batches = [batch(case, r, step) for r in range(world_size)]
        got = _outputs(case, dmp(batches[rank]))
        if case.evicting:  # the ids this step's mapping evicted start afresh in the reference
            now = _mapped_ids(sharded, case, host_env.process_group, world_size)
            for table, ids in mapped.items():
                reference.forget(table, ids - now[table])
                evicted += len(ids - now[table])
            mapped = now
        want = reference.step(batches)[rank]
        assert sorted(got) == sorted(want), (str(case), sorted(got))
        for key, value in want.items():
            torch.testing.assert_close(
                got[key].detach().cpu().double(),
                value,
                rtol=1e-5,
                atol=1e-6,
                msg=lambda m, k=key, s=step: f"{case} step {s} output {k}: {m}",
            )
        loss = sum(0.5 * (v**2).sum() for v in got.values())
        loss.backward()  # type: ignore[union-attr]
        if case.sharding_type == "data_parallel":
            dmp._hybrid_dense_optimizer.step()
            dmp._hybrid_dense_optimizer.zero_grad()
        weights = _pieces(dmp.state_dict())
        checked += _compare_rows(
            f"step {step} weights", case, weights, sharded, reference.rows, fresh
        )
        if case.optimizer == "adagrad":
            pieces = _optimizer_pieces(dmp, case)
            assert pieces or not weights, f"{case}: no Adagrad state found"
            checked += _compare_rows(
                f"step {step} Adagrad state", case, pieces, sharded, reference.sums, zero
            )
        if case.hashed:
            _check_mapping_coverage(sharded, case, reference, host_env.process_group, world_size)
    assert evicted or not case.evicting, f"{case}: no id was evicted"
    return checked


def _mapped_ids(sharded: Any, case: Case, host_pg: Any, world_size: int) -> dict[str, set[int]]:
    """Table -> every id mapped on some rank (Hash tables; empty otherwise)."""
    import torch.distributed as dist

    if not case.hashed:
        return {}
    mine = {t: m.state().ids.tolist() for t, m in sharded.mappers().items()}
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, mine, group=host_pg)
    return {t: {i for held in everyone for i in held.get(t, [])} for t in tables_of(case.kind)}


class _LossOf(torch.nn.Module):
    """model(batch) -> (loss, outputs), as the pipelines call it."""

    def __init__(self, dmp: torch.nn.Module, case: Case) -> None:
        super().__init__()
        self.dmp = dmp
        self.case = case

    def forward(self, kjt: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        out = _outputs(self.case, self.dmp(kjt))
        return sum(0.5 * (v**2).sum() for v in out.values()), out  # type: ignore[return-value]


def _build(case: Case, world_size: int, device: torch.device, host_env: Any) -> Any:
    from hybrid_torchrec.distributed import get_default_hybrid_sharders
    from torchrec.distributed.model_parallel import DistributedModelParallel

    # Data-parallel tables train through a dense optimizer, not fused into the lookup.
    fused = None if case.sharding_type == "data_parallel" else npu_dist.fused_params(case.optimizer)
    sharders = get_default_hybrid_sharders(host_env, fused_params=fused)
    model = make_model(case, torch.device("meta"), world_size)
    sharder = next(s for s in sharders if s.module_type is type(model))
    plan = _plan(case, model, sharder, world_size)
    dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=sharders)
    _set_initial_weights(dmp, case)
    return dmp


def run_pipeline_case(
    case: Case, rank: int, world_size: int, device: torch.device, host_env: Any
) -> None:
    """HybridTrainPipeline against the plain loop on the same batches: identical outputs,
    weights and mappings, bit for bit."""
    from hybrid_torchrec.distributed.pipeline import HybridTrainPipeline

    steps = 4
    batches = [batch(case, rank, step) for step in range(steps)]
    plain = _LossOf(_build(case, world_size, device, host_env), case)
    want = []
    for kjt in batches:
        loss, out = plain(kjt)
        loss.backward()
        want.append({k: v.detach().cpu() for k, v in out.items()})
    piped = _LossOf(_build(case, world_size, device, host_env), case)
    pipeline = HybridTrainPipeline(piped, None, sparse_features=lambda kjt: kjt)
    it = iter(batches)
    got = [pipeline.progress(it) for _ in range(steps)]
    try:
        pipeline.progress(it)
        raise AssertionError("the pipeline went past the last batch")
    except StopIteration:
        pass
    pipeline.close()
    for step, (g, w) in enumerate(zip(got, want, strict=True)):
        for key in w:
            assert torch.equal(g[key].detach().cpu(), w[key]), (str(case), step, key)
    for (t, r0, c0, a), (_, _, _, b) in zip(
        _pieces(plain.dmp.state_dict()), _pieces(piped.dmp.state_dict()), strict=True
    ):
        assert torch.equal(a.cpu(), b.cpu()), (str(case), "weights", t, r0, c0)
    for name, mapper in _sharded_module(plain.dmp).mappers().items():
        other = _sharded_module(piped.dmp).mappers()[name].state()
        assert torch.equal(mapper.state().ids, other.ids), (str(case), name)
        assert torch.equal(mapper.state().rows, other.rows), (str(case), name)
    if case.evicting:  # more distinct ids were fed than the shards now map: some were evicted
        mapped = _mapped_ids(_sharded_module(plain.dmp), case, host_env.process_group, world_size)
        fed = [batch(case, r, s).to_dict() for r in range(world_size) for s in range(steps)]
        evicted = 0
        for table, (_, _, features) in tables_of(case.kind).items():
            seen = {i for b in fed for f in features for i in b[f].values().tolist()}
            evicted += len(seen) - len(mapped[table])
        assert evicted > 0, f"{case}: no id was evicted"


@contextmanager
def hybrid_rank(rank: int, world_size: int, port: int, report: str | None) -> Iterator[Any]:
    """This process as one rank: npu:rank over hccl and a gloo host group (yields the device
    and the host ShardingEnv); the rank's report is written when the body succeeded."""
    import torch.distributed as dist
    from torchrec.distributed.types import ShardingEnv

    provider, device = npu_dist.start_rank(rank, world_size, port, "npu")
    try:
        yield device, ShardingEnv.from_process_group(dist.new_group(backend="gloo"))
        npu_dist.finish_rank(provider, report, rank)
    finally:
        dist.destroy_process_group()


def assert_some_rank_checked(case: Case, checked: int, host_env: Any, world_size: int) -> None:
    """With more ranks than tables some ranks hold no table-wise shard: each rank may compare
    nothing, but not every rank."""
    import torch.distributed as dist

    counts: list[Any] = [None] * world_size
    dist.all_gather_object(counts, checked, group=host_env.process_group)
    assert sum(counts) > 0, f"{case}: nothing compared on any rank"


def worker(
    rank: int,
    world_size: int,
    port: int,
    cases: list[Case],
    report: str | None,
    pipeline_cases: list[Case] | None = None,
) -> None:
    with hybrid_rank(rank, world_size, port, report) as (device, host_env):
        for case in cases:
            checked = run_case(case, rank, world_size, device, host_env)
            assert_some_rank_checked(case, checked, host_env, world_size)
        for case in pipeline_cases or []:
            run_pipeline_case(case, rank, world_size, device, host_env)
