"""Checkpoints of a row-wise sharded EmbCache collection, across ranks.

Layout of a checkpoint directory::

    GLOBAL.json                      the commit point: chain id, world size, bucket map, and
                                     per rank and table the files to load, with their sizes
                                     and checkpoint ids
    chain-000003/rank-00001/...      rank 1's tables (torchrec_embcache's per-rank checkpoint:
                                     one file per table and save, CRC-32C checked, its own
                                     MANIFEST.json)

A full save writes a new ``chain-<n>`` directory on every rank; incremental saves add files to
the current one. ``GLOBAL.json`` is replaced atomically by rank 0 only after every rank has
written its files, so a failed save on any rank leaves the previous checkpoint loadable; older
chain directories are removed after the commit. The chain id grows by one with every save.

Loading is all or nothing across ranks: every rank builds its new tables from the files first
(verifying sizes, checksums and checkpoint ids, naming the file that fails), the ranks agree
over the host group, and only then do they install them. A checkpoint saved with another world
size or bucket map is loaded by moving buckets: each rank reads every saved rank's files and
keeps the ids of the buckets it owns now (rows, optimiser state, admission counters, steps).
"""

from __future__ import annotations

import shutil
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from torchrec_embcache import checkpoint
from torchrec_embcache._ext import _C
from torchrec_embcache.checkpoint import (
    read_cache_ids,
    read_verified,
    save_checkpoint,
    tables_of,
    write_manifest,
)
from torchrec_embcache.errors import CheckpointError
from torchrec_embcache.sharded import RowWiseEmbCacheEmbeddingBagCollection
from torchrec_embcache.table import EmbeddingTable

GLOBAL = "GLOBAL.json"
FORMAT = "torchrec_embcache-sharded-checkpoint"
FORMAT_VERSION = 1


def read_global(directory: str | Path) -> dict[str, Any]:
    """The verified global manifest of a sharded checkpoint directory."""
    return read_verified(Path(directory) / GLOBAL, FORMAT, FORMAT_VERSION, "sharded checkpoint")


def _agree(
    module: RowWiseEmbCacheEmbeddingBagCollection, error: str | None, group: Any = None
) -> None:
    """Raises the first rank's error on every rank (collective over ``group``, the host group
    by default)."""
    errors: list[Any] = [None] * module._world
    dist.all_gather_object(errors, error, group=group or module._host_group)
    for rank, message in enumerate(errors):
        if message is not None:
            raise CheckpointError(message if rank == module._rank else f"rank {rank}: {message}")


@dataclass(frozen=True)
class _Save:
    """Where one save of a sharded checkpoint goes (the same on every rank)."""

    root: Path
    chain: int
    base: str
    owners: list[int]
    incremental: bool
    rank_dir: Path


def _prepare(module: Any, directory: str | Path, incremental: bool) -> _Save:
    root = Path(directory)
    previous = read_global(root) if (root / GLOBAL).exists() else None
    owners = list(module.bucket_map.owners)
    same_layout = previous is not None and (
        previous["world_size"] == module._world and previous["owners"] == owners
    )
    if incremental and not same_layout:
        raise CheckpointError(
            f"cannot save an incremental checkpoint into {root}: it holds no full checkpoint of "
            f"this world size ({module._world}) and bucket map; save a full checkpoint"
        )
    chain = int(previous["chain"]) + 1 if previous else 1
    base = previous["base"] if incremental and previous else f"chain-{chain:06d}"
    rank_dir = root / base / f"rank-{module._rank:05d}"
    return _Save(root, chain, base, owners, incremental, rank_dir)


