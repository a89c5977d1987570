"""Directory checkpoints of one or many dynamic tables.

A checkpoint directory holds one file per table and checkpoint (written atomically by the
core, with CRC-32C checksums) and a ``MANIFEST.json`` naming, per table, the chain of files
to load: a full checkpoint followed by incremental ones. The manifest is the commit point:
it is replaced atomically (temporary file, fsync, rename, directory fsync) only after all
table files of the new checkpoint are on disk, so a crash at any moment leaves the previous
checkpoint loadable. Loading verifies the manifest, the size and every checksum of every
file of every table before any table changes; an invalid checkpoint raises CheckpointError
naming the file and the problem, and leaves all tables as they were.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch import nn

from torchrec_embcache._ext import _C
from torchrec_embcache._version import __version__
from torchrec_embcache.errors import CheckpointError
from torchrec_embcache.table import EmbeddingTable

MANIFEST = "MANIFEST.json"
FORMAT = "torchrec_embcache-checkpoint"
FORMAT_VERSION = 1
_SUFFIX = ".emb"

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


def _file_stem(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    # Distinct table names must never share files, even when sanitising merges them.
    return f"{stem}-{_C.crc32c(name.encode()):08x}"


def _checksum(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return f"{_C.crc32c(text.encode()):08x}"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(directory: Path, manifest: dict[str, Any], name: str = MANIFEST) -> None:
    """Commits a manifest (with its checksum) atomically: temporary file, fsync, rename,
    directory fsync."""
    manifest = dict(manifest)
    manifest["checksum"] = _checksum(manifest)
    tmp = directory / f"{name}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, directory / name)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(directory)


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The verified manifest of a checkpoint directory."""
    return read_verified(Path(directory) / MANIFEST, FORMAT, FORMAT_VERSION, "checkpoint")


def read_verified(path: Path, fmt: str, version: int, what: str) -> dict[str, Any]:
    """A manifest written by :func:`write_manifest`, checked for its format, checksum and
    version; errors call it a ``what`` manifest."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CheckpointError(f"no {what} in {path.parent}: {path.name} is missing") from None
    except OSError as exc:
        raise CheckpointError(f"cannot read {what} manifest {path}: {exc}") from exc
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{what} manifest {path} is corrupted: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise CheckpointError(f"{path} is not a torchrec_embcache {what} manifest")
    if manifest.get("checksum") != _checksum(manifest):
        raise CheckpointError(f"{what} manifest {path} is corrupted: checksum mismatch")
    if manifest.get("version") != version:
        raise CheckpointError(
            f"{what} manifest {path} has format version {manifest.get('version')}; this "
            f"torchrec_embcache reads version {version}"
        )
    return manifest


def save_checkpoint(
    obj: Tables, directory: str | Path, *, incremental: bool = False
) -> dict[str, Any]:
    """Saves every dynamic table of ``obj`` into ``directory``; returns the new manifest.

    ``incremental=True`` writes only rows changed (and ids deleted) since the previous
    checkpoint in this directory, which each table must have been saved to or loaded from.
    A full checkpoint makes the files of older checkpoints obsolete; they are removed once
    the new manifest is committed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tables = tables_of(obj)
    if not tables:
        raise ValueError("nothing to save: no dynamic embedding tables found")
    old = read_manifest(directory) if (directory / MANIFEST).exists() else None
    generation = int(old["generation"]) + 1 if old else 1
    kind = "incremental" if incremental else "full"
    written: list[Path] = []
    entries: dict[str, Any] = {}
    try:
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
            written.append(path)
            checkpoint_id = table.save(path, incremental=incremental)
            entry = {
                "name": path.name,
                "kind": kind,
                "id": f"{checkpoint_id:016x}",
                "bytes": path.stat().st_size,
            }
            entries[name] = {
                **table.describe(),
                "files": [*chain, entry] if incremental else [entry],
            }
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
    for path in directory.glob(f"*{_SUFFIX}"):
        if path.name not in referenced:
            path.unlink(missing_ok=True)
    return manifest


def load_checkpoint(obj: Tables, directory: str | Path, *, strict: bool = True) -> None:
    """Loads every dynamic table of ``obj`` from ``directory`` - all of them or none.

    ``strict``: the checkpoint must hold exactly the tables of ``obj``; otherwise tables
    missing from the checkpoint keep their contents and extra ones are ignored.
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
    for name, host in hosts.items():
        tables[name].install_host(host)
