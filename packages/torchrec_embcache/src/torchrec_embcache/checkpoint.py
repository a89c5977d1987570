"""Directory checkpoints of one or many dynamic tables.

A checkpoint directory holds one file per table and checkpoint (written atomically by the
core, with CRC-32C checksums) and a ``MANIFEST.json`` naming, per table, the chain of files
to load: a full checkpoint followed by incremental ones. The manifest is the commit point:
it is replaced atomically (temporary file, fsync, rename, directory fsync) only after all
table files of the new checkpoint are on disk, so a crash at any moment leaves the previous
checkpoint loadable. Loading verifies the manifest, the size and every checksum of every
file of every table before any table changes; an invalid checkpoint raises CheckpointError
naming the file and the problem, and leaves all tables as they were.

With ``cache=True`` a checkpoint also keeps which ids each device cache holds, in recency order
(``<table>.<generation>.cache``: little-endian int64 ids, size and CRC-32C in the manifest), and
a load with ``cache=True`` brings those rows back into the caches, so that training resumes with
the hits and swaps it would have had.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchrec_embcache._ext import _C
from torchrec_embcache._shared import checkpoint as shared
from torchrec_embcache._version import __version__
from torchrec_embcache.errors import CheckpointError
from torchrec_embcache.table import EmbeddingTable

MANIFEST = "MANIFEST.json"
FORMAT = "torchrec_embcache-checkpoint"
FORMAT_VERSION = 1
_SUFFIX = ".emb"
_CACHE_SUFFIX = ".cache"

Tables = EmbeddingTable | Mapping[str, EmbeddingTable] | nn.Module


def tables_of(obj: Tables) -> dict[str, EmbeddingTable]:
    """The dynamic tables of a module (keyed by module path), a mapping, or one table."""
    if isinstance(obj, EmbeddingTable):
        return {"table": obj}
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, nn.Module):
        found: dict[str, EmbeddingTable] = {}
        for name, module in obj.named_modules():
            table = getattr(module, "table", None)
            if isinstance(table, EmbeddingTable):
                found[name or "table"] = table
        return found
    raise TypeError(f"expected a module, a table or a mapping of tables, got {type(obj).__name__}")


_file_stem = shared.file_stem


def write_manifest(directory: Path, manifest: dict[str, Any], name: str = MANIFEST) -> None:
    """Commits a manifest (with its checksum) atomically: temporary file, fsync, rename,
    directory fsync."""
    shared.write_manifest(directory, manifest, name)


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The verified manifest of a checkpoint directory."""
    return read_verified(Path(directory) / MANIFEST, FORMAT, FORMAT_VERSION, "checkpoint")


read_verified = shared.read_verified


def _write_cache_ids(path: Path, ids: torch.Tensor) -> dict[str, Any]:
    """Writes a table's resident ids atomically; returns the manifest's record of the file."""
    return shared.write_blob(path, ids.to(torch.int64).numpy().astype("<i8").tobytes())


def read_cache_ids(directory: Path, name: str, record: dict[str, Any]) -> torch.Tensor:
    """A table's resident ids from a checkpoint, verified against the manifest's record."""
    data = shared.read_blob(directory, record, "cache file", name)
    return torch.frombuffer(bytearray(data), dtype=torch.int64).clone()


@dataclass
class _TableSave:
    """One table's part of a save: where its file goes and how it gets written."""

    name: str
    path: Path
    chain: list[dict[str, Any]]  # the files of the previous checkpoints it builds on
    describe: dict[str, Any]
    write: Callable[[], int]  # writes the file, returns its checkpoint id
    cache_ids: torch.Tensor | None


