"""The one checkpoint format of both packages: CRC-32C checked files, manifests committed
atomically, and sharded checkpoints committed across ranks by one global manifest.

A single process's checkpoint is a directory of table files and a manifest (JSON with its own
CRC-32C) naming each file with its size and checksum. Every file is written to a temporary
name, fsync'ed and renamed; the manifest is written the same way, last, so it is the commit
point: a crash at any moment leaves the previous checkpoint loadable.

A sharded checkpoint of W ranks (every rank calls the same functions, with a shared
directory)::

    GLOBAL.json                 the commit point: chain id, world size, every table's
                                placement, and per rank the files of the tables it holds
    chain-000003/rank-00001/... rank 1's table files (what each package writes there: embcache
                                its core's table files and a MANIFEST.json, hybrid_torchrec one
                                file of id rows per table)

Every rank writes its files, then the ranks agree over a gloo group whether all succeeded, and
only then does rank 0 replace GLOBAL.json and remove the chains before the new one; a failure
on any rank is raised on every rank as the same :class:`CheckpointError` and leaves the
previous checkpoint the latest. A background save copies the tables in the caller's thread
and writes and commits them in a thread of its own, over a gloo group of its own.

Loading reads GLOBAL.json; a table saved with another world size or placement is loaded by
reading the files of every saved rank that held it and keeping the ids this rank holds now
(how a package selects its ids is its own: bucket maps, hash ranges).

This module is installed into each package as ``<package>._shared.checkpoint``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np  # fbgemm-gpu (and torchrec's torchmetrics) depend on it
import torch.distributed as dist

from .._ext import _C

# The host package's CheckpointError: this module is installed as <package>._shared.checkpoint.
from ..errors import CheckpointError

__all__ = [
    "GLOBAL",
    "CheckpointError",
    "ShardedSave",
    "agree_errors",
    "checkpoint_group",
    "commit_global",
    "crc32c",
    "file_stem",
    "fsync_dir",
    "holders",
    "in_flight",
    "plan_sharded_save",
    "rank_files",
    "read_blob",
    "read_verified",
    "run_in_background",
    "wait_in_flight",
    "write_blob",
    "write_manifest",
]

PACKAGE = __name__.split(".")[0]
GLOBAL = "GLOBAL.json"

# ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) ----------------------------------

_POLY = 0x82F63B78


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1)
    return table.astype(np.uint32)


_TABLE = _byte_table()
# The core's CRC-32C where the host package's core has one (torchrec_embcache's); else numpy.
_NATIVE: Callable[[bytes], int] | None = getattr(_C, "crc32c", None)


def _zero_bytes_operator(count: int) -> np.ndarray:
    """Four 256-entry tables of the linear map "feed ``count`` zero bytes to the register":
    the map of x is the XOR of tables[k][byte k of x]."""
    x = (
        np.arange(256, dtype=np.uint32)[None, :] << (8 * np.arange(4, dtype=np.uint32))[:, None]
    ).ravel()
    for _ in range(count):
        x = _TABLE[x & 0xFF] ^ (x >> 8)
    return x.reshape(4, 256)


def _crc32c_numpy(data: bytes) -> int:
    """CRC-32C in numpy: the register update is linear over GF(2), so lanes of the data are
    fed side by side (one numpy step per byte of a lane) and joined by shifting each lane's
    register past the bytes of the lanes after it."""
    buf = np.frombuffer(data, dtype=np.uint8)
    lanes = max(1, min(4096, buf.size // 256))
    length = buf.size // lanes
    crc = np.uint32(0xFFFFFFFF)
    if length:
        columns = buf[: lanes * length].reshape(lanes, length).T.astype(np.uint32)
        regs = np.zeros(lanes, dtype=np.uint32)
        regs[0] = crc
        for column in columns:
            regs = _TABLE[(regs ^ column) & 0xFF] ^ (regs >> 8)
        shift = _zero_bytes_operator(length)
        total = int(regs[0])
        for reg in regs[1:].tolist():
            shifted = 0
            for k in range(4):
                shifted ^= int(shift[k, (total >> (8 * k)) & 0xFF])
            total = shifted ^ reg
        crc = np.uint32(total)
    value = int(crc)
    for byte in buf[lanes * length :].tolist():
        value = int(_TABLE[(value ^ byte) & 0xFF]) ^ (value >> 8)
    return value ^ 0xFFFFFFFF


def crc32c(data: bytes) -> int:
    """The CRC-32C of ``data`` (iSCSI's; of b"123456789" it is 0xE3069283)."""
    if _NATIVE is not None:
        return int(_NATIVE(bytes(data)))
    return _crc32c_numpy(data)


# ---- files and manifests ------------------------------------------------------------------


def file_stem(name: str) -> str:
    """The file name stem of a table: its name made safe, plus its name's CRC-32C, so that
    distinct table names never share files even when making them safe merges them."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return f"{stem}-{crc32c(name.encode()):08x}"


def _checksum(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return f"{crc32c(text.encode()):08x}"


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomically(path: Path, write: Callable[[Any], None], mode: str) -> None:
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        with open(tmp, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_manifest(directory: Path, manifest: dict[str, Any], name: str) -> None:
    """Commits a manifest (with its checksum) atomically: temporary file, fsync, rename,
    directory fsync."""
    manifest = {**manifest, "checksum": _checksum(manifest)}
    _write_atomically(
        directory / name, lambda f: json.dump(manifest, f, indent=1, sort_keys=True), "w"
    )
    fsync_dir(directory)


def read_verified(
    path: Path, fmt: str, version: int | tuple[int, ...], what: str
) -> dict[str, Any]:
    """A manifest written by :func:`write_manifest`, checked for its format, checksum and
    version (one of ``version`` when a tuple); errors call it a ``what`` manifest."""
    versions = version if isinstance(version, tuple) else (version,)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CheckpointError(f"no {what} in {path.parent}: {path.name} is missing") from None
    except OSError as exc:
        raise CheckpointError(f"cannot read {what} manifest {path}: {exc}") from exc
    except UnicodeDecodeError as exc:  # binary bytes where JSON should be
        raise CheckpointError(f"{what} manifest {path} is corrupted: {exc}") from exc
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{what} manifest {path} is corrupted: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        also = f" (it is a {found!r} manifest)" if isinstance(found, str) else ""
        raise CheckpointError(f"{path} is not a {PACKAGE} {what} manifest{also}")
    if manifest.get("checksum") != _checksum(manifest):
        raise CheckpointError(f"{what} manifest {path} is corrupted: checksum mismatch")
    if manifest.get("version") not in versions:
        readable = " or ".join(str(v) for v in versions)
        raise CheckpointError(
            f"{what} manifest {path} has format version {manifest.get('version')}; this "
            f"{PACKAGE} reads version {readable}"
        )
    return manifest


def write_blob(path: Path, data: bytes) -> dict[str, Any]:
    """Writes ``data`` to ``path`` atomically; returns the manifest's record of the file
    (name, bytes, crc32c)."""
    _write_atomically(path, lambda f: f.write(data), "wb")
    return {"name": path.name, "bytes": len(data), "crc32c": f"{crc32c(data):08x}"}


def read_blob(directory: Path, record: dict[str, Any], what: str, table: str) -> bytes:
    """The bytes of a file :func:`write_blob` recorded, verified against the record; errors
    name it ``what`` (e.g. "cache file") of ``table``."""
    path = directory / record["name"]
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(
            f"{what} {path} (table {table!r}) listed in the manifest is missing"
        ) from None
    if len(data) != record["bytes"] or f"{crc32c(data):08x}" != record["crc32c"]:
        raise CheckpointError(
            f"{what} {path} (table {table!r}) does not match the manifest (size or "
            "checksum): it is torn, corrupted or was replaced"
        )
    return data


# ---- sharded checkpoints: one commit across ranks ------------------------------------------


@dataclass(frozen=True)
class ShardedSave:
    """Where one save of a sharded checkpoint goes (the same on every rank but ``rank_dir``)."""

    root: Path
    fmt: str
    version: int
    chain: int
    base: str
    placements: dict[str, Any]  # table -> its placement as JSON
    incremental: bool
    rank: int
    world: int
    rank_dir: Path


def plan_sharded_save(
    root: str | Path,
    fmt: str,
    version: int,
    previous: dict[str, Any] | None,
    rank: int,
    world: int,
    placements: dict[str, Any],
    incremental: bool,
    not_incremental: str | None = None,
) -> ShardedSave:
    """The next save into ``root`` after ``previous`` (its verified GLOBAL.json, or None): a
    full save starts chain directory ``chain-<n>``, an incremental one adds to the current
    chain; ``not_incremental`` says why an incremental save cannot build on ``previous``."""
    root = Path(root)
    if incremental:
        why = "it holds no full checkpoint" if previous is None else not_incremental
        if why is not None:
            raise CheckpointError(
                f"cannot save an incremental checkpoint into {root}: {why}; an incremental "
                "save needs the world size and placements of the full one it builds on: save "
                "a full checkpoint"
            )
    chain = int(previous["chain"]) + 1 if previous else 1
    base = previous["base"] if incremental and previous else f"chain-{chain:06d}"
    rank_dir = root / base / f"rank-{rank:05d}"
    return ShardedSave(
        root, fmt, version, chain, base, placements, incremental, rank, world, rank_dir
    )


def agree_errors(group: Any, rank: int, world: int, error: str | None) -> None:
    """Every rank of ``group`` says whether its part failed (``error``, a message); if any
    did, every rank raises CheckpointError with the first failing rank's message (named by
    rank on the others). Collective over ``group``."""
    errors: list[Any] = [None] * world
    dist.all_gather_object(errors, error, group=group)
    for failed, message in enumerate(errors):
        if message is not None:
            raise CheckpointError(message if failed == rank else f"rank {failed}: {message}")


def commit_global(
    save: ShardedSave, manifest: dict[str, Any] | None, error: str | None, group: Any
) -> dict[str, Any]:
    """Every rank's manifest (``{"tables": {name: entry}}``, each entry with its ``files``)
    to rank 0, which commits GLOBAL.json once all ranks succeeded; the chains before this one
    are removed after a full save. Collective over ``group``; returns the committed body."""
    manifests: list[Any] = [None] * save.world
    dist.all_gather_object(manifests, manifest, group=group)
    try:
        agree_errors(group, save.rank, save.world, error)
    except CheckpointError:
        if not save.incremental:
            shutil.rmtree(save.rank_dir, ignore_errors=True)
        raise
    body = {
        "format": save.fmt,
        "version": save.version,
        "chain": save.chain,
        "base": save.base,
        "world_size": save.world,
        "placements": save.placements,
        "ranks": [
            {"dir": f"{save.base}/rank-{r:05d}", "tables": dict(m["tables"])}
            for r, m in enumerate(manifests)
        ],
    }
    written = _write_global(save, body) if save.rank == 0 else None
    # Rank 0's outcome to every rank (also the barrier after the commit): a failed write of
    # GLOBAL.json fails the save everywhere, and no rank starts another save before the old
    # chains are gone.
    outcome = [written]
    dist.broadcast_object_list(outcome, src=dist.get_process_group_ranks(group)[0], group=group)
    if outcome[0] is not None:
        if not save.incremental:
            shutil.rmtree(save.rank_dir, ignore_errors=True)
        raise CheckpointError(outcome[0])
    return body


SAVE_ERRORS = (CheckpointError, OSError, RuntimeError, ValueError)


def _write_global(save: ShardedSave, body: dict[str, Any]) -> str | None:
    """Rank 0's commit: GLOBAL.json, then (after a full save) the chains before this one, all
    before any rank may start the next save. Returns the error, or None."""
    try:
        write_manifest(save.root, body, GLOBAL)
    except SAVE_ERRORS as exc:
        return f"cannot commit the sharded checkpoint {save.root / GLOBAL}: {exc}"
    if not save.incremental:
        for old in save.root.glob("chain-*"):
            if old.name != save.base:
                shutil.rmtree(old, ignore_errors=True)
    return None


# Background saves still writing, by checkpoint directory: a save or load of the same directory
# waits for them (each rank for its own thread; the threads commit together), so that two saves
# never pick the same chain directory and a load never reads a half-committed chain.
_IN_FLIGHT: dict[str, Future[Any]] = {}
_IN_FLIGHT_LOCK = threading.Lock()


def _key(directory: str | Path) -> str:
    return str(Path(directory).resolve())


def in_flight(directory: str | Path) -> Future[Any] | None:
    """The background save into ``directory`` (of this process) still running, if any."""
    with _IN_FLIGHT_LOCK:
        return _IN_FLIGHT.get(_key(directory))


def wait_in_flight(directory: str | Path) -> None:
    """Waits for a background save into ``directory`` (of this process) to finish."""
    pending = in_flight(directory)
    if pending is not None:
        pending.exception()  # waits; its error was or will be reported by its own result()


def run_in_background(directory: str | Path, name: str, job: Callable[[], Any]) -> Future[Any]:
    """Runs ``job`` in a (non-daemon) thread; its result or exception goes to the returned
    future. Saves and loads of ``directory`` wait for it (:func:`wait_in_flight`)."""
    key = _key(directory)
    future: Future[Any] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = job()
        except BaseException as exc:  # handed to whoever waits on the future
            error = exc
        with _IN_FLIGHT_LOCK:
            if _IN_FLIGHT.get(key) is future:
                del _IN_FLIGHT[key]
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with _IN_FLIGHT_LOCK:
        _IN_FLIGHT[key] = future
    threading.Thread(target=run, name=name, daemon=False).start()
    return future


def checkpoint_group(owner: Any, host_group: Any) -> Any:
    """A gloo group of ``host_group``'s ranks for background saves, kept on ``owner`` (made
    on first use: like every ``new_group``, a collective of all processes of torch's default
    group, so every process makes the first background save): their commit talks over it
    while training uses the host group."""
    group = owner.__dict__.get("_checkpoint_group")
    if group is None:
        ranks = dist.get_process_group_ranks(host_group)
        group = dist.new_group(ranks=ranks, backend="gloo")
        object.__setattr__(owner, "_checkpoint_group", group)
    return group


# ---- sharded checkpoints: reading ------------------------------------------------------------


def holders(saved: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The saved ranks' entries that hold table ``name``, in rank order."""
    return [entry for entry in saved["ranks"] if name in entry["tables"]]


def rank_files(root: Path, rank_entry: dict[str, Any], table: str) -> Iterator[Path]:
    """The files of one table of one saved rank, each checked against the recorded size."""
    entry = rank_entry["tables"].get(table)
    if entry is None:
        raise CheckpointError(f"{root / rank_entry['dir']} holds no table {table!r}")
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
        yield path
