"""The cache-sizing helper against a brute-force LRU simulation, a hand-worked sample and
the real device cache's counters."""

from __future__ import annotations

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import lru_counts, random_ids


def test_hand_worked_sample() -> None:
    # Batches [1, 2], [3], [1, 3]: recency before the third batch is 3 > 2 > 1, so 3 is at
    # distance 0 and 1 at distance 2: with 2 slots one hit (3), with 3 slots two.
    sample = [{"f": torch.tensor([1, 2, 2])}, {"f": torch.tensor([3])}, {"f": torch.tensor([3, 1])}]
    s = ec.cache_sizing(sample)["f"]
    assert (s.working_set, s.min_slots, s.lookups) == (3, 2, 5)
    assert s.distances.tolist() == [0, 2]
    assert s.hit_rate(2) == pytest.approx(1 / 5)
    assert s.hit_rate(3) == pytest.approx(2 / 5)
    assert s.slots_for(0.4) == 3 and s.slots_for(0.1) == 2
    with pytest.raises(ValueError, match="one batch has 2 distinct ids"):
        s.hit_rate(1)
    with pytest.raises(ValueError, match="no cache size reaches"):
        s.slots_for(0.5)


def zipf_sample(
    tables: int, steps: int, n: int, pool: int, seed: int
) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    p = torch.arange(1, pool + 1, dtype=torch.float64).pow(-1.05)
    ids = random_ids(pool, seed=seed)
    return [
        {
            f"f{t}": ids[torch.multinomial(p, n, replacement=True, generator=g)]
            for t in range(tables)
        }
        for _ in range(steps)
    ]


def test_hit_rates_equal_a_brute_force_lru_at_every_size() -> None:
    sample = zipf_sample(tables=3, steps=8, n=1500, pool=3000, seed=3)
    sizing = ec.cache_sizing(sample)
    for name, s in sizing.items():
        batches = [b[name] for b in sample]
        assert s.working_set == torch.unique(torch.cat(batches)).numel()
        assert s.min_slots == max(torch.unique(b).numel() for b in batches)
        for slots in (s.min_slots, s.min_slots + 97, 1000, s.working_set):
            if slots < s.min_slots:
                continue
            lookups, hits = lru_counts(batches, slots)
            assert s.lookups == lookups
            assert s.hits(slots) == hits, (name, slots)


def test_shared_features_form_one_table_and_match_the_real_cache() -> None:
    # Two features of one table: their ids are looked up together, as the collections do.
    sample = zipf_sample(tables=2, steps=6, n=2048, pool=4000, seed=5)
    sizing = ec.cache_sizing(sample, features_of={"t": ["f0", "f1"]})
    s = sizing["t"]
    slots = max(s.min_slots, s.working_set // 2)
    model = ec.DynamicEmbeddingBag(64, mode="sum", cache_slots=slots)
    for batch in sample:
        ids = torch.cat([batch["f0"], batch["f1"]])
        model(ids.view(-1, 4)).sum().backward()
    counted = ec.counters.snapshot(model.table)
    assert counted.cache_lookups == s.lookups
    assert counted.cache_hits == s.hits(slots)
    assert counted.cache_hit_rate == pytest.approx(s.hit_rate(slots))


def test_features_of_a_collection() -> None:
    pytest.importorskip("torchrec")
    from torchrec import EmbeddingBagConfig
    from torchrec_embcache import EmbCacheEmbeddingBagCollection

    ebc = EmbCacheEmbeddingBagCollection(
        [
            EmbeddingBagConfig(
                name="t0", embedding_dim=8, num_embeddings=10, feature_names=["a", "b"]
            ),
            EmbeddingBagConfig(name="t1", embedding_dim=8, num_embeddings=10, feature_names=["c"]),
        ]
    )
    assert ec.collection_features(ebc) == {"t0": ["a", "b"], "t1": ["c"]}
    with pytest.raises(KeyError, match="features \\['c'\\]"):
        ec.cache_sizing(
            [{"a": torch.tensor([1]), "b": torch.tensor([2])}], ec.collection_features(ebc)
        )
