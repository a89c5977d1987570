"""mxrec::hstu_dense and hstu_dense_backward on CPU (torch_plugin/csrc/hstu.cpp, hstu_cpu.cpp):
the schema, the argument checks, the CPU kernel and autograd, against references written from
shared/research/hstu.md (the npu kernels run the same cases in verify/gr/test_npu_hstu.py).

References:
- the float64 transcription of §2 in tests/kernels/hstu_ref.py (forward; the backward is
  autograd on it, so the explicit backward formulas of the CPU kernel are checked against
  differentiation, not against themselves);
- GR's pytorch_hstu_mha semantics (§3), written here from the spec in float64;
- the user's example (seed 000 §1.5), run as a script.

Tolerances, from the dtype's machine epsilon eps = torch.finfo(dtype).eps and the error scale
``mag`` of every element (hstu_ref: what relative errors of S, dP, dZ, P and of the products can
add up to):
- forward, float32: |out - ref| <= 8 eps (mag + |ref| + tiny) against the unrounded reference;
  float16/bfloat16: <= 2 eps (mag + |ref| + tiny) against the reference rounded at §2's points
  (S and P to the dtype, O once): the kernel rounds at the same points, so what is left is where
  float32 and float64 sums round S or P to different neighbours, and O's own rounding;
- gradients: <= 16 eps (mag + |ref|) for float32, 4 eps (mag + |ref|) + 4 eps tiny for 16-bit
  dtypes, against the unrounded float64 gradients (S, dP, P and dZ are rounded to the dtype
  before their products: half an ulp each);
- d_attn_bias is exactly 0 wherever nothing flows back (M = 0, jagged padding), where mag is 0;
- GR parity: torch.testing.assert_close's defaults, as GR's own test uses them (fp32: rtol
  1.3e-6, atol 1e-5), against float64.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.kernels.hstu_ref import (  # noqa: E402
    CAUSAL,
    CUSTOM,
    JAGGED,
    NO_MASK,
    NORMAL,
    hstu_backward,
    hstu_forward,
)

pytestmark = pytest.mark.usefixtures("hstu_adapter")

REPO = Path(__file__).resolve().parents[2]
SEED_EXAMPLE = REPO / "verify" / "lib" / "hstu_seed_example.py"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
FORWARD_TOL = {torch.float32: 8.0, torch.float16: 2.0, torch.bfloat16: 2.0}
BACKWARD_TOL = {torch.float32: 16.0, torch.float16: 4.0, torch.bfloat16: 4.0}
# torch.testing.assert_close's float32 defaults, which GR's hstu_attention_test uses.
GR_FP32 = dict(rtol=1.3e-6, atol=1e-5)


def hstu_dense(*args, **kwargs):
    return torch.ops.mxrec.hstu_dense(*args, **kwargs)


def offsets_of(lengths: list[int], trailing: int = 0) -> list[int]:
    off = [0]
    for n in lengths:
        off.append(off[-1] + n)
    return off + [off[-1]] * trailing


def random_problem(gen, layout, dtype, heads, dim, batch, max_seq_len, off, mask_type, bias):
    rows = off[-1] if layout == JAGGED else None
    shape = (rows, heads, dim) if layout == JAGGED else (batch, max_seq_len, heads, dim)
    q, k, v, g = (torch.empty(shape).uniform_(-1, 1, generator=gen).to(dtype) for _ in range(4))
    square = (batch, heads, max_seq_len, max_seq_len)
    mask = None
    if mask_type == CUSTOM:
        mask = (torch.randint(0, 3, square, generator=gen) / 2.0).to(dtype)  # 0, 0.5, 1
    attn_bias = torch.empty(square).uniform_(-1, 1, generator=gen).to(dtype) if bias else None
    return q, k, v, g, mask, attn_bias


def assert_within(name, got, ref, mag, bound_eps, dtype, tiny_eps=None) -> None:
    info = torch.finfo(dtype)
    bound = bound_eps * info.eps * (mag + ref.abs())
    bound += (tiny_eps if tiny_eps is not None else bound_eps) * info.eps * info.tiny
    err = (got.to(torch.float64) - ref).abs()
    bad = err > bound
    if bool(bad.any()):
        worst = int(torch.argmax(err - bound))
        pytest.fail(
            f"{name}: {int(bad.sum())} of {err.numel()} elements off; worst at {worst}: "
            f"{got.flatten()[worst].item()} vs {ref.flatten()[worst].item()} "
            f"(bound {bound.flatten()[worst].item()})"
        )


def check_against_reference(gen, layout, dtype, heads, dim, batch, seq, off, mask_type, bias, s):
    q, k, v, g, mask, attn_bias = random_problem(
        gen, layout, dtype, heads, dim, batch, seq, off, mask_type, bias
    )
    args = (mask, attn_bias, mask_type, seq, s, layout, off)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    bias_leaf = attn_bias.clone().requires_grad_(True) if bias else None
    out = hstu_dense(*leaves, mask, bias_leaf, mask_type, seq, s, layout, off)
    assert out.dtype == dtype and out.shape == q.shape
    rounding = dtype != torch.float32
    ref, mag = hstu_forward(q, k, v, *args, rounding=rounding, magnitude=True)
    tiny = FORWARD_TOL[dtype]
    assert_within("out", out.detach(), ref, mag, FORWARD_TOL[dtype], dtype, tiny)

    out.backward(g)
    want, mags = hstu_backward(g, q, k, v, *args, magnitude=True)
    got = [t.grad for t in leaves] + [bias_leaf.grad if bias else None]
    tiny = 4.0 if rounding else 0.0
    for name, x, r, m in zip(("dq", "dk", "dv", "d_attn_bias"), got, want, mags, strict=True):
        if r is None:
            assert x is None, name
            continue
        assert x is not None and x.dtype == dtype and x.shape == r.shape, name
        assert_within(name, x, r, m, BACKWARD_TOL[dtype], dtype, tiny)
    if bias:
        # Nothing flows back where M = 0 or no sequence reaches (jagged padding): exactly 0.
        assert bool((bias_leaf.grad[mags[3] == 0] == 0).all())


@st.composite
def problems(draw: st.DrawFn) -> dict:
    layout = draw(st.sampled_from([NORMAL, JAGGED]))
    p = dict(
        layout=layout,
        dtype=draw(st.sampled_from(DTYPES)),
        heads=draw(st.sampled_from([1, 1, 2, 3])),
        dim=draw(st.sampled_from([8, 16, 16, 24, 512])),
        mask_type=draw(st.sampled_from([CAUSAL, NO_MASK, CUSTOM])),
        bias=draw(st.booleans()),
        s=draw(st.sampled_from([0.0, 0.0, 1.0 / 256, 1.0])),
    )
    if layout == NORMAL:
        p["batch"] = draw(st.integers(1, 3))
        p["seq"] = draw(st.integers(1, 37))  # odd sizes: not a multiple of any block
        p["off"] = None
        return p
    lengths = draw(
        st.lists(st.one_of(st.integers(0, 2), st.integers(0, 45)), min_size=1, max_size=4)
    )
    if sum(lengths) == 0:
        lengths[0] = 1
    off = offsets_of(lengths, draw(st.sampled_from([0, 0, 1, 2])))  # repeated trailing offsets
    p["off"] = off
    p["batch"] = len(off) - 1
    p["seq"] = max(lengths) + draw(st.sampled_from([0, 0, 3]))
    return p


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=problems(), seed=st.integers(0, 2**31 - 1))
def test_cpu_kernel_and_autograd_match_the_float64_reference(p: dict, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    check_against_reference(
        gen,
        p["layout"],
        p["dtype"],
        p["heads"],
        p["dim"],
        p["batch"],
        p["seq"],
        p["off"],
        p["mask_type"],
        p["bias"],
        p["s"],
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_production_like_jagged_batch(dtype: torch.dtype) -> None:
    """Skewed lengths up to 256 (B = 8, N = 4, D = 128, causal, with a bias); the float64
    reference loops per (sequence, head) in Python, hence B = 8 rather than 32."""
    gen = torch.Generator().manual_seed(12)
    lengths = [256, 3, 0, 97, 1, 180, 31, 250]
    off = offsets_of(lengths)
    check_against_reference(gen, JAGGED, dtype, 4, 128, 8, 256, off, CAUSAL, True, 0.0)


# ---- a hand-worked example -------------------------------------------------------------------
#
# Normal layout, B = 1, S = 2, N = 1, D = 8, causal, siluScale 0 (s = 1 / S = 0.5):
#   q = k = [e0, e1], so S = I; silu(1) = 0.7310585786, silu(0) = 0
#   P = diag(0.3655292893) and O = 0.3655292893 * v.
#   Backward with G = 1: dV = P^T G = 0.36553 * ones, dZ_ij = s [j <= i] silu'(S_ij) (G V^T)_ij
#   with silu'(1) = 0.9276705118, silu'(0) = 0.5.


def test_hand_worked_example() -> None:
    q = torch.zeros(1, 2, 1, 8, dtype=torch.float64)
    q[0, 0, 0, 0] = 1
    q[0, 1, 0, 1] = 1
    v = torch.stack([torch.arange(1, 9.0), torch.arange(10, 81.0, 10)]).view(1, 2, 1, 8).double()
    qf = q.float().requires_grad_(True)
    kf = q.float().requires_grad_(True)
    vf = v.float().requires_grad_(True)
    out = hstu_dense(qf, kf, vf, None, None, 0, 2, 0.0, "normal", None)
    # float32 results against float64 values: a few float32 ulps.
    tol = dict(rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out.double(), 0.3655292893 * v, **tol)
    out.backward(torch.ones_like(out))
    torch.testing.assert_close(vf.grad.double(), torch.full_like(v, 0.3655292893), **tol)
    gvt = torch.ones(2, 8, dtype=torch.float64) @ v.view(2, 8).T  # [[36, 360], [36, 360]]
    dz = 0.5 * torch.tensor([[0.9276705118, 0.0], [0.5, 0.9276705118]]) * gvt
    torch.testing.assert_close(qf.grad.double().view(2, 8), dz @ q.view(2, 8), **tol)
    torch.testing.assert_close(kf.grad.double().view(2, 8), dz.T @ q.view(2, 8), **tol)


# ---- GR parity (§3) ----------------------------------------------------------------------------


def gr_valid_mask(
    lengths: torch.Tensor,
    n: int,
    num_targets: torch.Tensor | None,
    contextual: int = 0,
    max_attn_len: int = 0,
) -> torch.Tensor:
    """GR's attention mask [B, n, n] (True = attend), written from the rule of
    _get_invalid_attn_mask: positions r remapped (the first ``contextual`` ones to 0, targets
    and padding clamped to maxid), then the diagonal or r(i) - r(j) > 0, within
    ``max_attn_len`` of each other when set, and contextual rows see every non-target token."""
    b = lengths.numel()
    r = torch.arange(n).view(1, n).expand(b, n)
    maxid = lengths.view(b, 1)
    if contextual > 0:
        r = (r - contextual + 1).clamp(min=0)
        maxid = maxid - contextual + 1
    if num_targets is not None:
        maxid = maxid - num_targets.view(b, 1)
        r = torch.minimum(r, maxid)
    d = r.unsqueeze(2) - r.unsqueeze(1)
    mask = torch.eye(n, dtype=torch.bool).unsqueeze(0) | (d > 0)
    if max_attn_len > 0:
        mask = mask & (d <= max_attn_len)
    if contextual > 0:
        mask = mask | ((r.unsqueeze(2) == 0) & (r.unsqueeze(1) < maxid.view(b, 1, 1)))
    return mask


def test_gr_mask_hand_worked() -> None:
    """The two examples worked by hand from GR's rule: N = l = 6 with two contextual positions
    and two targets (targets see the history and themselves, contextual rows every non-target
    token), and a band of max_attn_len 2 alone."""
    six = torch.tensor([6])
    got = gr_valid_mask(six, 6, torch.tensor([2]), contextual=2)
    want = [
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 1, 0],
        [1, 1, 1, 1, 0, 1],
    ]
    assert got[0].int().tolist() == want
    band = gr_valid_mask(six, 6, None, max_attn_len=2)[0].int()
    i, j = torch.arange(6).view(6, 1), torch.arange(6).view(1, 6)
    assert band.tolist() == ((j <= i) & (i - j <= 2)).int().tolist()


def gr_hstu_mha(n, alpha, q, k, v, offsets, num_targets=None, rel_bias=None, context=0, band=0):
    """pytorch_hstu_mha's semantics in float64: pad to n, silu(alpha Q K^T (+ rel_bias)) / n
    times the mask, times V, back to jagged (dropout 0)."""
    lengths = offsets[1:] - offsets[:-1]
    b, h, d = lengths.numel(), q.shape[1], q.shape[2]

    def pad(x):
        out = x.new_zeros(b, n, h, d)
        for i in range(b):
            out[i, : lengths[i]] = x[offsets[i] : offsets[i + 1]]
        return out

    pq, pk, pv = pad(q), pad(k), pad(v)
    z = torch.einsum("bnhd,bmhd->bhnm", pq, pk) * alpha
    if rel_bias is not None:
        z = z + rel_bias
    valid = gr_valid_mask(lengths, n, num_targets, context, band).unsqueeze(1)
    attn = torch.nn.functional.silu(z) / n * valid
    out = torch.einsum("bhnm,bmhd->bnhd", attn, pv)
    return torch.cat([out[i, : lengths[i]] for i in range(b)])


@pytest.mark.parametrize(
    ("heads", "dim", "max_uih", "max_targets", "targets", "context", "band"),
    [
        (1, 16, 100, 20, False, 0, 0),
        (2, 32, 128, 20, True, 0, 0),
        (4, 64, 100, 20, True, 0, 0),
        (3, 128, 30, 8, False, 0, 0),
        (2, 32, 100, 20, True, 10, 0),
        (2, 16, 128, 20, False, 0, 24),
        (4, 32, 64, 8, True, 10, 16),
    ],
)
def test_gr_parity(
    heads: int, dim: int, max_uih: int, max_targets: int, targets: bool, context: int, band: int
) -> None:
    """hstu_dense(alpha q, k, v, maskType 0, or 3 with GR's mask for targets, contextual
    positions and max_attn_len, maxSeqLen N, 1 / N) and its autograd against GR's reference
    semantics, GR's test setup (U(-0.1, 0.1), alpha = 1/sqrt(D), dout = 0.01 randn, B = 4,
    contextual {0, 10})."""
    gen = torch.Generator().manual_seed(heads * 1000 + dim + context + band)
    n = max_uih + max_targets
    b = 4
    num_targets = torch.randint(1, max_targets + 1, (b,), generator=gen) if targets else None
    # At least the contextual positions of history, as GR's inputs have.
    uih = torch.randint(context + 1, max_uih + 1, (b,), generator=gen)
    lengths = uih + (num_targets if targets else 0)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    total = int(offsets[-1])
    q, k, v = (torch.empty(total, heads, dim).uniform_(-0.1, 0.1, generator=gen) for _ in "qkv")
    dout = 0.01 * torch.randn(total, heads, dim, generator=gen)
    alpha = 1.0 / math.sqrt(dim)

    q64, k64, v64 = (t.double().requires_grad_(True) for t in (q, k, v))
    ref = gr_hstu_mha(n, alpha, q64, k64, v64, offsets, num_targets, context=context, band=band)
    ref.backward(dout.double())

    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    mask, mask_type = None, 0
    if targets or context or band:
        mask = gr_valid_mask(lengths, n, num_targets, context, band)
        mask = mask.unsqueeze(1).expand(b, heads, n, n)
        mask, mask_type = mask.to(torch.float32).contiguous(), 3
    out = hstu_dense(
        alpha * leaves[0],
        leaves[1],
        leaves[2],
        mask,
        None,
        mask_type,
        n,
        1.0 / n,
        "jagged",
        offsets.tolist(),
    )
    out.backward(dout)
    torch.testing.assert_close(out.double(), ref.detach(), **GR_FP32)
    for name, got, want in zip("qkv", leaves, (q64, k64, v64), strict=True):
        torch.testing.assert_close(
            got.grad.double(), want.grad, **GR_FP32, msg=lambda m, x=name: f"d{x}: {m}"
        )


def test_gr_modeling_relative_bias_parity() -> None:
    """GR's training path (modeling/sequential/hstu.py): silu(Q K^T + rel_bias[B, 1, n, n]) / n
    times the causal mask, no alpha, on padded [B, n, H, D]: attnBias = the bias expanded to H
    heads, and the bias gradient is d_attn_bias summed over the heads."""
    gen = torch.Generator().manual_seed(3)
    b, n, h, d = 3, 33, 2, 16
    q, k, v = (torch.empty(b, n, h, d).uniform_(-0.1, 0.1, generator=gen) for _ in "qkv")
    rel = torch.empty(b, 1, n, n).uniform_(-0.5, 0.5, generator=gen)
    dout = 0.01 * torch.randn(b, n, h, d, generator=gen)

    q64, k64, v64, rel64 = (t.double().requires_grad_(True) for t in (q, k, v, rel))
    z = torch.einsum("bnhd,bmhd->bhnm", q64, k64) + rel64
    causal = 1 - torch.triu(torch.ones(n, n, dtype=torch.float64), diagonal=1)
    ref = torch.einsum("bhnm,bmhd->bnhd", torch.nn.functional.silu(z) / n * causal, v64)
    ref.backward(dout.double())

    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    rel32 = rel.clone().requires_grad_(True)
    bias = rel32.expand(b, h, n, n).contiguous()
    out = hstu_dense(*leaves, None, bias, 0, n, 1.0 / n, "normal", None)
    out.backward(dout)
    torch.testing.assert_close(out.double(), ref.detach(), **GR_FP32)
    for got, want in zip([*leaves, rel32], (q64, k64, v64, rel64), strict=True):
        torch.testing.assert_close(got.grad.double(), want.grad, **GR_FP32)


# ---- §3.4: negative cases -----------------------------------------------------------------------


def _good() -> dict:
    q = torch.zeros(5, 2, 16)
    return dict(
        q=q,
        k=q.clone(),
        v=q.clone(),
        mask=None,
        attnBias=None,
        maskType=0,
        maxSeqLen=3,
        siluScale=0.0,
        layout="jagged",
        seqOffset=[0, 3, 5],
    )


def _with(**changes) -> dict:
    args = _good()
    args.update(changes)
    return args


def _qkv(shape) -> dict:
    return dict(q=torch.zeros(shape), k=torch.zeros(shape), v=torch.zeros(shape))


NEGATIVE = {
    "mask type 1": (_with(maskType=1), ValueError, r"maskType 1 .*not supported"),
    "mask type 4": (_with(maskType=4), ValueError, r"maskType must be 0 .*, 2 .* or 3 .*got 4"),
    "mask type 3 without a mask": (_with(maskType=3), ValueError, r"maskType 3 .*needs mask"),
    "mask of the wrong shape": (
        _with(maskType=3, mask=torch.ones(2, 2, 3, 4)),
        ValueError,
        r"mask must be \[B, N, S, S\] = \[2, 2, 3, 3\]",
    ),
    "bias of another dtype": (
        _with(attnBias=torch.zeros(2, 2, 3, 3, dtype=torch.float16)),
        TypeError,
        r"attnBias must have q's dtype",
    ),
    "D = 255": (
        _with(**_qkv((5, 2, 255))),
        ValueError,
        r"head dimension D .*multiple of 8 in \[8, 512\], got 255",
    ),
    "D = 4": (_with(**_qkv((5, 2, 4))), ValueError, r"head dimension D .*got 4"),
    "D = 520": (_with(**_qkv((5, 2, 520))), ValueError, r"head dimension D .*got 520"),
    "N = 255": (_with(**_qkv((5, 255, 16))), ValueError, r"head count N .*\[1, 16\], got 255"),
    "S > 20480": (
        _with(maxSeqLen=20481),
        ValueError,
        r"maxSeqLen must be in \[1, 20480\], got 20481",
    ),
    "maxSeqLen 0": (_with(maxSeqLen=0), ValueError, r"maxSeqLen must be in \[1, 20480\]"),
    "maxSeqLen != S (normal)": (
        _with(layout="normal", **_qkv((2, 4, 2, 16))),
        ValueError,
        r"normal layout needs maxSeqLen == S = q.size\(1\) = 4, got maxSeqLen 3",
    ),
    "4-D input with jagged": (
        _with(**_qkv((2, 3, 2, 16))),
        ValueError,
        r"layout \"jagged\" needs q \[T, N, D\]",
    ),
    "3-D input with normal": (
        _with(layout="normal"),
        ValueError,
        r"layout \"normal\" needs q \[B, S, N, D\]",
    ),
    "unknown layout": (
        _with(layout="ragged"),
        ValueError,
        r"layout must be \"normal\" .*got \"ragged\"",
    ),
    "seqOffset with one entry": (
        _with(seqOffset=[0]),
        ValueError,
        r"seqOffset must have at least 2 entries",
    ),
    "no seqOffset": (_with(seqOffset=None), ValueError, r"jagged layout needs seqOffset"),
    "seqOffset not from 0": (_with(seqOffset=[1, 3, 5]), ValueError, r"seqOffset must start at 0"),
    "decreasing seqOffset": (_with(seqOffset=[0, 3, 2, 5]), ValueError, r"non-decreasing"),
    "seqOffset not ending at T": (
        _with(seqOffset=[0, 3, 4]),
        ValueError,
        r"must end at T = q.size\(0\) = 5",
    ),
    "sequence longer than maxSeqLen": (
        _with(seqOffset=[0, 1, 5]),
        ValueError,
        r"sequence 1 has length 4 .*more than maxSeqLen 3",
    ),
    "empty tensor": (
        _with(seqOffset=[0, 0], **_qkv((0, 2, 16))),
        ValueError,
        r"q must not be empty",
    ),
    "integer q": (
        _with(**{n: torch.zeros(5, 2, 16, dtype=torch.int32) for n in "qkv"}),
        TypeError,
        r"q must have dtype",
    ),
    "k of another dtype": (
        _with(k=torch.zeros(5, 2, 16, dtype=torch.float16)),
        TypeError,
        r"k must have q's dtype",
    ),
    "v of another shape": (_with(v=torch.zeros(5, 2, 8)), ValueError, r"v must have q's shape"),
    "B > 2048": (
        _with(maxSeqLen=5, seqOffset=[0] * 2049 + [5]),
        ValueError,
        r"batch size B \(len\(seqOffset\) - 1\) must be in \[1, 2048\], got 2049",
    ),
    "silu scale not finite": (_with(siluScale=math.inf), ValueError, r"siluScale must be finite"),
}


@pytest.mark.parametrize("case", list(NEGATIVE))
def test_negative_cases_are_refused_naming_the_argument(case: str) -> None:
    args, error, message = NEGATIVE[case]
    with pytest.raises(error, match=message) as info:
        hstu_dense(**args)
    assert "hstu_dense" in str(info.value)
    # The backward checks the same, before any work.
    grad = args["q"]
    with pytest.raises(error, match=message):
        torch.ops.mxrec.hstu_dense_backward(grad, **args)


def test_backward_refuses_a_grad_unlike_q() -> None:
    args = _good()
    with pytest.raises(ValueError, match=r"hstu_dense_backward: grad must have q's shape"):
        torch.ops.mxrec.hstu_dense_backward(torch.zeros(5, 2, 8), **args)


def test_a_mask_is_ignored_unless_mask_type_is_3() -> None:
    """hstu.md §2: with maskType 0 or 2 a mask is never read, whatever its shape or dtype."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand(5, 2, 16, generator=gen) for _ in "qkv")
    args = _with(q=q, k=k, v=v)
    for mask_type in (0, 2):
        want = hstu_dense(**{**args, "maskType": mask_type})
        for mask in (torch.ones(7), torch.zeros(2, 2, 3, 3, dtype=torch.int64)):
            assert torch.equal(hstu_dense(**{**args, "maskType": mask_type, "mask": mask}), want)
    assert not torch.equal(hstu_dense(**{**args, "maskType": 2}), hstu_dense(**args))


