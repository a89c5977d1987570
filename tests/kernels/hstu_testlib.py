"""What the HSTU operator tests share (test_op_hstu_dense_forward.py and _backward.py): problem
strategies, random inputs, the platforms and the attribute encodings."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from hstu_ref import CUSTOM, JAGGED, NORMAL, hstu_forward
from hypothesis import strategies as st
from kernel_testlib import PLATFORMS, arg

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAYOUT_CODE = {NORMAL: 0, JAGGED: 1}
# The shared platforms (every core busy, small unified buffers, 3 AI cores, Ascend910B3) and a
# unified buffer so small that a vector pass holds two score rows.
HSTU_PLATFORMS = st.sampled_from([*PLATFORMS, {"min_core_bytes": 1, "ub_bytes": 24 * 1024}])
# hstu_forward's arguments after q, k, v: the operators' optional tensors and attributes.
_FORWARD = inspect.signature(hstu_forward)
OPTION_NAMES = list(_FORWARD.parameters)[3:10]


def bind(q, k, v, options: tuple, named: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """hstu_forward's arguments after v (mask ... seq_offset), given in its order and/or by
    name, with its defaults; and what is left of ``named`` (launch options)."""
    given = {n: named.pop(n) for n in OPTION_NAMES if n in named}
    bound = _FORWARD.bind(q, k, v, *options, **given)
    bound.apply_defaults()
    return {n: bound.arguments[n] for n in OPTION_NAMES}, named


def launch(op, head: list, a: dict[str, Any], outs: list, offsets=None, **options):
    """What the adapter does after allocating the outputs: ``head`` are the leading tensors
    (q, k, v, or grad, q, k, v), ``a`` the bound arguments; in the jagged layout seq_offset goes
    both as the attribute and as the int64 offsets tensor (``offsets`` overrides the tensor)."""
    seq = [int(x) for x in a["seq_offset"]] if a["seq_offset"] is not None else []
    if offsets is None and a["layout"] == JAGGED:
        offsets = torch.tensor(seq, dtype=torch.int64)
    tensors = [*head, a["mask"], a["attn_bias"], offsets, *outs]  # kept alive for the launch
    code = LAYOUT_CODE.get(a["layout"], a["layout"])
    attrs = [a["mask_type"], a["max_seq_len"], float(a["silu_scale"]), code, seq]
    return op.launch([arg(t) for t in tensors], attrs, **options)


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


def assert_within(name: str, out: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor) -> None:
    """|out - ref| <= bound everywhere (ref float64), naming the worst element if not."""
    err = (out.to(torch.float64) - ref).abs()
    worst = int(torch.argmax(err - bound))
    assert bool((err <= bound).all()), (
        f"{name}: {int((err > bound).sum())} elements off; worst at flat index {worst}: "
        f"{out.flatten()[worst].item()} vs {ref.flatten()[worst].item()} "
        f"(bound {bound.flatten()[worst].item()})"
    )
