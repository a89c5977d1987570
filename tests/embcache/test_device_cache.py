"""The device cache: swap plans, and exactness against the uncached table.

A cache smaller than the working set must not change any result: rows and optimiser state
leave and re-enter the cache bit for bit, so cached training equals uncached training
exactly (torch.equal), with admission and eviction in play as well.
"""

from __future__ import annotations

import threading

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids, sparse_optimizer
from hypothesis import given, settings
from hypothesis import strategies as st
from torchrec_embcache import _C

DIM = 8


def bag_batches(pool: torch.Tensor, steps: int, seed: int, bags: int = 12, max_len: int = 4):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        lengths = torch.randint(0, max_len + 1, (bags,), generator=g)
        ids = pool[torch.randint(0, pool.numel(), (int(lengths.sum()),), generator=g)]
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
        out.append((ids, offsets, torch.randn(bags, DIM, generator=g)))
    return out


def train(model: ec.DynamicEmbeddingBag, data, prefetch: bool = False) -> list[torch.Tensor]:
    outputs = []
    if prefetch:
        model.prefetch(data[0][0])
    for i, (ids, offsets, target) in enumerate(data):
        if prefetch and i + 1 < len(data):
            model.prefetch(data[i + 1][0])  # planned while this step runs
        out = model(ids, offsets)
        ((out - target) ** 2).sum().backward()
        outputs.append(out.detach())
    return outputs


def assert_same_tables(a: ec.EmbeddingTable, b: ec.EmbeddingTable) -> None:
    ea, eb = a.export(), b.export()
    for key in ("ids", "weight", "optimizer_state", "last_seen", "count"):
        assert torch.equal(ea[key], eb[key]), key
    assert a.step == b.step
    assert int(a.host.optimizer_step) == int(b.host.optimizer_step)


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
@pytest.mark.parametrize("prefetch", [False, True])
def test_cache_smaller_than_working_set_changes_nothing(kind: str, prefetch: bool) -> None:
    pool = random_ids(150, seed=4)
    data = bag_batches(pool, steps=20, seed=5)
    plain = ec.DynamicEmbeddingBag(
        DIM, mode="sum", optimizer=sparse_optimizer(kind, 0.1, adam_lr=0.01), seed=1
    )
    cached = ec.DynamicEmbeddingBag(
        DIM, mode="sum", optimizer=sparse_optimizer(kind, 0.1, adam_lr=0.01), seed=1, cache_slots=48
    )
    out_plain = train(plain, data)
    out_cached = train(cached, data, prefetch=prefetch)
    for a, b in zip(out_plain, out_cached, strict=True):
        assert torch.equal(a, b)
    # The working set (all ids seen) is far larger than the cache: rows did leave and return.
    assert len(plain.table) > 2 * 48
    assert_same_tables(plain.table, cached.table)


def test_cache_with_admission_and_eviction_changes_nothing() -> None:
    pool = random_ids(120, seed=14)
    data = bag_batches(pool, steps=25, seed=15)
    kwargs = dict(
        mode="mean",
        optimizer=ec.SparseAdagrad(lr=0.1),
        seed=2,
        admission=ec.Admission(threshold=2, default_value=0.25),
        eviction=ec.EvictionPolicy(ttl_steps=6, capacity=70),
    )
    plain = ec.DynamicEmbeddingBag(DIM, **kwargs)
    cached = ec.DynamicEmbeddingBag(DIM, cache_slots=40, **kwargs)
    for a, b in zip(train(plain, data), train(cached, data, prefetch=True), strict=True):
        assert torch.equal(a, b)
    assert 0 < len(plain.table) <= 70
    assert_same_tables(plain.table, cached.table)
    assert torch.equal(plain.table.host.dump_pending()[0], cached.table.host.dump_pending()[0])