# ---- §3.5: argument types ---------------------------------------------------------------------


def test_seq_offset_and_max_seq_len_accept_lists_tuples_and_numpy() -> None:
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.empty(5, 2, 16).uniform_(-1, 1, generator=gen) for _ in "qkv")
    want = hstu_dense(q, k, v, None, None, 0, 3, 0.0, "jagged", [0, 3, 5])
    for off in (
        (0, 3, 5),
        np.array([0, 3, 5], dtype=np.int64),
        np.array([0, 3, 5], dtype=np.int32),
        [np.int64(0), np.int64(3), np.int64(5)],
    ):
        got = hstu_dense(q, k, v, None, None, 0, np.int64(3), 0.0, "jagged", off)
        assert torch.equal(got, want), type(off)
    # Keywords with the schema's camelCase names.
    got = hstu_dense(q, k, v, maxSeqLen=3, layout="jagged", seqOffset=[0, 3, 5])
    assert torch.equal(got, want)


def test_seq_offset_as_a_tensor_is_refused_naming_the_argument() -> None:
    """hstu.md §1 left a 1-D int tensor for int[]? unconfirmed: torch 2.6 refuses it (pass
    ``offsets.tolist()``, as GR's mapping does)."""
    q = torch.rand(5, 2, 16)
    with pytest.raises(RuntimeError, match=r"Optional\[List\[int\]\]' for argument 'seqOffset'"):
        hstu_dense(q, q, q, None, None, 0, 3, 0.0, "jagged", torch.tensor([0, 3, 5]))


