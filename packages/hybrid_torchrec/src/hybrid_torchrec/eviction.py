"""What a full table does with the ids of a batch that have no row yet.

No policy (``eviction=None``): the batch fails with :class:`CapacityError`. With an
:class:`EvictionPolicy` (the type torchrec_embcache uses too) the table gives up as many rows as
the batch needs, in the policy's order:

* ``EvictionPolicy("lru")``: least recently used first (the order of the batches the ids last
  occurred in; within one batch, ids already mapped rank in order of first occurrence, before
  the batch's new ids).
* ``EvictionPolicy("lfu")``: fewest batches occurred in first (an id repeated within one batch
  counts once), ties broken by the time the id reached that count, oldest first.

Rows used by the last ``protect_batches`` batches (the current one included) are never
given up: set it to the pipeline depth or the gradient-accumulation window so that no row is
reassigned while a batch that reads it is still in flight. A table's capacity is its
``num_embeddings``; ``ttl_steps``, ``capacity`` and ``interval`` are torchrec_embcache settings
and are refused here.

``LRU(protect_batches=n)`` and ``LFU(protect_batches=n)`` are the old spellings: they still
work, warn (DeprecationWarning) and are EvictionPolicy instances.
"""

from __future__ import annotations

from hybrid_torchrec._shared.eviction import EvictionPolicy, warn_deprecated

__all__ = ["LFU", "LRU", "POLICY_CODES", "EvictionPolicy", "policy_code"]


class LRU(EvictionPolicy):
    """Deprecated: ``EvictionPolicy("lru", protect_batches=n)``."""

    def __init__(self, protect_batches: int = 1) -> None:
        warn_deprecated(
            f"hybrid_torchrec.LRU(protect_batches={protect_batches!r})",
            f'EvictionPolicy("lru", protect_batches={protect_batches!r})',
        )
        super().__init__("lru", protect_batches=protect_batches)

    def __setstate__(self, state: dict[str, object]) -> None:
        # A pickle of the old LRU holds protect_batches only: the order is the class's.
        self.__dict__.update({"order": "lru", **state})


class LFU(EvictionPolicy):
    """Deprecated: ``EvictionPolicy("lfu", protect_batches=n)``."""

    def __init__(self, protect_batches: int = 1) -> None:
        warn_deprecated(
            f"hybrid_torchrec.LFU(protect_batches={protect_batches!r})",
            f'EvictionPolicy("lfu", protect_batches={protect_batches!r})',
        )
        super().__init__("lfu", protect_batches=protect_batches)

    def __setstate__(self, state: dict[str, object]) -> None:
        # A pickle of the old LFU holds protect_batches only: the order is the class's.
        self.__dict__.update({"order": "lfu", **state})


POLICY_CODES = {None: 0, "lru": 1, "lfu": 2}


def policy_code(policy: EvictionPolicy | None) -> tuple[int, int]:
    """The core's (policy, protect_batches) for a policy object."""
    if policy is None:
        return 0, 1
    if not isinstance(policy, EvictionPolicy):
        raise TypeError(
            f'eviction must be None or EvictionPolicy("lru" | "lfu", ...), got {policy!r}'
        )
    policy.refuse(
        "hybrid_torchrec",
        ("ttl_steps", "capacity", "interval"),
        "a table gives up rows only when it is full (its capacity is num_embeddings)",
    )
    return POLICY_CODES[policy.order], policy.protect_batches
