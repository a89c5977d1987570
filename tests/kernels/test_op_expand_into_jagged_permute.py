"""ExpandIntoJaggedPermute on sim against fbgemm_gpu's CPU expand_into_jagged_permute."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, lengths_lists, platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def expand(ops, permute, input_offset, output_offset, output_size, **launch):
    out = torch.empty(output_size, dtype=permute.dtype)
    tensors = [arg(permute), arg(input_offset), arg(output_offset), arg(out)]
    result = ops("expand_into_jagged_permute").launch(tensors, [output_size], **launch)
    return out, result


def complete(lengths: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.zeros(1, dtype=lengths.dtype), lengths.cumsum(0).to(lengths.dtype)])


def case(lengths: list[int], gen: torch.Generator, dtype: torch.dtype):
    """TorchRec's recat: segments of an all-to-all's input reordered, each keeping its length."""
    lens = torch.tensor(lengths, dtype=torch.int64)
    permute = torch.randperm(len(lengths), generator=gen)
    input_offset = complete(lens)
    output_offset = complete(lens[permute])
    return permute.to(dtype), input_offset.to(dtype), output_offset.to(dtype)


def test_hand_example(sim_ops) -> None:
    # Input segments [0, 2) and [2, 5); output segment 0 is input 1 (3 long), then input 0.
    args = (torch.tensor([1, 0]), torch.tensor([0, 2, 5]), torch.tensor([0, 3, 5]))
    out, _ = expand(sim_ops, *args, 5)
    assert out.tolist() == [2, 3, 4, 0, 1]


@settings(max_examples=80, deadline=None)
@given(
    lengths=lengths_lists(max_batch=80, max_len=200).filter(bool),
    dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, lengths, dtype, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    permute, input_offset, output_offset = case(lengths, gen, dtype)
    size = int(output_offset[-1])
    want = fbgemm.expand_into_jagged_permute(permute, input_offset, output_offset, size)
    got, _ = expand(sim_ops, permute, input_offset, output_offset, size, **platform)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_recat_size(sim_ops) -> None:
    """A variable-batch KJT all-to-all's recat: 64 ranks x 26 features of a few hundred ids,
    spread evenly over the cores, the output written once."""
    gen = torch.Generator().manual_seed(4)
    lengths = torch.randint(0, 600, (64 * 26,), generator=gen).tolist()
    permute, input_offset, output_offset = case(lengths, gen, torch.int32)
    size = int(output_offset[-1])
    got, result = expand(sim_ops, permute, input_offset, output_offset, size)
    assert torch.equal(
        got, fbgemm.expand_into_jagged_permute(permute, input_offset, output_offset, size)
    )
    writes = [c["gm_write_bytes"] for c in result.cores]
    assert sum(writes) == size * 4 and max(writes) <= 1.05 * sum(writes) / len(writes)
    traffic = sum(writes) + sum(c["gm_read_bytes"] for c in result.cores)
    assert traffic <= 1.1 * (size + 3 * len(lengths)) * 4


@pytest.mark.parametrize(
    ("permute", "output_offset", "size"),
    [
        ([1, 2], [0, 3, 5], 5),  # no input segment 2
        ([1, 0], [0, 3, 2], 2),  # decreasing
        ([1, 0], [1, 3, 5], 5),  # not from 0
        ([1, 0], [0, 3, 5], 7),  # output_size past the last segment
    ],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_arguments_trap(sim_ops, permute, output_offset, size, platform) -> None:
    with pytest.raises(SimError, match="trap"):
        expand(
            sim_ops,
            torch.tensor(permute),
            torch.tensor([0, 2, 5]),
            torch.tensor(output_offset),
            size,
            **platform,
        )
