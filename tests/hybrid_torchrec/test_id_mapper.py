"""IdMapper against RefMapper (a plain dict id -> row with the documented semantics)."""

from __future__ import annotations

import contextlib
import copy
import pickle
import random

import hybrid_torchrec as hy
import pytest
import torch
from hybrid_torchrec.workload import zipf_ids

from tests.hybrid_torchrec.reference import RefCapacityError, RefMapper


def make(capacity: int, policy: str | None, protect: int = 1, name: str = "t") -> hy.IdMapper:
    eviction = None if policy is None else hy.EvictionPolicy(policy, protect_batches=protect)
    return hy.IdMapper(capacity, eviction, name=name)


def assert_same(result: hy.MapResult, ref: object) -> None:
    assert result.unique_ids.tolist() == ref.unique_ids
    assert result.rows.tolist() == ref.rows
    assert result.counts.tolist() == ref.counts
    assert result.inverse.tolist() == ref.inverse
    assert result.evicted_ids.tolist() == ref.evicted_ids
    assert result.evicted_rows.tolist() == ref.evicted_rows
    assert result.num_new == ref.num_new


def assert_same_state(mapper: hy.IdMapper, ref: RefMapper) -> None:
    state = mapper.state()
    ids, rows, counts, last_used, step = ref.state()
    assert state.ids.tolist() == ids
    assert state.rows.tolist() == rows
    assert state.counts.tolist() == counts
    assert state.last_used.tolist() == last_used
    assert state.step == step
    assert mapper.size == len(ids)


def run_stream(
    mapper: hy.IdMapper, ref: RefMapper, batches: list[list[int]], check_state: bool = True
) -> int:
    """Feeds the batches to both; returns how many failed (identically) for capacity."""
    failures = 0
    for batch in batches:
        try:
            expected = ref.map(batch)
        except RefCapacityError:
            before = mapper.state()
            with pytest.raises(hy.CapacityError):
                mapper.map(torch.tensor(batch, dtype=torch.int64))
            after = mapper.state()
            assert all(torch.equal(a, b) for a, b in zip(before[:4], after[:4], strict=True))
            assert before.step == after.step
            failures += 1
            continue
        assert_same(mapper.map(torch.tensor(batch, dtype=torch.int64)), expected)
        if check_state:
            assert_same_state(mapper, ref)
    return failures


def test_rows_follow_first_occurrence() -> None:
    m = hy.IdMapper(100)
    r = m.map(torch.tensor([10**18, -5, 10**18, 7, -5]))
    assert r.unique_ids.tolist() == [10**18, -5, 7]
    assert r.rows.tolist() == [0, 1, 2]
    assert r.counts.tolist() == [2, 2, 1]
    assert r.inverse.tolist() == [0, 1, 0, 2, 1]
    assert r.rows_per_id().tolist() == [0, 1, 0, 2, 1]
    assert r.num_new == 3
    r = m.map(torch.tensor([7, 8, -(2**63), 2**63 - 1]))
    assert r.rows.tolist() == [2, 3, 4, 5]
    assert r.num_new == 3
    assert m.size == 6 and m.step == 2


def test_negative_ids_are_ordinary_keys() -> None:
    m = hy.IdMapper(10)
    ids = torch.tensor([-1, 1, -(2**63), 0, 2**63 - 1])
    assert m.map(ids).rows.tolist() == [0, 1, 2, 3, 4]
    assert m.lookup(torch.tensor([1, -1, -2, 0])).tolist() == [1, 0, -1, 3]


def test_read_only_map_changes_nothing() -> None:
    m = hy.IdMapper(10)
    m.map(torch.tensor([5, 6]))
    before = m.state()
    r = m.map(torch.tensor([6, 9, 6, 5]), insert=False)
    assert r.rows.tolist() == [1, -1, 0]
    assert r.num_new == 0
    after = m.state()
    assert all(torch.equal(a, b) for a, b in zip(before[:4], after[:4], strict=True))
    assert m.step == 1


def test_full_table_without_policy_names_table_and_capacity() -> None:
    m = hy.IdMapper(3, name="user_id")
    m.map(torch.tensor([1, 2]))
    m.map(torch.tensor([2, 3]))
    with pytest.raises(hy.CapacityError, match=r"table 'user_id' is full: capacity 3 rows"):
        m.map(torch.tensor([1, 4]))
    assert m.size == 3 and m.step == 2
    assert m.map(torch.tensor([3, 1, 2])).num_new == 0  # known ids still map


def test_batch_larger_than_table() -> None:
    m = hy.IdMapper(4, hy.EvictionPolicy("lru"), name="item")
    with pytest.raises(hy.CapacityError, match="table 'item' holds at most 4 rows but the batch"):
        m.map(torch.arange(5))
    assert m.size == 0 and m.step == 0