def test_backward_without_bias_returns_none_for_its_gradient() -> None:
    args = _good()
    gen = torch.Generator().manual_seed(2)
    for name in "qkv":
        args[name] = torch.rand(5, 2, 16, generator=gen)
    dq, dk, dv, dbias = torch.ops.mxrec.hstu_dense_backward(torch.ones(5, 2, 16), **args)
    assert dbias is None
    assert dq.shape == dk.shape == dv.shape == (5, 2, 16)
    normal = dict(args, layout="normal", seqOffset=None)
    for name in "qkv":
        normal[name] = args[name][:4].reshape(2, 2, 2, 16)
    normal["maxSeqLen"] = 2
    assert torch.ops.mxrec.hstu_dense_backward(torch.ones(2, 2, 2, 16), **normal)[3] is None


def test_no_grad_and_inputs_without_grad_run_the_forward_only() -> None:
    args = _good()
    with torch.no_grad():
        out = hstu_dense(**args)
    assert out.grad_fn is None
    assert hstu_dense(**args).grad_fn is None


# ---- the user's example, verbatim --------------------------------------------------------------


def test_seed_example_runs_verbatim_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    np.random.seed(7)
    torch.manual_seed(7)
    result = runpy.run_path(str(SEED_EXAMPLE), run_name="__main__")["result"]
    assert result.dtype == torch.float32 and result.dim() == 3 and result.shape[1:] == (2, 8)

    # Again from the same seeds, keeping the call's arguments, against the float64 reference.
    seen = {}
    real = torch.ops.mxrec.hstu_dense

    def spy(*args):
        seen["args"] = args
        return real(*args)

    monkeypatch.setattr(torch.ops.mxrec, "hstu_dense", spy)
    np.random.seed(7)
    torch.manual_seed(7)
    again = runpy.run_path(str(SEED_EXAMPLE), run_name="__main__")["result"]
    assert torch.equal(again, result)
    q, k, v, mask, bias, mask_type, n, scale, layout, off = seen["args"]
    # The example passes numpy: an int64 array of offsets and an np.int64 maxSeqLen.
    assert isinstance(off, np.ndarray) and isinstance(n, np.integer)
    off = off.tolist()
    ref, mag = hstu_forward(
        q, k, v, mask, bias, mask_type, int(n), scale, layout, off, magnitude=True
    )
    assert_within("out", result, ref, mag, FORWARD_TOL[torch.float32], torch.float32)
