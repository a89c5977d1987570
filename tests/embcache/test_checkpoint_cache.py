"""Checkpoints with the device cache's contents (cache=True): a resumed table holds the same
rows in the same recency order, so training goes on with exactly the hits and swaps of the
uninterrupted run; damaged or absent cache files are refused before anything loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids
from test_checkpoint import assert_same, batches, corrupt_byte, make_model, snapshot


def counters(model: ec.DynamicEmbeddingBag) -> tuple[int, int, int, int]:
    c = model.table.counters
    return c.cache_lookups, c.cache_hits, c.rows_swapped_in, c.rows_swapped_out


def step_counts(
    model: ec.DynamicEmbeddingBag, pool: torch.Tensor, steps: int, seed: int
) -> tuple[list[torch.Tensor], list[tuple[int, ...]]]:
    """Outputs and, per step, the change of (lookups, hits, swapped in, swapped out)."""
    outs, deltas = [], []
    for ids, offsets, target in batches(pool, steps, seed):
        before = counters(model)
        out = model(ids, offsets)
        ((out - target) ** 2).sum().backward()
        outs.append(out.detach())
        deltas.append(tuple(b - a for a, b in zip(before, counters(model), strict=True)))
    return outs, deltas


def trained(tmp_path: Path) -> tuple[ec.DynamicEmbeddingBag, torch.Tensor]:
    pool = random_ids(90, seed=1)
    model = make_model()  # 40 slots for 90 ids: rows come and go every step
    step_counts(model, pool, steps=12, seed=2)
    ec.save_checkpoint(model, tmp_path, cache=True)
    return model, pool


def test_resume_with_the_cache_has_the_same_hits_and_swaps(tmp_path: Path) -> None:
    model, pool = trained(tmp_path)
    resident = model.table.cache_ids()
    assert resident.numel() == model.table.cache_slots - 1  # slot 0: the admission default

    warm = make_model()
    ec.load_checkpoint(warm, tmp_path, cache=True)
    assert torch.equal(warm.table.cache_ids(), resident)  # the same rows, the same recency
    cold = make_model()
    ec.load_checkpoint(cold, tmp_path)
    assert cold.table.cache_ids().numel() == 0

    want_out, want = step_counts(model, pool, steps=6, seed=3)
    warm_out, got = step_counts(warm, pool, steps=6, seed=3)
    cold_out, cold_counts = step_counts(cold, pool, steps=6, seed=3)
    assert got == want
    # The cache never changes the arithmetic, only what moves: a cold start misses more.
    assert cold_counts[0][1] < want[0][1]
    for a, b, c in zip(want_out, warm_out, cold_out, strict=True):
        assert torch.equal(a, b) and torch.equal(a, c)
    assert_same(snapshot(model), snapshot(warm))


def test_a_damaged_cache_file_is_refused_and_nothing_loads(tmp_path: Path) -> None:
    trained(tmp_path)
    (cache_file,) = tmp_path.glob("*.cache")
    corrupt_byte(cache_file, 5)
    other = make_model()
    step_counts(other, random_ids(50, seed=7), steps=3, seed=8)
    before = snapshot(other)
    with pytest.raises(ec.CheckpointError, match=cache_file.name):
        ec.load_checkpoint(other, tmp_path, cache=True)
    assert_same(before, snapshot(other))
    cache_file.unlink()
    with pytest.raises(ec.CheckpointError, match="missing"):
        ec.load_checkpoint(other, tmp_path, cache=True)
    ec.load_checkpoint(other, tmp_path)  # the rows themselves are intact


def test_loading_the_cache_needs_a_checkpoint_saved_with_it(tmp_path: Path) -> None:
    model, _ = trained(tmp_path)
    ec.save_checkpoint(model, tmp_path)  # without the cache: the old .cache file goes
    assert not list(tmp_path.glob("*.cache"))
    with pytest.raises(ec.CheckpointError, match=r"'table' was saved without its cache"):
        ec.load_checkpoint(make_model(), tmp_path, cache=True)


def test_restore_cache_needs_an_empty_cache(tmp_path: Path) -> None:
    model, _ = trained(tmp_path)
    with pytest.raises(ec.CacheStateError, match="empty device cache"):
        model.table.restore_cache(model.table.cache_ids())


def test_restore_keeps_the_most_recent_ids_the_table_holds(tmp_path: Path) -> None:
    model, _ = trained(tmp_path)
    ids = model.table.cache_ids()
    small = make_model(cache_slots=11)  # 10 usable slots
    ec.load_checkpoint(small, tmp_path)
    unknown = torch.tensor([123456789], dtype=torch.int64)
    assert small.table.restore_cache(torch.cat([ids, unknown])) == 10
    assert torch.equal(small.table.cache_ids(), ids[-10:])