def test_lru_evicts_least_recent_and_reports_rows() -> None:
    m = hy.IdMapper(3, hy.EvictionPolicy("lru"))
    m.map(torch.tensor([1, 2, 3]))
    m.map(torch.tensor([1]))
    r = m.map(torch.tensor([4, 3, 5]))  # 3 is touched first, then 2 and 1 go
    assert r.evicted_ids.tolist() == [2, 1]
    assert r.evicted_rows.tolist() == [1, 0]
    assert r.rows.tolist() == [1, 2, 0]


def test_lfu_evicts_least_frequent() -> None:
    m = hy.IdMapper(3, hy.EvictionPolicy("lfu"))
    m.map(torch.tensor([1, 2, 3]))
    m.map(torch.tensor([1, 1, 1]))  # repeats in a batch count once
    m.map(torch.tensor([2]))
    m.map(torch.tensor([1]))
    r = m.map(torch.tensor([9]))
    assert r.evicted_ids.tolist() == [3]
    r = m.map(torch.tensor([8]))  # 9 (count 1) goes before 2 (count 2)
    assert r.evicted_ids.tolist() == [9]


def test_protected_rows_are_never_evicted() -> None:
    m = hy.IdMapper(4, hy.EvictionPolicy("lru", protect_batches=2), name="p")
    m.map(torch.tensor([1, 2, 3, 4]))
    # Step 2 would protect the rows of steps 1 and 2: nothing may go.
    with pytest.raises(hy.CapacityError, match=r"may evict only 0 rows.*last 2 batches"):
        m.map(torch.tensor([5]))
    assert m.step == 1
    m.map(torch.tensor([1]))
    # Step 3 protects steps 2 and 3 (id 1); 2, 3, 4 are old enough, 2 the oldest.
    assert m.map(torch.tensor([5])).evicted_ids.tolist() == [2]
    assert m.map(torch.tensor([6, 7])).evicted_ids.tolist() == [3, 4]


