"""Outputs are built in a staging directory and renamed into place.

An interrupted run therefore leaves either the previous output or nothing at the final path,
never a half-written artifact.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

STAGING_DIR = ".staging"


def new_staging_dir(build_dir: Path, name: str) -> Path:
    root = build_dir / STAGING_DIR
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))


def replace_dir(staged: Path, final: Path) -> None:
    """Move ``staged`` to ``final``, replacing what was there."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old: Path | None = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        os.rename(final, old)
    os.rename(staged, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def clear_staging(build_dir: Path) -> None:
    """Remove leftovers of interrupted runs (only called while holding the lock)."""
    shutil.rmtree(build_dir / STAGING_DIR, ignore_errors=True)
