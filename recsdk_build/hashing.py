"""The one way recsdk-build hashes: files, text and trees, all sha256.

Stage fingerprints, artifact records, operator stamps and extension package digests all come
from here, so "the same content" means the same thing everywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def is_bytecode(rel: Path) -> bool:
    return "__pycache__" in rel.parts or rel.suffix == ".pyc"


def hash_tree(
    root: Path,
    pattern: str = "**/*",
    *,
    base: Path | None = None,
    exclude: Callable[[Path], bool] = is_bytecode,
) -> str:
    """Content of the files under ``root`` matching ``pattern``: each file's path (relative to
    ``base``, default ``root``) and bytes. ``exclude`` gets the path relative to ``root``."""
    base = root if base is None else base
    digest = hashlib.sha256()
    for path in sorted(p for p in root.glob(pattern) if p.is_file()):
        if exclude(path.relative_to(root)):
            continue
        digest.update(str(path.relative_to(base)).encode() + b"\0")
        digest.update(bytes.fromhex(sha256_file(path)))
    return digest.hexdigest()


def git_blob_id(data: bytes) -> str:
    """Git's id of a file's content: sha1 of b"blob <size>\\0" + content. Not a security hash:
    it is how a file is matched to a commit's tree without the commit."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def combine(*parts: str) -> str:
    """One digest of several (order matters)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()