@pytest.mark.parametrize("policy", [None, "lru", "lfu"])
@pytest.mark.parametrize("protect", [1, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_streams_match_reference(policy: str | None, protect: int, seed: int) -> None:
    rng = random.Random(seed)
    capacity = rng.choice([1, 5, 17, 64])
    universe = rng.choice([8, 40, 300])
    mapper = make(capacity, policy, protect)
    ref = RefMapper(capacity, policy, protect)
    batches = []
    for _ in range(60):
        size = rng.randint(0, min(2 * capacity, 40))
        batches.append([rng.randrange(-universe, universe) for _ in range(size)])
    run_stream(mapper, ref, batches)


@pytest.mark.parametrize("policy", ["lru", "lfu"])
def test_zipf_stream_with_eviction_matches_reference(policy: str) -> None:
    """Production-like: batches of 2^16 Zipf(1.05) ids over 10^8 values into a table that
    holds a fraction of the distinct ids, so every batch evicts thousands of rows."""
    g = torch.Generator().manual_seed(3)
    capacity = 60_000
    mapper = make(capacity, policy, protect=2)
    ref = RefMapper(capacity, policy, 2)
    batches = [zipf_ids(1 << 16, 10**8, 1.05, g).tolist() for _ in range(5)]
    run_stream(mapper, ref, batches, check_state=False)
    assert_same_state(mapper, ref)
    assert mapper.size == capacity


def test_remove_frees_rows_smallest_first() -> None:
    for policy in (None, "lru", "lfu"):
        mapper = make(6, policy)
        ref = RefMapper(6, policy)
        run_stream(mapper, ref, [[1, 2, 3, 4, 5]])
        assert mapper.remove(torch.tensor([4, 2, 9, 4])).tolist() == ref.remove([4, 2, 9, 4])
        assert_same_state(mapper, ref)
        run_stream(mapper, ref, [[7, 8, 9], [10, 1]])


def test_independent_of_thread_count() -> None:
    g = torch.Generator().manual_seed(11)
    batches = [zipf_ids(1 << 18, 10**8, 1.05, g) for _ in range(3)]
    before = hy.get_num_threads()
    runs = []
    try:
        for threads in (1, 2, 4):
            hy.set_num_threads(threads)
            mapper = hy.IdMapper(100_000, hy.EvictionPolicy("lfu"))
            results = [mapper.map(b) for b in batches]
            runs.append((results, mapper.state()))
    finally:
        hy.set_num_threads(before)
    base_results, base_state = runs[0]
    assert any(r.evicted_ids.numel() for r in base_results)  # eviction was exercised
    for results, state in runs[1:]:
        for a, b in zip(base_results, results, strict=True):
            for x, y in zip(a, b, strict=True):
                assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
        for x, y in zip(base_state, state, strict=True):
            assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y


@pytest.mark.parametrize("policy", [None, "lru", "lfu"])
def test_state_round_trip_continues_identically(policy: str | None) -> None:
    rng = random.Random(5)
    batches = [[rng.randrange(-60, 60) for _ in range(25)] for _ in range(40)]
    original = make(30, policy, 2)
    for batch in batches[:20]:
        with contextlib.suppress(hy.CapacityError):
            original.map(torch.tensor(batch))
    restored = make(30, policy, 2)
    restored.load_state(original.state())
    for batch in batches[20:]:
        try:
            expected = original.map(torch.tensor(batch))
        except hy.CapacityError:
            with pytest.raises(hy.CapacityError):
                restored.map(torch.tensor(batch))
            continue
        got = restored.map(torch.tensor(batch))
        for x, y in zip(expected, got, strict=True):
            assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y


def test_load_from_another_policy_orders_by_this_policy() -> None:
    lru = hy.IdMapper(4, hy.EvictionPolicy("lru"))
    for batch in ([1, 2, 3, 4], [1], [1], [2]):
        lru.map(torch.tensor(batch))
    lfu = hy.IdMapper(4, hy.EvictionPolicy("lfu"))
    lfu.load_state(lru.state())
    # Counts: 1 -> 3, 2 -> 2, 3 -> 1, 4 -> 1; LFU order: 3, 4 (same count, by last use), 2, 1.
    assert lfu.state().ids.tolist() == [3, 4, 2, 1]
    assert lfu.map(torch.tensor([5])).evicted_ids.tolist() == [3]


def test_copy_and_pickle_carry_the_mapping() -> None:
    m = hy.IdMapper(8, hy.EvictionPolicy("lru", protect_batches=2), name="c")
    m.map(torch.tensor([4, -4, 9]))
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert clone.name == "c" and clone.eviction == hy.EvictionPolicy("lru", protect_batches=2)
        assert clone.state().ids.tolist() == [4, -4, 9]
        clone.map(torch.tensor([1]))
        assert m.size == 3  # independent copies


@pytest.mark.parametrize(
    ("ids", "rows", "counts", "last_used", "step", "message"),
    [
        ([1, 2], [0, 0], [1, 1], [1, 1], 1, "row 0 is given to two ids"),
        ([1, 1], [0, 1], [1, 1], [1, 1], 1, "id 1 appears twice"),
        ([1], [5], [1], [1], 1, r"row 5 of id 1 is outside \[0, 4\)"),
        ([1], [0], [0], [1], 1, "count of id 1"),
        ([1], [0], [1], [2], 1, "last_used of id 1"),
        ([1, 2, 3, 4, 5], [0, 1, 2, 3, 4], [1] * 5, [1] * 5, 1, "do not fit the capacity"),
        ([1], [0, 1], [1], [1], 1, "differ in length"),
    ],
)
def test_load_validates_and_changes_nothing(
    ids: list[int],
    rows: list[int],
    counts: list[int],
    last_used: list[int],
    step: int,
    message: str,
) -> None:
    m = hy.IdMapper(4, hy.EvictionPolicy("lru"), name="v")
    m.map(torch.tensor([7, 8]))
    before = m.state()
    bad = hy.MappingState(
        torch.tensor(ids), torch.tensor(rows), torch.tensor(counts), torch.tensor(last_used), step
    )
    with pytest.raises(ValueError, match=message):
        m.load_state(bad)
    after = m.state()
    assert all(torch.equal(a, b) for a, b in zip(before[:4], after[:4], strict=True))


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="capacity"):
        hy.IdMapper(0)
    with pytest.raises(ValueError, match="capacity"):
        hy.IdMapper(2**31)
    with pytest.raises(ValueError, match="protect_batches"):
        hy.EvictionPolicy("lru", protect_batches=0)
    with pytest.raises(TypeError, match="eviction"):
        hy.IdMapper(4, "lru")  # type: ignore[arg-type]


def test_map_tables_maps_each_table() -> None:
    g = torch.Generator().manual_seed(2)
    batches = [zipf_ids(5000, 10**6, 1.05, g) for _ in range(4)]
    together = [hy.IdMapper(20_000, name=f"t{i}") for i in range(4)]
    alone = [hy.IdMapper(20_000, name=f"t{i}") for i in range(4)]
    for _ in range(2):
        results = hy.map_tables(together, batches)
        for mapper, batch, result in zip(alone, batches, results, strict=True):
            expected = mapper.map(batch)
            for x, y in zip(expected, result, strict=True):
                assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
    with pytest.raises(ValueError, match="same mapper"):
        hy.map_tables([together[0], together[0]], batches[:2])
