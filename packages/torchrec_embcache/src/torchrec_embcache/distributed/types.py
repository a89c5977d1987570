"""The types of torchrec_embcache's distributed part, apart from its implementations (torchrec's
split, ``torchrec.distributed.types``, and hybrid_torchrec's ``distributed.types``): the
sharding types, and where a sharded EmbCache table's ids live: stable hash buckets and their
owner ranks. ``torchrec_embcache.placement`` names the same objects (its earlier home).

Every id belongs to one of ``num_buckets`` buckets, ``bucket_of(id)``: a hash fixed for good
(splitmix64's finaliser of the id, taken modulo the bucket count), so that a checkpoint, another
world size or another process computes the same bucket. A :class:`BucketMap` names the rank that
owns each bucket; changing the map moves whole buckets between ranks, never splits one.

A :class:`Placement` is one table's bucket map with the torchrec sharding type it realises:

- ``row_wise``: the buckets spread evenly over every rank;
- ``table_wise``: every bucket owned by one rank (the table lives there only);
- ``table_row_wise``: the buckets spread evenly over the ranks of one host.

All three are bucket maps, so a table moves between them (or between world sizes) by moving
buckets, which is what loading a sharded checkpoint into another layout does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from torchrec_embcache._ext import _C
from torchrec_embcache.errors import ShardingError

__all__ = [
    "DEFAULT_NUM_BUCKETS",
    "ROW_WISE",
    "SHARDING_TYPES",
    "TABLE_ROW_WISE",
    "TABLE_WISE",
    "BucketMap",
    "Placement",
    "ShardingError",
    "bucket_of",
]

DEFAULT_NUM_BUCKETS = 4096

ROW_WISE = "row_wise"
TABLE_WISE = "table_wise"
TABLE_ROW_WISE = "table_row_wise"
SHARDING_TYPES = (TABLE_WISE, ROW_WISE, TABLE_ROW_WISE)


def bucket_of(ids: torch.Tensor, num_buckets: int) -> torch.Tensor:
    """The bucket of every id: splitmix64's finaliser of the id plus the golden gamma (on its
    uint64 bit pattern), its top 63 bits modulo ``num_buckets``. Computed by the C++ core
    (``recsdk_ext::hash_bucket``, which the host tables' hash shares); the result has the shape
    and device of ``ids``."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    flat = ids.reshape(-1).to(device="cpu", dtype=torch.int64).contiguous()
    return _C.bucket_of(flat, num_buckets).view(ids.shape).to(ids.device)


@dataclass(frozen=True, repr=False)
class BucketMap:
    """Which rank owns each bucket (``owners[b]``)."""

    owners: tuple[int, ...]
    world_size: int

    def __post_init__(self) -> None:
        if not isinstance(self.world_size, int) or self.world_size < 1:
            raise ShardingError(f"world_size must be a positive int, got {self.world_size!r}")
        if not self.owners:
            raise ShardingError("a BucketMap needs at least one bucket")
        if not all(isinstance(r, int) for r in self.owners):
            odd = next(r for r in self.owners if not isinstance(r, int))
            raise ShardingError(f"BucketMap owners must be int ranks, got {odd!r}")
        bad = [r for r in set(self.owners) if not 0 <= r < self.world_size]
        if bad:
            raise ShardingError(
                f"BucketMap names rank(s) {sorted(bad)} outside a world of {self.world_size}"
            )

    @classmethod
    def even(cls, world_size: int, num_buckets: int = DEFAULT_NUM_BUCKETS) -> BucketMap:
        """Contiguous runs of buckets, as equal as the counts allow (rank r: buckets
        [r * n / W, (r + 1) * n / W))."""
        return cls.over(range(world_size), world_size, num_buckets)

    @classmethod
    def over(
        cls, ranks: Sequence[int], world_size: int, num_buckets: int = DEFAULT_NUM_BUCKETS
    ) -> BucketMap:
        """The buckets in contiguous, as equal as possible runs over ``ranks`` (in the order
        given), which may be any ranks of the world."""
        ranks = tuple(ranks)
        if not isinstance(num_buckets, int):
            raise ShardingError(f"num_buckets must be an int, got {num_buckets!r}")
        if len(set(ranks)) != len(ranks):
            raise ShardingError(f"ranks {list(ranks)} name a rank twice")
        if not ranks or num_buckets < len(ranks):
            raise ShardingError(
                f"{num_buckets} buckets cannot be spread over {len(ranks)} ranks: every rank "
                "needs at least one"
            )
        k = len(ranks)
        return cls(tuple(ranks[b * k // num_buckets] for b in range(num_buckets)), world_size)

    @classmethod
    def from_runs(cls, runs: Sequence[Sequence[int]], world_size: int) -> BucketMap:
        """The map of :meth:`runs`' ``[[rank, count], ...]``."""
        return cls(tuple(rank for rank, count in runs for _ in range(count)), world_size)

    def runs(self) -> list[list[int]]:
        """The owners as ``[[rank, count], ...]`` runs: a 4096-bucket map is a few runs."""
        out: list[list[int]] = []
        for rank in self.owners:
            if out and out[-1][0] == rank:
                out[-1][1] += 1
            else:
                out.append([rank, 1])
        return out

    @property
    def num_buckets(self) -> int:
        return len(self.owners)

    def __repr__(self) -> str:
        # The owners as runs: the dataclass's repr would print every one of 4096 buckets.
        runs = ", ".join(f"{rank} x {count}" for rank, count in self.runs())
        return f"BucketMap(world_size={self.world_size}, owners=[{runs}])"

    @cached_property
    def ranks(self) -> tuple[int, ...]:
        """The ranks that own at least one bucket, ascending."""
        return tuple(sorted(set(self.owners)))

    @cached_property
    def _owner_table(self) -> torch.Tensor:
        return torch.tensor(self.owners, dtype=torch.int64)

    def rank_of(self, ids: torch.Tensor) -> torch.Tensor:
        """The owner rank of every id."""
        if len(self.ranks) == 1:  # one owner (table-wise): no need to hash
            return torch.full(ids.shape, self.ranks[0], dtype=torch.int64)
        return self._owner_table[bucket_of(ids, self.num_buckets)]


@dataclass(frozen=True)
class Placement:
    """One table's layout over the ranks: a torchrec sharding type and the bucket map that
    realises it. Build one with :meth:`row_wise`, :meth:`table_wise` or
    :meth:`table_row_wise`. Routing and checkpoints follow the map alone; the type decides
    what pooling may do (MEAN only table-wise) and is recorded in checkpoints."""

    sharding_type: str
    bucket_map: BucketMap

    def __post_init__(self) -> None:
        if self.sharding_type not in SHARDING_TYPES:
            raise ShardingError(
                f"unknown EmbCache sharding type {self.sharding_type!r}; the types are "
                f"{', '.join(SHARDING_TYPES)}"
            )
        if self.sharding_type == TABLE_WISE and len(self.ranks) != 1:
            raise ShardingError(
                f"a table_wise placement has one owner rank, this bucket map has {list(self.ranks)}"
            )

    @classmethod
    def row_wise(cls, world_size: int, num_buckets: int = DEFAULT_NUM_BUCKETS) -> Placement:
        """The buckets spread evenly over every rank of the world."""
        return cls(ROW_WISE, BucketMap.even(world_size, num_buckets))

    @classmethod
    def table_wise(
        cls, rank: int, world_size: int, num_buckets: int = DEFAULT_NUM_BUCKETS
    ) -> Placement:
        """Every bucket on ``rank``: the table lives on that rank alone."""
        return cls(TABLE_WISE, BucketMap.over((rank,), world_size, num_buckets))

    @classmethod
    def table_row_wise(
        cls,
        ranks: Sequence[int],
        world_size: int,
        num_buckets: int = DEFAULT_NUM_BUCKETS,
        local_world_size: int | None = None,
    ) -> Placement:
        """The buckets spread evenly over ``ranks``, the ranks of one host (for a host of
        ``local_world_size`` ranks: ``range(h * local_world_size, (h + 1) * ...)``). Given
        ``local_world_size``, ranks on more than one host are refused: the table's ids would
        cross hosts on every step, which is what table-row-wise is chosen to avoid."""
        ranks = tuple(ranks)
        if local_world_size is not None:
            if not isinstance(local_world_size, int) or local_world_size < 1:
                raise ShardingError(
                    f"local_world_size must be a positive int, got {local_world_size!r}"
                )
            hosts = sorted({r // local_world_size for r in ranks if isinstance(r, int)})
            if len(hosts) > 1:
                raise ShardingError(
                    f"a table_row_wise placement keeps a table on one host's ranks; ranks "
                    f"{list(ranks)} are on hosts {hosts} (hosts of {local_world_size} ranks)"
                )
        return cls(TABLE_ROW_WISE, BucketMap.over(ranks, world_size, num_buckets))

    @property
    def ranks(self) -> tuple[int, ...]:
        """The ranks that hold part of the table."""
        return self.bucket_map.ranks

    @property
    def world_size(self) -> int:
        return self.bucket_map.world_size

    def to_json(self) -> dict[str, Any]:
        return {
            "sharding_type": self.sharding_type,
            "num_buckets": self.bucket_map.num_buckets,
            "owners": self.bucket_map.runs(),
        }

    @classmethod
    def from_json(cls, body: dict[str, Any], world_size: int) -> Placement:
        bucket_map = BucketMap.from_runs(body["owners"], world_size)
        if bucket_map.num_buckets != body["num_buckets"]:
            raise ShardingError(
                f"a placement records {body['num_buckets']} buckets but its owner runs cover "
                f"{bucket_map.num_buckets}"
            )
        return cls(body["sharding_type"], bucket_map)
