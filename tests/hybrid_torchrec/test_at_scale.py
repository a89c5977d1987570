"""Production-like sizes: 26 tables of 64 and 128 dims, batches of 4096 samples, Zipf(1.05)
ids with repeats over 10^8 values, three SGD steps; some tables small enough to evict every
batch. Compared with the plain reference (dict mappings, F.embedding_bag in float64)."""

from __future__ import annotations

import time

import hybrid_torchrec as hy
import torch
from hybrid_torchrec.workload import zipf_ids
from torchrec.modules.embedding_configs import PoolingType
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from tests.hybrid_torchrec.reference import RefCollection, close, constant_init, sgd_step_both

TABLES = 26
BATCH = 4096
STEPS = 3


def configs() -> list[hy.HashEmbeddingBagConfig]:
    out = []
    for t in range(TABLES):
        evicting = t % 6 == 5
        out.append(
            hy.HashEmbeddingBagConfig(
                name=f"t{t}",
                embedding_dim=64 if t % 2 == 0 else 128,
                num_embeddings=3072 if evicting else 16384,
                feature_names=[f"f{t}"],
                pooling=PoolingType.MEAN if t % 3 == 2 else PoolingType.SUM,
                init_fn=constant_init if evicting else None,
                eviction=(hy.EvictionPolicy("lru") if t % 4 == 1 else hy.EvictionPolicy("lfu"))
                if evicting
                else None,
            )
        )
    return out


def batch(g: torch.Generator) -> KeyedJaggedTensor:
    lengths = torch.randint(0, 3, (TABLES * BATCH,), generator=g)
    values = zipf_ids(int(lengths.sum()), 10**8, 1.05, g)
    return KeyedJaggedTensor.from_lengths_sync([f"f{t}" for t in range(TABLES)], values, lengths)


def test_training_at_scale_matches_reference() -> None:
    tables = configs()
    ebc = hy.HashEmbeddingBagCollection(tables)
    policies = {c.name: c.eviction.name for c in tables if c.eviction is not None}
    ref = RefCollection(ebc, policies)
    opt = torch.optim.SGD(ebc.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(2024)
    mapping_seconds = 0.0
    for _ in range(STEPS):
        kjt = batch(g)
        # Repeats within bags and across the batch are the norm with Zipf ids.
        assert hy.unique(kjt.values()).values.numel() < 0.9 * kjt.values().numel()
        start = time.perf_counter()
        out = ebc(kjt).values()
        mapping_seconds += time.perf_counter() - start
        expected = ref.pooled(kjt, False, train=True)
        close(out, expected)
        sgd_step_both(out, expected, opt, ref, 0.05, g)
    for name, w in ebc.table_weights().items():
        close(w, ref.weights[name])
        ids, rows, counts, last_used, step = ref.mappers[name].state()
        state = ebc.mappers()[name].state()
        assert state.step == step == STEPS
        assert state.ids.tolist() == ids and state.rows.tolist() == rows
        assert state.counts.tolist() == counts and state.last_used.tolist() == last_used
    evicting = [c.name for c in tables if c.eviction is not None]
    assert all(ebc.mappers()[name].size == 3072 for name in evicting)
    print(f"forward (mapping + pooling) of {STEPS} batches: {mapping_seconds:.2f} s")
