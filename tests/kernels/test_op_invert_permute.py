"""InvertPermute on sim against fbgemm's CPU invert_permute."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
fbgemm_gpu = pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, platforms, seeds  # noqa: E402


def invert_permute(ops, permute, **launch):
    inv = torch.empty(permute.shape, dtype=permute.dtype)
    result = ops("invert_permute").launch([arg(permute), arg(inv)], **launch)
    return inv, result


def permutation(gen: torch.Generator, n: int, kind: str) -> torch.Tensor:
    """Random, or with long runs of consecutive targets (the kernel writes a run at once)."""
    if kind == "random":
        return torch.randperm(n, generator=gen)
    if kind == "identity":
        return torch.arange(n)
    if kind == "reverse":
        return torch.arange(n - 1, -1, -1)
    # Shuffled blocks of consecutive values, as a bucketized or feature-major permute has.
    cuts = torch.randint(0, n + 1, (min(n, 12),), generator=gen).sort().values.tolist()
    bounds = [0, *cuts, n]
    blocks = [torch.arange(a, b) for a, b in itertools.pairwise(bounds)]
    order = torch.randperm(len(blocks), generator=gen).tolist()
    return torch.cat([blocks[i] for i in order]) if blocks else torch.arange(0)


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_hand_example(sim_ops, dtype) -> None:
    # inv[2] = 0, inv[0] = 1, inv[3] = 2, inv[1] = 3.
    inv, _ = invert_permute(sim_ops, torch.tensor([2, 0, 3, 1], dtype=dtype))
    assert inv.dtype == dtype
    assert inv.tolist() == [1, 3, 0, 2]


@settings(max_examples=100, deadline=None)
@given(
    n=st.one_of(st.integers(0, 10), st.integers(0, 3000)),
    kind=st.sampled_from(["random", "random", "blocks", "identity", "reverse"]),
    dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, n, kind, dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    permute = permutation(gen, n, kind).to(dtype)
    inv, _ = invert_permute(sim_ops, permute, **platform)
    expected = torch.ops.fbgemm.invert_permute(permute)
    assert inv.dtype == expected.dtype == dtype
    assert torch.equal(inv, expected)
    assert torch.equal(permute[inv.long()], torch.arange(n, dtype=dtype))


@pytest.mark.parametrize("bad", [-1, 4, 1 << 40])
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_out_of_range_traps(sim_ops, bad, platform) -> None:
    # fbgemm would write outside its output here; the kernel must stop instead.
    permute = torch.tensor([0, 1, 2, bad] if bad < 1 << 31 else [0, bad, 2, 1])
    with pytest.raises(SimError, match="trap"):
        invert_permute(sim_ops, permute, **platform)
    if bad < 1 << 31:
        with pytest.raises(SimError, match="trap"):
            invert_permute(sim_ops, permute.int(), **platform)


# What a search for one bad entry draws besides n: the dtype, the platform, the permutation's
# seed and (from data) where the entry goes and what it becomes.
BAD_ENTRY_CASE = dict(
    dtype=st.sampled_from(INDEX_DTYPES), platform=platforms, seed=seeds, data=st.data()
)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3000), **BAD_ENTRY_CASE)
def test_one_bad_entry_anywhere_traps(sim_ops, n, dtype, platform, seed, data) -> None:
    """Whichever core and piece holds the bad entry, the launch traps (and the emulator would
    report any write outside inv rather than a trap)."""
    gen = torch.Generator().manual_seed(seed)
    permute = torch.randperm(n, generator=gen).to(dtype)
    where = data.draw(st.integers(0, n - 1))
    permute[where] = data.draw(st.sampled_from([-1, n, n + 7, -(1 << 30)]))
    with pytest.raises(SimError, match="trap"):
        invert_permute(sim_ops, permute, **platform)


def test_wrong_output_shape_is_rejected(sim_ops) -> None:
    inv = torch.empty(4, dtype=torch.int64)
    with pytest.raises(SimError, match="inv must be"):
        sim_ops("invert_permute").launch([arg(torch.arange(5)), arg(inv)])


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_repeated_entry_traps(sim_ops, dtype) -> None:
    """[0, 0, 1]: every entry is in range, but 2 is missing. fbgemm's CPU op leaves inv[2]
    uninitialised; the kernel must stop instead of returning it."""
    with pytest.raises(SimError, match="trap"):
        invert_permute(sim_ops, torch.tensor([0, 0, 1], dtype=dtype))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 3000), **BAD_ENTRY_CASE)
def test_one_repeated_entry_anywhere_traps(sim_ops, n, dtype, platform, seed, data) -> None:
    """A duplicate on any core (and its missing value on any other) is found after the
    scatter, whichever core owns the unwritten slot."""
    gen = torch.Generator().manual_seed(seed)
    permute = torch.randperm(n, generator=gen).to(dtype)
    where = data.draw(st.integers(0, n - 1))
    other = data.draw(st.integers(0, n - 1).filter(lambda k: k != where))
    permute[where] = permute[other]
    with pytest.raises(SimError, match="trap"):
        invert_permute(sim_ops, permute, **platform)


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_scatter_stays_in_ub(sim_ops, dtype) -> None:
    """200K random entries: permute read once, inv written once, the sorted pairs (4 bytes an
    entry) written and read once, and a DMA per (piece, chunk) bucket rather than one per entry
    (a scatter straight to global memory needs about N DMAs, plus 2N elements to check it)."""
    n = 200_000
    permute = torch.randperm(n, generator=torch.Generator().manual_seed(7)).to(dtype)
    inv, result = invert_permute(sim_ops, permute)
    assert torch.equal(permute[inv.long()], torch.arange(n, dtype=dtype))
    elem = permute.element_size()
    pairs = 2 * 4 * n
    assert result.gm_bytes < 1.05 * (2 * elem * n + pairs)
    assert result.total("dma_transfers") < n // 20


@pytest.mark.parametrize("kind", ["identity", "blocks"])
@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_small_ub_many_chunks_and_long_buckets(sim_ops, kind, dtype) -> None:
    """8 KiB of UB: chunks of a few hundred slots, several per core (the write-out of one
    overlaps the next one's reads), and buckets longer than one read of pairs."""
    permute = permutation(torch.Generator().manual_seed(3), 20_000, kind).to(dtype)
    inv, _ = invert_permute(sim_ops, permute, ub_bytes=8 * 1024, max_cores=5)
    assert torch.equal(inv, torch.ops.fbgemm.invert_permute(permute))


def test_too_large_for_the_bucket_table_is_rejected(sim_ops) -> None:
    # With 8 KiB of UB a chunk holds a few hundred slots, so 4M entries need thousands of
    # chunks and the row of bucket bounds (one per chunk) no longer fits.
    permute = torch.arange(4_000_000, dtype=torch.int32)
    with pytest.raises(SimError, match="unified buffer"):
        invert_permute(sim_ops, permute, ub_bytes=8 * 1024)
