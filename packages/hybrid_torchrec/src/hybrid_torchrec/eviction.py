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
``num_embeddings``; ``capacity`` and ``interval`` are torchrec_embcache settings and are
refused here.

``ttl_steps=t`` (either order) also gives up, at every training batch, the ids not seen in the
last ``t`` batches (seen at step ``s``, an id that does not occur again is gone at step
``s + t + 1``), whether the table is full or not; their rows are freed, the batch's new ids
take them first (smallest first), and they are reported with the evicted ones so that they are
reset. A TTL shorter than the protection (``ttl_steps + 1 < protect_batches``) is refused: it
would free rows a batch in flight still reads. Evaluation batches (``insert=False``) neither
count as steps nor expire anything.

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


def policy_code(policy: EvictionPolicy | None) -> tuple[int, int, int]:
    """The core's (policy, protect_batches, ttl_steps; 0: no TTL) for a policy object."""
    if policy is None:
        return 0, 1, 0
    if not isinstance(policy, EvictionPolicy):
        raise TypeError(
            f'eviction must be None or EvictionPolicy("lru" | "lfu", ...), got {policy!r}'
        )
    policy.refuse(
        "hybrid_torchrec",
        ("capacity",),
        "a table's capacity is its num_embeddings",
    )
    policy.refuse(
        "hybrid_torchrec",
        ("interval",),
        "a table applies its policy at every training batch",
    )
    ttl = policy.ttl_steps or 0
    if ttl and ttl + 1 < policy.protect_batches:
        raise ValueError(
            f"hybrid_torchrec: EvictionPolicy(ttl_steps={ttl}, protect_batches="
            f"{policy.protect_batches}) would expire rows the last {policy.protect_batches} "
            f"batches still read: ttl_steps must be at least protect_batches - 1"
        )
    return POLICY_CODES[policy.order], policy.protect_batches, ttl