def _commit_global(
    module: Any, save: _Save, manifest: Any, error: str | None, group: Any
) -> dict[str, Any]:
    """Every rank's manifest to rank 0, which commits GLOBAL.json once all ranks succeeded
    (collective over ``group``); older chains are removed after a full save."""
    manifests: list[Any] = [None] * module._world
    dist.all_gather_object(manifests, manifest, group=group)
    try:
        _agree(module, error, group)
    except CheckpointError:
        if not save.incremental:
            shutil.rmtree(save.rank_dir, ignore_errors=True)
        raise
    body = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "chain": save.chain,
        "base": save.base,
        "world_size": module._world,
        "owners": save.owners,
        "ranks": [
            {
                "dir": f"{save.base}/rank-{r:05d}",
                "tables": {name: t for name, t in m["tables"].items()},
            }
            for r, m in enumerate(manifests)
        ],
    }
    if module._rank == 0:
        write_manifest(save.root, body, GLOBAL)
    dist.barrier(group=group)
    if not save.incremental and module._rank == 0:
        for old in save.root.glob("chain-*"):
            if old.name != save.base:
                shutil.rmtree(old, ignore_errors=True)
    return read_global(save.root)


_SAVE_ERRORS = (CheckpointError, OSError, RuntimeError, ValueError)


def save_sharded_checkpoint(
    module: RowWiseEmbCacheEmbeddingBagCollection,
    directory: str | Path,
    *,
    incremental: bool = False,
    cache: bool = False,
) -> dict[str, Any]:
    """Saves every rank's tables and commits them with one global manifest; returns it.

    Collective: every rank of the module's host group calls it with the same directory (a
    shared file system). ``incremental=True`` adds only the rows changed since the last save
    and needs that save to be of the same world size and bucket map. ``cache=True`` also
    keeps which ids each device cache holds (see :func:`load_sharded_checkpoint`)."""
    save = _prepare(module, directory, incremental)
    error, manifest = None, None
    try:
        manifest = save_checkpoint(
            module.local, save.rank_dir, incremental=incremental, cache=cache
        )
    except _SAVE_ERRORS as exc:
        error = str(exc)
        if not incremental:
            shutil.rmtree(save.rank_dir, ignore_errors=True)
    return _commit_global(module, save, manifest, error, module._host_group)


def _checkpoint_group(module: Any) -> Any:
    """A gloo group of the module's ranks for background saves (made on first use, a
    collective): their commit talks over it while training uses the host group."""
    group = getattr(module, "_checkpoint_group", None)
    if group is None:
        ranks = dist.get_process_group_ranks(module._host_group)
        group = dist.new_group(ranks=ranks, backend="gloo")
        object.__setattr__(module, "_checkpoint_group", group)
    return group


