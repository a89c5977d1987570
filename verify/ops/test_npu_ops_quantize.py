"""The quantised-communication codecs on the npu device, against fbgemm's CPU kernels.

fbgemm's row-wise INT8 codec (FloatToFused8BitRowwiseQuantized, Fused8BitRowwiseQuantizedToFloat),
which torchrec's QCommsConfig reaches through fbgemm_gpu.quantize_comm: bytes, scales and biases
equal to fbgemm's, floats equal bit for bit (fbgemm rounds byte * scale + bias once), the
codec's error within half a quantisation step of each row, and bad arguments refused before any
kernel runs. The same for the FP8 codecs: HFP8 (FloatToHFP8Quantized, HFP8QuantizedToFloat,
CommType.FP8 without a row dim) against fbgemm's CPU ops, and FP8 row-wise
(FloatToFP8RowwiseQuantized, FP8RowwiseQuantizedToFloat, with fp8_quantize_dim), which
fbgemm-gpu-cpu 1.1.0 does not run on the CPU ('fp8 is not supported by CPU'), against its CUDA
op's formula with fbgemm's CPU HFP8 encoder and decoder for the codes.
"""

from __future__ import annotations

import math

import pytest
import torch

NPU = "npu"
INT8_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::FloatToFused8BitRowwiseQuantized", "fbgemm::Fused8BitRowwiseQuantizedToFloat"
)
HFP8_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::FloatToHFP8Quantized", "fbgemm::HFP8QuantizedToFloat"
)
FP8_ROWWISE_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::FloatToFP8RowwiseQuantized", "fbgemm::FP8RowwiseQuantizedToFloat"
)
pytestmark = [pytest.mark.requires_npu]


fbgemm = torch.ops.fbgemm


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == NPU, f"result on {actual.device}, not on npu"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


@INT8_OPS
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


@INT8_OPS
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


@INT8_OPS
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


@INT8_OPS
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


@INT8_OPS
def test_int8_refusals() -> None:
    with pytest.raises(RuntimeError, match="must have >= 2 dimension"):
        fbgemm.FloatToFused8BitRowwiseQuantized(torch.ones(4).to(NPU))
    with pytest.raises(TypeError, match="must be float32"):
        fbgemm.FloatToFused8BitRowwiseQuantized(torch.ones(2, 4, dtype=torch.half).to(NPU))
    with pytest.raises(RuntimeError, match="expected scalar type Byte but found Float"):
        fbgemm.Fused8BitRowwiseQuantizedToFloat(torch.ones(2, 12).to(NPU))
    with pytest.raises(RuntimeError, match="8 bytes"):
        fbgemm.Fused8BitRowwiseQuantizedToFloat(torch.zeros(2, 7, dtype=torch.uint8).to(NPU))


# ---- FP8 -----------------------------------------------------------------------------------

TORCHREC_HFP8 = (4, 15, 0.9375)  # fbgemm_gpu.quantize_comm's FP8 format without a row dim


@HFP8_OPS
@pytest.mark.parametrize("fmt", [TORCHREC_HFP8, (5, 31, 0.875), (4, 7, 448.0)])
@pytest.mark.parametrize("shape", [(64, 128), (5, 13), (1, 1), (0, 16), (3, 0)])
def test_hfp8_round_trip_matches_cpu(fmt: tuple[int, int, float], shape: tuple[int, int]) -> None:
    gen = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=gen) * fmt[2] / 2
    if x.numel() > 2:
        x.view(-1)[:3] = torch.tensor([float("nan"), float("-inf"), 1e-30])
    q = fbgemm.FloatToHFP8Quantized(x, *fmt)
    q_npu = fbgemm.FloatToHFP8Quantized(x.to(NPU), *fmt)
    assert_same(q_npu, q)
    assert_same(
        fbgemm.HFP8QuantizedToFloat(q_npu, *fmt[:2]), fbgemm.HFP8QuantizedToFloat(q, *fmt[:2])
    )


