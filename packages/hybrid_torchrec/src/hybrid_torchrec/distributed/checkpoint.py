"""Checkpoints of sharded Hash collections that load into another number of ranks.

Which row of which rank holds an id is an accident of the layout (the world size, the plan,
the order ids arrived in); what a checkpoint must keep is each id's vector. So next to
torchrec's sharded weights and its exact mappings, the state_dict of a sharded Hash collection
holds per table the rank's rows keyed by id:

* ``id_rows.<table>.ids``: the ids of this rank's mapping;
* ``id_rows.<table>.columns.<c>``: their rows of each local shard starting at column ``c``;
* ``id_rows.<table>.shares``: the hash ranges the rank holds, as rows ``(part, parts)``
  (``[part/parts, (part+1)/parts)``; row-wise rank r of W holds ``(r, W)``, table- and
  column-wise shards every id, ``(0, 1)``).

The rank's own state_dict restores exactly on the same layout (torchrec's weights and the
mappings). For any other layout, :func:`portable_state_dict` joins every rank's state_dict into
one keyed by id alone (no weights by row, no mappings); each rank of the new layout loads it,
keeps the ids it is to hold (by the hash routing of its world size), maps them to rows of its
shards and writes their vectors. Hash ranges nest (rank r of W holds ranks 2r and 2r+1 of
2W), so a checkpoint of any W covers any W'; a state_dict that does not cover what a rank
needs (one rank's, loaded on another layout) is refused, as are tables or widths that differ.

The fused optimiser's state is not part of the module's state_dict (torchrec keeps it in the
model's ``fused_optimizer``) and does not move with the rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import torch
from torch.distributed._shard.sharded_tensor import ShardedTensor

from hybrid_torchrec.errors import HybridTorchrecError
from hybrid_torchrec.ids import IdMapper, bucketize

ID_ROWS = "id_rows"
_IDS_KEY = re.compile(rf"^(?P<prefix>(?:.*\.)?){ID_ROWS}\.(?P<table>[^.]+)\.ids$")
_WEIGHT_ATTRS = ("embedding_bags", "embeddings")


class CheckpointError(HybridTorchrecError, ValueError):
    """A checkpoint does not fit the module it is loaded into (names the table)."""


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
) -> dict[str, torch.Tensor]:
    """The id-keyed entries of one table (keys relative to ``id_rows.<table>.``): ``ids``,
    ``shares`` and for each local shard ``(first column, local weight)`` its rows of ``ids``."""
    state = {"ids": ids.cpu(), "shares": torch.tensor([share], dtype=torch.int64)}
    for column, weight in shards:
        state[f"columns.{column}"] = weight.detach()[rows.to(weight.device)].cpu()
    return state


def _pieces(state_dict: Mapping[str, Any], base: str) -> dict[int, torch.Tensor]:
    prefix = base + "columns."
    return {int(k[len(prefix) :]): v for k, v in state_dict.items() if k.startswith(prefix)}


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
) -> None:
    """Rebuilds one table of this rank from id rows: keeps the ids of its hash range, maps
    them to rows of its shards in checkpoint order and writes their vectors there."""
    ids, shares = state_dict[base + "ids"], state_dict[base + "shares"]
    part, parts = share
    if not _covers(shares, part, parts):
        held = ", ".join(f"{int(p)}/{int(n)}" for p, n in shares)
        raise CheckpointError(
            f"table {table!r}: the checkpoint holds the ids of hash range(s) {held} "
            f"(part/parts), this rank needs {part}/{parts}: load the merge of every rank's "
            "state_dict (hybrid_torchrec.distributed.portable_state_dict)"
        )
    mapper.clear()
    if ids.numel() == 0:
        return
    rows = _full_rows(table, _pieces(state_dict, base), ids.numel(), dim)
    mine = hash_ranks(ids, parts) == part
    local = mapper.map(ids[mine], insert=True).rows
    with torch.no_grad():
        for column, weight in shards:
            values = rows[mine][:, column : column + weight.shape[1]]
            weight[local.to(weight.device)] = values.to(device=weight.device, dtype=weight.dtype)


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
    holders = [sd for sd in state_dicts if base + "ids" in sd]
    shares = torch.cat([sd[base + "shares"] for sd in holders]).unique(dim=0)
    ids = torch.cat([sd[base + "ids"] for sd in holders]).unique()
    out = {base + "ids": ids, base + "shares": shares}
    columns = sorted({c for sd in holders for c in _pieces(sd, base)})
    for column in columns:
        out[f"{base}columns.{column}"] = _rows_of_column(table, base, column, ids, holders)
    return out


def _rows_of_column(
    table: str,
    base: str,
    column: int,
    ids: torch.Tensor,
    holders: Sequence[Mapping[str, Any]],
) -> torch.Tensor:
    """The rows of ``ids`` in the pieces starting at ``column``; column shards and table-wise
    replicas repeat ids with equal rows, the first is taken."""
    key = f"{base}columns.{column}"
    have = [sd for sd in holders if key in sd]
    held_ids = torch.cat([sd[base + "ids"] for sd in have])
    rows = torch.cat([sd[key] for sd in have])
    order = torch.argsort(held_ids, stable=True)
    pos = torch.searchsorted(held_ids[order], ids).clamp(max=max(held_ids.numel() - 1, 0))
    found = held_ids[order][pos] == ids if held_ids.numel() else torch.zeros_like(ids, dtype=bool)
    if not bool(found.all()):
        missing = int(ids[~found][0])
        raise CheckpointError(f"table {table!r}: id {missing} has no columns from {column} on")
    return rows[order[pos]]


def own_layout(value: Any, mine: ShardedTensor) -> bool:
    """Whether a saved weight is a ShardedTensor sharded exactly like this rank's."""
    if not isinstance(value, ShardedTensor):
        return False
    saved, ours = value.metadata(), mine.metadata()
    return saved.size == ours.size and [
        (s.shard_offsets, s.shard_sizes, str(s.placement)) for s in saved.shards_metadata
    ] == [(s.shard_offsets, s.shard_sizes, str(s.placement)) for s in ours.shards_metadata]
