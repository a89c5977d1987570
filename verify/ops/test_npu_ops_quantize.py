"""The quantised-communication codecs on the npu device, against fbgemm's CPU kernels.

fbgemm's row-wise INT8 codec (FloatToFused8BitRowwiseQuantized, Fused8BitRowwiseQuantizedToFloat),
which torchrec's QCommsConfig reaches through fbgemm_gpu.quantize_comm: bytes, scales and biases
equal to fbgemm's, floats equal bit for bit (fbgemm rounds byte * scale + bias once), the
codec's error within half a quantisation step of each row, and bad arguments refused before any
kernel runs.
"""

from __future__ import annotations

import pytest
import torch

NPU = "npu"
INT8_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::FloatToFused8BitRowwiseQuantized", "fbgemm::Fused8BitRowwiseQuantizedToFloat"
)
pytestmark = [pytest.mark.requires_npu, INT8_OPS]


@pytest.fixture(scope="module", autouse=True)
def adapter() -> object:
    import fbgemm_gpu  # noqa: F401  (the CPU reference kernels)
    import fbgemm_npu_api

    return fbgemm_npu_api


fbgemm = torch.ops.fbgemm


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == NPU, f"result on {actual.device}, not on npu"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("shape", [(64, 128), (5, 13), (3, 4, 37), (1, 1), (0, 16), (3, 0)])
def test_int8_round_trip_matches_cpu(shape: tuple[int, ...]) -> None:
    gen = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=gen) * 3 + 1
    q = fbgemm.FloatToFused8BitRowwiseQuantized(x)
    q_npu = fbgemm.FloatToFused8BitRowwiseQuantized(x.to(NPU))
    assert_same(q_npu, q)
    assert_same(
        fbgemm.Fused8BitRowwiseQuantizedToFloat(q_npu), fbgemm.Fused8BitRowwiseQuantizedToFloat(q)
    )


def test_int8_strided_input_and_any_bytes() -> None:
    gen = torch.Generator().manual_seed(7)
    # A transposed input: the npu rows are its rows. fbgemm 1.1.0's CPU op reads a strided
    # tensor's storage as if it were contiguous (other numbers), so the reference is its result
    # on the contiguous copy.
    x = torch.randn(40, 24, generator=gen).t()
    assert_same(
        fbgemm.FloatToFused8BitRowwiseQuantized(x.to(NPU)),
        fbgemm.FloatToFused8BitRowwiseQuantized(x.contiguous()),
    )
    # Any bytes decode as fbgemm decodes them, subnormal, huge, inf and NaN scales included.
    q = torch.randint(0, 256, (300, 21), generator=gen, dtype=torch.uint8)
    assert_same(
        fbgemm.Fused8BitRowwiseQuantizedToFloat(q.to(NPU)),
        fbgemm.Fused8BitRowwiseQuantizedToFloat(q),
    )


def test_int8_codec_error_bound() -> None:
    """The codec's own bound, from float64: every value within half a step (scale / 2) of the
    original, plus the fp32 rounding of the step's arithmetic."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(512, 96, generator=gen) * torch.rand(512, 1, generator=gen) * 100
    q = fbgemm.FloatToFused8BitRowwiseQuantized(x.to(NPU))
    y = fbgemm.Fused8BitRowwiseQuantizedToFloat(q).cpu().double()
    x64 = x.double()
    step = (x64.amax(1, keepdim=True) - x64.amin(1, keepdim=True)) / 255
    slack = 4 * torch.finfo(torch.float32).eps * x64.abs().amax(1, keepdim=True)
    assert bool(((y - x64).abs() <= step / 2 + slack).all())


def test_int8_through_fbgemm_quantize_comm() -> None:
    """What torchrec's QCommsConfig(INT8) runs: fbgemm_gpu.quantize_comm's encode and decode
    (rows of row_dim, flattened for the collective) on npu tensors, equal to the CPU's."""
    from fbgemm_gpu.quantize_comm import QuantizationContext, QuantizedCommCodec
    from fbgemm_gpu.split_embedding_configs import SparseType

    gen = torch.Generator().manual_seed(5)
    x = torch.randn(32 * 64, generator=gen)
    codec = QuantizedCommCodec(SparseType.INT8, loss_scale=None)
    results = []
    for device in ("cpu", NPU):
        ctx = QuantizationContext(row_dim=64)
        encoded = codec.encode(x.to(device), ctx)
        results.append((encoded, codec.decode(encoded, ctx)))
    (enc_cpu, dec_cpu), (enc_npu, dec_npu) = results
    assert_same(enc_npu, enc_cpu)
    assert_same(dec_npu, dec_cpu)


def test_int8_refusals() -> None:
    with pytest.raises(RuntimeError, match="must have >= 2 dimension"):
        fbgemm.FloatToFused8BitRowwiseQuantized(torch.ones(4).to(NPU))
    with pytest.raises(TypeError, match="must be float32"):
        fbgemm.FloatToFused8BitRowwiseQuantized(torch.ones(2, 4, dtype=torch.half).to(NPU))
    with pytest.raises(RuntimeError, match="expected scalar type Byte but found Float"):
        fbgemm.Fused8BitRowwiseQuantizedToFloat(torch.ones(2, 12).to(NPU))
    with pytest.raises(RuntimeError, match="8 bytes"):
        fbgemm.Fused8BitRowwiseQuantizedToFloat(torch.zeros(2, 7, dtype=torch.uint8).to(NPU))
