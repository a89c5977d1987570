"""Permute2dSparseData on sim against fbgemm_gpu's CPU permute_2D_sparse_data."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import permute_2d  # noqa: E402
from strategies import INDEX_DTYPES, VALUE_DTYPES, platforms, random_values, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm
WEIGHT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def test_seed_document_example(sim_ops) -> None:
    lengths = torch.tensor([2, 3, 1, 4])  # 每个样本的特征数量
    indices = torch.tensor([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])  # 特征索引
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])  # 特征权重
    permute = torch.tensor([3, 1, 0, 2])
    (permuted_lengths, permuted_indices, permuted_weights), _ = permute_2d(
        sim_ops, permute, lengths, indices, weights
    )
    assert permuted_lengths.tolist() == [4, 3, 2, 1]
    assert permuted_indices.tolist() == [70, 80, 90, 100, 30, 40, 50, 10, 20, 60]
    assert permuted_weights.tolist() == [7.0, 8.0, 9.0, 10.0, 3.0, 4.0, 5.0, 1.0, 2.0, 6.0]


def reference(permute, lengths, values, weights, total):
    """fbgemm needs int32 permute and 2-D lengths, handles only fp32 1-D weights, and overruns
    its output when permuted_lengths_sum exceeds the permuted total; so lengths and values come
    from fbgemm (cut or zero-extended to ``total``) and weights are permuted here, checked
    against fbgemm where it supports them."""
    rows = lengths if lengths.dim() == 2 else lengths.view(-1, 1)
    pl, pv, _ = fbgemm.permute_2D_sparse_data(permute.to(torch.int32), rows, values, None)
    pw = None
    if weights is not None:
        starts = torch.cat([torch.zeros(1, dtype=torch.int64), rows.sum(1).cumsum(0)])
        parts = [weights[starts[t] : starts[t + 1]] for t in permute.tolist()]
        pw = torch.cat(parts) if parts else weights[:0]
        if weights.dim() == 1 and weights.dtype == torch.float32:
            fb = fbgemm.permute_2D_sparse_data(permute.to(torch.int32), rows, values, weights)[2]
            assert torch.equal(fb, pw)

    def fit(t):
        out = torch.zeros((total, *t.shape[1:]), dtype=t.dtype)
        keep = min(total, t.shape[0])
        out[:keep] = t[:keep]
        return out

    pl = pl.reshape(permute.numel(), *lengths.shape[1:])
    return pl, fit(pv), None if pw is None else fit(pw)


@settings(max_examples=120, deadline=None)
@given(
    t=st.integers(0, 12),
    b=st.one_of(st.none(), st.integers(0, 4), st.integers(1, 60)),
    permute_len=st.one_of(st.none(), st.integers(0, 16)),
    value_dtype=st.sampled_from(VALUE_DTYPES),
    perm_dtype=st.sampled_from(INDEX_DTYPES),
    len_dtype=st.sampled_from(INDEX_DTYPES),
    weights=st.sampled_from([None, 1, 3]),
    weight_dtype=st.sampled_from(WEIGHT_DTYPES),
    extra=st.one_of(st.none(), st.integers(-20, 20)),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(
    sim_ops,
    t,
    b,
    permute_len,
    value_dtype,
    perm_dtype,
    len_dtype,
    weights,
    weight_dtype,
    extra,
    platform,
    seed,
) -> None:
    gen = torch.Generator().manual_seed(seed)
    shape = (t,) if b is None else (t, b)
    lengths = torch.randint(0, 12, shape, generator=gen).to(len_dtype)
    n = int(lengths.sum())
    values = random_values(gen, (n,), value_dtype)
    w = None
    if weights is not None:
        w = random_values(gen, (n,) if weights == 1 else (n, weights), weight_dtype)
    if t == 0:
        permute = torch.zeros(0, dtype=perm_dtype)
    elif permute_len is None:
        permute = torch.randperm(t, generator=gen).to(perm_dtype)
    else:  # a subset with repeats
        permute = torch.randint(0, t, (permute_len,), generator=gen).to(perm_dtype)
    rows = lengths if lengths.dim() == 2 else lengths.view(-1, 1)
    natural = int(rows.sum(1)[permute.long()].sum()) if permute.numel() else 0
    total = natural if extra is None else max(0, natural + extra)
    outs, _ = permute_2d(sim_ops, permute, lengths, values, w, total, **platform)
    expected = reference(permute, lengths, values, w, total)
    for got, want in zip(outs, expected, strict=True):
        if want is None:
            assert got is None
        else:
            assert got.shape == want.shape and torch.equal(got, want)


def test_long_rows(sim_ops) -> None:
    """Rows of lengths longer than the unified-buffer row block are summed chunk by chunk."""
    lengths = torch.randint(0, 3, (5, 5000), dtype=torch.int64)
    values = torch.arange(int(lengths.sum()), dtype=torch.int64)
    permute = torch.tensor([4, 0, 0, 2], dtype=torch.int32)
    outs, _ = permute_2d(sim_ops, permute, lengths, values, min_core_bytes=1, ub_bytes=48 * 1024)
    expected = reference(permute, lengths, values, None, outs[1].shape[0])
    assert torch.equal(outs[0], expected[0]) and torch.equal(outs[1], expected[1])


def test_long_segments_with_2d_weights(sim_ops) -> None:
    gen = torch.Generator().manual_seed(7)
    lengths = torch.randint(0, 4000, (6, 3), generator=gen)
    n = int(lengths.sum())
    values = random_values(gen, (n,), torch.float16)
    weights = random_values(gen, (n, 5), torch.float32)
    permute = torch.tensor([5, 2, 2, 0, 4], dtype=torch.int64)
    outs, result = permute_2d(
        sim_ops, permute, lengths, values, weights, min_core_bytes=1, ub_bytes=48 * 1024
    )
    assert result.block_dim == 48
    expected = reference(permute, lengths, values, weights, outs[1].shape[0])
    assert all(torch.equal(got, want) for got, want in zip(outs, expected, strict=True))
