"""Hypothesis strategies shared by the operator tests."""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from kernel_testlib import PLATFORMS

VALUE_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]
INDEX_DTYPES = [torch.int32, torch.int64]

platforms = st.sampled_from(PLATFORMS)


def random_values(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Distinct-looking values of every kind: large int64s, negative numbers, fractions."""
    if dtype == torch.int64:
        return torch.randint(-(1 << 62), 1 << 62, shape, generator=gen, dtype=torch.int64)
    if dtype == torch.int32:
        return torch.randint(-(1 << 31), (1 << 31) - 1, shape, generator=gen, dtype=torch.int32)
    return (torch.randn(shape, generator=gen) * 100).to(dtype)


@st.composite
def lengths_lists(draw: st.DrawFn, max_batch: int = 40, max_len: int = 60) -> list[int]:
    """Lengths with empty batches, zero-length rows and a few long ones."""
    b = draw(st.integers(0, max_batch))
    small = st.integers(0, 5)
    return draw(st.lists(st.one_of(small, small, st.integers(0, max_len)), min_size=b, max_size=b))


seeds = st.integers(0, 2**31 - 1)

# The rank-1 gather operators (gather_for_rank1 and its backward): x sizes of a few elements
# (many duplicates), UB-resident, and larger than any unified buffer; the index dtype, the
# platform and the seed. The tests add the output size m and the value dtype.
RANK1_CASE = dict(
    n=st.one_of(st.integers(1, 8), st.integers(1, 3000), st.integers(60_000, 70_000)),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
    seed=seeds,
)
