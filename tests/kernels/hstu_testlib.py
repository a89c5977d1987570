"""What the HSTU operator tests share (test_op_hstu_dense_forward.py and _backward.py): problem
strategies, random inputs, the platforms and the attribute encodings."""

from __future__ import annotations

import torch
from hstu_ref import CUSTOM, JAGGED, NORMAL
from hypothesis import strategies as st
from kernel_testlib import PLATFORMS

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAYOUT_CODE = {NORMAL: 0, JAGGED: 1}
# The shared platforms (every core busy, small unified buffers, 3 AI cores, Ascend910B3) and a
# unified buffer so small that a vector pass holds two score rows.
HSTU_PLATFORMS = st.sampled_from([*PLATFORMS, {"min_core_bytes": 1, "ub_bytes": 24 * 1024}])


def random_inputs(gen, shape, dtype, heads, batch, max_seq_len, mask_type, with_bias):
    q, k, v = (torch.empty(shape).uniform_(-1, 1, generator=gen).to(dtype) for _ in range(3))
    square = (batch, heads, max_seq_len, max_seq_len)
    mask = None
    if mask_type == CUSTOM:
        # Multiplicative, not boolean: 0, 1 and fractions.
        mask = (torch.randint(0, 3, square, generator=gen) / 2.0).to(dtype)
    bias = torch.empty(square).uniform_(-1, 1, generator=gen).to(dtype) if with_bias else None
    return q, k, v, mask, bias


def offsets_of(lengths, trailing=0):
    off = [0]
    for n in lengths:
        off.append(off[-1] + n)
    return off + [off[-1]] * trailing


@st.composite
def problems(draw: st.DrawFn) -> dict:
    layout = draw(st.sampled_from([NORMAL, JAGGED]))
    heads = draw(st.sampled_from([1, 1, 2, 3]))
    dim = draw(st.sampled_from([8, 16, 16, 24, 40, 64]))
    if layout == NORMAL:
        batch = draw(st.integers(1, 3))
        seq = draw(st.one_of(st.integers(1, 20), st.integers(1, 150)))
        return dict(layout=layout, heads=heads, dim=dim, batch=batch, max_seq_len=seq, off=None)
    short = st.integers(0, 3)
    lengths = draw(
        st.lists(
            st.one_of(short, st.integers(0, 40), st.integers(100, 170)), min_size=1, max_size=4
        )
    )
    if sum(lengths) == 0:
        lengths[0] = 1
    trailing = draw(st.sampled_from([0, 0, 1, 2]))  # repeated trailing offsets: empty sequences
    off = offsets_of(lengths, trailing)
    max_seq_len = max(lengths) + draw(st.sampled_from([0, 0, 3]))
    return dict(
        layout=layout,
        heads=heads,
        dim=dim,
        batch=len(off) - 1,
        max_seq_len=max_seq_len,
        off=off,
    )
