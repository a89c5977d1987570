"""JaggedUniqueIndices on sim against a plain-PyTorch reference of fbgemm 1.1.0's CUDA op
(verify/lib/jagged_unique_reference.py, which the adapter's verify test shares)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify" / "lib"))
from jagged_unique_reference import jagged_unique_reference as reference  # noqa: E402

I64 = torch.int64


def jagged_unique_indices(ops, cumsum, groups, offsets, indices, **launch):
    """The op as the adapter runs it: outputs at their bounds, unique_indices cut at num_unique."""
    n, bags = indices.numel(), offsets.numel() - 1
    outs = [
        torch.empty(bags, dtype=I64),
        torch.empty(bags + 1, dtype=I64),
        torch.empty(n, dtype=I64),
        torch.empty(n, dtype=I64),
        torch.empty(1, dtype=I64),
    ]
    result = ops("jagged_unique_indices").launch(
        [arg(cumsum), arg(groups), arg(offsets), arg(indices)] + [arg(o) for o in outs],
        [],
        **launch,
    )
    lengths, out_offsets, unique, reverse, num = outs
    return (lengths, out_offsets, unique[: int(num)], reverse), result


def assert_matches(got, want) -> None:
    names = ("lengths", "offsets", "unique_indices", "reverse_index")
    for name, g, w in zip(names, got, want, strict=True):
        assert g.dtype == w.dtype and torch.equal(g, w), (name, g.tolist(), w.tolist())


def tensors(*lists):
    return [torch.tensor(x, dtype=I64) for x in lists]


@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_hand_example(sim_ops, platform) -> None:
    # Two features of hash sizes 10 and 20, B = 2. Feature 0: bags [3, 1], [3] -> 3, 1, 3;
    # feature 1: bags [5, 5], [] -> 15, 15. Unique 1, 3, 15 -> ids 1, 3, 5; feature 0 has 2
    # unique over 2 bags, feature 1 has 1.
    cumsum, groups, offsets, indices = tensors(
        [0, 10, 30], [0, 1, 2], [0, 2, 3, 5, 5], [3, 1, 3, 5, 5]
    )
    got, _ = jagged_unique_indices(sim_ops, cumsum, groups, offsets, indices, **platform)
    assert [x.tolist() for x in got] == [
        [1, 1, 1, 0],
        [0, 1, 2, 3, 3],
        [1, 3, 5],
        [1, 0, 1, 2, 2],
    ]


def test_features_sharing_a_table(sim_ops) -> None:
    # Managed collision's layout: features 0 and 1 share one table (the same hash offset and
    # one group), feature 2 has its own. B = 1. Ids 7 (f0), 7 and 2 (f1) dedup together into
    # 2, 7 spread over the group's 2 bags; f2's ids 7, 7 become one.
    cumsum, groups, offsets, indices = tensors(
        [0, 0, 100, 150], [0, 0, 2, 3], [0, 1, 3, 5], [7, 7, 2, 7, 7]
    )
    got, _ = jagged_unique_indices(sim_ops, cumsum, groups, offsets, indices, min_core_bytes=1)
    assert [x.tolist() for x in got] == [[1, 1, 1], [0, 1, 2, 3], [2, 7, 7], [1, 1, 0, 2, 2]]


def test_negative_and_wide_ids_sort_signed(sim_ops) -> None:
    # at::_unique sorts int64 signed; ids spanning 2^62 take all eight radix passes.
    cumsum, groups, offsets = tensors([0, 0], [0, 1], [0, 2, 6])
    indices = torch.tensor([1 << 62, -5, 3, -(1 << 62), 3, -5], dtype=I64)
    got, _ = jagged_unique_indices(sim_ops, cumsum, groups, offsets, indices, min_core_bytes=1)
    assert got[2].tolist() == [-(1 << 62), -5, 3, 1 << 62]
    assert got[3].tolist() == [3, 1, 2, 0, 2, 1]
    assert_matches(got, reference(cumsum, groups, offsets, indices))


@st.composite
def cases(draw: st.DrawFn):
    t = draw(st.integers(1, 5))
    b = draw(st.integers(0, 6))
    lengths = draw(st.lists(st.integers(0, 6), min_size=t * b, max_size=t * b))
    shared = draw(st.booleans())
    wide = draw(st.booleans())
    hash_sizes = [
        draw(st.integers(1, 40)) << (draw(st.integers(0, 40)) if wide else 0) for _ in range(t)
    ]
    if shared:
        # Consecutive features grouped into tables, as managed collision builds its buffers.
        cuts = sorted(set(draw(st.lists(st.integers(1, t - 1), max_size=t))) if t > 1 else [])
        bounds = [0, *cuts, t]
        cumsum, groups, sizes, acc = [], [], [], 0
        for lo, hi in itertools.pairwise(bounds):
            cumsum += [acc] * (hi - lo)
            groups += [lo] * (hi - lo)
            sizes += [hash_sizes[lo]] * (hi - lo)
            acc += hash_sizes[lo]
        cumsum.append(acc)
        groups.append(t)
    else:
        cumsum = [0, *torch.tensor(hash_sizes).cumsum(0).tolist()]
        groups = list(range(t + 1))
        sizes = hash_sizes
    return t, b, lengths, cumsum, groups, sizes


@settings(max_examples=60, deadline=None)
@given(case=cases(), platform=platforms, seed=seeds)
def test_matches_reference(sim_ops, case, platform, seed) -> None:
    _, b, lengths, cumsum, groups, sizes = case
    gen = torch.Generator().manual_seed(seed)
    ids = []
    for bag, n in enumerate(lengths):
        size = sizes[bag // b]
        ids += torch.randint(0, min(size, 8) if seed % 2 else size, (n,), generator=gen).tolist()
    cumsum, groups, indices = tensors(cumsum, groups, ids)
    offsets = torch.tensor([0, *torch.tensor(lengths, dtype=I64).cumsum(0).tolist()], dtype=I64)
    got, _ = jagged_unique_indices(sim_ops, cumsum, groups, offsets, indices, **platform)
    want = reference(cumsum, groups, offsets, indices)
    assert_matches(got, want)
    # With ids inside their features' ranges a group's count is its distinct linearized ids.
    for g in range(len(groups) - 1):
        lo, hi = int(groups[g]), int(groups[g + 1])
        span = int(want[1][hi * b] - want[1][lo * b]) if b else 0
        lin = set()
        for bag in range(lo * b, hi * b):
            for i in range(int(offsets[bag]), int(offsets[bag + 1])):
                lin.add(int(cumsum[bag // b]) + int(indices[i]))
        assert span == len(lin)


def test_production_size_zipf(sim_ops) -> None:
    """26 features x B = 4096, Zipf ids with many repeats, hash sizes up to 10^6: the sort is
    spread over every core, and each id is linearized once."""
    gen = torch.Generator().manual_seed(3)
    t, b = 26, 4096
    lengths = torch.randint(0, 5, (t * b,), generator=gen, dtype=I64)
    hash_sizes = torch.randint(1000, 1_000_000, (t,), generator=gen, dtype=I64)
    n = int(lengths.sum())
    ranks = torch.rand(n, generator=gen).pow(-1.0 / 0.2)  # Zipf-like tail: small ids dominate
    feature = torch.repeat_interleave(torch.arange(t * b), lengths) // b
    indices = (ranks.long() - 1).clamp(min=0) % hash_sizes[feature]
    cumsum = torch.cat([torch.zeros(1, dtype=I64), hash_sizes.cumsum(0)])
    groups = torch.arange(t + 1, dtype=I64)
    offsets = torch.cat([torch.zeros(1, dtype=I64), lengths.cumsum(0)])
    got, result = jagged_unique_indices(sim_ops, cumsum, groups, offsets, indices)
    assert_matches(got, reference(cumsum, groups, offsets, indices))
    assert result.block_dim > 1
    assert got[2].numel() < n // 2  # repeats were removed


@pytest.mark.parametrize(
    ("groups", "offsets", "n"),
    [
        ([0, 1, 2], [0, 2, 1, 3, 3], 3),  # offsets decrease
        ([0, 1, 2], [0, 1, 2, 3, 3], 4),  # offsets end before the last id
        ([0, 1, 2], [1, 1, 2, 3, 3], 3),  # offsets start after 0
        ([0, 2, 1], [0, 1, 2, 3, 3], 3),  # groups decrease
        ([0, 1, 3], [0, 1, 2, 3, 3], 3),  # a group past T
    ],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_offsets_trap(sim_ops, groups, offsets, n, platform) -> None:
    cumsum, groups, offsets = tensors([0, 10, 20], groups, offsets)
    with pytest.raises(SimError, match="trap"):
        jagged_unique_indices(
            sim_ops, cumsum, groups, offsets, torch.zeros(n, dtype=I64), **platform
        )


def test_shapes_refused(sim_ops) -> None:
    cumsum, groups, indices = tensors([0, 10, 20], [0, 1, 2], [1, 2, 3])
    with pytest.raises(SimError, match="T \\* B"):
        jagged_unique_indices(
            sim_ops, cumsum, groups, torch.tensor([0, 1, 3, 3], dtype=I64), indices
        )


@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_no_ids(sim_ops, platform) -> None:
    cumsum, groups, offsets, indices = tensors([0, 10, 30], [0, 1, 2], [0, 0, 0, 0, 0], [])
    got, _ = jagged_unique_indices(sim_ops, cumsum, groups, offsets, indices, **platform)
    assert [x.tolist() for x in got] == [[0, 0, 0, 0], [0, 0, 0, 0, 0], [], []]
