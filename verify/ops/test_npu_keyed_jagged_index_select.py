"""fbgemm::keyed_jagged_index_select_dim1 on the npu device, through the installed adapter.

fbgemm-gpu-cpu registers only a Meta kernel for it, so results are compared with a plain-PyTorch
reference written from the operator's semantics (output bag (t, j) is input bag
(t, indices[j]) of every key t, values and weights in that order), with fbgemm's Meta kernel for
the output shapes, and, in torchrec's own call shape (one key: _permute_tensor_by_segments),
with fbgemm's CPU permute_1D_sparse_data, which torchrec calls for the same result on other
devices.
"""

from __future__ import annotations

import pytest
import torch

NPU = "npu"
I64 = torch.int64
pytestmark = [
    pytest.mark.requires_npu,
    pytest.mark.requires_npu_ops("fbgemm::keyed_jagged_index_select_dim1"),
]


def source_positions(lengths, offsets, indices, batch_size):
    """For every output element, its position in values (bag 0 starts at 0, as in fbgemm)."""
    keys = lengths.numel() // batch_size
    sel = (torch.arange(keys).view(-1, 1) * batch_size + indices.long().view(1, -1)).flatten()
    starts = offsets.long()[sel]
    starts[sel == 0] = 0
    out_lengths = lengths.long()[sel]
    before = torch.cat([torch.zeros(1, dtype=I64), out_lengths.cumsum(0)[:-1]])
    total = int(out_lengths.sum())
    return torch.repeat_interleave(starts - before, out_lengths) + torch.arange(total), sel


def reference(values, lengths, offsets, indices, batch_size, weights=None):
    pos, sel = source_positions(lengths, offsets, indices, batch_size)
    out = [values[pos], lengths[sel]]
    if weights is not None:
        out.append(weights[pos])
    return out


def run(values, lengths, offsets, indices, batch_size, weights=None, total=None):
    got = torch.ops.fbgemm.keyed_jagged_index_select_dim1(
        values.to(NPU),
        lengths.to(NPU),
        offsets.to(NPU),
        indices.to(NPU),
        batch_size,
        None if weights is None else weights.to(NPU),
        total,
    )
    assert all(x.device.type == NPU for x in got)
    meta = torch.ops.fbgemm.keyed_jagged_index_select_dim1(
        values.to("meta"),
        lengths.to("meta"),
        offsets.to("meta"),
        indices.to("meta"),
        batch_size,
        None if weights is None else weights.to("meta"),
        sum(int(x.numel()) for x in got[:1]),
    )
    assert [x.shape for x in got] == [x.shape for x in meta]
    assert [x.dtype for x in got] == [x.dtype for x in meta]
    return [x.cpu() for x in got]


def kjt(keys: int, batch: int, seed: int, len_dtype=I64, off_dtype=I64):
    gen = torch.Generator().manual_seed(seed)
    lengths = (torch.rand(keys * batch, generator=gen).pow(-1.0 / 1.2).long() - 1).clamp(max=60)
    offsets = torch.cat([torch.zeros(1, dtype=I64), lengths.cumsum(0)])
    n = int(lengths.sum())
    values = torch.randint(0, 1 << 40, (n,), generator=gen)
    weights = torch.rand(n, generator=gen)
    indices = torch.randint(0, batch, (batch,), generator=gen)
    return values, lengths.to(len_dtype), offsets.to(off_dtype), indices, weights


def test_hand_example() -> None:
    # Two keys, B = 3: key 0 bags [100, 101], [102], []; key 1 bags [103], [104, 105, 106], [].
    values = torch.arange(100, 107, dtype=I64)
    lengths = torch.tensor([2, 1, 0, 1, 3, 0])
    offsets = torch.tensor([0, 2, 3, 3, 4, 7, 7])
    weights = values.float() / 10
    got = run(values, lengths, offsets, torch.tensor([1, 0, 1]), 3, weights)
    assert got[0].tolist() == [102, 100, 101, 102, 104, 105, 106, 103, 104, 105, 106]
    assert got[1].tolist() == [1, 2, 1, 3, 1, 3]
    assert torch.equal(got[2], got[0].float() / 10)


