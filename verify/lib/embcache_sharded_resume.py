"""Sharded EmbCache checkpoints taken in the background and resumed with the device caches'
contents (the worker of tests/embcache/test_sharded.py's resume tests and of
verify/embcache/test_embcache_sharded.py's npu case).

``resume``: ranks train 2 steps, start save_sharded_checkpoint_in_background(cache=True), and
train a third step while it is written. A fresh collection that loads the checkpoint with
cache=True holds exactly the rows each cache held at the call, in the same recency order, and
its third step gives the same outputs, hits and swaps as the uninterrupted run's; one loaded
without the cache gives the same outputs with fewer hits. ``reshard``: a world of another
size loads it with cache=True: each rank's cache gets rows of its own buckets only.
"""

from __future__ import annotations

from typing import Any

import embcache_sharded as common
import npu_dist
import torch
import torch.distributed as dist

CACHE_SLOTS = 400  # a step brings up to ~320 distinct ids to a rank's table: rows come and go


def _build(host: Any, device_group: Any, device: torch.device) -> Any:
    from torchrec_embcache.sharded import RowWiseEmbCacheEmbeddingBagCollection

    options = {"optimizer": common._opt("adagrad"), "seed": 5, "device": device}
    configs = common.tables(cache_slots=CACHE_SLOTS)
    return RowWiseEmbCacheEmbeddingBagCollection(configs, host, device_group, **options)


def _bags(sharded: Any) -> dict[str, Any]:
    return dict(sharded.local.embedding_bags.items())


def _step(sharded: Any, rank: int, world: int, step: int) -> tuple[torch.Tensor, dict]:
    """One training step; returns the outputs and, per table, the change of (hits, swapped
    in, swapped out)."""

    def counts() -> dict[str, tuple[int, int, int]]:
        out = {}
        for name, bag in _bags(sharded).items():
            c = bag.table.counters
            out[name] = (c.cache_hits, c.rows_swapped_in, c.rows_swapped_out)
        return out

    before = counts()
    got = sharded(common.batch(rank, step, 128, False))
    (got.values() ** 2).sum().mul(0.5).backward()
    after = counts()
    delta = {n: tuple(b - a for a, b in zip(before[n], after[n], strict=True)) for n in after}
    return got.values().detach().cpu(), delta


def run_resume(rank: int, world: int, port: int, directory: str, device_type: str) -> None:
    from torchrec_embcache.sharded_checkpoint import (
        load_sharded_checkpoint,
        save_sharded_checkpoint_in_background,
    )

    provider, device = npu_dist.start_rank(rank, world, port, device_type)
    host = dist.new_group(backend="gloo") if device_type == "npu" else dist.group.WORLD
    device_group = None if device_type == "cpu" else dist.group.WORLD
    trained = _build(host, device_group, device)
    for step in range(2):
        _step(trained, rank, world, step)
    resident = {name: bag.table.cache_ids() for name, bag in _bags(trained).items()}
    assert all(ids.numel() > 0 for ids in resident.values())
    future = save_sharded_checkpoint_in_background(trained, directory, cache=True)
    want_out, want_counts = _step(trained, rank, world, 2)  # while the files are written
    future.result(timeout=300)

    warm = _build(host, device_group, device)
    load_sharded_checkpoint(warm, directory, cache=True)
    for name, bag in _bags(warm).items():
        assert torch.equal(bag.table.cache_ids(), resident[name]), name
    got_out, got_counts = _step(warm, rank, world, 2)
    assert torch.equal(got_out, want_out)
    assert got_counts == want_counts, (got_counts, want_counts)

    cold = _build(host, device_group, device)
    load_sharded_checkpoint(cold, directory)
    cold_out, cold_counts = _step(cold, rank, world, 2)
    assert torch.equal(cold_out, want_out)
    hits = torch.tensor(
        [sum(c[0] for c in want_counts.values()), sum(c[0] for c in cold_counts.values())]
    )
    dist.all_reduce(hits, group=host)
    assert hits[1] < hits[0], f"a cold cache hit as often as the restored one: {hits.tolist()}"
    npu_dist.finish_rank(provider, None, rank)


def run_reshard_cache(rank: int, world: int, port: int, directory: str, device_type: str) -> None:
    from torchrec_embcache.sharded_checkpoint import load_sharded_checkpoint

    provider, device = npu_dist.start_rank(rank, world, port, device_type)
    host = dist.new_group(backend="gloo") if device_type == "npu" else dist.group.WORLD
    device_group = None if device_type == "cpu" else dist.group.WORLD
    sharded = _build(host, device_group, device)
    load_sharded_checkpoint(sharded, directory, cache=True)
    restored = 0
    for name, bag in _bags(sharded).items():
        ids = bag.table.cache_ids()
        owners = sharded.bucket_map.rank_of(ids)
        assert bool((owners == rank).all()), f"{name}: cached rows of another rank's buckets"
        assert bool(bag.table.contains(ids).all()), name
        restored += ids.numel()
    total = torch.tensor([restored])
    dist.all_reduce(total, group=host)
    assert total.item() > 0, "no cached row came back after the change of world size"
    _step(sharded, rank, world, 2)  # trains on
    npu_dist.finish_rank(provider, None, rank)
