"""Cache and host-table metrics of the row-wise sharded EmbCache collection on 2 CPU (gloo)
ranks, with admission, TTL eviction and device caches too small for a rank's rows.

Each rank's metrics (ShardedEmbCacheMetrics.local_compute(), torchrec's per-trainer keys) must
equal an independent count over the ids that rank owns, worked out here from bucket_of, the
bucket map and every rank's batches: a plain-Python model of admission, TTL eviction and an LRU
cache. The job's metrics (compute(), a collective) must equal the unsharded collection's
metrics on the same batches where a sum over ranks means the same thing (lookups, admissions,
evictions, host rows), and the sum of the per-rank counts elsewhere (hits, swaps).
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
import torch

pytest.importorskip("torchrec")

import torch.distributed as dist
import torchrec_embcache as ec
from torchrec_embcache.sharded import BucketMap, RowWiseEmbCacheEmbeddingBagCollection, bucket_of
from torchrec_embcache.sharded_metrics import ShardedEmbCacheMetrics

# The batches, table layout and rank launcher are the sharded tests' (verify/ helpers).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify" / "lib"))
import embcache_sharded as sharded_worker
import npu_dist

WORLD = 2
STEPS = 6
BAGS = 128  # a rank's bags per step (rank 1 gets one more)
WINDOW = 2  # updates the window_ values cover
THRESHOLD = 2  # a row from an id's second sighting
TTL = 2  # rows and admission counters unseen for more than 2 steps go
# Per table: more slots than a step's distinct ids of one rank (at most 332 and 206, plus the
# admission default's slot) and fewer than the rows a rank's table reaches: rows swap out.
SLOTS = {"t0": 400, "t1": 250}
WHOLE_SLOTS = 1024  # the unsharded collection's cache: a global batch's distinct ids fit


@dataclass
class Counts:
    cache_lookups: int = 0
    cache_hits: int = 0
    rows_swapped_in: int = 0
    rows_swapped_out: int = 0
    rows_admitted: int = 0
    rows_evicted: int = 0
    host_rows: int = 0

    def minus(self, earlier: Counts) -> Counts:
        """Counters since ``earlier``; host_rows (a gauge) as now."""
        diff = {f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)}
        return Counts(**{**diff, "host_rows": self.host_rows})


class OwnedTable:
    """What one rank's table does with the ids it owns, counted step by step as documented
    (counters.py, config.py, sizing.py): every occurrence is a sighting; an id without a row
    gets one once its sightings reach the threshold; after the batch, rows and admission counters
    unseen for more than the TTL go (and leave the cache without a write-back); the batch's
    distinct ids with a row are the lookups, the resident ones hits, the others swapped in;
    the batch's rows become the most recent, the largest id first, and rows past the usable
    slots (one slot holds the admission default) are swapped out."""

    def __init__(self, slots: int) -> None:
        self.usable = slots - 1
        self.step = 0
        self.last_seen: dict[int, int] = {}  # rows: id -> step last seen
        self.pending: dict[int, tuple[int, int]] = {}  # id -> (sightings, step last seen)
        self.lru: list[int] = []  # resident ids, most recent first
        self.counts = Counts()

    def train(self, ids: list[int]) -> None:
        self.step += 1
        c = self.counts
        with_row = []
        for key, seen in sorted(Counter(ids).items()):
            if key not in self.last_seen:
                sightings = self.pending.pop(key, (0, 0))[0] + seen
                if sightings < THRESHOLD:
                    self.pending[key] = (sightings, self.step)
                    continue
                c.rows_admitted += 1
            self.last_seen[key] = self.step
            with_row.append(key)
        expired = [k for k, last in self.last_seen.items() if self.step - last > TTL]
        for key in expired:
            del self.last_seen[key]
            if key in self.lru:
                self.lru.remove(key)
        c.rows_evicted += len(expired)
        self.pending = {k: v for k, v in self.pending.items() if self.step - v[1] <= TTL}
        resident = set(self.lru)
        hits = sum(1 for k in with_row if k in resident)
        c.cache_lookups += len(with_row)
        c.cache_hits += hits
        c.rows_swapped_in += len(with_row) - hits
        batch = set(with_row)
        self.lru = sorted(with_row, reverse=True) + [k for k in self.lru if k not in batch]
        c.rows_swapped_out += max(0, len(self.lru) - self.usable)
        del self.lru[self.usable :]
        c.host_rows = len(self.last_seen)


def configs(slots: dict[str, int]) -> list:
    tables = sharded_worker.tables(
        "toy", admission=ec.Admission(THRESHOLD), eviction=ec.EvictionPolicy(ttl_steps=TTL)
    )
    for config in tables:
        config.cache_slots = slots[config.name]
    return tables


def table_ids(kjts: list, features: list[str]) -> torch.Tensor:
    """Every id of a table's features in every rank's batch."""
    return torch.cat([kjt[f].values() for kjt in kjts for f in features])


def owner_of(ids: torch.Tensor, bucket_map: BucketMap) -> torch.Tensor:
    return torch.tensor(bucket_map.owners)[bucket_of(ids, bucket_map.num_buckets)]


def expected(
    history: list[dict[tuple[int, str], Counts]], rank: int, table: str
) -> tuple[Counts, Counts]:
    """(lifetime, window) of one rank's table from the per-step counts."""
    now = history[-1][rank, table]
    return now, now.minus(history[-1 - WINDOW][rank, table])


