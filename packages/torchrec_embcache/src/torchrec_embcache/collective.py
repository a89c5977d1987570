"""One rank's failure in a step every rank takes together, raised on every rank.

A sharded collection's ranks meet in collectives (all-to-alls of ids and pooled sums). When a
rank fails between two of them (a device cache too small for its share of a batch, say), the
others go on into the next collective and wait there for it: until the process group's
timeout, or until gloo reports "Connection reset by peer" once the failed process is gone.
:func:`collective_step` closes such a stretch with one small all-reduce on the host group:
every rank learns whether any failed, and all raise the same error.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist

from torchrec_embcache.errors import CollectiveError

__all__ = ["CollectiveError", "agree", "collective_step"]


def _error_type(module: str, name: str) -> type[Exception]:
    """The failing rank's exception class, when this rank can import it and build it from a
    message; else CollectiveError."""
    try:
        cls = getattr(importlib.import_module(module), name)
        if isinstance(cls, type) and issubclass(cls, Exception):
            cls("probe")
            return cls
    except Exception:
        pass
    return CollectiveError


def agree(group: Any, what: str, error: Exception | None) -> None:
    """Every rank of ``group`` (a gloo group) says whether its part of ``what`` failed
    (``error``); if any did, every rank raises the same error: the first failing rank's
    exception type with one message naming every failing rank and its error (on a failing
    rank, its own error is the ``__cause__``). Called by every rank at the same point. On a
    world of one the error is raised as it is."""
    world = dist.get_world_size(group)
    if world == 1:
        if error is not None:
            raise error
        return
    failed = torch.tensor([0 if error is None else 1], dtype=torch.int64)
    dist.all_reduce(failed, group=group)
    if int(failed[0]) == 0:
        return
    mine = None
    if error is not None:
        kind = type(error)
        mine = (kind.__module__, kind.__qualname__, f"{kind.__name__}: {error}")
    everyone: list[Any] = [None] * world
    dist.all_gather_object(everyone, mine, group=group)
    ranks = [r for r, m in enumerate(everyone) if m is not None]
    details = "; ".join(f"rank {r}: {everyone[r][2]}" for r in ranks)
    cls = _error_type(everyone[ranks[0]][0], everyone[ranks[0]][1])
    message = f"{what} failed on rank(s) {ranks} of {world}, so every rank stops: {details}"
    raise cls(message) from error


@contextmanager
def collective_step(group: Any, what: str) -> Iterator[None]:
    """Runs the body on this rank, then :func:`agree` with the other ranks of ``group``: an
    exception of the body on any rank is raised on every rank as the same error."""
    error: Exception | None = None
    try:
        yield
    except Exception as exc:  # every rank must reach agree(); KeyboardInterrupt is not caught
        error = exc
    agree(group, what, error)
