"""Checkpoints of sharded Hash collections that load into another number of ranks.

Which row of which rank holds an id is an accident of the layout (the world size, the plan,
the order ids arrived in); what a checkpoint must keep is each id's vector.

**Directory checkpoints** (:func:`save_sharded_checkpoint`, :func:`load_sharded_checkpoint`,
:func:`save_sharded_checkpoint_in_background`) are the one checkpoint format of the recsdk
packages, shared with torchrec_embcache (``hybrid_torchrec._shared.checkpoint``)::

    GLOBAL.json                       the commit point: format, chain id, world size, every
                                      table's width, per rank its files with size and CRC-32C
                                      and each table's optimiser, optimiser step and policy
    chain-000002/rank-00001/<table>-<crc>.rows
                                      rank 1's id rows of one table (torch.save of the
                                      tensors below, with statistics and optimiser state),
                                      written atomically

Every rank writes its files; the ranks agree over the host group, and rank 0 then replaces
GLOBAL.json and removes the older chains: a failure on any rank is raised on every rank as the
same :class:`CheckpointError` and leaves the previous checkpoint the latest. Loading checks
every file's size and CRC-32C and every table's width on every rank before any rank changes a
table, and loads on any world size and plan: each rank reads the files of every saved rank
that held a table and keeps the ids of its hash range.

**State dicts.** The state_dict of a sharded Hash collection holds, next to torchrec's sharded
weights and its exact mappings, per table the rank's rows keyed by id:

* ``id_rows.<table>.ids``: the ids of this rank's mapping;
* ``id_rows.<table>.columns.<c>``: their rows of each local shard starting at column ``c``;
* ``id_rows.<table>.shares``: the hash ranges the rank holds, as rows ``(part, parts)``
  (``[part/parts, (part+1)/parts)``; row-wise rank r of W holds ``(r, W)``, table- and
  column-wise shards every id, ``(0, 1)``).

The files of a directory checkpoint hold these same tensors. The rank's own state_dict restores
exactly on the same layout (torchrec's weights and the mappings). For any other layout,
:func:`portable_state_dict` joins every rank's state_dict into one keyed by id alone (no weights
by row, no mappings); each rank of the new layout loads it, keeps the ids it is to hold (by the
hash routing of its world size), maps them to rows of its shards and writes their vectors. Hash
ranges nest (rank r of W holds ranks 2r and 2r+1 of 2W), so a checkpoint of any W covers any
W'; a state_dict that does not cover what a rank needs (one rank's, loaded on another layout)
is refused, as are tables or widths that differ.

Directory checkpoints (format version 2) also hold, per id, the mapping's use statistics
(``rows``, ``counts``, ``last_used``, and the mapper's ``step``) and the fused optimiser's state
of its row (``optim.<k>.<first column>``), and in ``GLOBAL.json`` each table's optimiser, its
step and its eviction policy: a table loads them back with its rows (another optimiser or
policy is refused by name), so training resumes as if uninterrupted (docs/hybrid_torchrec.md
says what an eviction order is after resharding). State_dicts and ``portable_state_dict``
carry the rows only: a table loaded from them starts its eviction statistics afresh, and the
fused optimiser's state stays in torchrec's ``fused_optimizer``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from fractions import Fraction
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed._shard.sharded_tensor import ShardedTensor

from hybrid_torchrec._shared import checkpoint as shared
from hybrid_torchrec.errors import CheckpointError
from hybrid_torchrec.ids import IdMapper, MappingState, bucketize

ID_ROWS = "id_rows"
OPTIM = "optim"
# The mapping's statistics in a table's entries (directory checkpoints of version 2).
_STATS = ("rows", "counts", "last_used")
_IDS_KEY = re.compile(rf"^(?P<prefix>(?:.*\.)?){ID_ROWS}\.(?P<table>[^.]+)\.ids$")
_WEIGHT_ATTRS = ("embedding_bags", "embeddings")


def hash_ranks(ids: torch.Tensor, world_size: int) -> torch.Tensor:
    """The rank of ``world_size`` that row-wise hash routing sends each id to."""
    ids = ids.to(device="cpu", dtype=torch.int64)
    if world_size == 1 or ids.numel() == 0:
        return torch.zeros_like(ids)
    out = bucketize(
        torch.tensor([ids.numel()]), ids, world_size, routing="hash", return_permute=True
    )
    assert out.permute is not None
    # Output positions are grouped by bucket: a position's bucket is where it falls among the
    # buckets' ends.
    ends = out.lengths.cumsum(0)
    return torch.searchsorted(ends, out.permute, right=True)


def table_state(
    ids: torch.Tensor,
    rows: torch.Tensor,
    shards: Sequence[tuple[int, torch.Tensor]],
    share: tuple[int, int],
    mapping: MappingState | None = None,
    optimizer: Sequence[Sequence[torch.Tensor]] | None = None,
) -> dict[str, torch.Tensor]:
    """The id-keyed entries of one table (keys relative to ``id_rows.<table>.``): ``ids``,
    ``shares`` and for each local shard ``(first column, local weight)`` its rows of ``ids``.

    With ``mapping`` (the mapper's state, whose ids and rows ``ids`` and ``rows`` are) also the
    ids' rows, eviction statistics and the mapper's step (``rows``, ``counts``, ``last_used``,
    ``step``); with ``optimizer`` (per local shard, in the order of ``shards``, the fused
    optimiser's per-row state tensors) each state's rows of ``ids`` as
    ``optim.<k>.<first column>``: ``[ids, width]`` for an element-wise state, ``[ids]`` for a
    row-wise one."""
    state = {"ids": ids.cpu(), "shares": torch.tensor([share], dtype=torch.int64)}
    for column, weight in shards:
        state[f"columns.{column}"] = weight.detach()[rows.to(weight.device)].cpu()
    if mapping is not None:
        state["rows"] = rows.cpu()
        state["counts"] = mapping.counts.cpu()
        state["last_used"] = mapping.last_used.cpu()
        state["step"] = torch.tensor(mapping.step, dtype=torch.int64)
    if optimizer is not None:
        for (column, _), states in zip(shards, optimizer, strict=True):
            for k, tensor in enumerate(states):
                state[f"{OPTIM}.{k}.{column}"] = tensor.detach()[rows.to(tensor.device)].cpu()
    return state


def _pieces(
    state_dict: Mapping[str, Any], base: str, family: str = "columns"
) -> dict[int, torch.Tensor]:
    """The pieces of one family (``columns``, or ``optim.<k>``) by first column."""
    prefix = f"{base}{family}."
    return {
        int(k[len(prefix) :]): v
        for k, v in state_dict.items()
        if k.startswith(prefix) and k[len(prefix) :].isdigit()
    }


def _families(state_dict: Mapping[str, Any], base: str) -> list[str]:
    """The piece families of a table: ``columns`` and each optimiser state's ``optim.<k>``."""
    found = set()
    for key in state_dict:
        if key.startswith(base):
            head, _, column = key[len(base) :].rpartition(".")
            if column.isdigit() and (head == "columns" or head.startswith(f"{OPTIM}.")):
                found.add(head)
    return sorted(found)


def _full_rows(table: str, pieces: dict[int, torch.Tensor], n: int, dim: int) -> torch.Tensor:
    """The checkpoint's column pieces of a table side by side; refuses gaps and other widths."""
    end = 0
    for column in sorted(pieces):
        if column != end or pieces[column].shape[0] != n:
            raise CheckpointError(
                f"table {table!r}: the checkpoint's columns do not join up at column {end}"
            )
        end += pieces[column].shape[1]
    if end != dim:
        raise CheckpointError(
            f"table {table!r}: the checkpoint's rows are {end} wide, this table's {dim}"
        )
    return torch.cat([pieces[c] for c in sorted(pieces)], dim=1)


def _covers(shares: torch.Tensor, part: int, parts: int) -> bool:
    """Whether the hash ranges ``shares`` cover ``[part/parts, (part+1)/parts)``."""
    ranges = sorted((Fraction(int(p), int(n)), Fraction(int(p) + 1, int(n))) for p, n in shares)
    reach, end = Fraction(part, parts), Fraction(part + 1, parts)
    for lo, hi in ranges:
        if lo > reach:
            break
        reach = max(reach, hi)
    return reach >= end


def check_tables(state_dict: Mapping[str, Any], prefix: str, dims: Mapping[str, int]) -> None:
    """Refuses id rows of tables the module does not have."""
    for key in state_dict:
        match = _IDS_KEY.match(key)
        if match and match["prefix"] == prefix and match["table"] not in dims:
            raise CheckpointError(
                f"table {match['table']!r}: in the checkpoint but not in this module "
                f"(its tables: {', '.join(sorted(dims))})"
            )


def load_table(
    state_dict: dict[str, Any],
    base: str,
    table: str,
    dim: int,
    mapper: IdMapper,
    share: tuple[int, int],
    shards: Sequence[tuple[int, torch.Tensor]],
    optimizer: Sequence[Sequence[torch.Tensor]] | None = None,
) -> None:
    """Rebuilds one table of this rank from id rows: keeps the ids of its hash range, maps
    them to rows of its shards and writes their vectors there.

    With the mapping's statistics in the entries (``counts``, ``last_used``, ``step``) the
    mapper gets them back (its eviction order is rebuilt from them, ties in the entries'
    order), and the ids their saved ``rows`` when those fit this shard (the same layout:
    the mapping comes back exactly); otherwise the ids get rows in the entries' order with
    fresh statistics. With ``optimizer`` (per local shard, in the order of ``shards``, the
    fused optimiser's per-row state tensors) and optimiser pieces in the entries, every row's
    state is zeroed and the ids' states written: element-wise states column by column, a
    row-wise state (one value per row of a shard: a mean over the shard's columns, as fbgemm's
    row-wise optimisers keep it) as the width-weighted mean of the saved shards' values over
    the shard's columns - exact when a shard is the saved shards' union or one of them; a saved
    shard split into narrower ones gives each its value, the split of its mean being unknown."""
    ids, shares = state_dict[base + "ids"], state_dict[base + "shares"]
    part, parts = share
    if not _covers(shares, part, parts):
        held = ", ".join(f"{int(p)}/{int(n)}" for p, n in shares)
        raise CheckpointError(
            f"table {table!r}: the checkpoint holds the ids of hash range(s) {held} "
            f"(part/parts), this rank needs {part}/{parts}: load the merge of every rank's "
            "state_dict (hybrid_torchrec.distributed.portable_state_dict)"
        )
    mine = hash_ranks(ids, parts) == part
    rows = _full_rows(table, _pieces(state_dict, base), ids.numel(), dim)[mine]
    kept = ids[mine]
    if all(base + key in state_dict for key in (*_STATS, "step")):
        saved_rows = state_dict[base + "rows"][mine]
        fits = saved_rows.numel() == saved_rows.unique().numel() and bool(
            ((saved_rows >= 0) & (saved_rows < mapper.capacity)).all()
        )
        local = saved_rows if fits else torch.arange(kept.numel(), dtype=torch.int64)
        stats = MappingState(
            kept,
            local,
            state_dict[base + "counts"][mine],
            state_dict[base + "last_used"][mine],
            int(state_dict[base + "step"]),
        )
        try:
            mapper.load_state(stats)
        except ValueError as exc:
            raise CheckpointError(f"table {table!r}: {exc}") from exc
        local = mapper.lookup(kept)
    else:  # rows only (version 1, portable state_dicts): fresh statistics
        mapper.clear()
        if kept.numel() == 0:
            return
        local = mapper.map(kept, insert=True).rows
    with torch.no_grad():
        for column, weight in shards:
            values = rows[:, column : column + weight.shape[1]]
            weight[local.to(weight.device)] = values.to(device=weight.device, dtype=weight.dtype)
        if optimizer is not None:
            _load_optimizer(state_dict, base, table, mine, local, shards, optimizer)


def _load_optimizer(
    state_dict: Mapping[str, Any],
    base: str,
    table: str,
    mine: torch.Tensor,
    local: torch.Tensor,
    shards: Sequence[tuple[int, torch.Tensor]],
    optimizer: Sequence[Sequence[torch.Tensor]],
) -> None:
    """The fused optimiser's per-row states of the ids ``mine`` selects, at rows ``local``
    (see :func:`load_table`); nothing without optimiser pieces in the entries."""
    families = [f for f in _families(state_dict, base) if f != "columns"]
    if not families:
        return
    widths = {c: int(v.shape[1]) for c, v in _pieces(state_dict, base).items()}
    for (column, weight), states in zip(shards, optimizer, strict=True):
        width = int(weight.shape[1])
        if len(states) != len(families):
            raise CheckpointError(
                f"table {table!r}: the checkpoint has {len(families)} optimiser state(s) per "
                f"row, this table's optimiser {len(states)}"
            )
        for k, state in enumerate(states):
            pieces = _pieces(state_dict, base, f"{OPTIM}.{k}")
            if not pieces:
                raise CheckpointError(f"table {table!r}: the checkpoint lacks optimiser state {k}")
            if state.dim() == 2:  # element-wise: the shard's columns of the saved pieces
                if any(p.dim() != 2 for p in pieces.values()):
                    raise CheckpointError(
                        f"table {table!r}: optimiser state {k} is row-wise in the checkpoint, "
                        "element-wise in this table's optimiser"
                    )
                full = torch.cat([pieces[c] for c in sorted(pieces)], dim=1)[mine]
                values = full[:, column : column + width]
            else:  # row-wise: the width-weighted mean over the shard's columns
                if any(p.dim() != 1 for p in pieces.values()):
                    raise CheckpointError(
                        f"table {table!r}: optimiser state {k} is element-wise in the "
                        "checkpoint, row-wise in this table's optimiser"
                    )
                values = torch.zeros(int(mine.sum()), dtype=torch.float64)
                for c, piece in pieces.items():
                    overlap = min(c + widths[c], column + width) - max(c, column)
                    if overlap > 0:
                        values += piece[mine].to(torch.float64) * overlap
                values /= width
            state.zero_()
            state[local.to(state.device)] = values.to(device=state.device, dtype=state.dtype)


def pop_table(state_dict: dict[str, Any], base: str) -> None:
    for key in [k for k in state_dict if k.startswith(base)]:
        del state_dict[key]


def portable_state_dict(*state_dicts: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint of one or more ranks (their state_dicts) that loads on any layout: Hash
    tables as id rows only, joined over the ranks (their sharded weights and mappings are
    dropped), other entries from the first state_dict.

    It holds no ShardedTensor, so a process of another world size can ``torch.load`` it. A
    ShardedTensor of another table is refused (torch.distributed.checkpoint reshards those)."""
    if not state_dicts:
        raise ValueError("no state_dicts given")
    merged: dict[str, Any] = {}
    dropped: list[str] = []
    # Every rank's keys: a rank that holds no shard of a table has no id rows of it.
    for key in dict.fromkeys(k for sd in state_dicts for k in sd):
        match = _IDS_KEY.match(key)
        if match:
            prefix, table = match["prefix"], match["table"]
            merged.update(_merge_table(table, f"{prefix}{ID_ROWS}.{table}.", state_dicts))
            dropped += [f"{prefix}{attr}.{table}.weight" for attr in _WEIGHT_ATTRS]
            dropped += [f"{prefix}id_mappers.{table}.", f"{prefix}{ID_ROWS}.{table}."]
    for key, value in state_dicts[0].items():
        if key in merged or any(key.startswith(d) for d in dropped):
            continue
        if isinstance(value, ShardedTensor):
            if not value.local_shards():
                # No piece of this table is on this rank: there is nothing of it to keep here
                # (a rank that holds a piece of a table without id rows refuses it below).
                continue
            raise CheckpointError(
                f"{key}: a ShardedTensor without id rows (not a Hash table) cannot be made "
                "portable here; save such models with torch.distributed.checkpoint"
            )
        merged[key] = value
    return merged


def _merge_table(
    table: str, base: str, state_dicts: Sequence[Mapping[str, Any]]
) -> dict[str, torch.Tensor]:
    """One table's entries joined over the holders' ``state_dicts``: each id once, in the
    order of its first holder (holders in rank order, each in its eviction order), with its
    pieces of every column and optimiser state, and its statistics from that first holder
    when every holder has them."""
    holders = [sd for sd in state_dicts if base + "ids" in sd]
    shares = torch.cat([sd[base + "shares"] for sd in holders]).unique(dim=0)
    every = torch.cat([sd[base + "ids"] for sd in holders])
    distinct, inverse = torch.unique(every, return_inverse=True)
    first = torch.full((distinct.numel(),), every.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(every.numel()), reduce="amin")
    first = first.sort().values  # positions of first occurrences, in holder order
    ids = every[first]
    out = {base + "ids": ids, base + "shares": shares}
    for family in sorted({f for sd in holders for f in _families(sd, base)}):
        columns = sorted({c for sd in holders for c in _pieces(sd, base, family)})
        for column in columns:
            out[f"{base}{family}.{column}"] = _rows_of_column(
                table, f"{base}{family}.{column}", base, ids, holders
            )
    if holders and all(base + key in sd for sd in holders for key in (*_STATS, "step")):
        for key in _STATS:
            out[base + key] = torch.cat([sd[base + key] for sd in holders])[first]
        steps = {int(sd[base + "step"]) for sd in holders}
        if len(steps) > 1:
            raise CheckpointError(
                f"table {table!r}: the saved ranks disagree on its mapping's step "
                f"({sorted(steps)}): they were not saved together"
            )
        out[base + "step"] = torch.tensor(steps.pop() if steps else 0, dtype=torch.int64)
    return out


def _rows_of_column(
    table: str,
    key: str,
    base: str,
    ids: torch.Tensor,
    holders: Sequence[Mapping[str, Any]],
) -> torch.Tensor:
    """The rows of ``ids`` in the pieces ``key``; column shards and table-wise replicas
    repeat ids with equal rows, the first is taken."""
    have = [sd for sd in holders if key in sd]
    held_ids = torch.cat([sd[base + "ids"] for sd in have])
    rows = torch.cat([sd[key] for sd in have])
    order = torch.argsort(held_ids, stable=True)
    pos = torch.searchsorted(held_ids[order], ids).clamp(max=max(held_ids.numel() - 1, 0))
    found = held_ids[order][pos] == ids if held_ids.numel() else torch.zeros_like(ids, dtype=bool)
    if not bool(found.all()):
        missing = int(ids[~found][0])
        piece = key[len(base) :]
        raise CheckpointError(f"table {table!r}: id {missing} has no {piece} piece")
    return rows[order[pos]]


def own_layout(value: Any, mine: ShardedTensor) -> bool:
    """Whether a saved weight is a ShardedTensor sharded exactly like this rank's."""
    if not isinstance(value, ShardedTensor):
        return False
    saved, ours = value.metadata(), mine.metadata()
    return saved.size == ours.size and [
        (s.shard_offsets, s.shard_sizes, str(s.placement)) for s in saved.shards_metadata
    ] == [(s.shard_offsets, s.shard_sizes, str(s.placement)) for s in ours.shards_metadata]


# ---- directory checkpoints (the format shared with torchrec_embcache) -----------------------

FORMAT = "hybrid_torchrec-sharded-checkpoint"
# Version 2 adds the mapping's statistics and the fused optimiser's state (files) and each
# table's optimiser, optimiser step and eviction policy (GLOBAL.json); version 1 (rows only)
# is still read, its tables loading with fresh statistics and optimiser state as they were.
FORMAT_VERSION = 2
_READABLE = (1, FORMAT_VERSION)
_SUFFIX = ".rows"
# The module DistributedModelParallel wraps: not part of a table's name in a checkpoint, so
# that a DMP and its .module name tables alike.
_DMP_WRAPPED = "_dmp_wrapped_module"


def _hash_modules(model: nn.Module) -> dict[str, Any]:
    """The sharded Hash collections of ``model`` by module path (DMP's wrapper left out)."""
    from hybrid_torchrec.distributed.sharders import _Hybrid  # the sharders import this module

    found = {}
    for path, module in model.named_modules():
        if isinstance(module, _Hybrid) and module._shard_mapper is not None:
            parts = [p for p in path.split(".") if p and p != _DMP_WRAPPED]
            found[".".join(parts)] = module
    if not found:
        raise ValueError(
            "nothing to save or load: the model holds no sharded Hash collection (shard Hash "
            "collections with hybrid_torchrec's sharders)"
        )
    return found


def _key(path: str, table: str) -> str:
    """A table's name in a checkpoint: its module path and table name."""
    return f"{path}.{table}" if path else table


def _host_group(modules: dict[str, Any]) -> tuple[Any, int, int]:
    group = next(iter(modules.values()))._host_pg
    return group, dist.get_rank(group), dist.get_world_size(group)


def _placements(modules: dict[str, Any]) -> dict[str, Any]:
    """Every table of the model (held on this rank or not) with its width."""
    return {
        _key(path, table): {"dim": dim}
        for path, module in modules.items()
        for table, dim in module._table_dims.items()
    }


Snapshot = dict[str, tuple[dict[str, torch.Tensor], dict[str, Any]]]


def _eviction_name(mapper: IdMapper) -> str:
    return "none" if mapper.eviction is None else mapper.eviction.order


def _snapshot(modules: dict[str, Any]) -> Snapshot:
    """This rank's id rows of every table it holds, with their mapping statistics and fused
    optimiser state, copied (training may go on); beside them what the manifest records of
    the table (its optimiser, the optimiser's step, its eviction policy)."""
    out = {}
    for path, module in modules.items():
        for table, mapping in module.id_mappers.items():
            state = mapping.mapper.state()
            optimizer, step, states = module._fused_optimizer(table)
            entries = table_state(
                state.ids,
                state.rows,
                module._local_columns(table),
                module._shares[table],
                mapping=state,
                optimizer=states,
            )
            meta = {
                "optimizer": optimizer,
                "optimizer_step": step,
                "eviction": _eviction_name(mapping.mapper),
            }
            out[_key(path, table)] = ({k: v.clone() for k, v in entries.items()}, meta)
    return out


def _write_rank(save: shared.ShardedSave, rows: Snapshot, dims: dict[str, Any]) -> dict[str, Any]:
    """Writes this rank's files; returns its part of the global manifest."""
    tables = {}
    if rows:
        save.rank_dir.mkdir(parents=True, exist_ok=True)
    for name, (entries, meta) in sorted(rows.items()):
        buffer = io.BytesIO()
        torch.save(entries, buffer)
        path = save.rank_dir / f"{shared.file_stem(name)}{_SUFFIX}"
        record = shared.write_blob(path, buffer.getvalue())
        share = [int(v) for v in entries["shares"][0]]
        tables[name] = {"dim": dims[name]["dim"], "share": share, "files": [record], **meta}
    if rows:
        shared.fsync_dir(save.rank_dir)
    return {"tables": tables}


def _prepare(modules: dict[str, Any], directory: str | Path) -> shared.ShardedSave:
    root = Path(directory)
    previous = read_global(root) if (root / shared.GLOBAL).exists() else None
    _, rank, world = _host_group(modules)
    return shared.plan_sharded_save(
        root, FORMAT, FORMAT_VERSION, previous, rank, world, _placements(modules), False
    )


def _save(save: shared.ShardedSave, rows: Snapshot | None, group: Any) -> dict[str, Any]:
    error, manifest = None, None
    if rows is not None:
        try:
            manifest = _write_rank(save, rows, save.placements)
        except shared.SAVE_ERRORS as exc:
            error = f"cannot write {save.rank_dir}: {exc}"
    return shared.commit_global(save, manifest, error, group)


def save_sharded_checkpoint(model: nn.Module, directory: str | Path) -> dict[str, Any]:
    """Saves the id rows of every sharded Hash collection of ``model`` into ``directory``
    and commits them with one global manifest (``GLOBAL.json``); returns it.

    Collective: every rank of the host group calls it with the same directory (a shared file
    system). A failure on any rank is raised on every rank, the previous checkpoint staying
    the latest. Waits for a background save into the same directory to finish first."""
    modules = _hash_modules(model)
    shared.wait_in_flight(directory)
    group, _, _ = _host_group(modules)
    save = _prepare(modules, directory)
    return _save(save, _snapshot(modules), group)


def save_sharded_checkpoint_in_background(
    model: nn.Module, directory: str | Path
) -> Future[dict[str, Any]]:
    """:func:`save_sharded_checkpoint` that returns once every rank's id rows are copied: a
    thread per rank writes the files and the ranks commit the global manifest over a gloo
    group of their own while training goes on. ``result()`` on every rank gives the global
    manifest, or the error of whichever rank failed. Collective; the first background save
    makes that group (a collective of every process of torch's default group). A save or
    load of the same directory waits for it."""
    modules = _hash_modules(model)
    first = next(iter(modules.values()))
    group = shared.checkpoint_group(first, first._host_pg)
    shared.wait_in_flight(directory)
    save = _prepare(modules, directory)
    rows = None
    error = None
    try:
        rows = _snapshot(modules)
    except Exception as exc:  # every rank must reach the commit
        error = exc
    if error is not None:
        return shared.run_in_background(
            directory, "hybrid-sharded-save", lambda: _save_failed(save, str(error), group)
        )
    return shared.run_in_background(
        directory, "hybrid-sharded-save", lambda: _save(save, rows, group)
    )


def _save_failed(save: shared.ShardedSave, error: str, group: Any) -> dict[str, Any]:
    return shared.commit_global(save, None, error, group)


def read_global(directory: str | Path) -> dict[str, Any]:
    """The verified global manifest of a hybrid_torchrec directory checkpoint."""
    root = Path(directory)
    if not (root / shared.GLOBAL).exists() and any(root.glob("rank*.pt")):
        raise CheckpointError(
            f"{root} holds rank*.pt files and no {shared.GLOBAL}: torch.save'd "
            "portable_state_dict files (the state_dict checkpoints of earlier hybrid_torchrec "
            "releases), not a directory checkpoint; load them with "
            "model.load_state_dict(portable_state_dict(*(torch.load(f) for f in files)))"
        )
    return shared.read_verified(root / shared.GLOBAL, FORMAT, _READABLE, "sharded checkpoint")


def _read_rows(root: Path, rank_entry: dict[str, Any], name: str) -> dict[str, torch.Tensor]:
    (path,) = shared.rank_files(root, rank_entry, name)
    record = rank_entry["tables"][name]["files"][0]
    data = shared.read_blob(path.parent, record, "checkpoint file", name)
    try:
        entries = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:  # a file whose checksum matches but that is not id rows
        raise CheckpointError(f"checkpoint file {path} (table {name!r}): {exc}") from exc
    if not isinstance(entries, dict) or "ids" not in entries or "shares" not in entries:
        raise CheckpointError(f"checkpoint file {path} (table {name!r}) holds no id rows")
    return entries


def _gather_table(
    root: Path, saved: dict[str, Any], name: str, table: str, dim: int, share: tuple[int, int]
) -> dict[str, torch.Tensor]:
    """The id rows of table ``name`` this rank needs, joined from every saved rank's files
    (keys relative to the table), checked to cover ``share`` and be ``dim`` wide."""
    holders = shared.holders(saved, name)
    if not holders:
        raise CheckpointError(f"table {name!r}: {root / shared.GLOBAL} holds no rows of it")
    part, parts = share
    pieces = []
    for rank_entry in holders:
        entries = _read_rows(root, rank_entry, name)
        keep = hash_ranks(entries["ids"], parts) == part  # only the ids this rank is to hold
        pieces.append(
            {k: (v if v.dim() == 0 or k == "shares" else v[keep]) for k, v in entries.items()}
        )
    merged = _merge_table(name, "", pieces)
    if not _covers(merged["shares"], part, parts):
        held = ", ".join(f"{int(p)}/{int(n)}" for p, n in merged["shares"])
        raise CheckpointError(
            f"table {name!r}: the checkpoint holds the ids of hash range(s) {held} "
            f"(part/parts), this rank needs {part}/{parts}"
        )
    _full_rows(name, _pieces(merged, ""), merged["ids"].numel(), dim)  # widths and joins
    return merged


def _saved_with(
    root: Path, saved: dict[str, Any], name: str, module: Any, table: str
) -> int | None:
    """Refuses a table saved with another fused optimiser or eviction policy (naming both);
    returns the optimiser step the saved ranks agree on (None: a version 1 checkpoint)."""
    entries = [r["tables"][name] for r in shared.holders(saved, name)]
    if not entries or "optimizer" not in entries[0]:
        return None
    optimizer, _, _ = module._fused_optimizer(table)
    eviction = _eviction_name(module.id_mappers[table].mapper)
    then = entries[0]
    if then["optimizer"] != optimizer:
        raise CheckpointError(
            f"table {name!r} was saved with the fused optimizer {then['optimizer']}, this "
            f"model's is {optimizer}: one optimizer's state is not another's (shard the model "
            f"with fused_params optimizer={then['optimizer']} to resume from it)"
        )
    if then["eviction"] != eviction:
        raise CheckpointError(
            f"table {name!r} was saved with eviction policy {then['eviction']!r}, this "
            f"model's is {eviction!r}: the saved use statistics order that policy's rows only "
            f"(configure the table with the checkpoint's policy to resume from it)"
        )
    steps = {int(e["optimizer_step"]) for e in entries}
    if len(steps) != 1:
        raise CheckpointError(
            f"table {name!r}: the saved ranks disagree on its optimizer step ({sorted(steps)})"
        )
    return steps.pop()


def load_sharded_checkpoint(
    model: nn.Module, directory: str | Path, *, strict: bool = True
) -> None:
    """Loads a directory checkpoint into every sharded Hash collection of ``model`` - on all
    ranks or on none.

    Collective over the host group. Any world size and plan: each rank keeps the ids of its
    hash range (row-wise) or every id (table- and column-wise). Every file's size and CRC-32C
    and every table's width are checked on every rank before any table changes; an error on
    any rank is raised on every rank as the same :class:`CheckpointError`. ``strict``: the
    checkpoint must not hold tables the model lacks (``strict=False`` ignores them); a table
    of the model the checkpoint lacks is always refused. Rows of ids the checkpoint does not
    hold are left as they are; each table's mapping holds exactly the checkpoint's ids."""
    modules = _hash_modules(model)
    shared.wait_in_flight(directory)
    group, rank, world = _host_group(modules)
    root = Path(directory)
    plans: list[tuple[Any, str, str, dict[str, torch.Tensor], int | None]] = []
    error = None
    try:
        saved = read_global(root)
        ours = _placements(modules)
        extra = sorted(set(saved["placements"]) - set(ours))
        if strict and extra:
            raise CheckpointError(
                f"{root / shared.GLOBAL} holds table(s) {extra} the model does not have; "
                "load_sharded_checkpoint(..., strict=False) ignores them"
            )
        missing = sorted(set(ours) - set(saved["placements"]))
        if missing:
            raise CheckpointError(
                f"table {missing[0]!r}: {root / shared.GLOBAL} holds no rows of it"
            )
        for name, placement in ours.items():
            then = saved["placements"][name]["dim"]
            if then != placement["dim"]:
                raise CheckpointError(
                    f"table {name!r}: the checkpoint's rows are {then} wide, this table's "
                    f"{placement['dim']}"
                )
        for path, module in sorted(modules.items()):
            for table in sorted(module.id_mappers):
                name = _key(path, table)
                dim, share = module._table_dims[table], module._shares[table]
                step = _saved_with(root, saved, name, module, table)
                merged = _gather_table(root, saved, name, table, dim, share)
                plans.append((module, table, name, merged, step))
    except Exception as exc:  # every failure reaches every rank (none waits alone)
        error = str(exc) if isinstance(exc, CheckpointError) else f"{type(exc).__name__}: {exc}"
    shared.agree_errors(group, rank, world, error)
    error = None
    try:
        for module, table, name, merged, step in plans:
            mapper = module.id_mappers[table].mapper
            load_table(
                merged,
                "",
                name,
                module._table_dims[table],
                mapper,
                module._shares[table],
                module._local_columns(table),
                module._fused_optimizer(table)[2],
            )
            if step is not None:
                module._set_optimizer_step(table, step)
    except Exception as exc:  # e.g. a shard too small for its ids: raised on every rank
        error = f"{type(exc).__name__}: {exc}"
    shared.agree_errors(group, rank, world, error)
