"""Per-table counters of the device cache and the host table, and ``describe()``.

Definitions (every count is since the table was created in this process; counters are not
part of checkpoints):

- cache lookups: per training batch through the device cache, its distinct ids that have a
  row (ids still below the admission threshold read the default slot and are not counted);
- cache hits: those of them whose row was already in the cache when the batch was planned;
  hit rate = hits / lookups;
- rows swapped in: rows copied host -> device; rows swapped out: rows copied device -> host
  (changed victims written back, and rows written back by flush / checkpoints); bytes are
  rows x the stored row size (embedding in the row dtype + float32 optimiser state);
- rows admitted: rows created by training lookups; rows evicted: rows removed by the
  eviction policy;
- host rows / host memory: the host table now (rows, index and bookkeeping).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from torchrec_embcache.table import EmbeddingTable


@dataclass
class CacheCounters:
    """Counters kept by an EmbeddingTable as its device cache executes plans."""

    cache_lookups: int = 0
    cache_hits: int = 0
    rows_swapped_in: int = 0
    rows_swapped_out: int = 0
    # Admissions and evictions of host tables this table no longer uses (replaced by a
    # checkpoint load or clear()): the host table's own counters restart with it.
    admitted_before: int = 0
    evicted_before: int = 0


@dataclass(frozen=True)
class TableSnapshot:
    """What a table has counted so far, and its size now."""

    cache_slots: int
    cache_lookups: int
    cache_hits: int
    rows_swapped_in: int
    rows_swapped_out: int
    bytes_swapped_in: int
    bytes_swapped_out: int
    rows_admitted: int
    rows_evicted: int
    host_rows: int
    host_memory_bytes: int
    row_bytes: int

    @property
    def cache_hit_rate(self) -> float:
        """hits / lookups; nan before the first lookup through a cache."""
        return self.cache_hits / self.cache_lookups if self.cache_lookups else math.nan

    @property
    def host_bytes_per_row(self) -> float:
        return self.host_memory_bytes / self.host_rows if self.host_rows else math.nan

    # Counters (monotone) as opposed to gauges (the table now).
    COUNTERS = (
        "cache_lookups",
        "cache_hits",
        "rows_swapped_in",
        "rows_swapped_out",
        "bytes_swapped_in",
        "bytes_swapped_out",
        "rows_admitted",
        "rows_evicted",
    )

    def minus(self, earlier: TableSnapshot) -> TableSnapshot:
        """Counters accumulated since ``earlier``; gauges as now."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in self.COUNTERS:
            values[name] -= getattr(earlier, name)
        return TableSnapshot(**values)


def snapshot(table: EmbeddingTable) -> TableSnapshot:
    c = table.counters
    host = table.host
    row_bytes = table.row_bytes
    return TableSnapshot(
        cache_slots=table.cache_slots or 0,
        cache_lookups=c.cache_lookups,
        cache_hits=c.cache_hits,
        rows_swapped_in=c.rows_swapped_in,
        rows_swapped_out=c.rows_swapped_out,
        bytes_swapped_in=c.rows_swapped_in * row_bytes,
        bytes_swapped_out=c.rows_swapped_out * row_bytes,
        rows_admitted=c.admitted_before + int(host.admitted_total),
        rows_evicted=c.evicted_before + int(host.evicted_total),
        host_rows=int(host.size),
        host_memory_bytes=int(host.memory_bytes),
        row_bytes=row_bytes,
    )


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover - the loop returns


_COLUMNS = (
    ("table", lambda n, s: n),
    ("slots", lambda n, s: str(s.cache_slots) if s.cache_slots else "-"),
    ("hit rate", lambda n, s: "-" if math.isnan(s.cache_hit_rate) else f"{s.cache_hit_rate:.3f}"),
    ("lookups", lambda n, s: str(s.cache_lookups)),
    ("rows in", lambda n, s: str(s.rows_swapped_in)),
    ("bytes in", lambda n, s: _bytes(s.bytes_swapped_in)),
    ("rows out", lambda n, s: str(s.rows_swapped_out)),
    ("bytes out", lambda n, s: _bytes(s.bytes_swapped_out)),
    ("admitted", lambda n, s: str(s.rows_admitted)),
    ("evicted", lambda n, s: str(s.rows_evicted)),
    ("host rows", lambda n, s: str(s.host_rows)),
    ("host memory", lambda n, s: _bytes(s.host_memory_bytes)),
    ("B/row", lambda n, s: "-" if not s.host_rows else f"{s.host_bytes_per_row:.0f}"),
)


def format_table(snapshots: dict[str, TableSnapshot]) -> str:
    """The snapshots as an aligned text table, one line per table."""
    rows = [[name for name, _ in _COLUMNS]]
    for table_name in sorted(snapshots):
        rows.append([cell(table_name, snapshots[table_name]) for _, cell in _COLUMNS])
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]

    def line(r: list[str]) -> str:
        first = r[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])

    out = [line(rows[0]), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows[1:])
    return "\n".join(out)


def describe(obj: Any, file: TextIO | None = None) -> str:
    """Prints (to ``file``, default stdout) and returns the counters of every dynamic table
    of ``obj`` (a module, a table, or a dict of tables) as a table."""
    from torchrec_embcache.checkpoint import tables_of

    text = format_table({name: snapshot(t) for name, t in tables_of(obj).items()})
    print(text, file=file if file is not None else sys.stdout)
    return text
