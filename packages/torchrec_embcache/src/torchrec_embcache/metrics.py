"""The tables' counters as a torchrec-style metric module.

torchrec's metric conventions (torchrec/metrics): a metric is an ``nn.Module`` with
``update()`` and ``compute() -> Dict[str, Tensor]``; keys are composed by
``compose_metric_key(namespace, task_name, metric_name, prefix)`` into
``"{namespace}-{task}|{prefix}{name}"``; counters come with a ``lifetime_`` value (since the
start) and a ``window_`` value (over the most recent updates), as ThroughputMetric and the
RecMetrics report them. Here the namespace is ``embcache`` and the task is the table's name,
e.g. ``embcache-embedding_bags.t_user|lifetime_cache_hit_rate``. Gauges (host rows, host
memory, bytes per row) have no prefix. Definitions of every counter: counters.py.

As torchrec's RecMetricModule, ``compute()`` reports what the metric is about and
``local_compute()`` this process's share, under keys whose prefix starts with ``local_``
(``embcache-<table>|local_lifetime_cache_hit_rate``). For one process the two are the same
values; for tables sharded over ranks, sharded_metrics.ShardedEmbCacheMetrics makes
``compute()`` the collective's.
"""

from __future__ import annotations

from collections import deque
from typing import Any, TextIO

import torch
from torch import nn
from torchrec.metrics.metrics_namespace import (
    MetricNameBase,
    MetricNamespaceBase,
    MetricPrefix,
    compose_metric_key,
)

from torchrec_embcache.checkpoint import tables_of
from torchrec_embcache.counters import TableSnapshot, format_table, snapshot


class EmbCacheMetricNamespace(MetricNamespaceBase):
    EMBCACHE = "embcache"


class EmbCacheMetricName(MetricNameBase):
    CACHE_HIT_RATE = "cache_hit_rate"
    CACHE_LOOKUPS = "cache_lookups"
    CACHE_HITS = "cache_hits"
    ROWS_SWAPPED_IN = "rows_swapped_in"
    ROWS_SWAPPED_OUT = "rows_swapped_out"
    BYTES_SWAPPED_IN = "bytes_swapped_in"
    BYTES_SWAPPED_OUT = "bytes_swapped_out"
    ROWS_ADMITTED = "rows_admitted"
    ROWS_EVICTED = "rows_evicted"
    HOST_ROWS = "host_rows"
    HOST_MEMORY_BYTES = "host_memory_bytes"
    HOST_BYTES_PER_ROW = "host_bytes_per_row"


_GAUGES = (
    EmbCacheMetricName.HOST_ROWS,
    EmbCacheMetricName.HOST_MEMORY_BYTES,
    EmbCacheMetricName.HOST_BYTES_PER_ROW,
)
_WINDOWED = tuple(EmbCacheMetricName(name) for name in (*TableSnapshot.COUNTERS, "cache_hit_rate"))


def metric_key(table: str, name: EmbCacheMetricName, prefix: MetricPrefix, scope: str = "") -> str:
    """``scope`` "local_" makes a per-process key, as torchrec's local_compute() does (it puts
    the scope in front of the prefix's value, so the prefix passes as a plain string)."""
    return compose_metric_key(
        EmbCacheMetricNamespace.EMBCACHE,
        table,
        name,
        f"{scope}{prefix}",  # type: ignore[arg-type]
    )


def metric_values(
    lifetime: dict[str, TableSnapshot], window: dict[str, TableSnapshot], scope: str = ""
) -> dict[str, torch.Tensor]:
    """The metric dict of per-table lifetime and window snapshots (gauges from lifetime)."""
    out: dict[str, torch.Tensor] = {}
    for prefix, snaps in ((MetricPrefix.LIFETIME, lifetime), (MetricPrefix.WINDOW, window)):
        for table, snap in snaps.items():
            for name in _WINDOWED:
                value = float(getattr(snap, name.value))
                key = metric_key(table, name, prefix, scope)
                out[key] = torch.tensor(value, dtype=torch.double)
    for table, snap in lifetime.items():
        for name in _GAUGES:
            value = float(getattr(snap, name.value))
            key = metric_key(table, name, MetricPrefix.DEFAULT, scope)
            out[key] = torch.tensor(value, dtype=torch.double)
    return out


class EmbCacheMetrics(nn.Module):
    """Cache and host-table metrics of every dynamic table of ``obj`` (a model, a
    collection, a table or a dict of tables).

    Call ``update()`` once per training step (or as often as a window should advance) and
    ``compute()`` when reporting. ``window_size``: updates the ``window_`` values cover.
    """

    # Whether a process may hold none of the tables (a rank of a table-wise sharded model).
    _tables_optional = False

    def __init__(self, obj: Any, window_size: int = 100) -> None:
        super().__init__()
        if not isinstance(window_size, int) or window_size < 1:
            raise ValueError(f"window_size must be a positive integer, got {window_size!r}")
        # Not registered as submodules: the metric must not own (or move) the model's tables.
        self._tables = tables_of(obj)
        if not self._tables and not self._tables_optional:
            raise ValueError("no dynamic embedding tables found")
        self._start = {name: snapshot(t) for name, t in self._tables.items()}
        # Snapshots at the last window_size + 1 updates; the window spans the oldest to now.
        self._history: deque[dict[str, TableSnapshot]] = deque(maxlen=window_size + 1)
        self._history.append(self._start)

    def update(self) -> None:
        self._history.append({name: snapshot(t) for name, t in self._tables.items()})

    def lifetime(self) -> dict[str, TableSnapshot]:
        """Per table, everything counted since this metric was created."""
        now = {name: snapshot(t) for name, t in self._tables.items()}
        return {name: now[name].minus(self._start[name]) for name in now}

    def window(self) -> dict[str, TableSnapshot]:
        """Per table, what was counted between the oldest update in the window and the last."""
        oldest, newest = self._history[0], self._history[-1]
        return {name: newest[name].minus(oldest[name]) for name in newest}

    def compute(self) -> dict[str, torch.Tensor]:
        return metric_values(self.lifetime(), self.window())

    def local_compute(self) -> dict[str, torch.Tensor]:
        """This process's values, keys prefixed ``local_`` (torchrec's per-trainer report)."""
        return metric_values(self.lifetime(), self.window(), scope="local_")

    def describe(self, file: TextIO | None = None) -> str:
        """Prints and returns the lifetime counters (and the tables' sizes) as a table."""
        import sys

        text = format_table(self.lifetime())
        print(text, file=file if file is not None else sys.stdout)
        return text
