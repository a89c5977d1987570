"""Cache and host-table metrics of EmbCache tables sharded over ranks.

Each rank of an EmbCache collection sharded by bucket (torchrec_embcache.sharded) holds the
rows of the ids of its buckets, of the tables placed on it, so :class:`EmbCacheMetrics` on one
rank counts that rank's share only. torchrec's metric modules report the whole job in
``compute()`` (their states are reduced over the process group) and one trainer's share in
``local_compute()`` (keys ``...|local_<prefix><name>``). :class:`ShardedEmbCacheMetrics` does
the same for the tables: ``compute()`` and ``describe()`` are collectives over a gloo group
that sum every table's counters and sizes over the ranks holding it; ``local_compute()`` is the
rank's own.

What the sums mean, for the ranks' batches fed to one unsharded collection instead:

- cache lookups, rows admitted, rows evicted by ``ttl_steps``, host rows: the unsharded
  collection's (every id lives on exactly one rank, admission counts an id's sightings over
  the global batch, a TTL is per id); a ``capacity`` applies per rank, so evictions by
  capacity differ;
- cache hits and rows swapped in and out: those of every rank's cache together. A cache of S
  slots on each of W ranks is not one cache of W x S slots (each rank's LRU orders only its
  own ids), so the hit rate, sum of hits / sum of lookups, is the sharded job's own;
- host memory and slots: totals over the ranks; bytes per row: total memory / total rows.
"""

from __future__ import annotations

import sys
from dataclasses import fields
from typing import Any, TextIO

import torch
import torch.distributed as dist

from torchrec_embcache.counters import TableSnapshot, format_table
from torchrec_embcache.metrics import EmbCacheMetrics, metric_values

# Every field adds up over ranks except the stored row size, which is the table's.
_SUMMED = tuple(f.name for f in fields(TableSnapshot) if f.name != "row_bytes")


class ShardedEmbCacheMetrics(EmbCacheMetrics):
    """:class:`EmbCacheMetrics` of one rank's share of sharded tables, reporting the job.

    Args:
        obj: this rank's sharded module (or the model holding it): the same model on every
            rank, so that a table has the same name everywhere. A rank may hold only some of
            the tables (table-wise placements); a table counts on the ranks that hold it.
        process_group: a gloo group over the ranks (the counters are CPU tensors): the host
            group the sharder's ``host_env`` uses. None: the default group, which must then be
            gloo.
        window_size: as EmbCacheMetrics'. Call ``update()`` on every rank at every step, so
            that the ranks' windows cover the same steps.

    Construction, ``compute()``, ``global_lifetime()`` and ``describe()`` are collectives:
    every rank calls them. ``local_compute()``, ``lifetime()`` and ``window()`` are the rank's
    own, with the tables it holds (possibly none).
    """

    _tables_optional = True

    def __init__(self, obj: Any, process_group: Any = None, window_size: int = 100) -> None:
        super().__init__(obj, window_size)
        group = process_group if process_group is not None else dist.group.WORLD
        if dist.get_backend(group) != "gloo":
            raise ValueError(
                "ShardedEmbCacheMetrics sums CPU counters: pass a gloo group, e.g. the host "
                "group of the EmbCache sharder (dist.new_group(backend='gloo'))"
            )
        self._group = group
        everyone: list[Any] = [None] * dist.get_world_size(group)
        dist.all_gather_object(everyone, sorted(self._tables), group=group)
        # Every table of the job, in one order on every rank: the sums pair them by position.
        self._names = sorted(set().union(*everyone))
        if not self._names:
            raise ValueError("no dynamic embedding tables found on any rank")

    def _sum_over_ranks(
        self, *parts: dict[str, TableSnapshot]
    ) -> tuple[dict[str, TableSnapshot], ...]:
        """Each per-table snapshot dict summed over the ranks (tables a rank does not hold
        count zero there)."""
        sums = torch.tensor(
            [[_row(part.get(n)) for n in self._names] for part in parts], dtype=torch.int64
        )
        dist.all_reduce(sums, group=self._group)
        # The stored row size is the table's, on every rank that holds it.
        row_bytes = torch.tensor(
            [parts[0][n].row_bytes if n in parts[0] else 0 for n in self._names],
            dtype=torch.int64,
        )
        dist.all_reduce(row_bytes, op=dist.ReduceOp.MAX, group=self._group)
        return tuple(
            {
                n: TableSnapshot(**dict(zip(_SUMMED, row.tolist(), strict=True)), row_bytes=size)
                for n, row, size in zip(self._names, block, row_bytes.tolist(), strict=True)
            }
            for block in sums
        )

    def global_lifetime(self) -> dict[str, TableSnapshot]:
        """Per table of the job, the ranks' lifetime snapshots summed (a collective)."""
        return self._sum_over_ranks(self.lifetime())[0]

    def compute(self) -> dict[str, torch.Tensor]:
        """The job's values under the unsharded collection's keys (a collective)."""
        lifetime, window = self._sum_over_ranks(self.lifetime(), self.window())
        return metric_values(lifetime, window)

    def describe(self, file: TextIO | None = None, local: bool = False) -> str:
        """Prints and returns the job's lifetime counters per table (a collective), or with
        ``local`` this rank's (not a collective)."""
        if local:
            return super().describe(file)
        text = format_table(self.global_lifetime())
        print(text, file=file if file is not None else sys.stdout)
        return text


def _row(snap: TableSnapshot | None) -> list[int]:
    return [0] * len(_SUMMED) if snap is None else [getattr(snap, f) for f in _SUMMED]
