"""GatherForRank1 on sim against torch.index_select."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import (  # noqa: E402
    SimError,
    gather_for_rank1,
)
from strategies import RANK1_CASE, VALUE_DTYPES, random_values  # noqa: E402


@settings(max_examples=120, deadline=None)
@given(
    m=st.one_of(st.integers(0, 10), st.integers(0, 5000)),
    dtype=st.sampled_from(VALUE_DTYPES),
    **RANK1_CASE,
)
def test_gather_matches_index_select(sim_ops, n, m, dtype, index_dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    x = random_values(gen, (n,), dtype)
    index = torch.randint(0, n, (m,), generator=gen).to(index_dtype)
    out, _ = gather_for_rank1(sim_ops, x, index, **platform)
    assert torch.equal(out, torch.index_select(x, 0, index))


@pytest.mark.parametrize("bad", [-1, 5, 1 << 40])
def test_gather_out_of_range_traps(sim_ops, bad) -> None:
    x = torch.arange(5.0)
    index = torch.tensor([0, bad, 2])
    with pytest.raises(SimError, match="trap"):
        gather_for_rank1(sim_ops, x, index)
    with pytest.raises(IndexError):
        torch.index_select(x, 0, index)
