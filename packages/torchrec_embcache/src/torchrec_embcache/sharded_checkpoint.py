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
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from torchrec_embcache._ext import _C
from torchrec_embcache.checkpoint import (
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


def _agree(module: RowWiseEmbCacheEmbeddingBagCollection, error: str | None) -> None:
    """Raises the first rank's error on every rank (collective over the host group)."""
    errors: list[Any] = [None] * module._world
    dist.all_gather_object(errors, error, group=module._host_group)
    for rank, message in enumerate(errors):
        if message is not None:
            raise CheckpointError(message if rank == module._rank else f"rank {rank}: {message}")


def save_sharded_checkpoint(
    module: RowWiseEmbCacheEmbeddingBagCollection,
    directory: str | Path,
    *,
    incremental: bool = False,
) -> dict[str, Any]:
    """Saves every rank's tables and commits them with one global manifest; returns it.

    Collective: every rank of the module's host group calls it with the same directory (a
    shared file system). ``incremental=True`` adds only the rows changed since the last save
    and needs that save to be of the same world size and bucket map."""
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
    error, manifest = None, None
    try:
        manifest = save_checkpoint(module.local, rank_dir, incremental=incremental)
    except (CheckpointError, OSError, RuntimeError, ValueError) as exc:
        error = str(exc)
        if not incremental:
            shutil.rmtree(rank_dir, ignore_errors=True)
    manifests: list[Any] = [None] * module._world
    dist.all_gather_object(manifests, manifest, group=module._host_group)
    try:
        _agree(module, error)
    except CheckpointError:
        if not incremental:
            shutil.rmtree(rank_dir, ignore_errors=True)
        raise
    body = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "chain": chain,
        "base": base,
        "world_size": module._world,
        "owners": owners,
        "ranks": [
            {
                "dir": f"{base}/rank-{r:05d}",
                "tables": {name: t for name, t in m["tables"].items()},
            }
            for r, m in enumerate(manifests)
        ],
    }
    if module._rank == 0:
        write_manifest(root, body, GLOBAL)
    dist.barrier(group=module._host_group)
    if not incremental and module._rank == 0:
        for old in root.glob("chain-*"):
            if old.name != base:
                shutil.rmtree(old, ignore_errors=True)
    return read_global(root)


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


def load_sharded_checkpoint(
    module: RowWiseEmbCacheEmbeddingBagCollection, directory: str | Path
) -> None:
    """Loads a sharded checkpoint into every rank's tables - on all ranks or on none.

    Collective over the module's host group. Any world size and bucket map: buckets move to
    their owners under the module's map. Device caches start empty."""
    root = Path(directory)
    tables = tables_of(module.local)
    hosts: dict[str, Any] = {}
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
    except CheckpointError as exc:
        error = str(exc)
    _agree(module, error)
    for name, host in hosts.items():
        tables[name].install_host(host)
