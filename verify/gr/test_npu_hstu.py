"""mxrec::hstu_dense and hstu_dense_backward through the adapter on the npu device, against the
adapter's CPU kernel (the golden; tests/plugin/test_hstu.py checks it against float64
references), and the user's example (seed 000 §1.5) verbatim with its operator on npu.

Tolerances: both devices round at the same points (hstu.md §2) and each is within a few eps of
the float64 result, scaled by the error scale ``mag`` of every element (what relative errors of
S, dP, dZ, P and of the products can add up to, computed below in float32 from absolute
values). npu and CPU may land on opposite sides, so the bounds are the sum of both:
|npu - cpu| <= tol eps (mag + |cpu|) + tol eps tiny, tol = 16 (float32) or 4 (16-bit) for the
output and twice that for the gradients.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

pytestmark = [
    pytest.mark.requires_npu,
    pytest.mark.requires_npu_ops("mxrec::hstu_dense", "mxrec::hstu_dense_backward"),
]

NPU = "npu"
SEED_EXAMPLE = Path(__file__).resolve().parents[1] / "lib" / "hstu_seed_example.py"
TOL = {torch.float32: 16.0, torch.float16: 4.0, torch.bfloat16: 4.0}


@pytest.fixture(scope="module", autouse=True)
def adapter() -> object:
    import fbgemm_npu_api

    return fbgemm_npu_api


# ---- tolerances -----------------------------------------------------------------------------


def _sequences(layout: str, q: torch.Tensor, off: list[int] | None) -> list[tuple[int, int, int]]:
    if layout == "normal":
        return [(b, b * q.shape[1], q.shape[1]) for b in range(q.shape[0])]
    return [(b, off[b], off[b + 1] - off[b]) for b in range(len(off) - 1)]


def _scaled_mask(mask_type: int, mask: torch.Tensor | None, b: int, h: int, n: int, s: float):
    """s |M| of sequence b, head h."""
    if mask_type == 0:
        return torch.full((n, n), s).tril()
    if mask_type == 2:
        return torch.full((n, n), s)
    return mask[b, h, :n, :n].float().abs() * s


def magnitudes(grad, q, k, v, mask, bias, mask_type, max_seq_len, silu_scale, layout, off):
    """Error scales of (out, dq, dk, dv, d_attn_bias): as tests/kernels/hstu_ref.py derives
    them (|silu'| <= 1.1, |silu''| <= 0.5)."""
    s = silu_scale if silu_scale != 0 else 1.0 / max_seq_len
    gv, qv, kv, vv = (t.float().reshape(-1, t.shape[-2], t.shape[-1]) for t in (grad, q, k, v))
    mo, mdq, mdk, mdv = (torch.zeros_like(qv) for _ in range(4))
    mdb = None if bias is None else torch.zeros(bias.shape)
    for b, r0, n in _sequences(layout, q, off):
        if n == 0:
            continue
        for h in range(qv.shape[1]):
            gb, qb, kb, vb = (t[r0 : r0 + n, h] for t in (gv, qv, kv, vv))
            z = qb @ kb.T
            score = qb.abs() @ kb.abs().T
            if bias is not None:
                z = z + bias[b, h, :n, :n].float()
                score = score + bias[b, h, :n, :n].float().abs()
            m = _scaled_mask(mask_type, mask, b, h, n, s)
            p = m * (1.1 * score) + (z * torch.sigmoid(z) * m).abs()
            a = m * (gb.abs() @ vb.abs().T) * (1.1 + 0.5 * score)
            mo[r0 : r0 + n, h] = p @ vb.abs()
            mdq[r0 : r0 + n, h] = a @ kb.abs()
            mdk[r0 : r0 + n, h] = a.T @ qb.abs()
            mdv[r0 : r0 + n, h] = p.T @ gb.abs()
            if mdb is not None:
                mdb[b, h, :n, :n] = a
    shaped = [t.reshape(q.shape) for t in (mo, mdq, mdk, mdv)]
    return [*shaped, mdb]


def assert_close_to_cpu(name: str, got: torch.Tensor, want: torch.Tensor, mag, tol) -> None:
    assert got.device.type == NPU, f"{name} on {got.device}, not on npu"
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, name
    info = torch.finfo(want.dtype)
    err = (got.double() - want.double()).abs()
    bound = tol * info.eps * (mag.double() + want.double().abs() + info.tiny)
    bad = err > bound
    if bool(bad.any()):
        worst = int(torch.argmax(err - bound))
        pytest.fail(
            f"{name}: {int(bad.sum())} of {err.numel()} elements off; worst at {worst}: npu "
            f"{got.flatten()[worst].item()} vs cpu {want.flatten()[worst].item()} "
            f"(bound {bound.flatten()[worst].item()})"
        )


# ---- npu against CPU, forward and every gradient through autograd ---------------------------


def offsets_of(lengths: list[int], trailing: int = 0) -> list[int]:
    off = [0]
    for n in lengths:
        off.append(off[-1] + n)
    return off + [off[-1]] * trailing


def run_case(
    layout, dtype, heads, dim, sizes, mask_type, with_bias, silu_scale, trailing=0, seed=0
):
    gen = torch.Generator().manual_seed(seed)
    if layout == "normal":
        batch, seq = sizes
        off = None
        shape = (batch, seq, heads, dim)
    else:
        off = offsets_of(sizes, trailing)
        batch, seq = len(off) - 1, max(sizes)
        shape = (off[-1], heads, dim)
    q, k, v, g = (torch.empty(shape).uniform_(-1, 1, generator=gen).to(dtype) for _ in range(4))
    square = (batch, heads, seq, seq)
    mask = None
    if mask_type == 3:
        mask = (torch.randint(0, 3, square, generator=gen) / 2.0).to(dtype)
    bias = torch.empty(square).uniform_(-1, 1, generator=gen).to(dtype) if with_bias else None

    results = {}
    for device in ("cpu", NPU):
        leaves = [t.detach().to(device).requires_grad_(True) for t in (q, k, v)]
        bias_leaf = bias.detach().to(device).requires_grad_(True) if with_bias else None
        dev_mask = mask.to(device) if mask is not None else None
        out = torch.ops.mxrec.hstu_dense(
            *leaves, dev_mask, bias_leaf, mask_type, seq, silu_scale, layout, off
        )
        out.backward(g.to(device))
        grads = [t.grad for t in leaves] + [bias_leaf.grad if with_bias else None]
        results[device] = [out.detach(), *grads]
    mags = magnitudes(g, q, k, v, mask, bias, mask_type, seq, silu_scale, layout, off)
    names = ("out", "dq", "dk", "dv", "d_attn_bias")
    for i, name in enumerate(names):
        want, got = results["cpu"][i], results[NPU][i]
        if want is None:
            assert got is None, name
            continue
        tol = TOL[dtype] * (1 if i == 0 else 2)
        assert_close_to_cpu(name, got, want, mags[i], tol)
    if with_bias:
        # Exactly zero where nothing flows back (M = 0, jagged padding), as on CPU.
        assert bool((results[NPU][4].cpu()[mags[4] == 0] == 0).all())


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
# layout, dtype, N, D, (B, S) or lengths, maskType, bias, siluScale, trailing repeated offsets
CASES = {
    "normal causal bias odd S": ("normal", F32, 2, 16, (2, 37), 0, True, 0.0, 0),
    "normal no mask D=512 N=1": ("normal", BF16, 1, 512, (1, 20), 2, False, 1.0, 0),
    "normal custom mask D=8": ("normal", F16, 3, 8, (3, 17), 3, True, 1 / 256, 0),
    "jagged lengths 0 and 1, repeated offsets": (
        "jagged",
        F32,
        1,
        16,
        [0, 1, 45, 3],
        0,
        False,
        0.0,
        2,
    ),
    "jagged custom mask bias": ("jagged", BF16, 2, 24, [33, 0, 1], 3, True, 0.0, 1),
    "jagged no mask bias fp16": ("jagged", F16, 4, 64, [1, 70, 5], 2, True, 1.0, 0),
    "jagged causal D=512": ("jagged", F32, 2, 512, [20, 7], 0, True, 0.0, 0),
    "jagged one sequence of one": ("jagged", BF16, 1, 16, [1], 0, False, 0.0, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_npu_matches_the_cpu_kernel(case: str) -> None:
    run_case(*CASES[case], seed=len(case))


def test_production_like_jagged_batch() -> None:
    """B = 32, N = 4, causal, lengths skewed towards short ones (1024 * u^2, one of 1024),
    bfloat16, forward and all gradients through autograd; D shrunk from 128 to 64 (the
    emulation runs the backward's five products on the host)."""
    gen = torch.Generator().manual_seed(2024)
    lengths = (1024 * torch.rand(32, generator=gen) ** 2).long().clamp(min=1)
    lengths[0] = 1024
    run_case("jagged", BF16, 4, 64, lengths.tolist(), 0, False, 0.0, 0, seed=7)


# ---- the user's example, verbatim -----------------------------------------------------------


class HstuOnNpu(TorchDispatchMode):
    """Moves the inputs of every mxrec::hstu_dense call to the npu device, so that the user's
    example, which builds CPU tensors, runs verbatim with its operator on npu."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.mxrec.hstu_dense.default:
            self.calls += 1
            args = tuple(a.to(NPU) if isinstance(a, torch.Tensor) else a for a in args)
        return func(*args, **(kwargs or {}))


def test_seed_example_verbatim_on_npu() -> None:
    np.random.seed(11)
    torch.manual_seed(11)
    with HstuOnNpu() as mode:
        on_npu = runpy.run_path(str(SEED_EXAMPLE), run_name="__main__")["result"]
    assert mode.calls == 1
    assert on_npu.device.type == NPU and on_npu.dtype == torch.float32
    np.random.seed(11)
    torch.manual_seed(11)
    on_cpu = runpy.run_path(str(SEED_EXAMPLE), run_name="__main__")["result"]
    assert on_cpu.device.type == "cpu" and on_cpu.shape == on_npu.shape
    scale = on_cpu.abs().max().item()  # q, k, v in [-1, 1], D = 8: values of order 1
    torch.testing.assert_close(on_npu.cpu(), on_cpu, rtol=1e-5, atol=1e-5 * max(scale, 1.0))
