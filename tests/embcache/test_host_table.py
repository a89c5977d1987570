"""The host table on its own: batch preparation, lookups, initialisers, threads, memory."""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from torchrec_embcache import _C


def test_prepare_deduplicates_in_id_order() -> None:
    table = ec.EmbeddingTable(4)
    g = torch.Generator().manual_seed(0)
    pool = random_ids(500, seed=1)
    ids = pool[torch.randint(0, 500, (5000,), generator=g)]
    uniq, inverse, has_row, rows, evicted, step = table.host.prepare(ids, True, True)
    assert torch.equal(uniq, torch.unique(ids))  # sorted, like torch.unique
    assert torch.equal(uniq[inverse], ids)
    assert bool(has_row.all()) and evicted.numel() == 0 and step == 1
    assert len(table) == uniq.numel()
    assert torch.equal(rows, table.host.lookup(uniq))


@pytest.mark.parametrize("shard_bits", [0, 3, 8])
def test_results_do_not_depend_on_threads_or_sharding(shard_bits: int) -> None:
    pool = random_ids(300, seed=2)
    g = torch.Generator().manual_seed(3)
    data = [pool[torch.randint(0, 300, (4000,), generator=g)] for _ in range(4)]

    previous = ec.get_num_threads()

    def run(threads: int, bits: int) -> dict[str, torch.Tensor]:
        ec.set_num_threads(threads)
        try:
            model = ec.DynamicEmbedding(
                8, optimizer=ec.SparseAdagrad(lr=0.1), shard_bits=bits, seed=4
            )
            for ids in data:
                model(ids).pow(2).sum().backward()
            return model.table.export()
        finally:
            ec.set_num_threads(previous)

    reference = run(1, 5)
    other = run(3, shard_bits)
    for key in reference:
        assert torch.equal(reference[key], other[key]), key


def test_lookup_reads_rows_and_initial_values_without_inserting() -> None:
    table = ec.EmbeddingTable(6, initializer=ec.Normal(), seed=9, optimizer=ec.SparseSGD(lr=1.0))
    known = torch.tensor([4, 8, 15])
    lookup = table.lookup(known, train=True)
    lookup.weights.backward(torch.ones_like(lookup.weights))  # every row moves by -1.0
    initial = ec.EmbeddingTable(6, initializer=ec.Normal(), seed=9).host.lookup(known)
    ids = torch.tensor([15, 16, 4, 4, 23])
    out = table.host.lookup(ids)
    assert torch.equal(out[0], initial[2] - 1.0)
    assert torch.equal(out[2], initial[0] - 1.0) and torch.equal(out[3], out[2])
    fresh = ec.EmbeddingTable(6, initializer=ec.Normal(), seed=9).host.lookup(
        torch.tensor([16, 23])
    )
    assert torch.equal(out[1], fresh[0]) and torch.equal(out[4], fresh[1])
    assert len(table) == 3


def test_lookup_with_admission_reads_the_default_for_unknown_ids() -> None:
    table = ec.EmbeddingTable(3, admission=ec.Admission(threshold=5, default_value=-2.0))
    assert table.host.lookup(torch.tensor([1, 2])).tolist() == [[-2.0] * 3] * 2


def test_initializers_by_distribution() -> None:
    ids = torch.arange(20000, dtype=torch.int64) * 7919 - 10**12

    def values(init: object, seed: int = 0) -> torch.Tensor:
        return ec.EmbeddingTable(16, initializer=init, seed=seed).host.lookup(ids).reshape(-1)

    const = values(ec.Constant(0.25))
    assert bool((const == 0.25).all())

    uni = values(ec.Uniform(-0.5, 1.5))
    assert float(uni.min()) >= -0.5 and float(uni.max()) < 1.5
    assert abs(float(uni.mean()) - 0.5) < 0.01
    assert abs(float(uni.std()) - 2.0 / math.sqrt(12.0)) < 0.01

    normal = values(ec.Normal(mean=1.0, std=2.0))
    assert abs(float(normal.mean()) - 1.0) < 0.02 and abs(float(normal.std()) - 2.0) < 0.02

    trunc = values(ec.TruncatedNormal(mean=0.0, std=0.5))
    assert float(trunc.abs().max()) <= 1.0  # mean +- 2 std
    # Standard normal truncated to [-2, 2] has standard deviation 0.8796.
    assert abs(float(trunc.std()) - 0.5 * 0.8796) < 0.01
    assert abs(float(trunc.mean())) < 0.01

    # Different seeds give different values; the same (seed, id) always the same.
    assert not torch.equal(values(ec.Normal(), seed=1), values(ec.Normal(), seed=2))
    assert torch.equal(values(ec.Normal(), seed=3), values(ec.Normal(), seed=3))


