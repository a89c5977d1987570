"""HostTable.lookup into a caller's buffer (the benchmark's fair comparison)."""

from __future__ import annotations

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n", [37, 20000])  # 20000 x 128 floats: several parallel chunks
def test_lookup_into_a_reused_buffer_equals_index_select(dtype: torch.dtype, n: int) -> None:
    dim = 128
    table = ec.EmbeddingTable(dim, initializer=ec.Uniform(-1, 1), seed=3, row_dtype=dtype)
    pool = random_ids(3000, seed=4)
    table.lookup(pool[:2500], train=True)  # the last 500 ids have no row
    g = torch.Generator().manual_seed(5)
    p = torch.arange(1, 3001, dtype=torch.float64).pow(-1.05)
    ids = pool[torch.multinomial(p, n, replacement=True, generator=g)]
    # Reference: a dense tensor of every pool id's values (rows, or initial values).
    dense = table.host.lookup(pool)
    position = {k: i for i, k in enumerate(pool.tolist())}
    index = torch.tensor([position[k] for k in ids.tolist()])
    expected = torch.index_select(dense, 0, index)

    out = torch.full((n, dim), float("nan"))
    for _ in range(2):  # the same buffer, reused
        result = table.host.lookup(ids, out=out)
        assert result.data_ptr() == out.data_ptr()
        assert torch.equal(out, expected)
    assert torch.equal(table.host.lookup(ids), expected)
    assert len(table) == 2500  # lookups never insert


def test_unaligned_and_small_buffers() -> None:
    table = ec.EmbeddingTable(12, initializer=ec.Uniform(-1, 1))
    ids = random_ids(40000, seed=6)
    table.lookup(ids, train=True)
    storage = torch.empty(40000 * 12 + 1)
    out = storage[1:].view(40000, 12)  # 4-byte aligned only
    table.host.lookup(ids, out=out)
    assert torch.equal(out, table.host.lookup(ids))


def test_bad_buffers_are_refused() -> None:
    table = ec.EmbeddingTable(8)
    ids = torch.arange(10)
    with pytest.raises(ValueError, match=r"out must have shape \[10, 8\]"):
        table.host.lookup(ids, out=torch.empty(10, 9))
    with pytest.raises(TypeError, match="float32"):
        table.host.lookup(ids, out=torch.empty(10, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="contiguous"):
        table.host.lookup(ids, out=torch.empty(8, 10).t())


@pytest.mark.parametrize("cache_slots", [None, 128])
def test_public_embeddings_read_the_current_values_into_the_buffer(cache_slots: int | None) -> None:
    table = ec.EmbeddingTable(
        6, initializer=ec.Uniform(-1, 1), optimizer=ec.SparseSGD(lr=0.5), cache_slots=cache_slots
    )
    pool = random_ids(300, seed=8)
    for i in range(3):  # trained rows differ from their initial values
        look = table.lookup(pool[i * 50 : i * 50 + 120], train=True)
        look.weights.sum().backward()
    ids = pool[torch.randint(0, 300, (500,), generator=torch.Generator().manual_seed(9))]
    size = len(table)
    # Reference: the evaluation lookup (through the device cache when there is one).
    evaluated = table.lookup(ids, train=False)
    expected = evaluated.weights.detach().index_select(0, evaluated.inverse).float()
    out = torch.full((500, 6), float("nan"))
    assert table.embeddings(ids, out=out).data_ptr() == out.data_ptr()
    assert torch.equal(out, expected)
    assert torch.equal(table.embeddings(ids), expected)
    assert len(table) == size  # read-only
    with pytest.raises(ValueError, match=r"out must have shape \[500, 6\]"):
        table.embeddings(ids, out=torch.empty(500, 5))