def test_swap_plan_follows_lru_by_hand() -> None:
    # Three slots, no admission. Hand-worked:
    #  batch [10, 20] -> 10 and 20 come in (slots 0, 1), nothing goes out;
    #  batch [30]     -> 30 takes the free slot 2;
    #  batch [40, 10] -> 10 is resident (slot 0); the least recently used of the other
    #                    slots is 20's (slot 1, last used two batches ago): 20 goes out
    #                    (it is dirty), 40 comes into slot 1.
    table = ec.EmbeddingTable(DIM, initializer=ec.Constant(1.0))
    planner = _C.CachePlanner(table.host, 3)

    def run(ids: list[int]):
        plan = planner.submit(torch.tensor(ids)).wait()
        planner.written_back(plan.seq)
        return plan

    p1 = run([10, 20])
    assert p1.in_ids.tolist() == [10, 20] and p1.in_slots.tolist() == [0, 1]
    assert p1.out_ids.numel() == 0
    assert torch.equal(p1.in_rows, torch.ones(2, DIM))  # Constant(1) rows, SGD: no state
    p2 = run([30])
    assert p2.in_ids.tolist() == [30] and p2.in_slots.tolist() == [2]
    p3 = run([40, 10])
    assert p3.unique_ids.tolist() == [10, 40]
    assert p3.unique_slots.tolist() == [0, 1]
    assert p3.out_ids.tolist() == [20] and p3.out_slots.tolist() == [1]
    assert p3.in_ids.tolist() == [40] and p3.in_slots.tolist() == [1]
    assert planner.slots_of(torch.tensor([10, 20, 30, 40])).tolist() == [0, -1, 2, 1]


def test_plans_must_be_executed_in_order() -> None:
    table = ec.EmbeddingTable(DIM)
    planner = _C.CachePlanner(table.host, 4)
    first = planner.submit(torch.tensor([1]))
    second = planner.submit(torch.tensor([2]))
    p1 = first.wait()
    with pytest.raises(ec.CacheStateError, match="in order"):
        planner.written_back(p1.seq + 1)
    planner.written_back(p1.seq)
    planner.written_back(second.wait().seq)
    assert planner.outstanding == 0


def test_batch_larger_than_cache_is_refused_before_anything_changes() -> None:
    model = ec.DynamicEmbedding(DIM, cache_slots=4)
    with pytest.raises(ec.CacheCapacityError, match="5 distinct"):
        model(torch.tensor([1, 2, 3, 4, 5]))
    assert len(model.table) == 0 and model.table.step == 0
    out = model(torch.tensor([1, 2, 1, 3]))  # the cache still works afterwards
    assert out.shape == (4, DIM)


def test_late_backward_after_its_rows_left_the_cache_is_refused() -> None:
    model = ec.DynamicEmbedding(DIM, cache_slots=2)
    first = model(torch.tensor([1, 2]))
    second = model(torch.tensor([3, 4]))  # replaces both rows of the first batch
    second.sum().backward()
    with pytest.raises(ec.CacheStateError, match="replaced its rows"):
        first.sum().backward()


def test_evaluation_reads_cache_and_host_alike() -> None:
    pool = random_ids(60, seed=8)
    data = bag_batches(pool, steps=10, seed=9)
    plain = ec.DynamicEmbeddingBag(DIM, mode="sum", optimizer=ec.SparseAdam(lr=0.05), seed=3)
    cached = ec.DynamicEmbeddingBag(
        DIM, mode="sum", optimizer=ec.SparseAdam(lr=0.05), seed=3, cache_slots=30
    )
    train(plain, data)
    train(cached, data)
    plain.eval()
    cached.eval()
    probe = torch.cat([pool, torch.tensor([123456789])])  # includes an id never trained
    offsets = torch.arange(0, probe.numel(), 3)
    assert torch.equal(plain(probe, offsets), cached(probe, offsets))
    # Prefetched training batches must run before an evaluation lookup.
    cached.train()
    cached.prefetch(pool[:5])
    cached.eval()
    with pytest.raises(ec.CacheStateError, match="prefetched"):
        cached(probe, offsets)


def test_prefetch_must_match_the_batch() -> None:
    model = ec.DynamicEmbedding(DIM, cache_slots=8)
    model.prefetch(torch.tensor([1, 2]))
    with pytest.raises(ec.CacheStateError, match="differs from the batch prefetched"):
        model(torch.tensor([1, 3]))


def test_meta_round_trip_keeps_rows() -> None:
    model = ec.DynamicEmbedding(DIM, cache_slots=6, optimizer=ec.SparseSGD(lr=0.5))
    ids = torch.tensor([5, 6, 7])
    model(ids).sum().backward()
    model.eval()
    before = model(ids)
    model.to("meta")
    assert model(ids).device.type == "meta"
    model.to_empty(device="cpu")
    # Rows were written back before the cache was released; they come back from the host.
    assert torch.equal(model(ids), before)


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
def test_device_update_path_matches_the_fused_kernel(kind: str) -> None:
    """Devices other than the CPU update cache rows with torch operations; on the CPU that
    path must agree with the fused C++ kernel (SGD exactly, the others to rounding)."""
    pool = random_ids(120, seed=41)
    data = bag_batches(pool, steps=15, seed=42)
    fused = ec.DynamicEmbeddingBag(
        DIM, mode="sum", optimizer=sparse_optimizer(kind, 0.1, adam_lr=0.01), cache_slots=40
    )
    torch_ops = ec.DynamicEmbeddingBag(
        DIM, mode="sum", optimizer=sparse_optimizer(kind, 0.1, adam_lr=0.01), cache_slots=40
    )
    torch_ops.table._torch_update = True
    train(fused, data)
    train(torch_ops, data)
    a, b = fused.table.export(), torch_ops.table.export()
    assert torch.equal(a["ids"], b["ids"])
    for key in ("weight", "optimizer_state"):
        if kind == "sgd":
            assert torch.equal(a[key], b[key])
        else:
            torch.testing.assert_close(a[key], b[key], rtol=1e-5, atol=1e-6)
    assert int(fused.table.host.optimizer_step) == int(torch_ops.table.host.optimizer_step) == 15


