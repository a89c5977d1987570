"""FP8RowwiseToFloat on sim against fbgemm's row-wise FP8 arithmetic.

fbgemm-gpu-cpu 1.1.0 has no CPU kernel for FP8RowwiseQuantizedToFloat (it raises 'fp8 is not
supported by CPU'); its CUDA op gives each row of W bytes ceil4(W) - 8 floats
hfp8_to_float(code) / scale, the scale the fp32 at byte ceil4(W) - 8. The reference here is that
formula with fbgemm's own CPU HFP8QuantizedToFloat for the codes and a float32 division.
"""

from __future__ import annotations

import math
import struct

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def out_dim(w: int) -> int:
    return (w + 3) // 4 * 4 - 8


def dequantize(ops, q, forward, **launch):
    out = torch.empty(*q.shape[:-1], out_dim(q.shape[-1]), dtype=torch.float32)
    result = ops("fp8_rowwise_to_float").launch([arg(q), arg(out)], [forward], **launch)
    return out, result


def reference(q: torch.Tensor, forward: bool) -> torch.Tensor:
    ebits, bias = (4, 15) if forward else (5, 31)
    w = q.shape[-1]
    d = out_dim(w)
    rows = q.reshape(-1, w)
    if rows.shape[0] == 0 or d == 0:
        return torch.zeros(*q.shape[:-1], d)
    scale = rows[:, d : d + 4].contiguous().view(torch.float32)
    values = fbgemm.HFP8QuantizedToFloat(rows[:, :d].contiguous(), ebits, bias)
    return (values / scale).view(*q.shape[:-1], d)


def same(got: torch.Tensor, want: torch.Tensor) -> None:
    """Bit for bit: signed zeros and NaN payloads included."""
    assert got.shape == want.shape
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def row(codes: list[int], scale: float) -> list[int]:
    return codes + list(struct.pack("<ff", scale, 0.0))


@pytest.mark.parametrize("forward", [True, False])
def test_hand_example(sim_ops, forward) -> None:
    # e4m3 bias 15: 0x77 is 0.9375, 0x38 is 2^(7-15) = 2^-8; e5m2 bias 31: 0x7b is
    # 2^(30-31) * 1.75 = 0.875. Divided by a scale of 0.5.
    q = torch.tensor([row([0x77, 0x38, 0xF7, 0x00], 0.5)], dtype=torch.uint8)
    got, _ = dequantize(sim_ops, q, forward)
    if forward:
        assert got.tolist() == [[1.875, 2.0**-7, -1.875, 0.0]]
    else:
        assert got[0, 0].item() == fbgemm.HFP8QuantizedToFloat(q[:, :1], 5, 31).item() / 0.5
    same(got, reference(q, forward))


@settings(max_examples=50, deadline=None)
@given(
    shape=st.sampled_from(
        [(1, 5), (7, 11), (5, 21), (33, 16), (4, 3, 28), (2, 2, 2, 45), (9, 136)]
    ),
    forward=st.booleans(),
    platform=platforms,
    seed=seeds,
)
def test_random_bytes(sim_ops, shape, forward, platform, seed) -> None:
    """Any bytes, so any scale (subnormal, huge, inf, NaN, zero: divisions that overflow or
    give NaN), and widths W not a multiple of 4 (the scale then sits at ceil4(W) - 8, inside
    the row, as in fbgemm's CUDA op)."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    got, _ = dequantize(sim_ops, q, forward, **platform)
    same(got, reference(q, forward))


@settings(max_examples=20, deadline=None)
@given(
    d=st.sampled_from([1, 3, 13, 64, 128, 200]),
    rows=st.integers(1, 40),
    spread=st.sampled_from([1e-30, 1e-3, 1.0, 1e30]),
    forward=st.booleans(),
    seed=seeds,
)
def test_round_trip(sim_ops, d, rows, spread, forward, seed) -> None:
    """What the FP8 codec sends: quantised rows of real data; the decoded values lie within the
    format's half step (relative 2^-(mbits+1) of the row's largest magnitude) of x. Rows far
    below 1e-20 lose everything to fbgemm's epsilon (scale max_pos / (1e-20 + m)): no bound."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, d, generator=gen) * spread
    q = quantize_reference(x, forward)
    got, _ = dequantize(sim_ops, q, forward)
    same(got, reference(q, forward))
    mbits = 3 if forward else 2
    bound = x.abs().amax(dim=1, keepdim=True) * 2.0 ** -(mbits + 1) * 1.01
    floor = x.abs().amax(dim=1, keepdim=True) * (2.0**-14 if forward else 2.0**-30)
    if spread >= 1e-3:
        assert bool(((got[:, :d] - x).abs() <= torch.maximum(bound, floor)).all())


def quantize_reference(x: torch.Tensor, forward: bool) -> torch.Tensor:
    ebits, bias, max_pos = (4, 15, 0.9375) if forward else (5, 31, 0.875)
    d = x.shape[1]
    m = torch.clamp(x.abs().amax(dim=1), min=1e-20)
    scale = torch.tensor(max_pos) / (torch.tensor(1e-20) + m)
    out = torch.zeros(x.shape[0], (d + 3) // 4 * 4 + 8, dtype=torch.uint8)
    out[:, :d] = fbgemm.FloatToHFP8Quantized(x * scale[:, None], ebits, bias, max_pos)
    at = out.shape[1] - 8
    out[:, at : at + 4] = scale.view(-1, 1).view(torch.uint8)
    return out


@pytest.mark.parametrize("shape", [(0, 16), (3, 8), (3, 6)])
def test_empty(sim_ops, shape) -> None:
    q = torch.zeros(shape, dtype=torch.uint8)
    got, _ = dequantize(sim_ops, q, True)
    assert got.shape == (shape[0], out_dim(shape[1]))


def test_short_rows_refused(sim_ops) -> None:
    out = torch.empty(2, 0)
    with pytest.raises(SimError, match="at least 5 bytes"):
        sim_ops("fp8_rowwise_to_float").launch(
            [arg(torch.zeros(2, 4, dtype=torch.uint8)), arg(out)], [True]
        )


def test_production_size(sim_ops) -> None:
    """26*4096 rows of D = 128 from the FP8 row-wise codec, spread over the cores, each byte
    read and each float written once."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(26 * 4096, 128, generator=gen)
    q = quantize_reference(x, True)
    got, result = dequantize(sim_ops, q, True)
    same(got, reference(q, True))
    assert not math.isnan(float(got.sum()))
    assert result.block_dim > 1
    reads = sum(c["gm_read_bytes"] for c in result.cores)
    writes = sum(c["gm_write_bytes"] for c in result.cores)
    assert q.numel() <= reads <= 1.001 * q.numel()
    assert got.numel() * 4 <= writes <= 1.001 * got.numel() * 4
