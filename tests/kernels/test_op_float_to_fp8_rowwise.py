"""FloatToFP8Rowwise on sim against fbgemm's row-wise FP8 arithmetic.

fbgemm-gpu-cpu 1.1.0 has no CPU kernel for FloatToFP8RowwiseQuantized (it raises 'fp8 is not
supported by CPU'); its CUDA op, and fbgemm's later CPU op, scale each row by
max_pos / (1e-20 + max(1e-20, max |x|)) and encode each x * scale with float_to_hfp8. The
reference here is that formula in float32 torch arithmetic with fbgemm's own CPU
FloatToHFP8Quantized for the bytes.
"""

from __future__ import annotations

import math
import struct

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def fmt(forward: bool) -> tuple[int, int, float]:
    return (4, 15, 0.9375) if forward else (5, 31, 0.875)


def width(d: int) -> int:
    return (d + 3) // 4 * 4 + 8


def quantize(ops, x, forward, **launch):
    out = torch.empty(*x.shape[:-1], width(x.shape[-1]), dtype=torch.uint8)
    result = ops("float_to_fp8_rowwise").launch([arg(x), arg(out)], [forward], **launch)
    return out, result


def reference(x: torch.Tensor, forward: bool) -> torch.Tensor:
    ebits, bias, max_pos = fmt(forward)
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    out = torch.zeros(rows.shape[0], width(d), dtype=torch.uint8)
    if rows.numel() > 0:
        # std::max(m, |x|) passes over NaN; inf stays inf.
        mags = torch.nan_to_num(rows.abs(), nan=0.0, posinf=math.inf)
        m = torch.clamp(mags.amax(dim=1), min=1e-20)
        scale = torch.tensor(max_pos) / (torch.tensor(1e-20) + m)
        out[:, :d] = fbgemm.FloatToHFP8Quantized(rows * scale[:, None], ebits, bias, max_pos)
        at = width(d) - 8
        out[:, at : at + 4] = scale.view(-1, 1).view(torch.uint8)
    return out.view(*x.shape[:-1], width(d))


@pytest.mark.parametrize("forward", [True, False])
def test_hand_example(sim_ops, forward) -> None:
    # Row [0.5, -1, 0.25]: m = 1, scale = max_pos / (1e-20 + 1) = max_pos, so -1 encodes as
    # -max_pos; D = 3 pads to 4, then the scale's bytes and 4 zero bytes.
    ebits, bias, max_pos = fmt(forward)
    x = torch.tensor([[0.5, -1.0, 0.25]])
    got, _ = quantize(sim_ops, x, forward)
    assert got.shape == (1, 12)
    codes = fbgemm.FloatToHFP8Quantized(x * max_pos, ebits, bias, max_pos)[0].tolist()
    assert got[0, :3].tolist() == codes
    assert codes[1] == (0xF7 if forward else 0xFB)  # -max_pos: all exponent and mantissa ones
    assert got[0, 3].item() == 0
    assert struct.unpack("<ff", bytes(got[0, 4:].tolist())) == (max_pos, 0.0)
    assert torch.equal(got, reference(x, forward))


@pytest.mark.parametrize("forward", [True, False])
def test_special_rows(sim_ops, forward) -> None:
    """A zero row (scale max_pos / 2e-20), a row with NaN (passed over by the maximum, encoded
    as max_pos), with inf (scale 0: inf * 0 is the machine's default NaN, negative on x86 as on
    the sim, so its code is -max_pos's; CUDA's default NaN is positive), with subnormals, and
    tiny rows."""
    nan, inf = math.nan, math.inf
    x = torch.tensor(
        [
            [0.0, 0.0, -0.0, 0.0, 0.0],
            [nan, 1.0, -2.0, 0.5, 0.0],
            [inf, 1.0, -2.0, 0.5, 0.0],
            [1e-45, -3e-39, 1e-40, 0.0, 1e-44],
            [1e-21, 2e-21, -5e-22, 0.0, 0.0],
            [3e38, -3.4e38, 1.0, 0.0, 1e-30],
        ]
    )
    got, _ = quantize(sim_ops, x, forward)
    assert torch.equal(got, reference(x, forward))


@settings(max_examples=50, deadline=None)
@given(
    shape=st.sampled_from([(1, 1), (7, 3), (5, 13), (33, 8), (4, 3, 20), (2, 2, 2, 37), (9, 128)]),
    spread=st.sampled_from([1e-30, 1e-3, 1.0, 1e4]),
    forward=st.booleans(),
    platform=platforms,
    seed=seeds,
)
def test_matches_reference(sim_ops, shape, spread, forward, platform, seed) -> None:
    """Byte for byte, scale and padding included, for any D (the scale lands after D padded to
    a multiple of 4), leading dims kept, both directions' formats."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen) * spread
    got, _ = quantize(sim_ops, x, forward, **platform)
    assert torch.equal(got, reference(x, forward))


@pytest.mark.parametrize("shape", [(0, 16), (3, 0)])
def test_empty(sim_ops, shape) -> None:
    """No rows; rows of D = 0 (fbgemm returns zeros: no scale)."""
    x = torch.empty(shape)
    got, _ = quantize(sim_ops, x, True)
    assert torch.equal(got, torch.zeros(shape[0], width(shape[1]), dtype=torch.uint8))


def test_production_size(sim_ops) -> None:
    """torchrec's FP8 all-to-all with fp8_quantize_dim = 128: 26*4096 rows, spread over the
    cores, each float read and each byte written once."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(26 * 4096, 128, generator=gen) * torch.rand(26 * 4096, 1, generator=gen)
    got, result = quantize(sim_ops, x, True)
    assert torch.equal(got, reference(x, True))
    assert result.block_dim > 1
    reads = sum(c["gm_read_bytes"] for c in result.cores)
    writes = sum(c["gm_write_bytes"] for c in result.cores)
    assert x.numel() * 4 <= reads <= 1.001 * x.numel() * 4
    assert got.numel() <= writes <= 1.001 * got.numel()
