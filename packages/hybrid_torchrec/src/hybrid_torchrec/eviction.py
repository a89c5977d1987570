"""What a full table does with the ids of a batch that have no row yet.

No policy (``eviction=None``): the batch fails with :class:`CapacityError`. With a policy the
table gives up as many rows as the batch needs, in the policy's order:

* :class:`LRU`: least recently used first (the order of the batches the ids last occurred in;
  within one batch, ids already mapped rank in order of first occurrence, before the batch's
  new ids).
* :class:`LFU`: fewest batches occurred in first (an id repeated within one batch counts
  once), ties broken by the time the id reached that count, oldest first.

Rows used by the last ``protect_batches`` batches (the current one included) are never
given up: set it to the pipeline depth or the gradient-accumulation window so that no row is
reassigned while a batch that reads it is still in flight.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvictionPolicy:
    protect_batches: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.protect_batches, int) or self.protect_batches < 1:
            raise ValueError(
                f"protect_batches must be an integer >= 1, got {self.protect_batches!r}"
            )

    @property
    def name(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class LRU(EvictionPolicy):
    """Evict the least recently used ids first."""

    @property
    def name(self) -> str:
        return "lru"


@dataclass(frozen=True)
class LFU(EvictionPolicy):
    """Evict the ids seen in the fewest batches first (least recent among equals)."""

    @property
    def name(self) -> str:
        return "lfu"


POLICY_CODES = {None: 0, "lru": 1, "lfu": 2}


def policy_code(policy: EvictionPolicy | None) -> tuple[int, int]:
    """The core's (policy, protect_batches) for a policy object."""
    if policy is None:
        return 0, 1
    if not isinstance(policy, EvictionPolicy) or type(policy) is EvictionPolicy:
        raise TypeError(f"eviction must be None, LRU(...) or LFU(...), got {policy!r}")
    return POLICY_CODES[policy.name], policy.protect_batches