def save_sharded_checkpoint_in_background(
    module: RowWiseEmbCacheEmbeddingBagCollection,
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
    latest). Wait for one background save before starting the next."""
    group = _checkpoint_group(module)
    save = _prepare(module, directory, incremental)
    error, local = None, None
    try:
        local = checkpoint._start(module.local, save.rank_dir, incremental, cache, background=True)
    except _SAVE_ERRORS as exc:
        error = str(exc)
    future: Future[dict[str, Any]] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        manifest, err = None, error
        if local is not None:
            try:
                manifest = checkpoint._commit(*local, incremental)
            except _SAVE_ERRORS as exc:
                err = str(exc)
                if not incremental:
                    shutil.rmtree(save.rank_dir, ignore_errors=True)
        try:
            future.set_result(_commit_global(module, save, manifest, err, group))
        except BaseException as exc:  # handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=run, name="embcache-sharded-save", daemon=False).start()
    return future


def _paths(root: Path, rank_entry: dict[str, Any], table: str) -> list[Path]:
    """The files of one table of one saved rank, each checked against the recorded size."""
    entry = rank_entry["tables"].get(table)
    if entry is None:
        raise CheckpointError(f"{root / rank_entry['dir']} holds no table {table!r}")
    paths = []
    for f in entry["files"]:
        path = root / rank_entry["dir"] / f["name"]
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise CheckpointError(f"checkpoint file {path} (table {table!r}) is missing") from None
        if size != f["bytes"]:
            raise CheckpointError(
                f"checkpoint file {path} (table {table!r}) has {size} bytes but the global "
                f"manifest records {f['bytes']}: the file is torn, stale or foreign"
            )
        paths.append(path)
    return paths


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


def _rebucket(
    table: EmbeddingTable, name: str, root: Path, saved: dict[str, Any], module: Any
) -> Any:
    """This rank's table under the current bucket map, from every saved rank's files."""
    long = torch.int64
    ids, last_seen, count, rows, pending = [], [], [], [], []
    steps = set()
    for rank_entry in saved["ranks"]:
        host = _load_chain(table, root, rank_entry, name)
        steps.add((int(host.step), int(host.optimizer_step)))
        h_ids, h_last, h_count, h_rows = host.dump(False)
        mine = module.bucket_map.rank_of(h_ids) == module._rank
        ids.append(h_ids[mine])
        last_seen.append(h_last[mine])
        count.append(h_count[mine])
        rows.append(h_rows[mine])
        p_ids, p_count, p_last = host.dump_pending()
        keep = module.bucket_map.rank_of(p_ids) == module._rank
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


def _cached_ids(root: Path, saved: dict[str, Any], name: str, module: Any) -> torch.Tensor:
    """The ids this rank's cache of table ``name`` gets back: its own saved list under the
    same layout; otherwise, from every saved rank in rank order, the ids of buckets it owns now
    (each rank's list in its recency order)."""
    same = saved["world_size"] == module._world and saved["owners"] == list(
        module.bucket_map.owners
    )
    entries = [saved["ranks"][module._rank]] if same else saved["ranks"]
    parts = []
    for rank_entry in entries:
        record = rank_entry["tables"][name].get("cache")
        if record is None:
            raise CheckpointError(
                f"{root / rank_entry['dir']}: table {name!r} was saved without its cache "
                "contents (save_sharded_checkpoint(..., cache=True)); load with cache=False"
            )
        ids = read_cache_ids(root / rank_entry["dir"], name, record)
        parts.append(ids if same else ids[module.bucket_map.rank_of(ids) == module._rank])
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.int64)


def load_sharded_checkpoint(
    module: RowWiseEmbCacheEmbeddingBagCollection,
    directory: str | Path,
    *,
    cache: bool = False,
) -> None:
    """Loads a sharded checkpoint into every rank's tables - on all ranks or on none.

    Collective over the module's host group. Any world size and bucket map: buckets move to
    their owners under the module's map. Device caches start empty, unless ``cache=True``
    (the checkpoint saved with it): then each cache gets back the rows it held, or, after a
    change of layout, the rows that the saved caches held of the buckets it owns now."""
    root = Path(directory)
    tables = tables_of(module.local)
    hosts: dict[str, Any] = {}
    resident: dict[str, torch.Tensor] = {}
    error = None
    try:
        saved = read_global(root)
        same_layout = saved["world_size"] == module._world and saved["owners"] == list(
            module.bucket_map.owners
        )
        for name, table in sorted(tables.items()):
            described = saved["ranks"][0]["tables"].get(name)
            if described is None:
                raise CheckpointError(f"{root / GLOBAL} holds no table {name!r}")
            for key in ("dim", "optimizer", "dtype", "row_width"):
                if described.get(key) != table.describe()[key]:
                    raise CheckpointError(
                        f"table {name!r} was saved with {key}={described.get(key)!r}, the "
                        f"module's has {key}={table.describe()[key]!r}"
                    )
            if same_layout:
                hosts[name] = _load_chain(table, root, saved["ranks"][module._rank], name)
            else:
                hosts[name] = _rebucket(table, name, root, saved, module)
            if cache and table.cache_slots is not None:
                resident[name] = _cached_ids(root, saved, name, module)
    except CheckpointError as exc:
        error = str(exc)
    _agree(module, error)
    for name, host in hosts.items():
        tables[name].install_host(host)
    for name, ids in resident.items():
        tables[name].restore_cache(ids)