@pytest.mark.parametrize(
    ("len_dtype", "off_dtype", "index_dtype", "weighted"),
    [
        (I64, I64, I64, True),
        (torch.int32, torch.int32, torch.int32, False),
        (torch.int32, I64, I64, True),  # mixed index dtypes run in int64
    ],
)
def test_matches_reference_at_scale(len_dtype, off_dtype, index_dtype, weighted) -> None:
    values, lengths, offsets, indices, weights = kjt(26, 1024, 7, len_dtype, off_dtype)
    w = weights if weighted else None
    got = run(values, lengths, offsets, indices.to(index_dtype), 1024, w)
    want = reference(values, lengths, offsets, indices, 1024, w)
    for g, x in zip(got, want, strict=True):
        assert g.dtype == x.dtype and torch.equal(g, x)


def test_torchrec_call_shape_matches_permute_1d() -> None:
    """torchrec's _permute_tensor_by_segments on cuda: one key, batch_size = the segments,
    offsets from asynchronous_complete_cumsum, selected_lengths_sum given; the other devices
    take fbgemm's permute_1D_sparse_data for the same result (its CPU kernel is the golden)."""
    values, lengths, _, _, weights = kjt(1, 4096, 3)
    recat = torch.randperm(4096, generator=torch.Generator().manual_seed(1))
    offsets = torch.ops.fbgemm.asynchronous_complete_cumsum(lengths)
    _, want_v, want_w = torch.ops.fbgemm.permute_1D_sparse_data(
        recat.int(), lengths.int(), values, weights, None
    )
    got = run(values, lengths, offsets, recat, lengths.numel(), weights, int(want_v.numel()))
    assert torch.equal(got[0], want_v) and torch.equal(got[2], want_w)
    assert torch.equal(got[1], lengths[recat])


def test_selected_lengths_sum_short_and_long() -> None:
    values, lengths, offsets, indices, _ = kjt(3, 64, 5)
    full = reference(values, lengths, offsets, indices, 64)[0]
    short = run(values, lengths, offsets, indices, 64, None, full.numel() - 5)[0]
    assert torch.equal(short, full[:-5])
    long = run(values, lengths, offsets, indices, 64, None, full.numel() + 5)[0]
    assert torch.equal(long[: full.numel()], full)


def test_autograd_sums_the_gradient_into_the_selected_values() -> None:
    values, lengths, offsets, indices, weights = kjt(4, 256, 9)
    x = torch.randn(values.numel(), dtype=torch.float32)
    xn = x.to(NPU).requires_grad_()
    out = torch.ops.fbgemm.keyed_jagged_index_select_dim1(
        xn, lengths.to(NPU), offsets.to(NPU), indices.to(NPU), 256, weights.to(NPU)
    )
    pos, _ = source_positions(lengths, offsets, indices, 256)
    assert torch.equal(out[0].detach().cpu(), x[pos])
    # Integer-valued gradients: the float32 sums are exact, so any order of additions agrees.
    grad = torch.randint(-8, 9, (pos.numel(),)).float()
    out[0].backward(grad.to(NPU))
    want = torch.zeros(values.numel(), dtype=torch.float64).index_add_(0, pos, grad.double())
    assert torch.equal(xn.grad.cpu().double(), want)
    assert int((want != 0).sum()) > 0 and indices.unique().numel() < indices.numel()


def test_bad_arguments_are_refused() -> None:
    values = torch.arange(4, dtype=I64).to(NPU)
    lengths = torch.ones(4, dtype=I64).to(NPU)
    offsets = torch.arange(5, dtype=I64).to(NPU)
    op = torch.ops.fbgemm.keyed_jagged_index_select_dim1
    with pytest.raises(ValueError, match="indices\\[1\\] = 2"):
        op(values, lengths, offsets, torch.tensor([0, 2]).to(NPU), 2)
    with pytest.raises(ValueError, match="indices\\[0\\] = -1"):
        op(values, lengths, offsets, torch.tensor([-1]).to(NPU), 2)
    with pytest.raises(ValueError, match="lengths size \\+ 1"):
        op(values, lengths, offsets[:4], torch.tensor([0]).to(NPU), 2)
    with pytest.raises(ValueError, match="multiple of batch_size"):
        op(values, lengths, offsets, torch.tensor([0]).to(NPU), 3)
    with pytest.raises(TypeError, match="weights"):
        op(values, lengths, offsets, torch.tensor([0]).to(NPU), 2, values.bfloat16())
    with pytest.raises(ValueError, match="inside values"):  # the kernel's trap
        op(values, lengths, torch.tensor([0, 1, 2, 4, 4]).to(NPU), torch.tensor([1]).to(NPU), 2)
