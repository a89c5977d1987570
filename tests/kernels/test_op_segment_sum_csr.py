"""SegmentSumCsr on sim against fbgemm_gpu's CPU segment_sum_csr."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import VALUE_DTYPES, lengths_lists, platforms, random_values, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def segment_sum_csr(ops, batch_size, csr_seg, values, **launch):
    out = torch.empty(csr_seg.numel() - 1, dtype=values.dtype)
    result = ops("segment_sum_csr").launch(
        [arg(csr_seg), arg(values), arg(out)], [batch_size], **launch
    )
    return out, result


def csr_of(lengths: list[int]) -> torch.Tensor:
    return torch.tensor([0, *torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist()]).int()


def test_hand_example(sim_ops) -> None:
    # Segments of 1, 2, 0 and 3 units of 2 values: [1+2], [3+4+5+6], [], [7+...+12].
    values = torch.arange(1, 13, dtype=torch.int64)
    out, _ = segment_sum_csr(sim_ops, 2, torch.tensor([0, 1, 3, 3, 6], dtype=torch.int32), values)
    assert out.tolist() == [3, 18, 0, 57]


@settings(max_examples=80, deadline=None)
@given(
    lengths=lengths_lists(max_batch=60, max_len=40),
    batch_size=st.sampled_from([0, 1, 1, 2, 5]),
    spare=st.integers(0, 7),
    shape2d=st.booleans(),
    dtype=st.sampled_from(VALUE_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(
    sim_ops, lengths, batch_size, spare, shape2d, dtype, platform, seed
) -> None:
    """Bit for bit, floats included: fbgemm's order and rounding (16-bit floats round after
    every addition). Values may run past the last segment, and are read flat."""
    gen = torch.Generator().manual_seed(seed)
    csr = csr_of(lengths)
    n = int(csr[-1]) * batch_size + spare
    values = random_values(gen, (n,), dtype)
    if dtype == torch.int32:
        values = values // 4  # the CPU's int32 sum is undefined on overflow
    if shape2d and n % 2 == 0:
        values = values.view(2, -1)
    want = fbgemm.segment_sum_csr(batch_size, csr, values)
    got, _ = segment_sum_csr(sim_ops, batch_size, csr, values, **platform)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_thousands_of_segments_spread_over_the_cores(sim_ops) -> None:
    """TorchRec's length_per_key of a variable-batch KJT: 3000 keys of uneven strides; the
    cores share the values evenly, and each value is read once."""
    gen = torch.Generator().manual_seed(5)
    strides = torch.randint(1, 400, (3000,), generator=gen).tolist()
    csr = csr_of(strides)
    lengths = torch.randint(0, 20, (int(csr[-1]),), generator=gen, dtype=torch.int64)
    got, result = segment_sum_csr(sim_ops, 1, csr, lengths)
    assert torch.equal(got, fbgemm.segment_sum_csr(1, csr, lengths))
    assert result.block_dim > 1
    reads = [c["gm_read_bytes"] for c in result.cores]
    assert sum(reads) <= 1.02 * (lengths.numel() * 8 + csr.numel() * 4)
    assert max(reads) <= 1.2 * sum(reads) / len(reads)


@pytest.mark.parametrize(
    ("csr", "batch_size", "n"),
    [
        ([0, 3, 2, 5], 1, 5),  # decreasing
        ([0, 2, 5], 2, 9),  # the last segment ends past values
        ([-1, 2, 5], 1, 5),  # starts before values
    ],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_offsets_trap(sim_ops, csr, batch_size, n, platform) -> None:
    with pytest.raises(SimError, match="trap"):
        segment_sum_csr(
            sim_ops, batch_size, torch.tensor(csr, dtype=torch.int32), torch.ones(n), **platform
        )
