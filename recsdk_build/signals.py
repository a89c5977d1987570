"""SIGTERM (and SIGHUP) handled like Ctrl-C while a command holds temporary files.

Python turns SIGINT into KeyboardInterrupt, so ``finally`` blocks and context managers remove
a half-written bundle or an unpacked one; SIGTERM (what a job scheduler or ``kill`` sends)
and SIGHUP (a closed terminal) kill the process without running them. Inside
``terminate_as_interrupt`` they raise KeyboardInterrupt too.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by a signal other than SIGINT."""


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"stopped by {signal.Signals(signum).name}")


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise ``Terminated`` (a KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; a caller there owns the process
        return
    previous = {s: signal.signal(s, _raise) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