@pytest.mark.parametrize("cache_slots", [None, 64])
def test_concurrent_evaluation_lookups_from_threads(cache_slots: int | None) -> None:
    pool = random_ids(200, seed=31)
    model = ec.DynamicEmbeddingBag(DIM, mode="sum", seed=2, cache_slots=cache_slots)
    train(model, bag_batches(pool, steps=8, seed=32))
    model.eval()
    queries = bag_batches(pool, steps=40, seed=33)
    expected = [model(ids, offsets) for ids, offsets, _ in queries]
    results: dict[int, list[torch.Tensor]] = {}

    def worker(k: int) -> None:
        results[k] = [model(ids, offsets) for ids, offsets, _ in queries]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0, 1, 2, 3]
    for outs in results.values():
        assert all(torch.equal(a, b) for a, b in zip(outs, expected, strict=True))


@pytest.mark.requires_npu
def test_cached_training_on_npu_matches_the_cpu() -> None:
    pool = random_ids(100, seed=21)
    data = bag_batches(pool, steps=10, seed=22)
    cpu = ec.DynamicEmbeddingBag(DIM, mode="sum", optimizer=ec.SparseAdagrad(lr=0.1), seed=5)
    npu = ec.DynamicEmbeddingBag(
        DIM, mode="sum", optimizer=ec.SparseAdagrad(lr=0.1), seed=5, cache_slots=40, device="npu"
    )
    train(cpu, data)
    for ids, offsets, target in data:
        out = npu(ids.to("npu"), offsets.to("npu"))
        assert out.device.type == "npu"
        ((out - target.to("npu")) ** 2).sum().backward()
    a, b = cpu.table.export(), npu.table.export()
    assert torch.equal(a["ids"], b["ids"])
    torch.testing.assert_close(a["weight"], b["weight"], rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    kind=st.sampled_from(["sgd", "adagrad", "adam"]),
    threshold=st.integers(1, 3),
    ttl=st.one_of(st.none(), st.integers(1, 4)),
    capacity=st.one_of(st.none(), st.integers(5, 30)),
    prefetch=st.booleans(),
)
def test_cached_equals_uncached_for_random_workloads(
    data: st.DataObject,
    kind: str,
    threshold: int,
    ttl: int | None,
    capacity: int | None,
    prefetch: bool,
) -> None:
    pool = torch.tensor(
        data.draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=40, unique=True))
    )
    steps = data.draw(st.integers(1, 8))
    batches = []
    for _ in range(steps):
        picks = data.draw(st.lists(st.integers(0, pool.numel() - 1), max_size=12))
        ids = pool[torch.tensor(picks, dtype=torch.int64)]
        bounds = sorted(data.draw(st.lists(st.integers(0, ids.numel()), max_size=3)))
        offsets = torch.tensor([0, *bounds], dtype=torch.int64)
        target = torch.randn(
            offsets.numel(), DIM, generator=torch.Generator().manual_seed(len(batches))
        )
        batches.append((ids, offsets, target))
    eviction = ec.EvictionPolicy(ttl_steps=ttl, capacity=capacity) if (ttl or capacity) else None
    admission = ec.Admission(threshold=threshold, default_value=0.5) if threshold > 1 else None
    kwargs = dict(
        mode="sum",
        optimizer=sparse_optimizer(kind, 0.1, adam_lr=0.01),
        admission=admission,
        eviction=eviction,
    )
    plain = ec.DynamicEmbeddingBag(DIM, **kwargs)
    # Big enough for a batch (12 ids) plus the admission default slot, small enough to swap.
    cached = ec.DynamicEmbeddingBag(DIM, cache_slots=13, **kwargs)
    for a, b in zip(train(plain, batches), train(cached, batches, prefetch=prefetch), strict=True):
        assert torch.equal(a, b)
    assert_same_tables(plain.table, cached.table)
