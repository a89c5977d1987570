"""HstuDenseBackward on sim against autograd on the float64 reference of hstu.md §2
(tests/kernels/hstu_ref.py hstu_backward).

Tolerances, from the dtype's machine epsilon eps and the error scale ``mag`` of every gradient
element (hstu_ref.hstu_backward with magnitude=True: what relative errors of S, dP, dZ, P and of the
products can add up to), against the unrounded float64 gradients:

- float32: |out - ref| <= 16 eps (mag + |ref|): float32 sums over D, over the keys (dq) and over
  the queries (dk, dv);
- float16 / bfloat16: |out - ref| <= 4 eps (mag + |ref|) + 4 eps tiny: S, dP, P and dZ are
  rounded to the dtype (half an ulp each, hstu.md §2), the gradients once at the end; tiny (the
  smallest normal number) covers float16's subnormal gradients, whose spacing is tiny * eps.

d_attn_bias must be exactly zero wherever nothing flows back (M = 0, padding, empty sequences),
where mag is zero too.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import hstu_testlib as testlib  # noqa: E402
from hstu_ref import CAUSAL, CUSTOM, JAGGED, NO_MASK, NORMAL, hstu_backward  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError  # noqa: E402
from strategies import seeds  # noqa: E402

NAMES = ("dq", "dk", "dv", "d_attn_bias")  # the outputs, in op.toml order
OP = "hstu_dense_backward"
TOLERANCE = {torch.float32: 16.0, torch.float16: 4.0, torch.bfloat16: 4.0}


def hstu_dense_backward(ops, grad, q, k, v, *options, outs=None, **named):
    """What the adapter will do: dq, dk, dv = empty_like(q), d_attn_bias = empty_like(attn_bias)
    or absent, then the launch (hstu_testlib.launch); arguments as hstu_dense_forward's."""
    a, rest = testlib.bind(q, k, v, options, named)
    if outs is None:
        bias = a["attn_bias"]
        outs = [torch.empty_like(q) for _ in range(3)]
        outs.append(None if bias is None else torch.empty_like(bias))
    return outs, testlib.launch(ops(OP), [grad, q, k, v], a, outs, **rest)


def assert_matches_reference(outs, grad, *args) -> None:
    refs, mags = hstu_backward(grad, *args, magnitude=True)
    dtype = grad.dtype
    info = torch.finfo(dtype)
    for name, out, ref, mag in zip(NAMES, outs, refs, mags, strict=True):
        if ref is None:
            assert out is None
            continue
        bound = TOLERANCE[dtype] * info.eps * (mag + ref.abs() + info.tiny)
        testlib.assert_within(name, out, ref, bound)


def inputs(gen, problem, dtype, mask_type, with_bias):
    p = problem
    s, n, d = p["max_seq_len"], p["heads"], p["dim"]
    shape = (p["batch"], s, n, d) if p["layout"] == NORMAL else (p["off"][-1], n, d)
    q, k, v, mask, bias = testlib.random_inputs(
        gen, shape, dtype, n, p["batch"], s, mask_type, with_bias
    )
    grad = torch.empty(shape).uniform_(-1, 1, generator=gen).to(dtype)
    return grad, q, k, v, mask, bias


# ---- a hand-worked example ------------------------------------------------------------------
#
# Normal layout, B = 1, S = 2, N = 1, D = 8, no mask, s = 1: q = k = 0, so S = Z = 0, P = 0,
# sigma = 1/2, silu'(0) = 1/2, and dZ = (G V^T) / 2. With G = v = e0 (first rows only, the second
# rows 0): G V^T = [[1, 0], [0, 0]], dZ = [[0.5, 0], [0, 0]]; dV = P^T G = 0, dK = dZ^T Q = 0,
# dQ = dZ K = 0, d_attn_bias = dZ.


@pytest.mark.parametrize("dtype", testlib.DTYPES)
def test_hand_worked_example(sim_ops, dtype) -> None:
    zeros = torch.zeros(1, 2, 1, 8, dtype=dtype)
    e0 = zeros.clone()
    e0[0, 0, 0, 0] = 1
    bias = torch.zeros(1, 1, 2, 2, dtype=dtype)
    (dq, dk, dv, db), result = hstu_dense_backward(
        sim_ops, e0, zeros, zeros, e0, None, bias, NO_MASK, 2, 1.0
    )
    assert result.block_dim == 1
    assert db.tolist() == [[[[0.5, 0.0], [0.0, 0.0]]]]
    for g in (dq, dk, dv):
        assert not g.any()


# ---- properties -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    problem=testlib.problems(),
    dtype=st.sampled_from(testlib.DTYPES),
    mask_type=st.sampled_from([CAUSAL, NO_MASK, CUSTOM]),
    with_bias=st.booleans(),
    silu_scale=st.sampled_from([0.0, 0.0, 1.0 / 256, 0.5]),
    platform=testlib.HSTU_PLATFORMS,
    seed=seeds,
)
def test_matches_reference(
    sim_ops, problem, dtype, mask_type, with_bias, silu_scale, platform, seed
) -> None:
    gen = torch.Generator().manual_seed(seed)
    grad, q, k, v, mask, bias = inputs(gen, problem, dtype, mask_type, with_bias)
    p = problem
    args = (q, k, v, mask, bias, mask_type, p["max_seq_len"], silu_scale, p["layout"], p["off"])
    outs, _ = hstu_dense_backward(sim_ops, grad, *args, **platform)
    assert_matches_reference(outs, grad, *args)