@HFP8_OPS
def test_hfp8_through_fbgemm_quantize_comm() -> None:
    """What torchrec's QCommsConfig(FP8) runs without fp8_quantize_dim: fbgemm_gpu.quantize_comm's
    encode and decode on npu tensors, equal to the CPU's."""
    from fbgemm_gpu.quantize_comm import QuantizedCommCodec
    from fbgemm_gpu.split_embedding_configs import SparseType

    gen = torch.Generator().manual_seed(6)
    x = torch.randn(32, 64, generator=gen)
    codec = QuantizedCommCodec(SparseType.FP8, loss_scale=None)
    results = []
    for device in ("cpu", NPU):
        encoded = codec.encode(x.to(device))
        results.append((encoded, codec.decode(encoded)))
    (enc_cpu, dec_cpu), (enc_npu, dec_npu) = results
    assert_same(enc_npu, enc_cpu)
    assert_same(dec_npu, dec_cpu)


def fp8_rowwise_reference(x: torch.Tensor, forward: bool) -> torch.Tensor:
    """fbgemm's CUDA FloatToFP8RowwiseQuantized: scale max_pos / (1e-20 + max(1e-20, max |x|)),
    codes float_to_hfp8(x * scale) (fbgemm's CPU HFP8 encoder), rows padded to ceil4(D) + 8."""
    ebits, bias, max_pos = (4, 15, 0.9375) if forward else (5, 31, 0.875)
    d = x.shape[-1]
    rows = x.reshape(math.prod(x.shape[:-1]), d).float()  # -1 is ambiguous when D = 0
    width = (d + 3) // 4 * 4 + 8
    out = torch.zeros(rows.shape[0], width, dtype=torch.uint8)
    if rows.numel() == 0:
        return out.view(*x.shape[:-1], width)  # fbgemm's zeros: no scale
    m = torch.clamp(torch.nan_to_num(rows.abs(), nan=0.0, posinf=float("inf")).amax(1), min=1e-20)
    scale = torch.tensor(max_pos) / (torch.tensor(1e-20) + m)
    out[:, :d] = fbgemm.FloatToHFP8Quantized(rows * scale[:, None], ebits, bias, max_pos)
    out[:, width - 8 : width - 4] = scale.view(-1, 1).view(torch.uint8)
    return out.view(*x.shape[:-1], width)


def fp8_rowwise_decoded(q: torch.Tensor, forward: bool) -> torch.Tensor:
    """fbgemm's CUDA FP8RowwiseQuantizedToFloat for rows of ceil4(D) + 8 bytes."""
    ebits, bias = (4, 15) if forward else (5, 31)
    d = q.shape[-1] - 8
    rows = q.reshape(-1, q.shape[-1])
    scale = rows[:, d : d + 4].contiguous().view(torch.float32)
    values = fbgemm.HFP8QuantizedToFloat(rows[:, :d].contiguous(), ebits, bias) / scale
    return values.view(*q.shape[:-1], d)


