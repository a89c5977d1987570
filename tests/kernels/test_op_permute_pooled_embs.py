"""PermutePooledEmbs on sim against fbgemm_gpu's CPU permute_pooled_embs."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import VALUE_DTYPES, platforms, random_values, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def permuted_width(offsets: torch.Tensor, permute: torch.Tensor, cols: int) -> int:
    """fbgemm's CPU op: blocks split at offsets[1..T-1] (tensor_split), widths summed in
    permute's order; worked out here from the slicing rules, independently of the kernel."""
    t = permute.numel()
    bounds = [0, *offsets[1:t].tolist(), cols]
    widths = [max(0, min(b, cols) - min(a, cols)) for a, b in itertools.pairwise(bounds)]
    return sum(widths[k] for k in permute.tolist())


def permute_pooled_embs(ops, pooled, offsets, permute, permuted_dim=-1, **launch):
    width = pooled.shape[1] if permuted_dim < 0 else permuted_dim
    out = torch.empty((pooled.shape[0], width, *pooled.shape[2:]), dtype=pooled.dtype)
    result = ops("permute_pooled_embs").launch(
        [arg(pooled), arg(offsets), arg(permute), arg(out)], [permuted_dim], **launch
    )
    return out, result


def offsets_of(dims: list[int]) -> torch.Tensor:
    return torch.tensor([0, *itertools.accumulate(dims)], dtype=torch.int64)


def test_fbgemm_docstring_example(sim_ops) -> None:
    # PermutePooledEmbeddings' example: dims [4, 4, 8], permute [2, 0, 1], batch 3.
    pooled = torch.arange(48, dtype=torch.float32).reshape(3, 16)
    out, _ = permute_pooled_embs(sim_ops, pooled, offsets_of([4, 4, 8]), torch.tensor([2, 0, 1]))
    assert out[0].tolist() == [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7]
    assert out[2].tolist() == [40, 41, 42, 43, 44, 45, 46, 47, 32, 33, 34, 35, 36, 37, 38, 39]


def test_repeats_and_odd_offsets_follow_the_cpu_op(sim_ops) -> None:
    """Repeated blocks widen the output; offsets past D are clamped, a decreasing one leaves
    an empty block, and the last offset is never read (fbgemm's tensor_split)."""
    pooled = torch.arange(20, dtype=torch.float32).reshape(2, 10)
    cases = [
        (torch.tensor([0, 3, 5, 10]), torch.tensor([0, 0, 2])),
        (torch.tensor([0, 4, 3, 99]), torch.tensor([2, 0, 1])),
        (torch.tensor([0, 3, 12, 0]), torch.tensor([1, 2, 0])),
        (torch.tensor([0, 6, 7, 8]), torch.tensor([1, 0])),  # fewer blocks than offsets
    ]
    for offsets, permute in cases:
        want = fbgemm.permute_pooled_embs(pooled, offsets, permute, offsets, permute)
        width = permuted_width(offsets, permute, 10)
        assert want.shape[1] == width
        got, _ = permute_pooled_embs(sim_ops, pooled, offsets, permute, width, min_core_bytes=1)
        assert torch.equal(got, want), (offsets, permute)


@settings(max_examples=80, deadline=None)
@given(
    b=st.one_of(st.integers(0, 5), st.integers(1, 300)),
    dims=st.lists(st.one_of(st.integers(0, 9), st.integers(1, 80)), min_size=1, max_size=12),
    kind=st.sampled_from(["perm", "perm", "repeats"]),
    inner=st.sampled_from([None, 1, 3]),
    dtype=st.sampled_from(VALUE_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, b, dims, kind, inner, dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    cols = sum(dims)
    shape = (b, cols) if inner is None else (b, cols, inner)
    pooled = random_values(gen, shape, dtype)
    offsets = offsets_of(dims)
    t = len(dims)
    if kind == "perm":
        permute = torch.randperm(t, generator=gen)
    else:
        # m entries name blocks 0..m-1 (fbgemm splits into as many blocks as permute has).
        m = int(torch.randint(1, t + 1, (1,), generator=gen))
        permute = torch.randint(0, m, (m,), generator=gen)
    want = fbgemm.permute_pooled_embs(pooled, offsets, permute, offsets, permute)
    width = permuted_width(offsets, permute, cols)
    got, _ = permute_pooled_embs(sim_ops, pooled, offsets, permute, width, **platform)
    assert got.shape == want.shape and torch.equal(got, want)


def test_wide_blocks_are_cut_into_pieces(sim_ops) -> None:
    """A block wider than a copy buffer moves in column pieces."""
    gen = torch.Generator().manual_seed(3)
    dims = [9000, 17, 12000]
    pooled = random_values(gen, (5, sum(dims)), torch.float32)
    offsets, permute = offsets_of(dims), torch.tensor([2, 1, 0])
    got, _ = permute_pooled_embs(sim_ops, pooled, offsets, permute, ub_bytes=40 * 1024)
    assert torch.equal(got, fbgemm.permute_pooled_embs(pooled, offsets, permute, offsets, permute))


def test_production_size(sim_ops) -> None:
    """TorchRec's regroup of a DLRM batch: B = 4096, 26 features of D 64-128 (float32): each
    element is read and written once, and every core gets the same number of rows."""
    gen = torch.Generator().manual_seed(11)
    dims = torch.randint(1, 3, (26,), generator=gen).mul(64).tolist()
    pooled = random_values(gen, (4096, sum(dims)), torch.float32)
    offsets, permute = offsets_of(dims), torch.randperm(26, generator=gen)
    got, result = permute_pooled_embs(sim_ops, pooled, offsets, permute)
    assert torch.equal(got, fbgemm.permute_pooled_embs(pooled, offsets, permute, offsets, permute))
    moved = 2 * pooled.numel() * 4
    traffic = sum(c["gm_read_bytes"] + c["gm_write_bytes"] for c in result.cores)
    assert traffic <= 1.01 * moved
    rows = [c["gm_write_bytes"] for c in result.cores]
    assert max(rows) <= 1.05 * sum(rows) / len(rows)


@pytest.mark.parametrize(
    ("offsets", "permute"),
    [
        ([0, 2, 3, 6], [2, 0, 3]),  # no block 3
        ([0, 2, 3, 6], [2, -1, 1]),
        ([0, -2, 3, 6], [2, 0, 1]),  # a negative boundary
    ],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_lists_trap(sim_ops, offsets, permute, platform) -> None:
    pooled = torch.ones(4, 6)
    with pytest.raises(SimError, match="trap"):
        permute_pooled_embs(
            sim_ops, pooled, torch.tensor(offsets), torch.tensor(permute), **platform
        )


def test_output_sized_for_other_lists_traps(sim_ops) -> None:
    pooled = torch.ones(4, 6)
    offsets, permute = torch.tensor([0, 2, 3, 6]), torch.tensor([0, 0, 1])  # width 5, not 6
    with pytest.raises(SimError, match="trap"):
        permute_pooled_embs(sim_ops, pooled, offsets, permute)
    out, _ = permute_pooled_embs(sim_ops, pooled, offsets, permute, 5)
    assert out.shape == (4, 5)