def _plan_saves(
    tables: dict[str, EmbeddingTable],
    directory: Path,
    old: dict[str, Any] | None,
    generation: int,
    incremental: bool,
    cache: bool,
    background: bool,
) -> list[_TableSave]:
    kind = "incremental" if incremental else "full"
    saves = []
    for name in sorted(tables):
        table = tables[name]
        chain: list[dict[str, Any]] = (
            list(old["tables"][name]["files"]) if (old and name in old["tables"]) else []
        )
        if incremental:
            if not chain:
                raise CheckpointError(
                    f"cannot save an incremental checkpoint of table {name!r}: {directory} "
                    "holds no full checkpoint of it"
                )
            if int(table.host.checkpoint_id) != int(chain[-1]["id"], 16):
                raise CheckpointError(
                    f"cannot save an incremental checkpoint of table {name!r}: its last "
                    f"checkpoint is not the latest one in {directory}; save a full checkpoint"
                )
        path = directory / f"{_file_stem(name)}.{generation:06d}.{kind}{_SUFFIX}"
        if background:
            snap = table.snapshot(incremental=incremental)
            write = functools.partial(snap.write, str(path))
        else:
            write = functools.partial(table.save, path, incremental=incremental)
        ids = table.cache_ids() if cache and table.cache_slots is not None else None
        saves.append(_TableSave(name, path, chain, table.describe(), write, ids))
    return saves


def _commit(
    directory: Path, generation: int, saves: list[_TableSave], incremental: bool
) -> dict[str, Any]:
    """Writes every table's file (and cache ids), then the manifest; removes what the new
    manifest no longer names. A failure removes the new files and keeps the old manifest."""
    kind = "incremental" if incremental else "full"
    written: list[Path] = []
    entries: dict[str, Any] = {}
    try:
        for save in saves:
            written.append(save.path)
            checkpoint_id = save.write()
            entry = {
                "name": save.path.name,
                "kind": kind,
                "id": f"{checkpoint_id:016x}",
                "bytes": save.path.stat().st_size,
            }
            entries[save.name] = {
                **save.describe,
                "files": [*save.chain, entry] if incremental else [entry],
            }
            if save.cache_ids is not None:
                stem = _file_stem(save.name)
                cache_path = directory / f"{stem}.{generation:06d}{_CACHE_SUFFIX}"
                written.append(cache_path)
                entries[save.name]["cache"] = _write_cache_ids(cache_path, save.cache_ids)
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "generation": generation,
            "package_version": __version__,
            "tables": entries,
        }
        write_manifest(directory, manifest)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    referenced = {f["name"] for entry in entries.values() for f in entry["files"]}
    referenced |= {entry["cache"]["name"] for entry in entries.values() if "cache" in entry}
    for suffix in (_SUFFIX, _CACHE_SUFFIX):
        for path in directory.glob(f"*{suffix}"):
            if path.name not in referenced:
                path.unlink(missing_ok=True)
    return manifest


def _start(
    obj: Tables, directory: str | Path, incremental: bool, cache: bool, background: bool
) -> tuple[Path, int, list[_TableSave]]:
    directory = Path(directory)
    pending = shared.in_flight(directory)
    if pending is not None and not pending.done():
        raise CheckpointError(
            f"a checkpoint of {directory} is still being written in the background; wait() for "
            "it before saving there again"
        )
    directory.mkdir(parents=True, exist_ok=True)
    tables = tables_of(obj)
    if not tables:
        raise ValueError("nothing to save: no dynamic embedding tables found")
    old = read_manifest(directory) if (directory / MANIFEST).exists() else None
    generation = int(old["generation"]) + 1 if old else 1
    saves = _plan_saves(tables, directory, old, generation, incremental, cache, background)
    return directory, generation, saves


def save_checkpoint(
    obj: Tables, directory: str | Path, *, incremental: bool = False, cache: bool = False
) -> dict[str, Any]:
    """Saves every dynamic table of ``obj`` into ``directory``; returns the new manifest.

    ``incremental=True`` writes only rows changed (and ids deleted) since the previous
    checkpoint in this directory, which each table must have been saved to or loaded from.
    A full checkpoint makes the files of older checkpoints obsolete; they are removed once
    the new manifest is committed. ``cache=True`` also records which ids each device cache
    holds (see the module's docstring).
    """
    directory, generation, saves = _start(obj, directory, incremental, cache, background=False)
    return _commit(directory, generation, saves, incremental)


