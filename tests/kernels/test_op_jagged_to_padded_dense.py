"""JaggedToPaddedDense on sim against fbgemm_gpu's CPU operator."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import jagged_to_padded_dense  # noqa: E402
from strategies import INDEX_DTYPES, VALUE_DTYPES, lengths_lists, platforms, random_values, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def test_seed_document_example(sim_ops) -> None:
    values = torch.tensor([1, 2, 3, 4, 5, 6])  # 所有序列的值
    x_offsets = torch.tensor([0, 2, 5, 6])  # 每个序列的偏移量,shape=[B+1]
    n = 50  # 表示dense数组的长度
    result, _ = jagged_to_padded_dense(sim_ops, values, x_offsets, n)  # 默认补0
    assert result.shape == torch.Size([3, 50])
    assert result[:, :3].tolist() == [[1, 2, 0], [3, 4, 5], [6, 0, 0]]
    assert int(result[:, 3:].abs().sum()) == 0
    assert torch.equal(result, fbgemm.jagged_to_padded_dense(values, [x_offsets], [n]))


@settings(max_examples=120, deadline=None)
@given(
    lengths=lengths_lists(),
    max_length=st.integers(0, 70),
    inner=st.one_of(st.none(), st.integers(0, 3), st.integers(1, 40)),
    dtype=st.sampled_from(VALUE_DTYPES),
    offset_dtype=st.sampled_from(INDEX_DTYPES),
    padding=st.sampled_from([0.0, -1.0, 2.5, 7.0, -123456.0, 1e6 + 1]),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(
    sim_ops, lengths, max_length, inner, dtype, offset_dtype, padding, platform, seed
) -> None:
    # fbgemm refuses a padding value float16 cannot hold (the kernel would pad with inf).
    assume(dtype != torch.float16 or abs(padding) <= 65504)
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.tensor([0, *lengths], dtype=torch.int64).cumsum(0).to(offset_dtype)
    total = int(offsets[-1])
    values = random_values(gen, (total,) if inner is None else (total, inner), dtype)
    out, _ = jagged_to_padded_dense(sim_ops, values, offsets, max_length, padding, **platform)
    expected = fbgemm.jagged_to_padded_dense(values, [offsets], [max_length], padding)
    assert out.shape == expected.shape
    assert torch.equal(out, expected)


def test_int64_padding_is_exact(sim_ops) -> None:
    values = torch.tensor([1, 2, 3], dtype=torch.int64)
    offsets = torch.tensor([0, 1, 3])
    pad = float(2**40 + 3)
    out, _ = jagged_to_padded_dense(sim_ops, values, offsets, 4, pad)
    assert torch.equal(out, fbgemm.jagged_to_padded_dense(values, [offsets], [4], pad))


def test_offsets_outside_values_are_clamped(sim_ops) -> None:
    """fbgemm reads past values here; the kernel clamps to the values it was given."""
    values = torch.arange(6.0)
    offsets = torch.tensor([0, 2, 5, 9])
    out, _ = jagged_to_padded_dense(sim_ops, values, offsets, 3, -1.0)
    assert out.tolist() == [[0.0, 1.0, -1.0], [2.0, 3.0, 4.0], [5.0, -1.0, -1.0]]


def test_rejects_bad_arguments(sim_ops) -> None:
    from kernel_testlib import SimError, arg

    op = sim_ops("jagged_to_padded_dense")
    values = torch.arange(6.0)
    offsets = torch.tensor([0, 2, 6])
    out = torch.empty((2, 3))
    with pytest.raises(SimError, match="max_length must be >= 0"):
        op.launch([arg(values), arg(offsets), arg(out)], [-1, 0.0, 0])
    with pytest.raises(SimError, match=r"shape \[B, max_length\] = \[2, 4\], got \[2, 3\]"):
        op.launch([arg(values), arg(offsets), arg(out)], [4, 0.0, 0])
    with pytest.raises(SimError, match="input 'offsets' has dtype float32"):
        op.launch([arg(values), arg(offsets.float()), arg(out)], [3, 0.0, 0])


@pytest.mark.parametrize("dtype", [torch.float16, torch.int64])
def test_segments_longer_than_the_buffers(sim_ops, dtype) -> None:
    """Copies and padding runs span many UB chunks (small UB, every core busy)."""
    gen = torch.Generator().manual_seed(5)
    lengths = torch.tensor([0, 300, 7, 129, 0, 250])
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    values = random_values(gen, (int(offsets[-1]), 333), dtype)
    out, result = jagged_to_padded_dense(
        sim_ops, values, offsets, 260, 3.0, min_core_bytes=1, ub_bytes=24 * 1024
    )
    assert result.block_dim == 48
    assert torch.equal(out, fbgemm.jagged_to_padded_dense(values, [offsets], [260], 3.0))
