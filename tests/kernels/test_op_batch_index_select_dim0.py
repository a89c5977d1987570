"""BatchIndexSelectDim0 (and its backward) on sim against fbgemm's batch_index_select_dim0 (CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
fbgemm_gpu = pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, platforms, seeds  # noqa: E402

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def descriptors(num: list[int], rows: list[int], cols: list[int], permute: bool) -> torch.Tensor:
    """What the adapter builds from fbgemm's host lists: [T, 8] int64 per table."""
    out, in_off, idx_off, out_off, col_off = [], 0, 0, 0, 0
    total_cols = sum(cols)
    for n, r, c in zip(num, rows, cols, strict=True):
        start, stride = (col_off, total_cols) if permute else (out_off, c)
        out.append([in_off, r, c, idx_off, n, start, stride, 0])
        in_off += r * c
        idx_off += n
        out_off += n * c
        col_off += c
    return torch.tensor(out, dtype=torch.int64)


def select(ops, inputs, indices, num, rows, cols, permute=False, **launch):
    tables = descriptors(num, rows, cols, permute)
    out = torch.empty(sum(n * c for n, c in zip(num, cols, strict=True)), dtype=inputs.dtype)
    result = ops("batch_index_select_dim0").launch(
        [arg(inputs), arg(indices), arg(tables), arg(out)], [out.numel()], **launch
    )
    return out, result


def select_backward(ops, grad, indices, num, rows, cols, permute=False, **launch):
    tables = descriptors(num, rows, cols, permute)
    grad_inputs = torch.zeros(sum(r * c for r, c in zip(rows, cols, strict=True)), dtype=grad.dtype)
    result = ops("batch_index_select_dim0_backward").launch(
        [arg(grad), arg(indices), arg(tables), arg(grad_inputs)], **launch
    )
    return grad_inputs, result


def zipf_indices(gen: torch.Generator, rows: int, n: int) -> torch.Tensor:
    """Indices with the repeats users see: P(row r) ~ 1 / (r + 1)."""
    weights = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64)
    return torch.multinomial(weights, n, replacement=True, generator=gen)


def test_hand_worked_example(sim_ops) -> None:
    # Table 0: [[0, 1], [2, 3], [4, 5]], table 1: [[10, 11, 12], [13, 14, 15]].
    inputs = torch.tensor([0.0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15])
    indices = torch.tensor([2, 0, 1, 1, 0, 1])
    out, _ = select(sim_ops, inputs, indices, [3, 3], [3, 2], [2, 3])
    assert out.tolist() == [4, 5, 0, 1, 2, 3, 13, 14, 15, 10, 11, 12, 13, 14, 15]
    out, _ = select(sim_ops, inputs, indices, [3, 3], [3, 2], [2, 3], permute=True)
    assert out.tolist() == [4, 5, 13, 14, 15, 0, 1, 10, 11, 12, 2, 3, 13, 14, 15]
    grad = torch.arange(15.0)
    g, _ = select_backward(sim_ops, grad, indices, [3, 3], [3, 2], [2, 3])
    # Row 1 of table 1 is selected twice: its gradient is the sum of both output rows.
    assert g.tolist() == [2, 3, 4, 5, 0, 1, 9, 10, 11, 6 + 12, 7 + 13, 8 + 14]


@st.composite
def batches(draw: st.DrawFn):
    t = draw(st.integers(1, 6))
    permute = draw(st.booleans())
    if permute:
        num = [draw(st.integers(1, 300))] * t
    else:
        num = [draw(st.integers(1, 300)) for _ in range(t)]
    rows = [draw(st.integers(1, 500)) for _ in range(t)]
    cols = [draw(st.sampled_from([1, 3, 8, 16, 64, 100, 128])) for _ in range(t)]
    return num, rows, cols, permute


@settings(max_examples=50, deadline=None)
@given(
    case=batches(),
    dtype=st.sampled_from(FLOAT_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm_forward_and_backward(
    sim_ops, case, dtype, index_dtype, platform, seed
) -> None:
    num, rows, cols, permute = case
    gen = torch.Generator().manual_seed(seed)
    inputs = torch.randn(sum(r * c for r, c in zip(rows, cols, strict=True)), generator=gen) * 50
    inputs = inputs.round().to(dtype)
    indices = torch.cat([zipf_indices(gen, r, n) for r, n in zip(rows, num, strict=True)])
    indices = indices.to(index_dtype)
    leaf = inputs.clone().requires_grad_()
    want = torch.ops.fbgemm.batch_index_select_dim0(leaf, indices, num, rows, cols, permute)
    out, _ = select(sim_ops, inputs, indices, num, rows, cols, permute, **platform)
    assert torch.equal(out, want.detach())
    # Integer gradients: sums of repeats are exact in every dtype and every order of additions.
    grad = (torch.randint(-8, 9, want.shape, generator=gen)).to(dtype)
    want.backward(grad)
    got, _ = select_backward(sim_ops, grad, indices, num, rows, cols, permute, **platform)
    assert torch.equal(got, leaf.grad)


def test_out_of_range_index_traps(sim_ops) -> None:
    inputs = torch.zeros(6)
    for bad in (-1, 3):
        indices = torch.tensor([0, bad])
        with pytest.raises(SimError, match="trap"):
            select(sim_ops, inputs, indices, [2], [3], [2])
        with pytest.raises(SimError, match="trap"):
            select_backward(sim_ops, torch.zeros(4), indices, [2], [3], [2])


def test_production_size_traffic(sim_ops) -> None:
    """26 tables of 4096 rows x D = 128, B = 2048 Zipf indices each, interleaved output:
    forward traffic near the minimum, balanced over the cores."""
    t, rows, d, b = 26, 4096, 128, 2048
    gen = torch.Generator().manual_seed(3)
    inputs = torch.randn(t * rows * d, generator=gen)
    indices = torch.cat([zipf_indices(gen, rows, b) for _ in range(t)])
    num, rs, cs = [b] * t, [rows] * t, [d] * t
    out, result = select(sim_ops, inputs, indices, num, rs, cs, True)
    want = torch.ops.fbgemm.batch_index_select_dim0(inputs, indices, num, rs, cs, True)
    assert torch.equal(out, want)
    minimum = indices.numel() * 8 + 2 * out.numel() * 4
    assert result.gm_bytes <= 1.02 * minimum
    assert result.balance() <= 1.1