def test_initial_values_do_not_depend_on_arrival_order() -> None:
    ids = random_ids(200, seed=5)
    a = ec.EmbeddingTable(8, seed=6, shard_bits=2)
    b = ec.EmbeddingTable(8, seed=6, shard_bits=7)
    a.lookup(ids, train=True)
    for chunk in torch.flip(ids, [0]).split(7):
        b.lookup(chunk, train=True)
    assert torch.equal(a.export()["weight"], b.export()["weight"])


def test_concurrent_lookups_while_rows_are_inserted() -> None:
    table = ec.EmbeddingTable(16, seed=1)
    stored = random_ids(20000, seed=7)
    table.lookup(stored, train=True)
    expected = table.host.lookup(stored)
    newcomers = random_ids(200000, seed=8)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        try:
            while not stop.is_set():
                pick = torch.randint(0, stored.numel(), (4096,), generator=g)
                got = table.host.lookup(stored[pick])
                if not torch.equal(got, expected[pick]):
                    errors.append(AssertionError("a concurrent lookup returned a wrong row"))
                    return
                _, inverse, _, rows, _, _ = table.host.prepare(stored[pick], False, True)
                if not torch.equal(rows[inverse], expected[pick]):
                    errors.append(AssertionError("a concurrent prepare returned a wrong row"))
                    return
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    readers = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in readers:
        t.start()
    for chunk in newcomers.split(5000):  # grows the table (rehashing) under the readers
        table.lookup(chunk, train=True)
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[0]
    assert len(table) == 220000 - int(torch.isin(newcomers, stored).sum())


def test_host_memory_per_row_is_within_1_3x_of_raw_bytes() -> None:
    dim = 128
    for optimizer, state in ((ec.SparseSGD(), 0), (ec.SparseAdam(), 2)):
        table = ec.EmbeddingTable(dim, optimizer=optimizer, initializer=ec.Constant(0.0))
        n = 100_000
        table.lookup(torch.arange(n, dtype=torch.int64) * 1_000_003, train=True)
        raw = n * dim * (1 + state) * 4
        assert table.memory_bytes <= 1.3 * raw, (type(optimizer).__name__, table.memory_bytes / raw)


def test_crc32c_check_value() -> None:
    # The standard check value of CRC-32C ("123456789" -> 0xE3069283).
    assert _C.crc32c(b"123456789") == 0xE3069283
    assert _C.crc32c(b"") == 0


def test_invalid_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="embedding_dim"):
        ec.EmbeddingTable(0)
    with pytest.raises(ValueError, match="lr"):
        ec.SparseSGD(lr=-1.0)
    with pytest.raises(ValueError, match="threshold"):
        ec.Admission(threshold=0)
    with pytest.raises(ValueError, match="ttl_steps, capacity"):
        ec.EmbeddingTable(4, eviction=ec.EvictionPolicy("lru"))
    with pytest.raises(ValueError, match="protect_batches"):
        ec.EmbeddingTable(4, eviction=ec.EvictionPolicy(capacity=4, protect_batches=2))
    with pytest.raises(ValueError, match="cache_slots"):
        ec.EmbeddingTable(4, cache_slots=0)
    with pytest.raises(TypeError, match="optimizer"):
        ec.EmbeddingTable(4, optimizer=torch.optim.SGD)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.booleans(), st.lists(st.integers(-50, 50), max_size=30)),
        min_size=1,
        max_size=25,
    ),
    shard_bits=st.sampled_from([0, 1, 5]),
)
def test_inserts_and_erasures_match_a_set(
    ops: list[tuple[bool, list[int]]], shard_bits: int
) -> None:
    # Few shards and many erasures exercise the index's growth and backward-shift deletion.
    table = ec.EmbeddingTable(2, initializer=ec.Constant(3.0), shard_bits=shard_bits)
    model: set[int] = set()
    for insert, ids in ops:
        batch = torch.tensor(ids, dtype=torch.int64)
        if insert:
            table.lookup(batch, train=True)
            model |= set(ids)
        else:
            assert table.host.erase(batch) == len(model & set(ids))
            model -= set(ids)
        assert table.export()["ids"].tolist() == sorted(model)
        probe = torch.arange(-50, 51)
        assert table.contains(probe).tolist() == [int(i) in model for i in probe]
    assert len(table) == len(model)


def test_table_is_usable_in_a_forked_child() -> None:
    # DataLoader workers are forked: the pool's worker threads do not exist in the child, and
    # batched calls must still complete there.
    table = ec.EmbeddingTable(8, seed=3)
    ids = torch.arange(100_000)
    fresh = torch.arange(200_000, 300_000)
    table.lookup(ids, train=True)
    expected = table.host.lookup(ids)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        torch.set_num_threads(1)  # torch's own OpenMP pool is not fork-safe either
        ok = torch.equal(table.host.lookup(ids), expected)
        table.lookup(fresh, train=True)
        os._exit(0 if ok and len(table) == 200_000 else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("a batched table call hung in a forked child")
