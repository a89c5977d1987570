"""HFP8ToFloat on sim against fbgemm_gpu's CPU HFP8QuantizedToFloat."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def decode(ops, q, ebits, bias, **launch):
    out = torch.empty(q.shape, dtype=torch.float32)
    result = ops("hfp8_to_float").launch([arg(q), arg(out)], [ebits, bias], **launch)
    return out, result


def want(q: torch.Tensor, ebits: int, bias: int) -> torch.Tensor:
    return fbgemm.HFP8QuantizedToFloat(q.reshape(1, -1), ebits, bias).view(q.shape)


def test_hand_example(sim_ops) -> None:
    # e4m3 bias 15: 0x77 = 2^(14-15) * 1.875; 0x08 = 2^-14 (smallest normal); 0x01 = 2^-17
    # (smallest subnormal); 0x80 = -0; 0xff = -2^(15-15) * 1.875.
    q = torch.tensor([[0x77, 0x08, 0x01, 0x80, 0xFF, 0x00]], dtype=torch.uint8)
    got, _ = decode(sim_ops, q, 4, 15)
    assert got.tolist() == [[0.9375, 2.0**-14, 2.0**-17, -0.0, -1.875, 0.0]]
    assert torch.signbit(got[0, 3])
    assert torch.equal(got, want(q, 4, 15))


@pytest.mark.parametrize("ebits", range(1, 8))
@pytest.mark.parametrize("bias", [1, 7, 15, 31, 63, 120, 127])
def test_every_code_every_format(sim_ops, ebits, bias) -> None:
    """All 256 bytes of every exponent width, biases from 1 to 127: fp32 subnormal results
    included (bias 127)."""
    q = torch.arange(256, dtype=torch.uint8).view(1, -1)
    got, _ = decode(sim_ops, q, ebits, bias)
    want_ = want(q, ebits, bias)
    assert torch.equal(got.view(torch.int32), want_.view(torch.int32))  # -0 and +0 apart


@settings(max_examples=30, deadline=None)
@given(
    ebits=st.integers(1, 7),
    bias=st.integers(1, 127),
    shape=st.sampled_from([(1, 1), (3, 5), (7, 33), (2, 3, 50), (1000,), (4, 777)]),
    platform=platforms,
    seed=seeds,
)
def test_random_bytes(sim_ops, ebits, bias, shape, platform, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    got, _ = decode(sim_ops, q, ebits, bias, **platform)
    assert torch.equal(got.view(torch.int32), want(q, ebits, bias).view(torch.int32))


@pytest.mark.parametrize(
    ("ebits", "bias", "message"),
    [
        (0, 15, r"ebits must be in \[1, 7\]"),
        (8, 15, r"ebits must be in \[1, 7\]"),
        (4, 0, r"exponent_bias must be in \[1, 127\]"),
        (4, 128, r"exponent_bias must be in \[1, 127\]"),
    ],
)
def test_formats_refused(sim_ops, ebits, bias, message) -> None:
    with pytest.raises(SimError, match=message):
        decode(sim_ops, torch.zeros(2, 3, dtype=torch.uint8), ebits, bias)


@pytest.mark.parametrize("shape", [(0, 16), (3, 0)])
def test_empty(sim_ops, shape) -> None:
    q = torch.zeros(shape, dtype=torch.uint8)
    got, _ = decode(sim_ops, q, 4, 15)
    assert torch.equal(got, fbgemm.HFP8QuantizedToFloat(q, 4, 15))


def test_production_size(sim_ops) -> None:
    """torchrec's FP8 all-to-all of pooled embeddings: 26*4096 rows of D = 128 bytes from
    fbgemm's encoder, spread over the cores, each byte read and each float written once."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(26 * 4096, 128, generator=gen) * 0.3
    q = fbgemm.FloatToHFP8Quantized(x, 4, 15, 0.9375)
    got, result = decode(sim_ops, q, 4, 15)
    assert torch.equal(got, fbgemm.HFP8QuantizedToFloat(q, 4, 15))
    assert result.block_dim > 1
    reads = sum(c["gm_read_bytes"] for c in result.cores)
    writes = sum(c["gm_write_bytes"] for c in result.cores)
    assert q.numel() <= reads <= 1.001 * q.numel()
    assert got.numel() * 4 <= writes <= 1.001 * got.numel() * 4
