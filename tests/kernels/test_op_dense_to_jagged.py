"""DenseToJagged on sim against fbgemm_gpu's CPU operator (and the user document's 2-D example)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import dense_to_jagged  # noqa: E402
from strategies import INDEX_DTYPES, VALUE_DTYPES, lengths_lists, platforms, random_values, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def test_seed_document_example(sim_ops) -> None:
    dense_tensor = torch.tensor(
        [  # 定义一个已经填充好的稠密张量
            [1, 2, 0, 0, 0, 0, 0, 0, 0, 0],  # 序列1:实际长度2
            [3, 4, 5, 0, 0, 0, 0, 0, 0, 0],  # 序列2:实际长度3
            [6, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # 序列3:实际长度1
        ]
    )
    x_offsets = torch.tensor([0, 2, 5, 6])  # 每个序列的偏移量
    recovered_values, _ = dense_to_jagged(sim_ops, dense_tensor, x_offsets)
    assert recovered_values.tolist() == [1, 2, 3, 4, 5, 6]
    assert recovered_values.dtype == dense_tensor.dtype


def reference(dense: torch.Tensor, offsets: torch.Tensor, total_l: int) -> torch.Tensor:
    """fbgemm's result. fbgemm writes past its output when total_L < offsets[-1] (heap
    corruption on 1.1.0 CPU), so it is asked for offsets[-1] rows and cut or zero-extended."""
    dense3 = dense if dense.dim() == 3 else dense.unsqueeze(-1)
    full = fbgemm.dense_to_jagged(dense3, [offsets])[0]
    out = torch.zeros((total_l, dense3.shape[2]), dtype=dense.dtype)
    keep = min(total_l, full.shape[0])
    out[:keep] = full[:keep]
    return out if dense.dim() == 3 else out.squeeze(-1)


@settings(max_examples=120, deadline=None)
@given(
    lengths=lengths_lists(),
    max_length=st.integers(0, 50),
    inner=st.one_of(st.none(), st.integers(0, 3), st.integers(1, 40)),
    base=st.one_of(st.just(0), st.integers(0, 10)),
    extra_rows=st.one_of(st.just(None), st.integers(-10, 10)),
    dtype=st.sampled_from(VALUE_DTYPES),
    offset_dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(
    sim_ops, lengths, max_length, inner, base, extra_rows, dtype, offset_dtype, platform, seed
) -> None:
    gen = torch.Generator().manual_seed(seed)
    offsets = (base + torch.tensor([0, *lengths], dtype=torch.int64).cumsum(0)).to(offset_dtype)
    b = len(lengths)
    dense = random_values(gen, (b, max_length) if inner is None else (b, max_length, inner), dtype)
    total_l = None if extra_rows is None else max(0, int(offsets[-1]) + extra_rows)
    values, _ = dense_to_jagged(sim_ops, dense, offsets, total_l, **platform)
    expected = reference(dense, offsets, int(offsets[-1]) if total_l is None else total_l)
    assert torch.equal(values, expected)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int32])
def test_segments_longer_than_the_buffers(sim_ops, dtype) -> None:
    gen = torch.Generator().manual_seed(6)
    lengths = torch.tensor([0, 300, 7, 129, 0, 250])
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    dense = random_values(gen, (6, 260, 333), dtype)
    values, result = dense_to_jagged(
        sim_ops, dense, offsets, None, min_core_bytes=1, ub_bytes=24 * 1024
    )
    assert result.block_dim == 48
    assert torch.equal(values, reference(dense, offsets, int(offsets[-1])))
