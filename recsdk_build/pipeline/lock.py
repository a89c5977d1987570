"""One run per build directory, enforced with an advisory file lock.

``flock`` is released by the kernel when the holder dies, so a crashed run never leaves a stale
lock behind; the pid and command written into the file only serve the error message.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from recsdk_build.errors import LockError

LOCK_NAME = ".recsdk-build.lock"


class BuildLock:
    def __init__(self, build_dir: Path) -> None:
        self.path = build_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise LockError(
                f"another recsdk-build run is using {self.path.parent} ({holder})",
                hint="wait for it to finish, or use a different --build-dir",
            ) from None
        os.ftruncate(fd, 0)
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        os.pwrite(fd, f"pid {os.getpid()}, started {started}: {' '.join(sys.argv)}".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> BuildLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


@contextmanager
def shared_dir_lock(directory: Path) -> Iterator[None]:
    """Wait for, then hold, the lock of a cache directory that several processes fill (parallel
    test workers, two test sessions): whoever comes second finds the first one's result instead
    of compiling over it."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
