"""FloatToHFP8 on sim against fbgemm_gpu's CPU FloatToHFP8Quantized."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm

# torchrec's FP8 all-to-all (fbgemm_gpu.quantize_comm without a row dim): e4m3, bias 15.
TORCHREC = (4, 15, 0.9375)


def encode(ops, x, ebits, bias, max_pos, **launch):
    out = torch.empty(x.shape, dtype=torch.uint8)
    result = ops("float_to_hfp8").launch([arg(x), arg(out)], [ebits, bias, max_pos], **launch)
    return out, result


def want(x: torch.Tensor, ebits: int, bias: int, max_pos: float) -> torch.Tensor:
    return fbgemm.FloatToHFP8Quantized(x.reshape(1, -1), ebits, bias, max_pos).view(x.shape)


def decoded(ebits: int, bias: int) -> torch.Tensor:
    """The format's 128 non-negative values, by fbgemm's decoder."""
    codes = torch.arange(128, dtype=torch.uint8).view(1, -1)
    return fbgemm.HFP8QuantizedToFloat(codes, ebits, bias)[0]


def edges(ebits: int, bias: int, max_pos: float) -> torch.Tensor:
    """Every value of the format, both signs, the midpoints between neighbours (ties round to
    even), a hair either side of them, and the clamp and the specials."""
    v = decoded(ebits, bias).double()
    mids = (v[1:] + v[:-1]) / 2
    pts = torch.cat([v, mids]).float()
    near = torch.cat([pts.nextafter(torch.tensor(math.inf)), pts.nextafter(torch.tensor(0.0))])
    special = torch.tensor(
        [max_pos, math.inf, math.nan, 1e-45, 1.2e-38, 3.4e38, 2.0**-126, 1e-30, 7.0]
    )
    # Signalling NaNs, whose clamp fminf does not apply (see hfp8_encode.h).
    snan = torch.tensor([0x7F8000A5, 0x7FA0F0F3, 0x7F800001], dtype=torch.int32).view(torch.float32)
    allv = torch.cat([pts, near, special, snan])
    return torch.cat([allv, -allv])


def test_hand_example(sim_ops) -> None:
    # e4m3 bias 15: 0.9375 = 2^-1 * 1.875 is code 0x77; 1 and inf and NaN clamp to it (NaN with
    # its sign bit); 2^-14 is the smallest normal (exponent field 1, code 8); 2^-17 the
    # smallest subnormal (code 1); 2^-18 is half of it, a tie, rounding to even 0.
    x = torch.tensor([[0.0, -0.0, 1.0, -math.inf, math.nan, 2.0**-14, 2.0**-17, 2.0**-18, 0.5]])
    got, _ = encode(sim_ops, x, *TORCHREC)
    assert got.tolist() == [[0, 128, 119, 247, 119, 8, 1, 0, 112]]
    assert torch.equal(got, want(x, *TORCHREC))


@pytest.mark.parametrize(
    "fmt", [TORCHREC, (5, 31, 0.875), (4, 7, 448.0), (5, 15, 57344.0), (1, 1, 3.0), (7, 63, 1e9)]
)
def test_format_edges(sim_ops, fmt) -> None:
    """Each value of the format, the ties between neighbours and their neighbours, subnormals,
    the clamp, inf and NaN: torchrec's forward and backward formats, e4m3 and e5m2 as in the
    FP8 literature, and the narrowest and widest exponents."""
    x = edges(*fmt).view(1, -1)
    got, _ = encode(sim_ops, x, *fmt)
    assert torch.equal(got, want(x, *fmt))


@settings(max_examples=50, deadline=None)
@given(
    ebits=st.integers(1, 7),
    bias=st.integers(1, 127),
    max_exp=st.integers(-60, 99),
    shape=st.sampled_from([(1, 1), (3, 5), (7, 33), (2, 3, 50), (1000,)]),
    platform=platforms,
    seed=seeds,
)
def test_random_bits_match_fbgemm(sim_ops, ebits, bias, max_exp, shape, platform, seed) -> None:
    """Any float32 bit pattern (NaN payloads, subnormals, inf) under any format the operator
    takes, any shape."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(-(2**31), 2**31 - 1, shape, generator=gen, dtype=torch.int32).view(
        torch.float32
    )
    max_pos = float(torch.rand(1, generator=gen) + 0.5) * 2.0**max_exp
    got, _ = encode(sim_ops, x, ebits, bias, max_pos, **platform)
    assert torch.equal(got, want(x, ebits, bias, max_pos))


@pytest.mark.parametrize(
    ("ebits", "bias", "max_pos", "message"),
    [
        (0, 15, 1.0, r"ebits must be in \[1, 7\]"),
        (8, 15, 1.0, r"ebits must be in \[1, 7\]"),
        (4, 0, 1.0, r"exponent_bias must be in \[1, 127\]"),
        (4, 128, 1.0, r"exponent_bias must be in \[1, 127\]"),
        (4, 15, math.inf, "max_pos must be positive, finite and below 2"),
        (4, 15, 0.0, "max_pos must be positive"),
        (4, 15, 2.0**100, "max_pos must be positive"),
    ],
)
def test_formats_refused(sim_ops, ebits, bias, max_pos, message) -> None:
    with pytest.raises(SimError, match=message):
        encode(sim_ops, torch.ones(2, 3), ebits, bias, max_pos)


@pytest.mark.parametrize("shape", [(0, 16), (3, 0)])
def test_empty(sim_ops, shape) -> None:
    x = torch.empty(shape)
    got, _ = encode(sim_ops, x, *TORCHREC)
    assert torch.equal(got, fbgemm.FloatToHFP8Quantized(x, *TORCHREC))


def test_production_size(sim_ops) -> None:
    """torchrec's FP8 all-to-all of pooled embeddings: 26*4096 rows of D = 128, spread over the
    cores, each float read and each byte written once."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(26 * 4096, 128, generator=gen) * 0.3
    got, result = encode(sim_ops, x, *TORCHREC)
    assert torch.equal(got, fbgemm.FloatToHFP8Quantized(x, *TORCHREC))
    assert result.block_dim > 1
    reads = sum(c["gm_read_bytes"] for c in result.cores)
    writes = sum(c["gm_write_bytes"] for c in result.cores)
    # Beyond the elements: the tiling data each core reads.
    assert x.numel() * 4 <= reads <= 1.001 * x.numel() * 4
    assert got.numel() <= writes <= 1.001 * got.numel()
