"""SumStacked on sim against fbgemm_gpu's CPU sum_reduce_to_one.

The driver stacks the inputs into one [K, ...] tensor, as the adapter's runtime copies do on the
target device, and launches the kernel once.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import platforms, random_values, seeds  # noqa: E402

CPU = torch.device("cpu")
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def sum_stacked(ops, tensors: list[torch.Tensor], **launch):
    x = torch.stack(tensors)
    y = torch.full(tensors[0].shape, 7, dtype=x.dtype)
    result = ops("sum_stacked").launch([arg(x), arg(y)], **launch)
    return y, result


def golden(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.ops.fbgemm.sum_reduce_to_one(tensors, CPU)


def test_hand_example(sim_ops) -> None:
    a = torch.tensor([[1.0, -2.0], [0.5, 4.0]])
    b = torch.tensor([[10.0, 20.0], [30.0, 40.0]])
    c = torch.tensor([[0.25, 0.0], [-30.5, 1.0]])
    got, _ = sum_stacked(sim_ops, [a, b, c])
    assert got.tolist() == [[11.25, 18.0], [0.0, 45.0]]


def test_half_rounds_after_every_addition(sim_ops) -> None:
    """fbgemm's CPU op rounds each add_ to float16: 2048 + 1 + 1 stays 2048 there (the 1 is
    half an ulp, ties to even each time), where a float32 sum rounded once gives 2050."""
    tensors = [torch.full((3,), v, dtype=torch.float16) for v in (2048.0, 1.0, 1.0)]
    want = golden(tensors)
    assert want.tolist() == [2048.0] * 3
    got, _ = sum_stacked(sim_ops, tensors)
    assert torch.equal(got, want)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 9),
    shape=st.one_of(
        st.tuples(st.integers(0, 5), st.integers(1, 40)),
        st.tuples(st.integers(1, 70), st.integers(1, 300)),
        st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)),
    ),
    dtype=st.sampled_from(FLOAT_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, k, shape, dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    tensors = [random_values(gen, shape, dtype) for _ in range(k)]
    got, _ = sum_stacked(sim_ops, tensors, **platform)
    want = golden(tensors)
    assert got.shape == want.shape and torch.equal(got, want)


def test_production_size(sim_ops) -> None:
    """8 devices' row-wise partial sums of a DLRM batch's pooled output (B = 4096, 26 features
    of D = 64), summed onto one: K reads and one write per element, cores equally loaded."""
    gen = torch.Generator().manual_seed(23)
    tensors = [random_values(gen, (4096, 26 * 64), torch.float32) for _ in range(8)]
    got, result = sum_stacked(sim_ops, tensors)
    assert torch.equal(got, golden(tensors))
    minimum = 9 * tensors[0].numel() * 4
    traffic = sum(c["gm_read_bytes"] + c["gm_write_bytes"] for c in result.cores)
    assert traffic <= 1.01 * minimum
    written = [c["gm_write_bytes"] for c in result.cores]
    assert max(written) <= 1.05 * sum(written) / len(written)


def test_output_of_another_shape_is_refused(sim_ops) -> None:
    x = torch.ones(3, 4, 5)
    for y in (torch.zeros(4, 6), torch.zeros(20), torch.zeros(3, 4, 5)):
        with pytest.raises(SimError, match="shape without dim 0"):
            sim_ops("sum_stacked").launch([arg(x), arg(y)])
    with pytest.raises(SimError, match="dtype"):
        sim_ops("sum_stacked").launch([arg(x), arg(torch.zeros(4, 5, dtype=torch.float16))])
