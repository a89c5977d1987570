"""ConcatSlab on sim against fbgemm_gpu's CPU merge_pooled_embeddings (at::cat of the list).

The driver does what the adapter does on the target device: one output, one launch per input at
its running offset along cat_dim (the cross-device moves before it are runtime copies, checked
through the adapter by verify/ops/test_npu_ops_merge.py).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import VALUE_DTYPES, platforms, random_values, seeds  # noqa: E402

CPU = torch.device("cpu")


def merge(ops, tensors: list[torch.Tensor], cat_dim: int, **launch):
    """merge_pooled_embeddings on one device: every input's slab written by its own launch."""
    shape = list(tensors[0].shape)
    shape[cat_dim] = sum(t.shape[cat_dim] for t in tensors)
    out = torch.full(shape, 7, dtype=tensors[0].dtype)  # no slab may be left unwritten
    results, offset = [], 0
    for t in tensors:
        results.append(ops("concat_slab").launch([arg(t), arg(out)], [cat_dim, offset], **launch))
        offset += t.shape[cat_dim]
    return out, results


def golden(tensors: list[torch.Tensor], cat_dim: int) -> torch.Tensor:
    uncat = tensors[0].shape[1 - cat_dim]
    return torch.ops.fbgemm.merge_pooled_embeddings(tensors, uncat, CPU, cat_dim)


def test_hand_example(sim_ops) -> None:
    """Two devices' pooled outputs of batch 2: columns side by side, or batches stacked."""
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = torch.tensor([[5.0], [6.0]])
    out, _ = merge(sim_ops, [a, b], 1)
    assert out.tolist() == [[1.0, 2.0, 5.0], [3.0, 4.0, 6.0]]
    c = torch.tensor([[7.0, 8.0]])
    out, _ = merge(sim_ops, [a, c], 0, min_core_bytes=1)
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0], [7.0, 8.0]]


@settings(max_examples=60, deadline=None)
@given(
    cat_dim=st.sampled_from([0, 1]),
    uncat=st.one_of(st.integers(0, 4), st.integers(1, 200)),
    sizes=st.lists(st.one_of(st.integers(0, 9), st.integers(1, 300)), min_size=1, max_size=8),
    dtype=st.sampled_from(VALUE_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, cat_dim, uncat, sizes, dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    tensors = [random_values(gen, (n, uncat) if cat_dim == 0 else (uncat, n), dtype) for n in sizes]
    got, _ = merge(sim_ops, tensors, cat_dim, **platform)
    want = golden(tensors, cat_dim)
    assert got.shape == want.shape and torch.equal(got, want)


def test_rows_wider_than_a_buffer(sim_ops) -> None:
    """A row longer than a copy buffer is cut into pieces, and a core's range may start and end
    inside rows."""
    gen = torch.Generator().manual_seed(5)
    tensors = [random_values(gen, (7, n), torch.float32) for n in (9000, 13, 12001)]
    got, _ = merge(sim_ops, tensors, 1, ub_bytes=40 * 1024, min_core_bytes=1)
    assert torch.equal(got, golden(tensors, 1))


def test_production_size(sim_ops) -> None:
    """8 devices' pooled outputs of a DLRM batch (B = 4096, 26 features of D = 64 sharded
    table-wise over 8 devices: 3 or 4 tables each) merged along dim 1: each element is read and
    written once, and the cores move equal amounts."""
    gen = torch.Generator().manual_seed(17)
    tables = [4, 3, 3, 3, 3, 3, 3, 4]
    tensors = [random_values(gen, (4096, 64 * t), torch.float32) for t in tables]
    got, results = merge(sim_ops, tensors, 1)
    assert torch.equal(got, golden(tensors, 1))
    for t, result in zip(tensors, results, strict=True):
        moved = 2 * t.numel() * 4
        traffic = sum(c["gm_read_bytes"] + c["gm_write_bytes"] for c in result.cores)
        assert traffic <= 1.01 * moved
        written = [c["gm_write_bytes"] for c in result.cores]
        assert max(written) <= 1.05 * sum(written) / len(written)


@pytest.mark.parametrize(
    ("x_shape", "y_shape", "cat_dim", "offset", "message"),
    [
        ((2, 3), (2, 5), 1, 3, "does not fit"),  # columns [3, 6) of 5
        ((2, 3), (2, 5), 1, -1, "does not fit"),
        ((2, 3), (3, 5), 1, 0, "size 2 in dim 0"),
        ((2, 3), (4, 4), 0, 0, "size 3 in dim 1"),
        ((2, 3), (4, 3), 2, 0, "cat_dim must be 0 or 1"),
    ],
)
def test_bad_slabs_are_refused(sim_ops, x_shape, y_shape, cat_dim, offset, message) -> None:
    x, y = torch.ones(x_shape), torch.zeros(y_shape)
    with pytest.raises(SimError, match=message):
        sim_ops("concat_slab").launch([arg(x), arg(y)], [cat_dim, offset])
    assert not y.any()
