"""Checkpoints of a sharded EmbCache collection, across ranks and layouts.

Layout of a checkpoint directory::

    GLOBAL.json                      the commit point: chain id, world size, every table's
                                     placement (sharding type and bucket -> rank map), and
                                     per rank the files of the tables it holds, with their
                                     sizes and checkpoint ids
    chain-000003/rank-00001/...      rank 1's tables (torchrec_embcache's per-rank checkpoint:
                                     one file per table and save, CRC-32C checked, its own
                                     MANIFEST.json); a rank that holds no table writes nothing

A full save writes a new ``chain-<n>`` directory on every rank; incremental saves add files to
the current one and need the same world size and placements. ``GLOBAL.json`` is replaced
atomically by rank 0 only after every rank has written its files, so a failed save on any rank
leaves the previous checkpoint loadable; older chain directories are removed after the commit.
The chain id grows by one with every save.

Loading is all or nothing across ranks: every rank builds its new tables from the files first
(verifying sizes, checksums and checkpoint ids, naming the file that fails), the ranks agree
over the host group, and only then do they install them. A table saved with another world size
or placement (row-wise, table-wise, table-row-wise, any bucket map) is loaded by moving
buckets: each rank that holds it now reads the files of every saved rank that held it and keeps
the ids of the buckets it owns now (rows, optimiser state, admission counters, steps).

Format versions: 2 records a placement per table; 1 (one row-wise bucket map for every table,
every rank holding every table) is still read.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch

from torchrec_embcache import checkpoint
from torchrec_embcache._ext import _C
from torchrec_embcache._shared import checkpoint as shared
from torchrec_embcache.checkpoint import (
    read_cache_ids,
    read_verified,
    save_checkpoint,
    tables_of,
)
from torchrec_embcache.distributed.types import ROW_WISE, BucketMap, Placement
from torchrec_embcache.errors import CheckpointError, ShardingError
from torchrec_embcache.sharded import ShardedEmbCacheBase
from torchrec_embcache.table import EmbeddingTable

GLOBAL = shared.GLOBAL
FORMAT = "torchrec_embcache-sharded-checkpoint"
FORMAT_VERSION = 2
_READABLE = (1, FORMAT_VERSION)


def _upgrade(manifest: dict[str, Any]) -> dict[str, Any]:
    """A version 1 manifest in version 2's terms: its one bucket map is every table's
    row-wise placement (every saved rank held every table)."""
    if manifest["version"] != 1:
        return manifest
    runs = BucketMap(tuple(manifest["owners"]), manifest["world_size"]).runs()
    body = {"sharding_type": ROW_WISE, "num_buckets": len(manifest["owners"]), "owners": runs}
    tables = manifest["ranks"][0]["tables"] if manifest["ranks"] else {}
    return {**manifest, "placements": {name: dict(body) for name in tables}}


def read_global(directory: str | Path) -> dict[str, Any]:
    """The verified global manifest of a sharded checkpoint directory (a version 1 manifest
    in version 2's terms: ``placements`` per table)."""
    path = Path(directory) / GLOBAL
    return _upgrade(read_verified(path, FORMAT, _READABLE, "sharded checkpoint"))


def saved_placements(saved: dict[str, Any]) -> dict[str, Placement]:
    """Per table (keyed as checkpoints name tables), its placement when it was saved."""
    try:
        return {
            name: Placement.from_json(body, saved["world_size"])
            for name, body in saved["placements"].items()
        }
    except (KeyError, TypeError, ShardingError) as exc:
        raise CheckpointError(f"sharded checkpoint manifest has a bad placement: {exc}") from exc


def _same_placement(
    saved: dict[str, Any], placements: dict[str, Placement], name: str, now: Placement
) -> bool:
    """Whether table ``name`` is laid out now as it was saved (its files load as they are)."""
    then = placements.get(name)
    return (
        then is not None
        and saved["world_size"] == now.world_size
        and then.bucket_map.owners == now.bucket_map.owners
    )


def _agree(module: ShardedEmbCacheBase, error: str | None, group: Any = None) -> None:
    """Raises the first rank's error on every rank (collective over ``group``, the host group
    by default)."""
    shared.agree_errors(group or module._host_group, module._rank, module._world, error)


def _layout_change(previous: dict[str, Any] | None, module: Any) -> str | None:
    """Why an incremental save cannot build on ``previous`` (None: it can)."""
    if previous is None:
        return "it holds no full checkpoint"
    if previous["world_size"] != module._world:
        return f"it was saved by {previous['world_size']} ranks, not {module._world}"
    current = module.table_placements()
    then = saved_placements(previous)
    if set(then) != set(current):
        return f"it holds tables {sorted(then)}, the module {sorted(current)}"
    moved = [n for n in sorted(current) if not _same_placement(previous, then, n, current[n])]
    moved = [
        f"{n} ({then[n].sharding_type} -> {current[n].sharding_type})"
        if then[n].sharding_type != current[n].sharding_type
        else f"{n} (another bucket map)"
        for n in moved
    ]
    return f"table(s) {', '.join(moved)} have another placement" if moved else None


def _prepare(module: Any, directory: str | Path, incremental: bool) -> shared.ShardedSave:
    root = Path(directory)
    previous = read_global(root) if (root / GLOBAL).exists() else None
    placements = {name: p.to_json() for name, p in module.table_placements().items()}
    why = _layout_change(previous, module) if incremental and previous else None
    return shared.plan_sharded_save(
        root,
        FORMAT,
        FORMAT_VERSION,
        previous,
        module._rank,
        module._world,
        placements,
        incremental,
        why,
    )


def _commit_global(
    save: shared.ShardedSave, manifest: Any, error: str | None, group: Any
) -> dict[str, Any]:
    """Every rank's manifest to rank 0, which commits GLOBAL.json once all ranks succeeded
    (collective over ``group``); older chains are removed after a full save."""
    shared.commit_global(save, manifest, error, group)
    return read_global(save.root)


_SAVE_ERRORS = shared.SAVE_ERRORS
_wait_in_flight = shared.wait_in_flight


# What a rank that holds no table contributes to the global manifest.
_NOTHING: dict[str, Any] = {"tables": {}}


def save_sharded_checkpoint(
    module: ShardedEmbCacheBase,
    directory: str | Path,
    *,
    incremental: bool = False,
    cache: bool = False,
) -> dict[str, Any]:
    """Saves every rank's tables and commits them with one global manifest; returns it.

    Collective: every rank of the module's host group calls it with the same directory (a
    shared file system). ``incremental=True`` adds only the rows changed since the last save
    and needs that save to be of the same world size and placements. ``cache=True`` also
    keeps which ids each device cache holds (see :func:`load_sharded_checkpoint`). Waits for a
    background save into the same directory to finish first."""
    _wait_in_flight(directory)
    save = _prepare(module, directory, incremental)
    error, manifest = None, None
    try:
        manifest = (
            save_checkpoint(module.local, save.rank_dir, incremental=incremental, cache=cache)
            if tables_of(module.local)
            else _NOTHING
        )
    except _SAVE_ERRORS as exc:
        error = str(exc)
        if not incremental:
            shutil.rmtree(save.rank_dir, ignore_errors=True)
    return _commit_global(save, manifest, error, module._host_group)


def _checkpoint_group(module: Any) -> Any:
    """A gloo group of the module's ranks for background saves (see
    ``_shared.checkpoint.checkpoint_group``)."""
    return shared.checkpoint_group(module, module._host_group)


def save_sharded_checkpoint_in_background(
    module: ShardedEmbCacheBase,
    directory: str | Path,
    *,
    incremental: bool = False,
    cache: bool = False,
) -> Future[dict[str, Any]]:
    """:func:`save_sharded_checkpoint` that returns once every rank's tables are copied
    (:func:`torchrec_embcache.save_checkpoint_in_background`): a thread per rank writes the
    files, and the ranks commit the global manifest over a group of their own while training
    goes on. Collective like the synchronous save; ``result()`` on every rank gives the global
    manifest, or the error of whichever rank failed (the previous checkpoint then stays the
    latest). A save or load of the same directory waits for this one to finish."""
    group = _checkpoint_group(module)
    _wait_in_flight(directory)
    save = _prepare(module, directory, incremental)
    error, local = None, None
    try:
        if tables_of(module.local):
            local = checkpoint._start(
                module.local, save.rank_dir, incremental, cache, background=True
            )
    except _SAVE_ERRORS as exc:
        error = str(exc)

    def run() -> dict[str, Any]:
        manifest, err = (_NOTHING if error is None else None), error
        if local is not None:
            try:
                manifest = checkpoint._commit(*local, incremental)
            except _SAVE_ERRORS as exc:
                err = str(exc)
                if not incremental:
                    shutil.rmtree(save.rank_dir, ignore_errors=True)
        return _commit_global(save, manifest, err, group)

    return shared.run_in_background(directory, "embcache-sharded-save", run)


def _paths(root: Path, rank_entry: dict[str, Any], table: str) -> list[Path]:
    """The files of one table of one saved rank, each checked against the recorded size."""
    return list(shared.rank_files(root, rank_entry, table))


def _load_chain(table: EmbeddingTable, root: Path, rank_entry: dict[str, Any], name: str) -> Any:
    paths = _paths(root, rank_entry, name)
    try:
        host = table.load_host(paths)
    except (RuntimeError, ValueError) as exc:
        raise CheckpointError(f"table {name!r}: {exc}") from exc
    want = int(rank_entry["tables"][name]["files"][-1]["id"], 16)
    if int(host.checkpoint_id) != want:
        raise CheckpointError(
            f"checkpoint file {paths[-1]} (table {name!r}) is not the file the global manifest "
            "refers to (another checkpoint id): stale or foreign"
        )
    return host


# Which of a table's ids (saved on any rank) this rank keeps: a boolean mask.
_Selector = Callable[[torch.Tensor], torch.Tensor]


_holders = shared.holders


def _rebucket(
    table: EmbeddingTable,
    name: str,
    root: Path,
    holders: list[dict[str, Any]],
    mine: _Selector,
) -> Any:
    """This rank's table from the files of every saved rank that held it, keeping the ids
    ``mine(ids)`` selects (those of the buckets this rank owns now)."""
    long = torch.int64
    ids, last_seen, count, rows, pending = [], [], [], [], []
    steps = set()
    for rank_entry in holders:
        host = _load_chain(table, root, rank_entry, name)
        steps.add((int(host.step), int(host.optimizer_step)))
        h_ids, h_last, h_count, h_rows = host.dump(False)
        keep = mine(h_ids)
        ids.append(h_ids[keep])
        last_seen.append(h_last[keep])
        count.append(h_count[keep])
        rows.append(h_rows[keep])
        p_ids, p_count, p_last = host.dump_pending()
        keep = mine(p_ids)
        pending.append((p_ids[keep], p_count[keep], p_last[keep]))
    if len(steps) != 1:
        raise CheckpointError(f"table {name!r}: the saved ranks disagree on its step counters")
    step, optimizer_step = steps.pop()
    host = _C.HostTable(table._config)
    cat = lambda parts: torch.cat(parts).to(long).contiguous()  # noqa: E731
    host.upsert(cat(ids), cat(last_seen), cat(count), torch.cat(rows).contiguous())
    host.upsert_pending(*(cat([p[i] for p in pending]) for i in range(3)))
    host.restore_counters(step, optimizer_step)
    return host


def _cached_ids(
    root: Path, entries: list[dict[str, Any]], name: str, mine: _Selector | None
) -> torch.Tensor:
    """The ids this rank's cache of table ``name`` gets back from the saved caches of
    ``entries`` (in rank order, each list in its recency order): all of them, or those
    ``mine(ids)`` selects after a change of layout."""
    parts = []
    for rank_entry in entries:
        record = rank_entry["tables"][name].get("cache")
        if record is None:
            raise CheckpointError(
                f"{root / rank_entry['dir']}: table {name!r} was saved without its cache "
                "contents (save_sharded_checkpoint(..., cache=True)); load with cache=False"
            )
        ids = read_cache_ids(root / rank_entry["dir"], name, record)
        parts.append(ids if mine is None else ids[mine(ids)])
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.int64)


