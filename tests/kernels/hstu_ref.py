"""A float64 reference of HSTU attention (mxrec::hstu_dense), written from
shared/research/hstu.md §2, for the operator tests.

Forward, per batch b and head h (i = query row, j = key column, both positions in sequence b):

    S = Q_bh K_bh^T                 (no alpha, no 1/sqrt(D))
    Z = S + attn_bias[b, h]         (if a bias is given)
    P = silu(Z) * s * M             silu(x) = x * sigmoid(x)
    O = P V_bh

with s = silu_scale, or 1 / max_seq_len when silu_scale is 0, and the mask M by mask_type:
0 causal with the diagonal (M_ij = [j <= i]), 2 none (M = 1), 3 the multiplicative float mask
mask[b, h, i, j]. There is no softmax. Layouts: "normal" q/k/v [B, S, N, D] (every sequence
has length S = max_seq_len) and "jagged" [T, N, D] with sequence offsets [B + 1] (sequence b is
rows off[b]:off[b + 1]; bias and mask rows and columns are positions within the sequence, with
row stride max_seq_len). Jagged padding contributes nothing: only l_b x l_b per (b, h).

Rounding points (§2, "Where rounding happens"), applied with ``rounding=True`` for 16-bit
dtypes: S is stored in q's dtype (the Cube's fp32 sum rounded once), the vector work is fp32
(here float64), P is rounded to q's dtype, P V accumulates in fp32 (here float64) and O is
rounded once. Without rounding everything is float64 from the inputs' values.

The backward is autograd on this float64 forward (``rounding=False``): gradients of q, k, v and
the bias (zeros wherever M = 0 and at jagged padding positions of the bias).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

NORMAL, JAGGED = "normal", "jagged"
CAUSAL, NO_MASK, CUSTOM = 0, 2, 3

# (dq, dk, dv, d_attn_bias): the bias gradient is None when no bias was given.
Grads = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]


def scale_of(silu_scale: float, max_seq_len: int) -> float:
    """The fixed scale s: silu_scale, or 1 / max_seq_len when it is 0 (§2)."""
    return float(silu_scale) if silu_scale != 0 else 1.0 / max_seq_len


def _round(x: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    return x if dtype is None else x.to(dtype).to(torch.float64)


def sequences(layout: str, q: torch.Tensor, seq_offset: Sequence[int] | None) -> list[tuple]:
    """(b, first row, length) of every sequence; rows index dim 0 of the [T, N, D] view."""
    if layout == NORMAL:
        b, s = q.shape[0], q.shape[1]
        return [(i, i * s, s) for i in range(b)]
    off = [int(x) for x in seq_offset]
    return [(i, off[i], off[i + 1] - off[i]) for i in range(len(off) - 1)]


def _apply_mask(x: torch.Tensor, mask_type: int, mask: torch.Tensor | None, b: int, h: int):
    """x * M (x is [n, n], a fresh tensor: changed in place where that is allowed)."""
    n = x.shape[0]
    if mask_type == CAUSAL:
        return x.tril() if x.requires_grad else x.tril_()
    if mask_type == NO_MASK:
        return x
    if mask_type == CUSTOM:
        return x * mask[b, h, :n, :n].to(x.dtype)
    raise ValueError(f"mask_type {mask_type} is not 0, 2 or 3")


def hstu_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    attn_bias: torch.Tensor | None = None,
    mask_type: int = CAUSAL,
    max_seq_len: int = 0,
    silu_scale: float = 0.0,
    layout: str = NORMAL,
    seq_offset: Sequence[int] | None = None,
    *,
    rounding: bool = False,
    magnitude: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """O (float64, q's shape). ``rounding``: round at §2's points to q's dtype (16-bit only).

    ``magnitude``: also return the error scale of every output element, sum over j of
    (s |M_ij| (sum_d |q_id k_jd| + |bias_ij|) + |P_ij|) |V_jd| — what a relative error of the
    score, of P and of the products in O can add up to — for dtype-derived tolerances.
    """
    dtype = q.dtype if rounding and q.dtype in (torch.float16, torch.bfloat16) else None
    s = scale_of(silu_scale, max_seq_len)
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    qv, kv, vv = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q64, k64, v64))
    out = torch.zeros_like(qv)
    mag = torch.zeros_like(qv)
    for b, r0, n in sequences(layout, q, seq_offset):
        if n == 0:
            continue
        for h in range(qv.shape[1]):
            qb, kb, vb = qv[r0 : r0 + n, h], kv[r0 : r0 + n, h], vv[r0 : r0 + n, h]
            z = _round(qb @ kb.T, dtype)
            bias = None
            if attn_bias is not None:
                bias = attn_bias[b, h, :n, :n].to(torch.float64)
                z = z + bias
            p = _round(_apply_mask(z * torch.sigmoid(z) * s, mask_type, mask, b, h), dtype)
            out[r0 : r0 + n, h] = _round(p @ vb, dtype)
            if magnitude:  # a scale for tolerances: float32 is plenty
                score = qb.abs().float() @ kb.abs().float().T
                if bias is not None:
                    score += bias.abs().float()
                score = _apply_mask(score, mask_type, mask, b, h).abs_().mul_(s)
                score += p.abs().float()
                mag[r0 : r0 + n, h] = (score @ vb.abs().float()).double()
    out = out.reshape(q.shape)
    return (out, mag.reshape(q.shape)) if magnitude else out


def hstu_backward(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *options: Any,
    magnitude: bool = False,
) -> Grads | tuple[Grads, Grads]:
    """(dq, dk, dv, d_attn_bias) in float64 by autograd on the float64 forward; d_attn_bias is
    None without a bias, and zero at positions no sequence reaches (jagged padding) or M = 0.

    ``options``: hstu_forward's arguments after v, in its order (mask, attn_bias, mask_type,
    max_seq_len, silu_scale, layout, seq_offset), with its defaults.
    ``magnitude``: also return the error scales of the four gradients (see
    _backward_magnitude), as hstu_forward does for its output."""
    bound = inspect.signature(hstu_forward).bind(q, k, v, *options)
    bound.apply_defaults()
    a = bound.arguments
    mask, attn_bias = a["mask"], a["attn_bias"]
    leaves = [t.detach().to(torch.float64).requires_grad_(True) for t in (q, k, v)]
    bias = None
    if attn_bias is not None:
        bias = attn_bias.detach().to(torch.float64).requires_grad_(True)
        leaves.append(bias)
    out = hstu_forward(*leaves[:3], mask, bias, *options[2:])
    grads = torch.autograd.grad(out, leaves, grad.to(torch.float64), allow_unused=True)
    dq, dk, dv = grads[:3]
    dbias = None
    if bias is not None:
        dbias = grads[3] if grads[3] is not None else torch.zeros_like(bias)
    if not magnitude:
        return dq, dk, dv, dbias
    s = scale_of(a["silu_scale"], a["max_seq_len"])
    seqs = sequences(a["layout"], q, a["seq_offset"])
    mags = _backward_magnitude((grad, q, k, v), mask, attn_bias, a["mask_type"], s, seqs)
    return (dq, dk, dv, dbias), mags


def _backward_magnitude(
    inputs: tuple[torch.Tensor, ...],
    mask: torch.Tensor | None,
    attn_bias: torch.Tensor | None,
    mask_type: int,
    s: float,
    seqs: list[tuple],
) -> Grads:
    """Error scales of (dq, dk, dv, d_attn_bias), float64, for dtype-derived tolerances.

    With |S| = |q||k|^T (+ |bias|) and |dP| = |g||v|^T: a relative error of S, dP, dZ or of the
    products can move dZ by at most A = s |M| |dP| (1.1 + 0.5 |S|) (|silu'| <= 1.1,
    |silu''| <= 0.5) and P by at most B = 1.1 s |M| |S| + |P|, so the gradients by
    A |k| (dq), A^T |q| (dk), B^T |g| (dv) and A (d_attn_bias).
    """
    q = inputs[1]  # (grad, q, k, v)
    views = [t.to(torch.float32).reshape(-1, t.shape[-2], t.shape[-1]) for t in inputs]
    gv, qv, kv, vv = views
    mdq, mdk, mdv = (torch.zeros_like(qv) for _ in range(3))
    mdb = None if attn_bias is None else torch.zeros(attn_bias.shape, dtype=torch.float32)
    for b, r0, n in seqs:
        if n == 0:
            continue
        for h in range(qv.shape[1]):
            gb, qb, kb, vb = (t[r0 : r0 + n, h] for t in (gv, qv, kv, vv))
            score = qb.abs() @ kb.abs().T
            z = qb @ kb.T
            if attn_bias is not None:
                bias = attn_bias[b, h, :n, :n].to(torch.float32)
                score += bias.abs()
                z += bias
            m = _apply_mask(torch.full((n, n), s), mask_type, mask, b, h).abs()
            a = m * (gb.abs() @ vb.abs().T) * (1.1 + 0.5 * score)
            p = m * (1.1 * score) + (z * torch.sigmoid(z) * m).abs()
            mdq[r0 : r0 + n, h] = a @ kb.abs()
            mdk[r0 : r0 + n, h] = a.T @ qb.abs()
            mdv[r0 : r0 + n, h] = p.T @ gb.abs()
            if mdb is not None:
                mdb[b, h, :n, :n] = a
    out = [t.reshape(q.shape).double() for t in (mdq, mdk, mdv)]
    return out[0], out[1], out[2], None if mdb is None else mdb.double()