def save_checkpoint_in_background(
    obj: Tables, directory: str | Path, *, incremental: bool = False, cache: bool = False
) -> Future[dict[str, Any]]:
    """:func:`save_checkpoint` that returns once every table's contents are copied: training
    may go on while a thread writes the files and commits the manifest. The future's
    ``result()`` is the manifest (or raises what the write raised; the previous checkpoint
    then stays the latest). Training waits only for the copy: of the rows changed since the
    last checkpoint for an incremental save, of every row for a full one (which holds that
    much memory until written). One background save per directory at a time."""
    directory, generation, saves = _start(obj, directory, incremental, cache, background=True)
    return shared.run_in_background(
        directory,
        f"embcache-save-{directory.name}",
        lambda: _commit(directory, generation, saves, incremental),
    )


def load_checkpoint(
    obj: Tables, directory: str | Path, *, strict: bool = True, cache: bool = False
) -> None:
    """Loads every dynamic table of ``obj`` from ``directory`` - all of them or none.

    ``strict``: the checkpoint must hold exactly the tables of ``obj``; otherwise tables
    missing from the checkpoint keep their contents and extra ones are ignored.
    ``cache=True``: device caches get back the rows they held at the save (which must have
    been made with ``cache=True``); otherwise they start empty.
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    tables = tables_of(obj)
    saved: dict[str, Any] = manifest["tables"]
    missing = sorted(set(tables) - set(saved))
    extra = sorted(set(saved) - set(tables))
    if strict and (missing or extra):
        raise CheckpointError(
            f"checkpoint {directory} does not match the module: tables missing from the "
            f"checkpoint {missing}, tables not in the module {extra}"
        )
    for table in tables.values():
        table._require_no_prefetch("loading a checkpoint")
    hosts: dict[str, _C.HostTable] = {}
    resident: dict[str, torch.Tensor] = {}
    for name in sorted(set(tables) & set(saved)):
        table, entry = tables[name], saved[name]
        expected = table.describe()
        # Manifests written before row dtypes existed hold float32 tables.
        entry = {"dtype": "float32", **entry}
        for key in ("dim", "optimizer", "dtype", "row_width"):
            if entry.get(key) != expected[key]:
                raise CheckpointError(
                    f"checkpoint {directory}: table {name!r} was saved with {key}="
                    f"{entry.get(key)!r} but the module's table has {key}={expected[key]!r}"
                )
        paths = []
        for f in entry["files"]:
            path = directory / f["name"]
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise CheckpointError(
                    f"checkpoint file {path} (table {name!r}) listed in the manifest is missing"
                ) from None
            if size != f["bytes"]:
                raise CheckpointError(
                    f"checkpoint file {path} (table {name!r}) has {size} bytes but the "
                    f"manifest records {f['bytes']}: the file is torn or was replaced"
                )
            paths.append(path)
        host = table.load_host(paths)
        if int(host.checkpoint_id) != int(entry["files"][-1]["id"], 16):
            raise CheckpointError(
                f"checkpoint file {paths[-1]} (table {name!r}) is not the file the manifest "
                "refers to (different checkpoint id)"
            )
        hosts[name] = host
        if cache and table.cache_slots is not None:
            if "cache" not in entry:
                raise CheckpointError(
                    f"checkpoint {directory}: table {name!r} was saved without its cache "
                    "contents (save_checkpoint(..., cache=True)); load with cache=False"
                )
            resident[name] = read_cache_ids(directory, name, entry["cache"])
    for name, host in hosts.items():
        tables[name].install_host(host)
    for name, ids in resident.items():
        tables[name].restore_cache(ids)
