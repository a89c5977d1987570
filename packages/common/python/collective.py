"""One rank's failure in a step every rank takes together, raised on every rank.

A sharded collection's ranks meet in collectives (all-to-alls of ids and pooled outputs). When
a rank fails between two of them (a device cache or a table shard too small for its share of a
batch, say), the others go on into the next collective and wait there for it: until the process
group's timeout, or until gloo reports "Connection reset by peer" once the failed process is
gone.
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

# The host package's CollectiveError: this module is installed as <package>._shared.collective.
from ..errors import CollectiveError

__all__ = ["CollectiveError", "agree", "collective_plan", "collective_step"]


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


def collective_plan(planner: Any, module: Any, sharders: list[Any], pg: Any = None) -> Any:
    """``planner.collective_plan(module, sharders, pg)``, except for a refusal: torchrec plans
    on the group's rank 0 and broadcasts the plan, so a planner or sharder error (no sharding
    type left after the constraints, tables that do not fit...) is raised on rank 0 only while
    the other ranks wait in the broadcast until the process group's timeout. Here it is raised
    on every rank, the same error: rank 0's exception type with its message."""
    pg = pg if pg is not None else dist.GroupMember.WORLD
    rank, world = dist.get_rank(pg), dist.get_world_size(pg)
    error: Exception | None = None
    result: list[Any] = [None]
    if rank == 0:
        try:
            result[0] = ("plan", planner.plan(module, sharders))
        except Exception as exc:
            error, kind = exc, type(exc)
            result[0] = ("error", kind.__module__, kind.__qualname__, f"{kind.__name__}: {exc}")
    if world > 1:
        dist.broadcast_object_list(result, src=dist.get_global_rank(pg, 0), group=pg)
    if result[0][0] == "plan":
        return result[0][1]
    _, module_name, qualname, message = result[0]
    cls = _error_type(module_name, qualname)
    raise cls(f"planning on rank 0 of {world} failed, so every rank stops: {message}") from error
