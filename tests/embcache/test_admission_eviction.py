"""Feature admission and eviction, with values worked out by hand, and growth past 10^7 ids."""

from __future__ import annotations

import time

import pytest
import torch
import torchrec_embcache as ec

DIM = 4


def model(**kwargs) -> ec.DynamicEmbedding:
    kwargs.setdefault("initializer", ec.Constant(1.0))
    kwargs.setdefault("optimizer", ec.SparseSGD(lr=0.1))
    return ec.DynamicEmbedding(DIM, **kwargs)


def step(m: ec.DynamicEmbedding, ids: list[int]) -> torch.Tensor:
    out = m(torch.tensor(ids))
    out.sum().backward()  # gradient 1 per occurrence
    return out.detach()


def rows(m: ec.DynamicEmbedding) -> dict[int, list[float]]:
    e = m.table.export()
    return {int(i): w.tolist() for i, w in zip(e["ids"], e["weight"], strict=True)}


@pytest.mark.parametrize("cache_slots", [None, 4])
def test_admission_by_hand(cache_slots: int | None) -> None:
    m = model(admission=ec.Admission(threshold=3, default_value=0.5), cache_slots=cache_slots)
    # Step 1: id 7 seen twice (2 < 3): both read the default; the gradient is dropped.
    out = step(m, [7, 7])
    assert torch.equal(out, torch.full((2, DIM), 0.5))
    assert len(m.table) == 0 and m.table.host.pending_size == 1
    # Step 2: third sighting admits 7 - this batch already reads its initial row (1.0);
    # id 9 (first sighting) reads the default.
    out = step(m, [7, 9])
    assert out[0].tolist() == [1.0] * DIM and out[1].tolist() == [0.5] * DIM
    # SGD: 1.0 - 0.1 * 1 (one occurrence) = 0.9, in float32.
    expected = torch.tensor(1.0) - torch.tensor(0.1) * 1
    assert rows(m) == {7: [expected.item()] * DIM}
    m.eval()
    assert m(torch.tensor([7, 9]))[:, 0].tolist() == [expected.item(), 0.5]


@pytest.mark.parametrize("cache_slots", [None, 3])
def test_ttl_eviction_by_hand(cache_slots: int | None) -> None:
    m = model(eviction=ec.EvictionPolicy(ttl_steps=2), cache_slots=cache_slots)
    step(m, [1, 2])  # step 1: both 1.0 -> 0.9
    step(m, [1])  # step 2
    step(m, [1])  # step 3: id 2 unseen for 3 - 1 = 2 steps: not more than 2, kept
    assert sorted(rows(m)) == [1, 2]
    step(m, [1])  # step 4: unseen for 3 steps > 2: evicted
    assert sorted(rows(m)) == [1]
    out = step(m, [2])  # back as a new row with its initial value, not its trained 0.9
    assert out[0].tolist() == [1.0] * DIM


def test_capacity_evicts_least_used_by_hand() -> None:
    m = model(eviction=ec.EvictionPolicy(capacity=3))
    step(m, [1, 1, 1, 2, 2, 3])  # counts 1:3 2:2 3:1
    step(m, [4])  # 4 rows > 3: the least used of rows not in this batch is 3 (count 1)
    assert sorted(rows(m)) == [1, 2, 4]
    step(m, [5, 5])  # candidates 1(3) 2(2) 4(1): 4 goes
    assert sorted(rows(m)) == [1, 2, 5]
    step(m, [6, 2])  # 2 is now count 3; candidates 1(3, last step 1) 5(2): 5 goes
    assert sorted(rows(m)) == [1, 2, 6]


def test_capacity_ties_go_to_the_longest_unseen_then_smallest_id() -> None:
    m = model(eviction=ec.EvictionPolicy(capacity=3))
    step(m, [11, 10])  # step 1
    step(m, [20])  # step 2: 3 rows, at capacity
    # Step 3: 4 rows. All candidates were seen once; 10 and 11 are the longest unseen
    # (step 1) and tie again: the smaller id, 10, goes.
    step(m, [12])
    assert sorted(rows(m)) == [11, 12, 20]
    step(m, [30])  # candidates 11 (step 1), 12 (step 3), 20 (step 2): 11 goes
    assert sorted(rows(m)) == [12, 20, 30]


def test_eviction_runs_every_interval_steps() -> None:
    m = model(eviction=ec.EvictionPolicy(ttl_steps=1, interval=2))
    step(m, [1])  # step 1
    step(m, [2])  # step 2 (checked): 1 unseen for 1 step, kept
    step(m, [3])  # step 3 (not checked): 1 unseen for 2 steps, still there
    assert sorted(rows(m)) == [1, 2, 3]
    step(m, [4])  # step 4 (checked): 1 and 2 expired
    assert sorted(rows(m)) == [3, 4]


def test_admission_counters_expire_with_the_ttl() -> None:
    m = model(admission=ec.Admission(threshold=2), eviction=ec.EvictionPolicy(ttl_steps=1))
    step(m, [5])  # step 1: count 1
    step(m, [6])  # step 2
    step(m, [6])  # step 3: 6 admitted; 5's counter (last step 1) expired
    assert m.table.host.pending_size == 0
    step(m, [5])  # count starts again at 1: not admitted
    assert sorted(rows(m)) == [6]


def test_explicit_evict_and_erase() -> None:
    # The policy would only run at step 100; evict() applies it now.
    m = model(eviction=ec.EvictionPolicy(ttl_steps=1, interval=100), cache_slots=4)
    step(m, [1, 2])
    step(m, [3])
    step(m, [3])
    assert sorted(rows(m)) == [1, 2, 3]
    evicted = m.table.evict()  # at step 3: 1 and 2 unseen for 2 steps
    assert sorted(evicted.tolist()) == [1, 2]
    assert m.table.host.erase(torch.tensor([3, 99])) == 1
    assert len(m.table) == 0


def test_growth_past_ten_million_ids() -> None:
    table = ec.EmbeddingTable(4, initializer=ec.Uniform(-1.0, 1.0), seed=5)
    total = 10_500_000
    batch = 1 << 20
    start = time.perf_counter()
    g = torch.Generator().manual_seed(0)
    # Distinct ids scattered over int64 (an odd multiplier is a bijection modulo 2^64).
    multiplier = 0x9E3779B97F4A7C15 - 2**64
    for lo in range(0, total, batch):
        ids = torch.arange(lo, min(lo + batch, total), dtype=torch.int64) * multiplier
        table.lookup(ids, train=True)
    elapsed = time.perf_counter() - start
    assert len(table) == total
    # Spot checks: stored rows are the ids' initial values; ids never seen are absent.
    sample = torch.randint(0, total, (1000,), generator=g) * multiplier
    assert bool(table.contains(sample).all())
    fresh = ec.EmbeddingTable(4, initializer=ec.Uniform(-1.0, 1.0), seed=5)
    assert torch.equal(table.host.read_rows(sample), fresh.host.lookup(sample))
    unseen = torch.tensor([total, total + 1]) * multiplier
    assert not bool(table.contains(unseen).any())
    raw = total * 4 * 4
    print(
        f"\n10.5M ids: {elapsed:.1f} s, host memory {table.memory_bytes / raw:.2f}x raw row bytes"
    )
