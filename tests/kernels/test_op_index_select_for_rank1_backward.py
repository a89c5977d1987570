"""IndexSelectForRank1Backward (gather_for_rank1's gradient) on sim against torch's index_add_."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, index_select_for_rank1_backward  # noqa: E402
from strategies import RANK1_CASE, platforms, seeds  # noqa: E402

GRAD_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@settings(max_examples=120, deadline=None)
@given(
    m=st.one_of(st.integers(0, 10), st.integers(0, 6000)),
    dtype=st.sampled_from(GRAD_DTYPES),
    **RANK1_CASE,
)
def test_backward_duplicates_accumulate_exactly(
    sim_ops, n, m, dtype, index_dtype, platform, seed
) -> None:
    """Small integer gradients: every partial sum is exact in float32, so the result must equal
    index_add_ exactly whatever order cores add in (lost or doubled updates would show)."""
    gen = torch.Generator().manual_seed(seed)
    grad = torch.randint(-8, 9, (m,), generator=gen).to(dtype)
    x = torch.empty(n, dtype=dtype)
    index = torch.randint(0, n, (m,), generator=gen).to(index_dtype)
    out, _ = index_select_for_rank1_backward(sim_ops, grad, x, index, **platform)
    expected = torch.zeros(n, dtype=torch.float32).index_add_(0, index, grad.float()).to(dtype)
    assert torch.equal(out, expected)


@settings(max_examples=60, deadline=None)
@given(
    n=RANK1_CASE["n"],
    m=st.integers(0, 6000),
    dtype=st.sampled_from(GRAD_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_backward_random_gradients(sim_ops, n, m, dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    grad = torch.randn((m,), generator=gen).to(dtype)
    x = torch.empty(n, dtype=dtype)
    index = torch.randint(0, n, (m,), generator=gen)
    out, _ = index_select_for_rank1_backward(sim_ops, grad, x, index, **platform)
    exact = torch.zeros(n, dtype=torch.float64).index_add_(0, index, grad.double())
    # float32 sums in any order, rounded once to the output type.
    tol = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(
        out.double(), exact, rtol=tol, atol=tol * (1 + exact.abs().max().item())
    )
    assert torch.allclose(
        out.float(),
        torch.zeros(n).index_add_(0, index, grad.float()).to(dtype).float(),
        rtol=tol,
        atol=tol * 10,
    )


def test_backward_out_of_range_traps(sim_ops) -> None:
    with pytest.raises(SimError, match="trap"):
        index_select_for_rank1_backward(
            sim_ops, torch.ones(3), torch.empty(4), torch.tensor([0, 4, 1])
        )
