"""The operator adapter (fbgemm_npu_api) on the npu device.

Every operator runs on npu tensors and is compared with fbgemm's CPU kernel on the same inputs
(for mxrec's rank-1 gather: with torch.index_select / index_add_), exactly: the operators only
copy, sum integers or add with exactly representable values here. The user document's four
examples run verbatim on npu and give exactly the documented outputs. Bad arguments fail with
a clear error before any kernel runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import pytest
import torch

pytestmark = pytest.mark.requires_npu

NPU = "npu"
INDEX_DTYPES = [torch.int32, torch.int64]
VALUE_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]


def npu(t: torch.Tensor) -> torch.Tensor:
    return t.to(NPU)


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == NPU, f"result on {actual.device}, not on npu"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert torch.equal(actual, expected), f"\nnpu:      {actual}\nexpected: {expected}"


def values_of(n: int, dtype: torch.dtype, *, width: int | None = None) -> torch.Tensor:
    shape = (n,) if width is None else (n, width)
    # Small integers: exact in every dtype, so npu and CPU must agree bit for bit.
    return (torch.arange(n * (width or 1)) % 97 - 40).view(shape).to(dtype)


def offsets_of(lengths: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=dtype)


def test_adapter_reports_its_backend(adapter: object) -> None:
    backend = adapter.backend()  # type: ignore[attr-defined]
    assert backend in ("sim", "npu")
    if importlib.util.find_spec("npu_sim") is not None:
        assert backend == "sim"
    for op in (
        "asynchronous_complete_cumsum",
        "permute_2D_sparse_data",
        "jagged_to_padded_dense_forward",
        "dense_to_jagged_forward",
        "jagged_to_padded_dense_backward",
        "bounds_check_indices",
    ):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"fbgemm::{op}", "PrivateUse1"), op


# ---- the user document's examples, verbatim, on npu ------------------------------------------


def test_seed_asynchronous_complete_cumsum_on_npu() -> None:
    lengths = torch.tensor([2, 3, 1, 4], dtype=torch.int32).to(NPU)
    cumsum_result = torch.ops.fbgemm.asynchronous_complete_cumsum(lengths)
    assert_same(cumsum_result, torch.tensor([0, 2, 5, 6, 10], dtype=torch.int32))
    assert cumsum_result.shape == torch.Size([5])


def test_seed_jagged_to_padded_dense_on_npu() -> None:
    values = torch.tensor([1, 2, 3, 4, 5, 6]).to(NPU)
    x_offsets = torch.tensor([0, 2, 5, 6]).to(NPU)
    n = 50
    result = torch.ops.fbgemm.jagged_to_padded_dense(values, [x_offsets], [n])
    expected = torch.zeros(3, 50, dtype=torch.int64)
    expected[0, :2] = torch.tensor([1, 2])
    expected[1, :3] = torch.tensor([3, 4, 5])
    expected[2, :1] = torch.tensor([6])
    assert_same(result, expected)


def test_seed_dense_to_jagged_on_npu_with_2d_dense() -> None:
    dense_tensor = torch.tensor(
        [
            [1, 2, 0, 0, 0, 0, 0, 0, 0, 0],
            [3, 4, 5, 0, 0, 0, 0, 0, 0, 0],
            [6, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ]
    ).to(NPU)
    x_offsets = torch.tensor([0, 2, 5, 6]).to(NPU)
    recovered_values, recovered_offsets = torch.ops.fbgemm.dense_to_jagged(
        dense_tensor, [x_offsets]
    )
    assert_same(recovered_values, torch.tensor([1, 2, 3, 4, 5, 6]))
    assert len(recovered_offsets) == 1
    assert_same(recovered_offsets[0], torch.tensor([0, 2, 5, 6]))


def test_seed_permute_2d_sparse_data_on_npu_with_1d_lengths() -> None:
    lengths = torch.tensor([2, 3, 1, 4]).to(NPU)
    indices = torch.tensor([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]).to(NPU)
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]).to(NPU)
    permute = torch.tensor([3, 1, 0, 2]).to(NPU)
    permuted_lengths, permuted_indices, permuted_weights = torch.ops.fbgemm.permute_2D_sparse_data(
        permute, lengths, indices, weights
    )
    assert_same(permuted_lengths, torch.tensor([4, 3, 2, 1]))
    assert_same(permuted_indices, torch.tensor([70, 80, 90, 100, 30, 40, 50, 10, 20, 60]))
    assert permuted_weights is not None
    assert_same(permuted_weights, torch.tensor([7.0, 8.0, 9.0, 10.0, 3.0, 4.0, 5.0, 1.0, 2.0, 6.0]))


# ---- each operator against fbgemm's CPU kernel -----------------------------------------------


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (1000,), (3, 5), (2, 0)])
def test_asynchronous_cumsums_match_fbgemm_cpu(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    lengths = (
        (torch.arange(max(1, torch.Size(shape).numel())) * 7 % 13)[: torch.Size(shape).numel()]
        .view(shape)
        .to(dtype)
    )
    for name in (
        "asynchronous_complete_cumsum",
        "asynchronous_inclusive_cumsum",
        "asynchronous_exclusive_cumsum",
    ):
        op = getattr(torch.ops.fbgemm, name)
        if len(shape) == 2 and name != "asynchronous_complete_cumsum":
            continue  # fbgemm's CPU inclusive/exclusive sums are 1-D only
        assert_same(op(npu(lengths)), op(lengths))


CASES = [
    # (lengths per batch, max_length)
    ([2, 3, 1], 4),
    ([0, 5, 0, 2], 3),  # zero-length rows, and a row longer than max_length
    ([], 5),  # no batches
    ([0, 0], 2),  # batches without values
    ([4, 1, 3], 0),
]


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("offset_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("width", [None, 3])
@pytest.mark.parametrize(("lengths", "max_length"), CASES)
def test_jagged_to_padded_dense_matches_fbgemm_cpu(
    dtype: torch.dtype,
    offset_dtype: torch.dtype,
    width: int | None,
    lengths: list[int],
    max_length: int,
) -> None:
    offsets = offsets_of(lengths, offset_dtype)
    values = values_of(sum(lengths), dtype, width=width)
    padding = 7.0 if dtype in (torch.int32, torch.int64) else -1.5
    expected = torch.ops.fbgemm.jagged_to_padded_dense(values, [offsets], [max_length], padding)
    actual = torch.ops.fbgemm.jagged_to_padded_dense(
        npu(values), [npu(offsets)], [max_length], padding
    )
    assert_same(actual, expected)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("offset_dtype", INDEX_DTYPES)
@pytest.mark.parametrize(("lengths", "max_length"), CASES)
def test_dense_to_jagged_matches_fbgemm_cpu(
    dtype: torch.dtype, offset_dtype: torch.dtype, lengths: list[int], max_length: int
) -> None:
    offsets = offsets_of(lengths, offset_dtype)
    dense = values_of(len(lengths) * max_length, dtype, width=4).view(len(lengths), max_length, 4)
    expected, _ = torch.ops.fbgemm.dense_to_jagged(dense, [offsets])
    actual, out_offsets = torch.ops.fbgemm.dense_to_jagged(npu(dense), [npu(offsets)])
    assert_same(actual, expected)
    assert_same(out_offsets[0], offsets)
    # 2-D dense (fbgemm's CPU kernel needs the trailing dimension): same rows.
    actual_2d, _ = torch.ops.fbgemm.dense_to_jagged(npu(dense[..., 0].contiguous()), [npu(offsets)])
    assert_same(actual_2d, expected[:, 0].contiguous())
    # An explicit total_L larger than offsets[-1]: the rows past it are zero, as on the CPU.
    total = int(offsets[-1]) + 2
    expected_l, _ = torch.ops.fbgemm.dense_to_jagged(dense, [offsets], total)
    actual_l, _ = torch.ops.fbgemm.dense_to_jagged(npu(dense), [npu(offsets)], total)
    assert_same(actual_l, expected_l)


@pytest.mark.parametrize("width", [None, 3])
def test_jagged_dense_gradients_through_fbgemm_autograd(width: int | None) -> None:
    # fbgemm registers a CPU kernel for jagged_to_padded_dense and dense_to_jagged themselves,
    # which bypasses its autograd wrapper on the CPU: the reference gradients are written out
    # here instead (each is a copy of the output gradient's entries that the forward copied).
    lengths = [2, 0, 5, 1]
    max_length = 3
    offsets = offsets_of(lengths, torch.int64)
    starts = offsets.tolist()
    values = values_of(sum(lengths), torch.float32, width=width)
    v = npu(values).requires_grad_()
    dense = torch.ops.fbgemm.jagged_to_padded_dense(v, [npu(offsets)], [max_length], 0.0)
    weight = torch.arange(dense.numel(), dtype=torch.float32).view(dense.shape)
    (dense * npu(weight)).sum().backward()
    expected = torch.zeros_like(values)
    for b, n in enumerate(lengths):
        for j in range(min(n, max_length)):
            expected[starts[b] + j] = weight[b, j]
    assert v.grad is not None
    assert_same(v.grad, expected)

    d = npu(values_of(4 * 3 * 2, torch.float32).view(4, 3, 2)).requires_grad_()
    jagged, _ = torch.ops.fbgemm.dense_to_jagged(d, [npu(offsets)])
    weight = torch.arange(jagged.numel(), dtype=torch.float32).view(jagged.shape)
    (jagged * npu(weight)).sum().backward()
    expected = torch.zeros(4, 3, 2)
    for b, n in enumerate(lengths):
        for j in range(min(n, 3)):
            expected[b, j] = weight[starts[b] + j]
    assert d.grad is not None
    assert_same(d.grad, expected)


PERMUTE_CASES = [
    # (lengths [T, B], permute)
    ([[2, 0, 1], [3, 1, 0], [0, 0, 0], [1, 4, 2]], [3, 1, 0, 2]),
    ([[1, 2], [3, 4], [5, 6]], [2, 2, 0]),  # a repeated row, a row left out
    ([[0, 0], [0, 0]], [1, 0]),  # no values at all
    ([[1, 1], [2, 2]], []),  # an empty permutation
]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("value_dtype", [torch.int64, torch.int32, torch.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("given_sum", [False, True])
@pytest.mark.parametrize(("lengths", "permute"), PERMUTE_CASES)
def test_permute_2d_sparse_data_matches_fbgemm_cpu(
    index_dtype: torch.dtype,
    value_dtype: torch.dtype,
    weighted: bool,
    given_sum: bool,
    lengths: list[list[int]],
    permute: list[int],
) -> None:
    lengths_t = torch.tensor(lengths, dtype=index_dtype)
    permute_t = torch.tensor(permute, dtype=index_dtype)
    total = int(lengths_t.sum())
    values = values_of(total, value_dtype)
    weights = values_of(total, torch.float32) / 4 if weighted else None
    permuted_sum = int(lengths_t.sum(1)[permute_t.long()].sum()) if given_sum else None
    # fbgemm's CPU kernel takes an int32 permute only; the npu operator takes both.
    expected = torch.ops.fbgemm.permute_2D_sparse_data(
        permute_t.int(), lengths_t, values, weights, permuted_sum
    )
    actual = torch.ops.fbgemm.permute_2D_sparse_data(
        npu(permute_t),
        npu(lengths_t),
        npu(values),
        None if weights is None else npu(weights),
        permuted_sum,
    )
    assert_same(actual[0], expected[0])
    assert_same(actual[1], expected[1])
    if weighted:
        assert actual[2] is not None and expected[2] is not None
        assert_same(actual[2], expected[2])
    else:
        assert actual[2] is None and expected[2] is None


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("mode", [1, 2])
def test_bounds_check_indices_matches_fbgemm_cpu(index_dtype: torch.dtype, mode: int) -> None:
    rows_per_table = torch.tensor([10, 4, 7])
    # Two bags per table; -1 (pruned) is kept, out-of-range rows are corrected.
    indices = torch.tensor([1, 9, 12, 0, 3, 4, -1, -5, 6, 7, 2], dtype=index_dtype)
    offsets = torch.tensor([0, 2, 3, 5, 7, 9, 11], dtype=index_dtype)
    results = {}
    for device in ("cpu", NPU):
        i, o = indices.clone().to(device), offsets.clone().to(device)
        warning = torch.zeros(1, dtype=torch.int64, device=device)
        torch.ops.fbgemm.bounds_check_indices(rows_per_table.to(device), i, o, mode, warning)
        results[device] = (i, o, warning)
    for actual, expected in zip(results[NPU], results["cpu"], strict=True):
        assert_same(actual, expected)


def test_bounds_check_indices_fatal_mode_raises() -> None:
    indices = npu(torch.tensor([1, 12, 0]))
    offsets = npu(torch.tensor([0, 2, 3]))
    warning = npu(torch.zeros(1, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="bounds_check_indices"):
        torch.ops.fbgemm.bounds_check_indices(
            npu(torch.tensor([10, 10])), indices, offsets, 0, warning
        )


# ---- mxrec::gather_for_rank1 and its backward ------------------------------------------------


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize(
    ("n", "index"),
    [
        (10, [1, 1, 3, 9, 0, 3, 3]),  # duplicates accumulate in the backward
        (5, []),
        (1, [0, 0, 0]),
        (300, list(range(299, -1, -3)) * 2),
    ],
)
def test_gather_for_rank1_forward_and_backward(
    dtype: torch.dtype, index_dtype: torch.dtype, n: int, index: list[int]
) -> None:
    x = values_of(n, dtype)
    idx = torch.tensor(index, dtype=index_dtype)
    floating = dtype.is_floating_point
    x_npu = npu(x).requires_grad_(floating)
    out = torch.ops.mxrec.gather_for_rank1(x_npu, npu(idx))
    assert_same(out, torch.index_select(x, 0, idx))
    if not floating:
        return
    grad = values_of(len(index), dtype) / 2
    out.backward(npu(grad))
    expected = torch.zeros_like(x).index_add_(0, idx.long(), grad)
    assert x_npu.grad is not None
    assert_same(x_npu.grad, expected)
    # The backward operator on its own, as mxrec declares it (returns a list).
    (direct,) = torch.ops.mxrec.index_select_for_rank1_backward(npu(grad), npu(x), npu(idx))
    assert_same(direct, expected)


# ---- clear errors before any kernel runs -----------------------------------------------------


def test_wrong_dtype_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"asynchronous_complete_cumsum: t_in must have dtype"):
        torch.ops.fbgemm.asynchronous_complete_cumsum(npu(torch.tensor([1.0, 2.0])))
    with pytest.raises(TypeError, match=r"gather_for_rank1: index must have dtype"):
        torch.ops.mxrec.gather_for_rank1(npu(torch.ones(3)), npu(torch.tensor([0.0])))


def test_cpu_tensor_among_npu_tensors_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"permute_2D_sparse_data: lengths must be an npu"):
        torch.ops.fbgemm.permute_2D_sparse_data(
            npu(torch.tensor([1, 0])), torch.tensor([[1], [2]]), npu(torch.tensor([1, 2, 3]))
        )
    with pytest.raises(RuntimeError, match=r"gather_for_rank1: index must be an npu tensor"):
        torch.ops.mxrec.gather_for_rank1(npu(torch.ones(3)), torch.tensor([0]))


def test_non_monotonic_offsets_are_refused() -> None:
    values = npu(torch.arange(6))
    bad = npu(torch.tensor([0, 4, 2, 6]))
    with pytest.raises(ValueError, match=r"offsets\[0\] must be non-decreasing.*\[2\] = 2"):
        torch.ops.fbgemm.jagged_to_padded_dense(values, [bad], [4])
    with pytest.raises(ValueError, match=r"dense_to_jagged: offsets\[0\] must be non-decreasing"):
        torch.ops.fbgemm.dense_to_jagged(npu(torch.zeros(3, 4)), [bad])


def test_bad_shapes_and_rows_are_refused() -> None:
    with pytest.raises(ValueError, match=r"asynchronous_complete_cumsum: t_in must be 1-D or 2-D"):
        torch.ops.fbgemm.asynchronous_complete_cumsum(npu(torch.ones(2, 2, 2, dtype=torch.int64)))
    with pytest.raises(ValueError, match=r"permute\[1\] = 5 is not a row of lengths"):
        torch.ops.fbgemm.permute_2D_sparse_data(
            npu(torch.tensor([0, 5])), npu(torch.tensor([[1], [2]])), npu(torch.arange(3))
        )
    with pytest.raises(ValueError, match=r"dense_to_jagged: offsets\[0\] must have shape \[B"):
        torch.ops.fbgemm.dense_to_jagged(npu(torch.zeros(3, 4)), [npu(torch.tensor([0, 1]))])


def test_index_out_of_range_stops_the_kernel() -> None:
    with pytest.raises(RuntimeError, match=r"gather_for_rank1"):
        torch.ops.mxrec.gather_for_rank1(npu(torch.ones(4)), npu(torch.tensor([0, 4])))


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_invert_permute_matches_fbgemm_cpu(dtype: torch.dtype, n: int) -> None:
    permute = torch.randperm(n, generator=torch.Generator().manual_seed(n)).to(dtype)
    assert_same(
        torch.ops.fbgemm.invert_permute(npu(permute)), torch.ops.fbgemm.invert_permute(permute)
    )
