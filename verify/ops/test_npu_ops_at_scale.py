"""Every adapter operator on the npu device at the sizes users run, against fbgemm's CPU op or
plain PyTorch.

The hand-checkable cases in test_npu_ops.py pin the semantics; these run the shapes of
kernels/bench/bench_ops.py (millions of ids, batches in the thousands, D = 64), whose tilings
spread over every core of the emulated 48-core SoC, after every other operator library is
already loaded in the process (the adapter links them all). No dimension is shrunk.
"""

from __future__ import annotations

import pytest
import torch
from tbe_reference import NPU, assert_block_bucketize_like_cpu, assert_equal_on_npu

pytestmark = pytest.mark.requires_npu

GEN_SEED = 20261123


def gen() -> torch.Generator:
    return torch.Generator().manual_seed(GEN_SEED)


def test_complete_cumsum_8m_lengths() -> None:
    lengths = torch.randint(0, 20, (8 << 20,), generator=gen())
    got = torch.ops.fbgemm.asynchronous_complete_cumsum(lengths.to(NPU))
    assert_equal_on_npu(got, torch.ops.fbgemm.asynchronous_complete_cumsum(lengths), "cumsum")


def _jagged(batch: int, max_length: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = gen()
    lengths = torch.randint(0, max_length + 1, (batch,), generator=g)
    offsets = torch.ops.fbgemm.asynchronous_complete_cumsum(lengths)
    values = torch.randn(int(offsets[-1]), dim, generator=g)
    return values, offsets


def test_jagged_to_padded_dense_batch_1024() -> None:
    values, offsets = _jagged(1024, 256, 64)
    want = torch.ops.fbgemm.jagged_to_padded_dense(values, [offsets], [256], 0.0)
    got = torch.ops.fbgemm.jagged_to_padded_dense(values.to(NPU), [offsets.to(NPU)], [256], 0.0)
    assert_equal_on_npu(got, want, "jagged_to_padded_dense")


def test_dense_to_jagged_batch_1024() -> None:
    _, offsets = _jagged(1024, 256, 64)
    dense = torch.randn(1024, 256, 64, generator=gen())
    want, _ = torch.ops.fbgemm.dense_to_jagged(dense, [offsets])
    got, _ = torch.ops.fbgemm.dense_to_jagged(dense.to(NPU), [offsets.to(NPU)])
    assert_equal_on_npu(got, want, "dense_to_jagged")


def test_permute_2d_sparse_data_128_features_4096_batch() -> None:
    g = gen()
    lengths = torch.randint(0, 10, (128, 4096), generator=g, dtype=torch.int32)
    n = int(lengths.sum())
    values = torch.randint(0, 1 << 40, (n,), generator=g)
    weights = torch.rand(n, generator=g)
    permute = torch.randperm(128, generator=g).to(torch.int32)
    want = torch.ops.fbgemm.permute_2D_sparse_data(permute, lengths, values, weights, None)
    got = torch.ops.fbgemm.permute_2D_sparse_data(
        permute.to(NPU), lengths.to(NPU), values.to(NPU), weights.to(NPU), None
    )
    for name, a, b in zip(("lengths", "values", "weights"), got, want, strict=True):
        assert_equal_on_npu(a, b, f"permute_2D_sparse_data {name}")


def test_rank1_gather_and_its_backward_4m_indices() -> None:
    g = gen()
    # Integer-valued floats: the backward's sums over repeated indices are exact in any order.
    x = torch.randint(-50, 50, (16384,), generator=g).float()
    index = torch.randint(0, 16384, (4_000_000,), generator=g)
    xd = x.to(NPU).requires_grad_(True)
    out = torch.ops.mxrec.gather_for_rank1(xd, index.to(NPU))
    assert_equal_on_npu(out.detach(), x.index_select(0, index), "gather_for_rank1")
    grad = torch.randint(-3, 4, (4_000_000,), generator=g).float()
    out.backward(grad.to(NPU))
    want = torch.zeros_like(x).index_add_(0, index, grad)
    assert_equal_on_npu(xd.grad, want, "gather_for_rank1 backward")


def test_bounds_check_26_tables_batch_16384_warning_mode() -> None:
    g = gen()
    tables, batch = 26, 16384
    rows = torch.randint(10_000, 100_000, (tables,), generator=g)
    lengths = torch.randint(0, 20, (tables * batch,), generator=g)
    offsets = torch.ops.fbgemm.asynchronous_complete_cumsum(lengths)
    table_of = torch.arange(tables).repeat_interleave(batch).repeat_interleave(lengths)
    indices = (torch.rand(int(offsets[-1]), generator=g) * rows[table_of]).long()
    bad = torch.rand(indices.numel(), generator=g) < 0.001
    indices[bad] = rows[table_of[bad]] + 5  # 0.1 % out of range
    want_idx, want_off = indices.clone(), offsets.clone()
    want_warn = torch.zeros(1, dtype=torch.int64)
    torch.ops.fbgemm.bounds_check_indices(rows, want_idx, want_off, 1, want_warn)
    dev_idx, dev_off = indices.to(NPU), offsets.to(NPU)
    dev_warn = torch.zeros(1, dtype=torch.int64, device=NPU)
    torch.ops.fbgemm.bounds_check_indices(rows.to(NPU), dev_idx, dev_off, 1, dev_warn)
    assert int(want_warn) == int(bad.sum()) > 0
    assert_equal_on_npu(dev_idx, want_idx, "bounds_check_indices indices")
    assert_equal_on_npu(dev_off, want_off, "bounds_check_indices offsets")
    assert_equal_on_npu(dev_warn, want_warn, "bounds_check_indices warning")


@pytest.mark.parametrize("sequence", [False, True])
def test_block_bucketize_26_features_batch_4096_8_ranks(sequence: bool) -> None:
    g = gen()
    tables, batch, my_size = 26, 4096, 8
    lengths = torch.randint(0, 21, (tables * batch,), generator=g)
    n = int(lengths.sum())
    indices = torch.randint(0, 1_000_000, (n,), generator=g)
    block_sizes = torch.full((tables,), 1_000_000 // my_size + 1, dtype=torch.int64)
    weights = torch.rand(n, generator=g)
    args = dict(bucketize_pos=False, sequence=sequence, my_size=my_size)
    assert_block_bucketize_like_cpu(lengths, indices, block_sizes, weights, **args)


def test_invert_permute_4m() -> None:
    permute = torch.randperm(4_000_000, generator=gen())
    got = torch.ops.fbgemm.invert_permute(permute.to(NPU))
    assert_equal_on_npu(got, torch.ops.fbgemm.invert_permute(permute), "invert_permute")


# ---- bad input that fbgemm's CPU ops answer with garbage ------------------------------------


def test_jagged_to_padded_dense_refuses_offsets_past_the_values() -> None:
    """fbgemm's CPU op reads past the end of values here and returns what it finds."""
    values = torch.arange(6.0).view(6, 1).to(NPU)
    offsets = torch.tensor([0, 2, 5, 9]).to(NPU)
    with pytest.raises(ValueError, match=r"offsets\[0\]\[-1\] = 9 points past the end of values"):
        torch.ops.fbgemm.jagged_to_padded_dense(values, [offsets], [4], 0.0)


@pytest.mark.parametrize("permute", [[0, 0, 1], [2, 2, 2], [0, 1, 3]])
def test_invert_permute_refuses_what_is_not_a_permutation(permute: list[int]) -> None:
    """fbgemm's CPU op leaves the missing values' slots uninitialised ([0, 0, 1]) or writes
    out of bounds ([0, 1, 3])."""
    with pytest.raises(ValueError, match=r"is not a permutation of 0\.\.2"):
        torch.ops.fbgemm.invert_permute(torch.tensor(permute).to(NPU))


def test_invert_permute_refuses_one_repeat_in_4m() -> None:
    permute = torch.randperm(4_000_000, generator=gen())
    permute[3_999_000] = permute[17]  # the value it replaced is now missing, on another core
    with pytest.raises(ValueError, match="is not a permutation"):
        torch.ops.fbgemm.invert_permute(permute.to(NPU))
