"""One eviction order in both packages: the same access sequence gives up the same ids in
hybrid_torchrec's IdMapper and torchrec_embcache's host table, and both agree with a plain
Python reference written from the documented rules (LRU, LFU, TTL); the old spellings
(``hybrid_torchrec.LRU/LFU``, ``torchrec_embcache.Eviction``) still work and warn.

The sequences keep to what both packages define alike: each id at most once per batch (hybrid
counts batches, embcache sightings), a batch's ids in ascending order with its new ids above
the ids already seen (hybrid ranks one batch's ids by first occurrence, existing before new;
embcache by id).
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torchrec_embcache as ec

from tests.extpackage import ExtensionUnderTest

DIM = 2
CAPACITY = 12


@pytest.fixture(scope="module")
def hy() -> Iterator[object]:
    """hybrid_torchrec, the build its own tests would use (built in place if need be)."""
    ExtensionUnderTest("hybrid_torchrec", "HYBRID_TEST_BUILD").select()
    import hybrid_torchrec

    yield hybrid_torchrec


class Reference:
    """The documented rules in plain Python. Capacity: the table keeps `capacity` rows, the
    ids of the current batch are kept, the rest go by (last batch seen) for LRU, by (batches
    seen, last batch seen) for LFU, then by id. TTL: ids unseen for more than `ttl` batches."""

    def __init__(self, order: str = "lfu", capacity: int = 0, ttl: int = 0) -> None:
        self.order, self.capacity, self.ttl = order, capacity, ttl
        self.count: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.t = 0

    def rank(self, x: int) -> tuple[int, ...]:
        if self.order == "lru":
            return (self.last[x], x)
        return (self.count[x], self.last[x], x)

    def step(self, batch: list[int]) -> list[int]:
        self.t += 1
        for x in batch:
            self.count[x] = self.count.get(x, 0) + 1
            self.last[x] = self.t
        gone = [x for x in self.last if self.ttl and self.t - self.last[x] > self.ttl]
        excess = len(self.count) - len(gone) - self.capacity
        if self.capacity and excess > 0:
            rest = [x for x in self.count if self.last[x] != self.t and x not in gone]
            more = sorted(rest, key=self.rank)[:excess]
            assert len(more) == excess, "the sequence must leave enough rows evictable"
            gone += more
        for x in gone:
            del self.count[x], self.last[x]
        return sorted(gone)


def run(ref: Reference, seed: int, steps: int = 40) -> tuple[list[list[int]], list[list[int]]]:
    """A sequence of batches and what `ref` evicts at each. A batch reuses ids that still have
    a row (an evicted id never comes back: it would be a new id below old ones) and adds fresh
    ids above every id so far; its ids are distinct and ascending."""
    rng = random.Random(seed)
    fresh = 1000
    seq, evicted = [], []
    for _ in range(steps):
        live = sorted(ref.last)
        old = set(rng.sample(live, min(len(live), rng.randint(0, 4))))
        # Skewed reuse so that counts differ (LFU) and recency differs from frequency.
        old |= {x for x in live[:3] if rng.random() < 0.6}
        new = list(range(fresh, fresh + rng.randint(0, 3)))
        fresh += len(new)
        batch = sorted(old) + new
        seq.append(batch)
        evicted.append(ref.step(batch))
    return seq, evicted


def embcache_evictions(policy: ec.EvictionPolicy, seq: list[list[int]], tmp: Path | None = None):
    table = ec.EmbeddingTable(DIM, eviction=policy)
    out = []
    for t, batch in enumerate(seq):
        if tmp is not None and t == len(seq) // 2:
            # Half way through: save and load into a new table, whose orders are rebuilt.
            table.save(tmp / "half.ckpt")
            table = ec.EmbeddingTable(DIM, eviction=policy)
            table.load([tmp / "half.ckpt"])
        evicted = table.host.prepare(torch.tensor(batch, dtype=torch.int64), True, False, -1)[4]
        out.append(sorted(evicted.tolist()))
    return out


def hybrid_evictions(hy, policy, seq: list[list[int]]) -> list[list[int]]:
    mapper = hy.IdMapper(CAPACITY, policy)
    return [
        sorted(mapper.map(torch.tensor(b, dtype=torch.int64)).evicted_ids.tolist()) for b in seq
    ]


@pytest.mark.parametrize("order", ["lru", "lfu"])
@pytest.mark.parametrize("seed", [0, 1])
def test_same_sequence_same_victims(hy, order: str, seed: int, tmp_path: Path) -> None:
    seq, expected = run(Reference(order, capacity=CAPACITY), seed)
    assert sum(map(len, expected)) > 20  # the sequence does evict
    assert hybrid_evictions(hy, hy.EvictionPolicy(order), seq) == expected
    policy = ec.EvictionPolicy(order, capacity=CAPACITY)
    assert embcache_evictions(policy, seq) == expected
    assert embcache_evictions(policy, seq, tmp_path) == expected


def test_lru_and_lfu_differ_on_the_sequence() -> None:
    # Else the two parametrisations above would test one order twice.
    seq, lru = run(Reference("lru", capacity=CAPACITY), 0)
    lfu = Reference("lfu", capacity=CAPACITY)
    assert lru != [lfu.step(b) for b in seq]


def test_hand_worked_lfu_and_lru() -> None:
    # Capacity 3. Step 1: 1 2 3. Step 2: 1 4 -> 4 rows; candidates 2, 3 (count 1, step 1):
    # both orders give up 2 (smaller id). Step 3: 1 5 -> candidates 3 (count 1, step 1) and
    # 4 (count 1, step 2): both give up 3. Step 4: 4 6 -> candidates 1 (count 3, step 3),
    # 5 (count 1, step 3): LFU gives up 5, LRU gives up 1 (seen at step 3, id 1 < 5).
    seq = [[1, 2, 3], [1, 4], [1, 5], [4, 6]]
    lfu, lru = Reference("lfu", capacity=3), Reference("lru", capacity=3)
    assert [lfu.step(b) for b in seq] == [[], [2], [3], [5]]
    assert [lru.step(b) for b in seq] == [[], [2], [3], [1]]
    for order, last in (("lfu", 5), ("lru", 1)):
        got = embcache_evictions(ec.EvictionPolicy(order, capacity=3), seq)
        assert got == [[], [2], [3], [last]]


def test_ttl_against_reference(tmp_path: Path) -> None:
    seq, expected = run(Reference(ttl=3), 2)
    assert sum(map(len, expected)) > 20
    assert embcache_evictions(ec.EvictionPolicy(ttl_steps=3), seq) == expected
    assert embcache_evictions(ec.EvictionPolicy(ttl_steps=3), seq, tmp_path) == expected


def test_each_package_refuses_what_it_does_not_implement(hy) -> None:
    with pytest.raises(ValueError, match=r"hybrid_torchrec .*interval"):
        hy.IdMapper(4, hy.EvictionPolicy("lru", ttl_steps=3, interval=2))
    with pytest.raises(ValueError, match=r"hybrid_torchrec.*ttl_steps must be at least"):
        hy.IdMapper(4, hy.EvictionPolicy("lru", ttl_steps=1, protect_batches=3))
    with pytest.raises(ValueError, match=r"hybrid_torchrec .*capacity"):
        hy.IdMapper(4, hy.EvictionPolicy("lfu", capacity=3))
    with pytest.raises(ValueError, match=r"torchrec_embcache .*protect_batches"):
        ec.EmbeddingTable(DIM, eviction=ec.EvictionPolicy(capacity=3, protect_batches=2))
    with pytest.raises(ValueError, match="order must be"):
        ec.EvictionPolicy("fifo")  # type: ignore[arg-type]
    assert hy.EvictionPolicy is ec.EvictionPolicy or (
        # Each wheel carries its own copy of the shared module: one definition, two classes.
        hy.EvictionPolicy.__module__.endswith("_shared.eviction")
        and ec.EvictionPolicy.__module__.endswith("_shared.eviction")
    )


def test_deprecated_spellings_warn_and_behave_alike(hy) -> None:
    seq, expected = run(Reference("lfu", capacity=CAPACITY), 3)
    with pytest.warns(DeprecationWarning, match=r'EvictionPolicy\("lru", protect_batches=2\)'):
        old = hy.LRU(protect_batches=2)
    assert isinstance(old, hy.EvictionPolicy) and (old.order, old.protect_batches) == ("lru", 2)
    # Pickles of the old LRU (a dataclass with protect_batches only) still load as LRU.
    restored = hy.LRU.__new__(hy.LRU)
    restored.__setstate__({"protect_batches": 3})
    assert (restored.order, restored.protect_batches) == ("lru", 3)
    assert pickle.loads(pickle.dumps(old)) == old
    with pytest.warns(DeprecationWarning, match=r'EvictionPolicy\("lfu", protect_batches=1\)'):
        old_lfu = hy.LFU()
    assert hybrid_evictions(hy, old_lfu, seq) == hybrid_evictions(hy, hy.EvictionPolicy("lfu"), seq)
    with pytest.warns(
        DeprecationWarning, match=r'EvictionPolicy\("lfu", ttl_steps=None, capacity=12'
    ):
        old_ec = ec.Eviction(capacity=CAPACITY)
    assert embcache_evictions(old_ec, seq) == expected
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="ttl_steps, capacity"):
        ec.Eviction()