@FP8_ROWWISE_OPS
@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("shape", [(64, 128), (5, 13), (3, 4, 37), (0, 16), (3, 0)])
def test_fp8_rowwise_round_trip(forward: bool, shape: tuple[int, ...]) -> None:
    gen = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=gen) * torch.rand(*shape[:-1], 1, generator=gen) * 10
    q_npu = fbgemm.FloatToFP8RowwiseQuantized(x.to(NPU), forward)
    q = fp8_rowwise_reference(x, forward)
    assert_same(q_npu, q)
    y_npu = fbgemm.FP8RowwiseQuantizedToFloat(q_npu, forward)
    if x.numel() > 0:
        assert_same(y_npu, fp8_rowwise_decoded(q, forward))
        # The codec's bound: half a step of the mantissa (2^-(mbits + 1)) of the row's largest
        # magnitude, which the scale maps to max_pos.
        mbits = 3 if forward else 2
        bound = x.abs().amax(-1, keepdim=True) * 2.0 ** -(mbits + 1) * 1.01
        assert bool(((y_npu.cpu()[..., : shape[-1]] - x).abs() <= bound).all())
    else:
        assert y_npu.shape == (*shape[:-1], (shape[-1] + 3) // 4 * 4)


@FP8_ROWWISE_OPS
def test_fp8_rowwise_dtypes() -> None:
    """float16 and bfloat16 input are widened exactly (fbgemm's CUDA op reads them with
    to_float); FP16 (1) and BF16 (5) output are the float32 result rounded to nearest even."""
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(33, 20, generator=gen)
    for dtype in (torch.float16, torch.bfloat16):
        low = x.to(dtype)
        assert_same(
            fbgemm.FloatToFP8RowwiseQuantized(low.to(NPU), True),
            fp8_rowwise_reference(low.float(), True),
        )
    q = fp8_rowwise_reference(x, True)
    full = fp8_rowwise_decoded(q, True)
    for sparse, dtype in ((0, torch.float32), (1, torch.float16), (5, torch.bfloat16)):
        assert_same(fbgemm.FP8RowwiseQuantizedToFloat(q.to(NPU), True, sparse), full.to(dtype))


@FP8_ROWWISE_OPS
def test_fp8_rowwise_through_fbgemm_quantize_comm() -> None:
    """What torchrec's QCommsConfig(FP8, fp8_quantize_dim=64) runs: quantize_comm's encode and
    decode on npu tensors (on the CPU fbgemm-gpu-cpu raises), equal to the formula's bytes and
    floats."""
    from fbgemm_gpu.quantize_comm import QuantizationContext, QuantizedCommCodec
    from fbgemm_gpu.split_embedding_configs import SparseType

    gen = torch.Generator().manual_seed(9)
    x = torch.randn(32 * 64, generator=gen)
    codec = QuantizedCommCodec(SparseType.FP8, loss_scale=None, row_dim=64)
    ctx = QuantizationContext(row_dim=64)
    encoded = codec.encode(x.to(NPU), ctx)
    q = fp8_rowwise_reference(x.view(-1, 64), True)
    assert_same(encoded, q.view(-1))
    assert_same(codec.decode(encoded, ctx), fp8_rowwise_decoded(q, True).view(-1))


@pytest.mark.requires_npu_ops(
    "fbgemm::FloatToHFP8Quantized",
    "fbgemm::HFP8QuantizedToFloat",
    "fbgemm::FloatToFP8RowwiseQuantized",
    "fbgemm::FP8RowwiseQuantizedToFloat",
)
def test_fp8_refusals() -> None:
    with pytest.raises(RuntimeError, match=r"must have 2 dimension\(s\)\. Found 1"):
        fbgemm.FloatToHFP8Quantized(torch.ones(4).to(NPU), *TORCHREC_HFP8)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Half"):
        fbgemm.FloatToHFP8Quantized(torch.ones(2, 4, dtype=torch.half).to(NPU), *TORCHREC_HFP8)
    with pytest.raises(ValueError, match=r"ebits must be in \[1, 7\]"):
        fbgemm.FloatToHFP8Quantized(torch.ones(2, 4).to(NPU), 8, 15, 1.0)
    with pytest.raises(ValueError, match="max_pos must be positive"):
        fbgemm.FloatToHFP8Quantized(torch.ones(2, 4).to(NPU), 4, 15, float("inf"))
    with pytest.raises(ValueError, match=r"exponent_bias must be in \[1, 127\]"):
        fbgemm.HFP8QuantizedToFloat(torch.zeros(2, 4, dtype=torch.uint8).to(NPU), 4, 0)
    with pytest.raises(RuntimeError, match="must have >= 2 dimension"):
        fbgemm.FloatToFP8RowwiseQuantized(torch.ones(4).to(NPU), True)
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        fbgemm.FloatToFP8RowwiseQuantized(torch.ones(2, 4, dtype=torch.float64).to(NPU), True)
    with pytest.raises(ValueError, match="output_dtype must be SparseType"):
        fbgemm.FP8RowwiseQuantizedToFloat(torch.zeros(2, 16, dtype=torch.uint8).to(NPU), True, 3)
    with pytest.raises(RuntimeError, match="at least 5 bytes"):
        fbgemm.FP8RowwiseQuantizedToFloat(torch.zeros(2, 4, dtype=torch.uint8).to(NPU), True)
