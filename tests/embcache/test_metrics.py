"""Cache and host-table counters, the torchrec-style metric module and describe(), checked
against hand-counted workloads and against counts recomputed from the batches."""

from __future__ import annotations

import io

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import lru_counts, random_ids


def train(model: ec.DynamicEmbedding, batches: list[list[int]]) -> None:
    for ids in batches:
        model(torch.tensor(ids)).sum().backward()


def test_hand_counted_cache_workload() -> None:
    # Three slots, dim 4, SGD (row = 16 bytes). By hand:
    #  [10, 20]      2 lookups, 0 hits, in 10 20
    #  [30]          1 lookup,  0 hits, in 30                       (slots full)
    #  [40, 10]      2 lookups, 1 hit (10); 40 replaces 20 (LRU): 20 out
    #  [10, 40, 30]  3 lookups, 3 hits
    #  [20]          1 lookup,  0 hits, in 20; it replaces the LRU row: recency after the
    #                batches is 40 > 30 > 10 (the last batch's rows in descending id order
    #                first), so 10 goes out
    # lookups 9, hits 4, rows in 5, rows out 2; admitted 4 rows, evicted none.
    model = ec.DynamicEmbedding(4, cache_slots=3)
    train(model, [[10, 20], [30], [40, 10], [10, 40, 30], [20]])
    snap = ec.counters.snapshot(model.table)
    assert (snap.cache_lookups, snap.cache_hits) == (9, 4)
    assert (snap.rows_swapped_in, snap.rows_swapped_out) == (5, 2)
    assert (snap.bytes_swapped_in, snap.bytes_swapped_out) == (80, 32)
    assert (snap.rows_admitted, snap.rows_evicted, snap.host_rows) == (4, 0, 4)
    assert snap.cache_hit_rate == pytest.approx(4 / 9)
    assert model.table._planner.slots_of(torch.tensor([10])).item() == -1  # 10 went out
    # flush writes back the 3 resident rows (all changed since they came in)
    model.table.flush()
    assert ec.counters.snapshot(model.table).rows_swapped_out == 5


def test_hand_counted_admission_and_eviction() -> None:
    # Admission at the 2nd sighting, capacity 2 rows (least used go first), no cache.
    #  [1, 2]        counters only
    #  [1, 2, 3]     1 and 2 admitted (2 rows)
    #  [3, 4]        3 admitted (3 rows > 2): the least used not in this batch goes:
    #                1 and 2 were seen twice each, 3 twice; ties -> longest unseen, then
    #                smallest id: 1 evicted
    #  [5]           counters only
    # admitted 3, evicted 1, rows 2.
    model = ec.DynamicEmbedding(
        4, admission=ec.Admission(threshold=2), eviction=ec.EvictionPolicy(capacity=2)
    )
    train(model, [[1, 2], [1, 2, 3], [3, 4], [5]])
    snap = ec.counters.snapshot(model.table)
    assert (snap.rows_admitted, snap.rows_evicted, snap.host_rows) == (3, 1, 2)
    assert not model.table.contains(torch.tensor([1])).item()
    assert (snap.cache_lookups, snap.rows_swapped_in) == (0, 0)  # no cache


def test_counts_match_a_recount_at_production_shapes() -> None:
    pool = random_ids(5000, seed=1)
    g = torch.Generator().manual_seed(2)
    p = torch.arange(1, 5001, dtype=torch.float64).pow(-1.05)
    batches = [pool[torch.multinomial(p, 4096, replacement=True, generator=g)] for _ in range(6)]
    model = ec.DynamicEmbeddingBag(64, mode="sum", cache_slots=2500)
    for ids in batches:
        model(ids.view(-1, 8)).sum().backward()
    snap = ec.counters.snapshot(model.table)
    lookups, hits = lru_counts(batches, 2500)
    assert (snap.cache_lookups, snap.cache_hits) == (lookups, hits)
    assert snap.rows_swapped_in == lookups - hits
    assert snap.rows_admitted == snap.host_rows == len(set(torch.cat(batches).tolist()))


def test_metric_module_keys_lifetime_window_and_describe() -> None:
    pytest.importorskip("torchrec")
    from torchrec.metrics.metrics_namespace import MetricPrefix, compose_metric_key
    from torchrec_embcache import EmbCacheMetrics
    from torchrec_embcache.metrics import EmbCacheMetricName, EmbCacheMetricNamespace

    a = ec.DynamicEmbedding(4, cache_slots=3)
    b = ec.DynamicEmbedding(4)
    model = torch.nn.ModuleDict({"a": a, "b": b})
    metrics = EmbCacheMetrics(model, window_size=2)
    work = [[10, 20], [30], [40, 10], [10, 40, 30], [20]]
    for ids in work:
        train(a, [ids])
        train(b, [ids])
        metrics.update()
    out = metrics.compute()

    def key(table: str, name: str, prefix: MetricPrefix) -> str:
        return compose_metric_key(
            EmbCacheMetricNamespace.EMBCACHE, table, EmbCacheMetricName(name), prefix
        )

    assert key("a", "cache_hit_rate", MetricPrefix.LIFETIME) == "embcache-a|lifetime_cache_hit_rate"
    assert out[key("a", "cache_hit_rate", MetricPrefix.LIFETIME)].item() == pytest.approx(4 / 9)
    assert out[key("a", "rows_swapped_in", MetricPrefix.LIFETIME)].item() == 5
    # the window covers the last two updates: batches [10, 40, 30] (3 hits of 3) and [20]
    assert out[key("a", "cache_lookups", MetricPrefix.WINDOW)].item() == 4
    assert out[key("a", "cache_hits", MetricPrefix.WINDOW)].item() == 3
    assert out[key("a", "rows_swapped_out", MetricPrefix.WINDOW)].item() == 1
    assert out[key("b", "rows_admitted", MetricPrefix.LIFETIME)].item() == 4
    assert out[key("b", "host_rows", MetricPrefix.DEFAULT)].item() == 4
    assert out[key("b", "host_memory_bytes", MetricPrefix.DEFAULT)].item() == b.table.memory_bytes
    assert torch.isnan(out[key("b", "cache_hit_rate", MetricPrefix.LIFETIME)])

    buf = io.StringIO()
    text = metrics.describe(file=buf)
    assert buf.getvalue().strip() == text
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["table", "slots", "hit"]
    row_a = lines[2].split()
    assert row_a[:4] == ["a", "3", "0.444", "9"]
    assert lines[3].split()[:3] == ["b", "-", "-"]
    assert ec.describe(model, file=io.StringIO()) == text
