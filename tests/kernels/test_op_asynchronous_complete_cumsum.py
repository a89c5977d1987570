"""AsynchronousCompleteCumsum on sim against fbgemm_gpu's CPU operator."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import complete_cumsum  # noqa: E402
from strategies import INDEX_DTYPES, platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def test_seed_document_example(sim_ops) -> None:
    lengths = torch.tensor([2, 3, 1, 4], dtype=torch.int32)  # 每个序列的长度
    cumsum_result, _ = complete_cumsum(sim_ops, lengths)
    assert cumsum_result.dtype == torch.int32
    assert cumsum_result.shape == torch.Size([5])
    assert cumsum_result.tolist() == [0, 2, 5, 6, 10]


@settings(max_examples=120, deadline=None)
@given(
    n=st.one_of(st.integers(0, 8), st.integers(0, 3000)),
    rows=st.one_of(st.none(), st.integers(0, 6), st.integers(0, 400)),
    dtype=st.sampled_from(INDEX_DTYPES),
    big=st.booleans(),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, n, rows, dtype, big, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    shape = (n,) if rows is None else (rows, n)
    hi = (1 << 31) - 1 if dtype == torch.int32 else 1 << 40
    x = torch.randint(-hi if big else 0, hi if big else 50, shape, generator=gen, dtype=dtype)
    y, _ = complete_cumsum(sim_ops, x, **platform)
    # int32 sums wrap exactly as fbgemm's (two's complement) when values are large.
    assert torch.equal(y, fbgemm.asynchronous_complete_cumsum(x))


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_many_steps_on_all_cores(sim_ops, dtype) -> None:
    """Long rows scanned in several SyncAll steps by every core (small UB forces many steps)."""
    x = torch.randint(0, 1000, (250_000,), dtype=dtype)
    y, result = complete_cumsum(sim_ops, x, min_core_bytes=1, ub_bytes=16 * 1024)
    assert torch.equal(y, fbgemm.asynchronous_complete_cumsum(x))
    assert result.block_dim == 48 and result.cores[0]["sync_all"] > 1


def test_rows_strategy(sim_ops) -> None:
    x = torch.randint(0, 9, (1000, 37), dtype=torch.int64)
    y, result = complete_cumsum(sim_ops, x)
    assert result.tiling_key == 2
    assert torch.equal(y, fbgemm.asynchronous_complete_cumsum(x))
