"""OffsetsRange on sim against fbgemm_gpu's CPU offsets_range."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, lengths_lists, platforms  # noqa: E402

fbgemm = torch.ops.fbgemm


def offsets_range(ops, offsets, range_size, **launch):
    out = torch.empty(range_size, dtype=offsets.dtype)
    result = ops("offsets_range").launch([arg(offsets), arg(out)], [range_size], **launch)
    return out, result


def test_hand_example(sim_ops) -> None:
    # Segments [0, 2), [2, 2), [2, 5) and [5, 7): positions 0 1 | - | 0 1 2 | 0 1.
    out, _ = offsets_range(sim_ops, torch.tensor([0, 2, 2, 5]), 7)
    assert out.tolist() == [0, 1, 0, 1, 2, 0, 1]


@settings(max_examples=80, deadline=None)
@given(
    lengths=lengths_lists(max_batch=80, max_len=300),
    tail=st.integers(0, 40),
    dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
)
def test_matches_fbgemm(sim_ops, lengths, tail, dtype, platform) -> None:
    """The last segment runs to range_size (``tail`` positions past the last offset)."""
    if not lengths:
        lengths = [0]
    offsets = torch.tensor([0, *lengths[:-1]]).cumsum(0).to(dtype)
    size = sum(lengths) + tail
    want = fbgemm.offsets_range(offsets, size)
    got, _ = offsets_range(sim_ops, offsets, size, **platform)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_feature_processor_size(sim_ops) -> None:
    """A position-weighted feature of a B = 4096 batch: 100k ids in short segments, spread
    evenly over the cores, offsets read about once and the output written once."""
    gen = torch.Generator().manual_seed(9)
    lengths = torch.randint(0, 50, (4096,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
    size = int(lengths.sum())
    got, result = offsets_range(sim_ops, offsets, size)
    assert torch.equal(got, fbgemm.offsets_range(offsets, size))
    writes = [c["gm_write_bytes"] for c in result.cores]
    assert sum(writes) == size * 8 and max(writes) <= 1.05 * sum(writes) / len(writes)
    traffic = sum(writes) + sum(c["gm_read_bytes"] for c in result.cores)
    assert traffic <= 1.1 * (size + offsets.numel()) * 8


@pytest.mark.parametrize(
    ("offsets", "size"),
    [([1, 3], 5), ([0, 3, 2], 5), ([0, 3, 6], 5), ([], 3)],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_offsets_trap(sim_ops, offsets, size, platform) -> None:
    with pytest.raises(SimError, match="trap"):
        offsets_range(sim_ops, torch.tensor(offsets, dtype=torch.int64), size, **platform)