def _check_table(name: str, described: dict[str, Any], table: EmbeddingTable) -> None:
    for key in ("dim", "optimizer", "dtype", "row_width"):
        if described.get(key) != table.describe()[key]:
            raise CheckpointError(
                f"table {name!r} was saved with {key}={described.get(key)!r}, the "
                f"module's has {key}={table.describe()[key]!r}"
            )


def _load_table(
    module: Any,
    root: Path,
    saved: dict[str, Any],
    name: str,
    table: EmbeddingTable,
    cache: bool,
) -> tuple[Any, torch.Tensor | None]:
    """One of this rank's tables from the checkpoint: its host table and, with ``cache``,
    the ids its device cache gets back."""
    holders = _holders(saved, name)
    if not holders:
        raise CheckpointError(f"{root / GLOBAL} holds no table {name!r}")
    _check_table(name, holders[0]["tables"][name], table)
    now = module.table_placements()[name]
    want_cache = cache and table.cache_slots is not None
    if _same_placement(saved, saved_placements(saved), name, now):
        own = saved["ranks"][module._rank]
        resident = _cached_ids(root, [own], name, None) if want_cache else None
        return _load_chain(table, root, own, name), resident

    def mine(ids: torch.Tensor) -> torch.Tensor:
        return now.bucket_map.rank_of(ids) == module._rank

    resident = _cached_ids(root, holders, name, mine) if want_cache else None
    return _rebucket(table, name, root, holders, mine), resident