def key(table: str, name: str, prefix: str = "lifetime_") -> str:
    return f"embcache-embedding_bags.{table}|{prefix}{name}"


def check_rank(values: dict[str, torch.Tensor], want: dict[str, tuple[Counts, Counts]]) -> None:
    """A rank's local_ values against its counts: every counter, lifetime and window."""
    for table, (lifetime, window) in want.items():
        for prefix, counts in (("local_lifetime_", lifetime), ("local_window_", window)):
            for f in fields(Counts):
                if f.name == "host_rows":
                    continue
                got = values[key(table, f.name, prefix)].item()
                assert got == getattr(counts, f.name), (table, prefix, f.name)
            rate = counts.cache_hits / counts.cache_lookups
            assert values[key(table, "cache_hit_rate", prefix)].item() == pytest.approx(rate)
        assert values[key(table, "host_rows", "local_")].item() == lifetime.host_rows


def check_job(
    values: dict[str, torch.Tensor],
    whole: dict[str, torch.Tensor],
    want: dict[str, list[tuple[Counts, Counts]]],
    memory: dict[str, int],
) -> None:
    """The job's values: the unsharded collection's where a sum over ranks means the same,
    the sum of the ranks' counts for the caches."""
    assert set(values) == set(whole)
    same = ("cache_lookups", "rows_admitted", "rows_evicted")
    for table, per_rank in want.items():
        for prefix, i in (("lifetime_", 0), ("window_", 1)):
            for name in same:
                k = key(table, name, prefix)
                assert values[k].item() == whole[k].item(), k
            for name in ("cache_hits", "rows_swapped_in", "rows_swapped_out"):
                total = sum(getattr(counts[i], name) for counts in per_rank)
                assert values[key(table, name, prefix)].item() == total, (table, prefix, name)
            hits = sum(counts[i].cache_hits for counts in per_rank)
            lookups = sum(counts[i].cache_lookups for counts in per_rank)
            assert values[key(table, "cache_hit_rate", prefix)].item() == pytest.approx(
                hits / lookups
            )
        rows = values[key(table, "host_rows", "")].item()
        assert rows == whole[key(table, "host_rows", "")].item()
        assert values[key(table, "host_memory_bytes", "")].item() == memory[table]
        per_row = values[key(table, "host_bytes_per_row", "")].item()
        assert per_row == pytest.approx(memory[table] / rows)