@pytest.mark.parametrize("mask_type", [CAUSAL, NO_MASK, CUSTOM])
def test_several_query_chunks_and_shared_key_blocks(sim_ops, mask_type) -> None:
    """Sequences longer than a query chunk (128), key blocks cut between vector cores (every
    core busy), empty and one-row sequences, trailing repeated offsets, a bias, bfloat16."""
    gen = torch.Generator().manual_seed(12)
    off = testlib.offsets_of([300, 1, 0, 270, 17], trailing=1)
    problem = dict(layout=JAGGED, heads=2, dim=16, batch=len(off) - 1, max_seq_len=300, off=off)
    grad, q, k, v, mask, bias = inputs(gen, problem, torch.bfloat16, mask_type, True)
    args = (q, k, v, mask, bias, mask_type, 300, 0.0, JAGGED, off)
    outs, result = hstu_dense_backward(sim_ops, grad, *args, min_core_bytes=1)
    assert result.block_dim == 24
    assert_matches_reference(outs, grad, *args)
    # Nothing flows back to padding positions or to the empty sequences.
    db = outs[3]
    assert not db[0, :, 300:].any() and not db[1, :, 1:].any() and not db[1, :, :, 1:].any()
    assert not db[2].any() and not db[5].any() and not db[3, :, 270:].any()


def test_largest_head_dim_without_bias(sim_ops) -> None:
    gen = torch.Generator().manual_seed(3)
    problem = dict(layout=NORMAL, heads=1, dim=512, batch=1, max_seq_len=40, off=None)
    grad, q, k, v, _, _ = inputs(gen, problem, torch.float16, CAUSAL, False)
    args = (q, k, v, None, None, CAUSAL, 40, 0.0, NORMAL, None)
    outs, _ = hstu_dense_backward(sim_ops, grad, *args)
    assert outs[3] is None
    assert_matches_reference(outs, grad, *args)


def test_production_like_jagged_batch(sim_ops) -> None:
    """Jagged B = 32, N = 4, causal, lengths skewed towards short ones (1024 * u^2, one of 1024),
    bfloat16; D shrunk from 128 to 64 (the emulation's backward issues 2.5 times the forward's
    Cube work, and the float64 autograd reference is as slow). Cube and vector work balanced
    within 10%, Cube MACs issued within 1/0.9 of what the causal mask keeps."""
    gen = torch.Generator().manual_seed(2024)
    b, n, d, s = 32, 4, 64, 1024
    lengths = (s * torch.rand(b, generator=gen) ** 2).long().clamp(min=1)
    lengths[0] = s
    off = testlib.offsets_of(lengths.tolist())
    problem = dict(layout=JAGGED, heads=n, dim=d, batch=b, max_seq_len=s, off=off)
    grad, q, k, v, _, _ = inputs(gen, problem, torch.bfloat16, CAUSAL, False)
    args = (q, k, v, None, None, CAUSAL, s, 0.0, JAGGED, off)
    outs, result = hstu_dense_backward(sim_ops, grad, *args)
    assert result.block_dim == 24
    cube = [c["cube_cycles"] for c in result.kind(1)]
    vector = [c["vector_repeats"] for c in result.kind(0)]
    assert max(cube) <= 1.1 * sum(cube) / len(cube)
    assert max(vector) <= 1.1 * sum(vector) / len(vector)
    kept = sum(x * (x + 1) // 2 for x in lengths.tolist()) * n * d * 5  # five products
    assert kept / result.total("cube_macs") >= 0.9
    assert_matches_reference(outs, grad, *args)


# ---- argument checks ------------------------------------------------------------------------


def _call(sim_ops, shape=(1, 4, 1, 8), **kw):
    q = torch.zeros(shape)
    args = dict(q=q, k=q, v=q, max_seq_len=shape[1])
    args.update(kw)
    grad = args.pop("grad", q)
    return hstu_dense_backward(sim_ops, grad, **args)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(mask_type=1), "mask_type 1 (upper triangular) is not supported"),
        (dict(mask_type=CUSTOM), "mask_type 3 (custom) needs mask [B, N, S, S]"),
        (dict(grad=torch.zeros(1, 4, 1, 16)), "grad must have q's shape [1, 4, 1, 8]"),
        (
            dict(outs=[torch.zeros(1, 4, 1, 8)] * 2 + [torch.zeros(1, 4, 1, 16), None]),
            "dv must have q's shape [1, 4, 1, 8]",
        ),
        (
            dict(outs=[torch.zeros(1, 4, 1, 8)] * 3 + [torch.zeros(1, 1, 4, 4)]),
            "d_attn_bias needs attn_bias",
        ),
        (
            dict(
                attn_bias=torch.zeros(1, 1, 4, 4),
                outs=[torch.zeros(1, 4, 1, 8)] * 3 + [torch.zeros(1, 1, 4, 3)],
            ),
            "d_attn_bias must have attn_bias's shape [1, 1, 4, 4]",
        ),
        (dict(shape=(1, 4, 1, 12)), "must be a multiple of 8 in [8, 512], got 12"),
        (dict(layout=JAGGED, seq_offset=[0, 4]), "q must be [T, N, D] in the jagged layout"),
    ],
)
def test_invalid_arguments(sim_ops, kw, message) -> None:
    with pytest.raises(SimError, match="invalid argument") as err:
        _call(sim_ops, **kw)
    assert message in str(err.value)


def test_offsets_must_match_the_attribute(sim_ops) -> None:
    q = torch.zeros(5, 1, 8)
    with pytest.raises(SimError, match="trap"):
        hstu_dense_backward(
            sim_ops, q, q, q, q, None, None, CAUSAL, 4, 0.0, JAGGED, [0, 2, 5],
            offsets=torch.tensor([0, 1, 5]),
        )  # fmt: skip
