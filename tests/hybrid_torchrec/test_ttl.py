"""EvictionPolicy(ttl_steps=...) in hybrid_torchrec: ids unseen for more than ttl_steps training
batches give up their rows, by the shared eviction order, against a hand-worked schedule and
against RefMapper; the schedule survives a state round trip (what checkpoints hold)."""

from __future__ import annotations

import random

import hybrid_torchrec as hy
import pytest
import torch

from tests.hybrid_torchrec.reference import RefMapper
from tests.hybrid_torchrec.test_id_mapper import run_stream

# ttl_steps=2: an id last seen at step s and not again is gone at step s + 3. Per step: the
# batch, the ids that expire (by row), their rows, and the rows of the batch's distinct ids
# (new ids take freed rows smallest first).
SCHEDULE = [
    ([1, 2, 3], [], [], [0, 1, 2]),
    ([1], [], [], [0]),
    ([2], [], [], [1]),  # 3 was seen at 1: 3 - 1 = 2 is not more than 2
    ([4], [3], [2], [2]),  # 4 - 1 = 3: 3 expires, and 4 takes its row
    ([], [1], [0], []),  # an empty batch is a step too: 1 (seen at 2) expires
    ([5, 2], [], [], [0, 1]),  # 2 (seen at 3) is in the batch: seen now, kept
    ([6], [4], [2], [2]),
]


def ttl_mapper(order: str, capacity: int = 8, protect: int = 1) -> hy.IdMapper:
    return hy.IdMapper(
        capacity, hy.EvictionPolicy(order, ttl_steps=2, protect_batches=protect), name="t"
    )


def step(m: hy.IdMapper, ids: list[int]) -> hy.MapResult:
    return m.map(torch.tensor(ids, dtype=torch.int64))


@pytest.mark.parametrize("order", ["lru", "lfu"])
def test_hand_worked_schedule(order: str) -> None:
    m = ttl_mapper(order)
    for t, (batch, gone, gone_rows, rows) in enumerate(SCHEDULE, start=1):
        r = step(m, batch)
        assert (r.evicted_ids.tolist(), r.evicted_rows.tolist()) == (gone, gone_rows), t
        assert r.rows.tolist() == rows, t
        # An evaluation lookup is no step and expires nothing.
        m.map(torch.tensor([1, 2, 3, 4, 5, 6]), insert=False)
        assert m.step == t
    assert sorted(m.state().ids.tolist()) == [2, 5, 6]
    assert m.size == 3


@pytest.mark.parametrize("order", ["lru", "lfu"])
def test_schedule_resumes_from_state(order: str) -> None:
    """What a checkpoint holds (per id its last step, and the step) continues the schedule."""
    m = ttl_mapper(order)
    for batch, *_ in SCHEDULE[:4]:
        step(m, batch)
    resumed = ttl_mapper(order)
    resumed.load_state(m.state())
    for t, (batch, gone, gone_rows, rows) in enumerate(SCHEDULE[4:], start=5):
        r = step(resumed, batch)
        assert (r.evicted_ids.tolist(), r.evicted_rows.tolist()) == (gone, gone_rows), t
        assert r.rows.tolist() == rows, t


def test_full_table_takes_expired_rows_before_victims() -> None:
    m = ttl_mapper("lru", capacity=3)
    step(m, [1, 2, 3])
    step(m, [2, 3])
    step(m, [3, 2])
    # Step 4: 1 (seen at 1) has expired; without the TTL, LRU would also give up only 1.
    r = step(m, [2, 4])
    assert r.evicted_ids.tolist() == [1]
    # Step 5: the table is full and nothing expired: LRU's victim is 3 (2 was seen at 4).
    r = step(m, [5])
    assert r.evicted_ids.tolist() == [3]


@pytest.mark.parametrize("order", ["lru", "lfu"])
@pytest.mark.parametrize("ttl, protect", [(1, 1), (1, 2), (3, 2), (5, 1)])
@pytest.mark.parametrize("seed", [0, 1])
def test_random_streams_match_reference(order: str, ttl: int, protect: int, seed: int) -> None:
    rng = random.Random(seed)
    capacity = rng.choice([5, 17, 64])
    universe = rng.choice([8, 40, 300])
    mapper = hy.IdMapper(
        capacity, hy.EvictionPolicy(order, ttl_steps=ttl, protect_batches=protect), name="r"
    )
    ref = RefMapper(capacity, order, protect, ttl_steps=ttl)
    batches = [
        [rng.randrange(-universe, universe) for _ in range(rng.randint(0, min(2 * capacity, 40)))]
        for _ in range(60)
    ]
    run_stream(mapper, ref, batches)


def test_refused_combinations_are_named() -> None:
    with pytest.raises(ValueError, match=r"ttl_steps=1, protect_batches=3.*at least"):
        hy.IdMapper(8, hy.EvictionPolicy("lru", ttl_steps=1, protect_batches=3))
    with pytest.raises(ValueError, match=r"does not implement EvictionPolicy\(capacity=\.\.\.\)"):
        hy.IdMapper(8, hy.EvictionPolicy("lru", ttl_steps=4, capacity=4))
    with pytest.raises(ValueError, match=r"does not implement EvictionPolicy\(interval=\.\.\.\)"):
        hy.IdMapper(8, hy.EvictionPolicy("lfu", ttl_steps=4, interval=2))
    # Protection up to ttl_steps + 1 batches is allowed: an expired row is never protected.
    assert hy.IdMapper(8, hy.EvictionPolicy("lru", ttl_steps=2, protect_batches=3)).size == 0