def run_rank(rank: int, world: int, port: int) -> None:
    provider, device = npu_dist.start_rank(rank, world, port, "cpu")
    host = dist.group.WORLD
    bucket_map = BucketMap.even(world)
    options = {"optimizer": ec.SparseAdagrad(lr=0.1), "seed": 5}
    sharded = RowWiseEmbCacheEmbeddingBagCollection(
        configs(SLOTS), host, bucket_map=bucket_map, device=device, **options
    )
    unsharded = ec.EmbCacheEmbeddingBagCollection(
        configs(dict.fromkeys(SLOTS, WHOLE_SLOTS)), **options
    )
    metrics = ShardedEmbCacheMetrics(sharded, host, window_size=WINDOW)
    whole = ec.EmbCacheMetrics(unsharded, window_size=WINDOW)
    features = {c.name: c.feature_names for c in configs(SLOTS)}
    owned = {(r, t): OwnedTable(SLOTS[t]) for r in range(world) for t in SLOTS}
    history = [{k: Counts() for k in owned}]
    for step in range(STEPS):
        batches = [sharded_worker.batch(r, step, BAGS, False) for r in range(world)]
        sharded(batches[rank]).values().sum().backward()
        unsharded(sharded_worker.concat(batches)).values().sum().backward()
        metrics.update()
        whole.update()
        for table, names in features.items():
            ids = table_ids(batches, names)
            owners = owner_of(ids, bucket_map)
            for r in range(world):
                owned[r, table].train(ids[owners == r].tolist())
        history.append({k: Counts(**vars(t.counts)) for k, t in owned.items()})

    want = {t: expected(history, rank, t) for t in SLOTS}
    check_rank(metrics.local_compute(), want)
    everyone = {t: [expected(history, r, t) for r in range(world)] for t in SLOTS}
    memory = {}
    for name, bag in sharded.embedding_bags.items():
        mine = torch.tensor([bag.table.memory_bytes])
        dist.all_reduce(mine, group=host)
        memory[name] = int(mine)
    check_job(metrics.compute(), whole.compute(), everyone, memory)
    # The workload exercised what is counted, on every rank.
    for lifetime, _ in want.values():
        assert lifetime.rows_evicted and lifetime.rows_swapped_out, lifetime
        assert 0 < lifetime.cache_hits < lifetime.cache_lookups, lifetime
    # describe(): one line per table of the job's sums (byte columns are "<n> <unit>").
    text = metrics.describe(file=io.StringIO())
    described = {}
    for line in text.splitlines()[2:]:
        cells = line.split()
        described[cells[0]] = (int(cells[1]), int(cells[3]), int(cells[12]))
    assert described == {
        f"embedding_bags.{t}": (
            WORLD * SLOTS[t],
            sum(counts[0].cache_lookups for counts in everyone[t]),
            sum(counts[0].host_rows for counts in everyone[t]),
        )
        for t in SLOTS
    }
    npu_dist.finish_rank(provider, None, rank)


def test_each_ranks_metrics_count_the_ids_it_owns_and_add_up_to_the_job() -> None:
    npu_dist.spawn_ranks(run_rank, WORLD, "cpu")


def run_uneven_rank(rank: int, world: int, port: int) -> None:
    """Rank 0 holds table a, rank 1 tables a and b (as table-wise placements leave them); then
    rank 0 none."""
    provider, _ = npu_dist.start_rank(rank, world, port, "cpu")
    tables = torch.nn.ModuleDict({"a": ec.DynamicEmbedding(4, cache_slots=8)})
    work = {"a": [[1, 2, 3]]}
    if rank == 1:
        tables["b"] = ec.DynamicEmbedding(8, cache_slots=8)
        work = {"a": [[5, 6], [6, 7]], "b": [[9]]}
    metrics = ShardedEmbCacheMetrics(tables, dist.group.WORLD)
    for name, batches in work.items():
        for ids in batches:
            tables[name](torch.tensor(ids)).sum().backward()
    metrics.update()
    # By hand. a: rank 0 [1, 2, 3] (3 lookups, 3 rows in); rank 1 [5, 6] then [6, 7] (4
    # lookups, 6 a hit, 3 rows in); SGD rows of 4 floats. b, on rank 1 only: [9], 8 floats.
    job = metrics.compute()
    want = {
        "a": {"cache_lookups": 7, "cache_hits": 1, "bytes_swapped_in": 6 * 16, "host_rows": 6},
        "b": {"cache_lookups": 1, "cache_hits": 0, "bytes_swapped_in": 32, "host_rows": 1},
    }
    for table, values in want.items():
        for name, value in values.items():
            prefix = "" if name == "host_rows" else "lifetime_"
            assert job[f"embcache-{table}|{prefix}{name}"].item() == value, (table, name)
    local = {k.split("|")[0] for k in metrics.local_compute()}
    assert local == {f"embcache-{t}" for t in work}
    described = [line.split()[:2] for line in metrics.describe(file=io.StringIO()).splitlines()]
    assert described[2:] == [["a", "16"], ["b", "8"]]  # the job's tables and slots
    # A rank may hold none of the tables.
    only_b = ShardedEmbCacheMetrics({"b": tables["b"].table} if rank == 1 else {})
    assert only_b.compute()["embcache-b|host_rows"].item() == 1
    assert bool(only_b.local_compute()) == (rank == 1)
    npu_dist.finish_rank(provider, None, rank)


def test_tables_held_by_some_ranks_count_where_they_are() -> None:
    npu_dist.spawn_ranks(run_uneven_rank, WORLD, "cpu")