def load_sharded_checkpoint(
    module: ShardedEmbCacheBase,
    directory: str | Path,
    *,
    cache: bool = False,
    strict: bool = True,
) -> None:
    """Loads a sharded checkpoint into every rank's tables - on all ranks or on none.

    Collective over the module's host group. Any world size and placements: buckets move to
    their owners under the module's placements (a table saved table-wise loads row-wise, and
    so on). Device caches start empty, unless ``cache=True`` (the checkpoint saved with it):
    then each cache gets back the rows it held, or, after a change of layout, the rows that
    the saved caches held of the buckets it owns now. ``strict``: the checkpoint must not
    hold tables the module lacks (``strict=False`` ignores them); a table of the module that
    the checkpoint lacks is always refused."""
    _wait_in_flight(directory)
    root = Path(directory)
    tables = tables_of(module.local)
    hosts: dict[str, Any] = {}
    resident: dict[str, torch.Tensor] = {}
    error = None
    try:
        for table in tables.values():  # what install_host would refuse, before any rank loads
            table._require_no_prefetch("loading a checkpoint")
        saved = read_global(root)
        extra = sorted(set(saved["placements"]) - set(module.table_placements()))
        if strict and extra:
            raise CheckpointError(
                f"{root / GLOBAL} holds table(s) {extra} the module does not have; "
                "load_sharded_checkpoint(..., strict=False) ignores them"
            )
        for name, table in sorted(tables.items()):
            hosts[name], ids = _load_table(module, root, saved, name, table, cache)
            if ids is not None:
                resident[name] = ids
    except Exception as exc:  # every failure reaches every rank (none waits in _agree alone)
        error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, CheckpointError) else str(exc)
    _agree(module, error)
    for name, host in hosts.items():
        tables[name].install_host(host)
    for name, ids in resident.items():
        tables[name].restore_cache(ids)
