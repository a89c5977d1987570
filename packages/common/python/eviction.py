"""One eviction policy type for the tables of both packages.

:class:`EvictionPolicy` says which rows a table gives up and when. Both cores keep the same
exact order of their rows (``recsdk_ext::EvictionOrder`` in packages/common): buckets by key,
rows within a bucket in the order they took that key, victims read off the front.

* ``order="lru"``: least recently used first (the batch an id was last seen in).
* ``order="lfu"``: least frequently used first, then least recently used.
* ``ttl_steps``: rows unseen for more than this many training batches go (both packages;
  read off the front of a recency order).
* ``capacity``: at most this many rows; beyond it rows go in ``order`` (torchrec_embcache; a
  hybrid_torchrec table's capacity is its ``num_embeddings``).
* ``protect_batches``: rows used by the last this-many batches are never given up
  (hybrid_torchrec; torchrec_embcache protects the current batch, i.e. 1).
* ``interval``: the policy runs every this-many training batches (torchrec_embcache).

A package refuses a setting it does not implement with a :class:`ValueError` naming it.

What counts as one use differs where the packages' tables differ, and the docs of each say so:
hybrid_torchrec counts the batches an id occurred in and ranks the ids of one batch by first
occurrence; torchrec_embcache counts sightings (every occurrence) and ranks the ids of one
batch by id. With each id at most once per batch, in ascending order, the two give up the same
ids.

This module is installed into each package as ``<package>._shared.eviction``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

__all__ = ["ORDERS", "EvictionPolicy", "warn_deprecated"]

ORDERS = ("lru", "lfu")


@dataclass(frozen=True)
class EvictionPolicy:
    """Which rows a table gives up, in which order, and when (see the module docstring)."""

    order: Literal["lru", "lfu"] = "lfu"
    ttl_steps: int | None = None
    capacity: int | None = None
    protect_batches: int = 1
    interval: int = 1

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order must be 'lru' or 'lfu', got {self.order!r}")
        for name in ("ttl_steps", "capacity"):
            v = getattr(self, name)
            if v is not None and (not _is_int(v) or v < 1):
                raise ValueError(f"{name} must be an integer >= 1 or None, got {v!r}")
        for name in ("protect_batches", "interval"):
            v = getattr(self, name)
            if not _is_int(v) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")

    @property
    def name(self) -> str:
        """The order's name ("lru" / "lfu"), as hybrid_torchrec's LRU/LFU had it."""
        return self.order

    def refuse(self, package: str, settings: tuple[str, ...], why: str) -> None:
        """Raises ValueError when one of `settings` differs from its default in `package`."""
        defaults = {"ttl_steps": None, "capacity": None, "protect_batches": 1, "interval": 1}
        for name in settings:
            if getattr(self, name) != defaults[name]:
                raise ValueError(
                    f"{package} does not implement EvictionPolicy({name}=...): {why}, got {self!r}"
                )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def warn_deprecated(old: str, new: str) -> None:
    """The DeprecationWarning of an old spelling, pointing at the caller's caller."""
    warnings.warn(
        f"{old} is deprecated; write {new} (one policy type for both packages)",
        DeprecationWarning,
        stacklevel=3,
    )
