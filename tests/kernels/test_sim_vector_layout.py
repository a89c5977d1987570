"""Gatherb, Transpose, TransDataTo5HD, RepeatReduceSum, GetGatherMaskRemainCount and the fused
casts MulCast / AddReluCast / SubReluCast on the emulation (sim_checks/vector_layout.cpp) against
numpy: Gatherb's block gather with its stride
rules, the 16 x 16 and NCHW <-> NHWC transposes, TransDataTo5HD's NCHW -> NC1HWC0 recipe in b8,
b16 and b32 and all three list forms, the one-repeat stride rule, and the checks (a race, a short
temporary buffer, an address outside the pipe's buffers, a register read before it is set); the
fused casts convert as precision_conversion.md's CAST_NONE (nearest even, saturating)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest
from kernel_testlib import build_test_library, vector_case

SRC = Path(__file__).resolve().parent / "sim_checks" / "vector_layout.cpp"
OUT_BYTES = 2048
RNG = np.random.default_rng(30)
SENTINEL = 0xEE


@pytest.fixture(scope="module")
def lib(sim_build_root: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))


def run(dll: ctypes.CDLL, name: str, data: np.ndarray) -> tuple[int, str, np.ndarray]:
    return vector_case(dll, name, np.frombuffer(data.tobytes(), dtype=np.uint8), OUT_BYTES)


def ok(dll: ctypes.CDLL, name: str, data: np.ndarray) -> np.ndarray:
    status, message, out = run(dll, name, data)
    assert status == 0, message
    return out


def blocks_in(n_blocks: int) -> np.ndarray:
    """n_blocks distinct 32-byte blocks of uint32 (block b holds b * 8 + 0..7)."""
    return np.arange(n_blocks * 8, dtype=np.uint32)


def gatherb_reference(src: bytes, offsets: np.ndarray, repeats: int, blk: int, rep: int, size: int):
    """Gatherb(ISASI).md's pseudo-code on bytes; untouched bytes keep the sentinel."""
    dst = bytearray([SENTINEL] * size)
    blk = blk or 1
    for i in range(repeats):
        for j in range(8):
            at = (i * rep + j * blk) * 32
            dst[at : at + 32] = src[offsets[i * 8 + j] : offsets[i * 8 + j] + 32]
    return np.frombuffer(bytes(dst), dtype=np.uint8)


def test_gatherb_block_and_repeat_strides(lib: ctypes.CDLL) -> None:
    src = blocks_in(32)
    offsets = (RNG.permutation(32)[:16] * 32).astype(np.uint32)
    out = ok(lib, "gatherb_strides", np.concatenate([src, offsets]))
    expected = gatherb_reference(src.tobytes(), offsets, 2, 2, 16, 1024)
    assert np.array_equal(out[:1024], expected)


def test_gatherb_uint16_block_stride_zero_counts_as_one(lib: ctypes.CDLL) -> None:
    src = blocks_in(32)
    offsets = np.array([224, 192, 160, 128, 96, 64, 32, 0], dtype=np.uint32) + 256
    out = ok(lib, "gatherb_blk0", np.concatenate([src, offsets]))
    expected = gatherb_reference(src.tobytes(), offsets, 1, 0, 8, 256)
    assert np.array_equal(out[:256], expected)
    # the doc's example: reversed blocks of 16 uint16 each
    halves = out[:256].view(np.uint16).reshape(8, 16)
    assert np.array_equal(halves, src.view(np.uint16)[128:256].reshape(8, 16)[::-1])


def test_gatherb_result_copied_out_unsynchronised_is_a_hazard(lib: ctypes.CDLL) -> None:
    zero = np.zeros(8, np.uint32)
    status, message, _ = run(lib, "gatherb_unsynced", np.concatenate([blocks_in(32), zero]))
    assert status == 2 and "read-after-write hazard" in message and "Gatherb" in message, message


def test_transpose_16x16_into_another_tensor_and_in_place(lib: ctypes.CDLL) -> None:
    x = RNG.standard_normal(256).astype(np.float16)
    out = ok(lib, "transpose16", x)
    t = x.reshape(16, 16).T.reshape(-1)
    assert np.array_equal(out[:512].view(np.float16), t)
    assert np.array_equal(out[512:1024].view(np.float16), t)


def test_transpose_nchw_to_nhwc_and_back(lib: ctypes.CDLL) -> None:
    x = RNG.standard_normal((2, 3, 2, 8)).astype(np.float32)
    out = ok(lib, "transpose_nchw_float", x)
    nhwc = out[:384].view(np.float32).reshape(2, 2, 8, 3)
    assert np.array_equal(nhwc, x.transpose(0, 2, 3, 1))
    assert np.array_equal(out[384:768].view(np.float32).reshape(2, 3, 2, 8), x)


def test_transpose_nchw_int8(lib: ctypes.CDLL) -> None:
    x = RNG.integers(-128, 128, (1, 5, 4, 8)).astype(np.int8)
    out = ok(lib, "transpose_nchw_int8", x)
    assert np.array_equal(out[:160].view(np.int8).reshape(1, 4, 8, 5), x.transpose(0, 2, 3, 1))


def test_transpose_refuses_a_short_temporary_buffer(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "transpose_tmp_too_small", np.zeros(96, np.float32))
    assert status == 2 and "needs at least 2560" in message, message


def nc1hwc0(planes: np.ndarray) -> np.ndarray:
    """[C, HW] planes -> [HW, C] (one C1 group: C = C0)."""
    return planes.T.reshape(-1)


def test_trans_data_to_5hd_b16_local_tensor_lists(lib: ctypes.CDLL) -> None:
    x = RNG.standard_normal(512).astype(np.float16)
    out = ok(lib, "trans5hd_b16", x)
    assert np.array_equal(out[:1024].view(np.float16), nc1hwc0(x.reshape(16, 32)))


def test_trans_data_to_5hd_one_repeat_starts_a_stride_on(lib: ctypes.CDLL) -> None:
    x = RNG.standard_normal(512).astype(np.float16)
    out = ok(lib, "trans5hd_b16_one_repeat", x)[:1024]
    # src addresses + 1 block (hw 16..31), dst addresses + 16 blocks (the second half)
    assert (out[:512] == SENTINEL).all()
    assert np.array_equal(out[512:].view(np.float16), nc1hwc0(x.reshape(16, 32))[256:])


def test_trans_data_to_5hd_b32_address_lists(lib: ctypes.CDLL) -> None:
    x = RNG.standard_normal(256).astype(np.float32)
    out = ok(lib, "trans5hd_b32", x)
    assert np.array_equal(out[:1024].view(np.float32), nc1hwc0(x.reshape(16, 16)))


def test_trans_data_to_5hd_b8_halves_address_tensors(lib: ctypes.CDLL) -> None:
    x = RNG.integers(0, 256, 1024).astype(np.uint8)
    out = ok(lib, "trans5hd_b8", x)
    assert np.array_equal(out[:1024], nc1hwc0(x.reshape(32, 32)))


def test_trans_data_to_5hd_address_outside_the_buffers(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "trans5hd_bad_address", np.zeros(256, np.float32))
    assert status == 2 and "dstList address (UB offset 131072" in message, message


def test_repeat_reduce_sum_mask_and_strides(lib: ctypes.CDLL) -> None:
    x = RNG.integers(-50, 50, 256).astype(np.float32)  # integer sums: exact in any order
    out = ok(lib, "repeat_reduce_sum", x)[:64].view(np.float32)
    assert out[0] == x[:64].sum() and out[1] == x[64:128].sum()
    for r in range(2):
        lanes = [r * 128 + (j // 8) * 16 + j % 8 for j in range(20)]
        assert out[8 + 2 * r] == x[lanes].sum()
    assert (out[9:10].view(np.uint32) == 0xEEEEEEEE).all()  # dstRepStride 2 skips element 9


def test_get_gather_mask_remain_count(lib: ctypes.CDLL) -> None:
    x = RNG.standard_normal(128).astype(np.float32)
    out = ok(lib, "gather_mask_remain", x)[:512].view(np.float32)
    assert np.array_equal(out[:64], x[1::2])
    assert out[100] == 64 and out[101] == 64
    status, message, _ = run(lib, "gather_mask_remain_unset", x)
    assert status == 2 and "no GatherMask ran before it" in message, message


def to_int(v: np.ndarray, dtype: type) -> np.ndarray:
    """precision_conversion.md without a round mode: nearest even, saturating."""
    info = np.iinfo(dtype)
    return np.clip(np.rint(v.astype(np.float64)), info.min, info.max).astype(dtype)


def test_mul_cast_half_to_int8_and_uint8(lib: ctypes.CDLL) -> None:
    # quarters in [-16, 16]: products up to 256 in sixteenths, so ties (.5) and both saturations
    a = (RNG.integers(-64, 65, 256) / 4).astype(np.float16)
    b = (RNG.integers(-64, 65, 256) / 4).astype(np.float16)
    out = ok(lib, "mul_cast", np.concatenate([a, b]))
    p = a * b  # float16 product, rounded once as the vector unit's half multiply
    assert np.array_equal(out[:256].view(np.int8), to_int(p, np.int8))
    assert np.array_equal(out[256:512], to_int(p, np.uint8))


def test_add_relu_cast_level0_mask_count_and_repeat_strides(lib: ctypes.CDLL) -> None:
    a = (RNG.integers(-400, 400, 256) / 2).astype(np.float16)
    b = (RNG.integers(-400, 400, 256) / 2).astype(np.float16)
    out = ok(lib, "add_relu_cast_level0", np.concatenate([a, b]))[:512].view(np.int8)
    b2 = np.concatenate([b[:128], np.full(128, 1.5, np.float16)])  # b's repeat 1 is b[256...)
    for r in range(2):
        s = np.maximum(a[128 * r : 128 * r + 100] + b2[128 * r : 128 * r + 100], 0)
        assert np.array_equal(out[256 * r : 256 * r + 100], to_int(s, np.int8)), r
        assert (out[256 * r + 100 : 256 * r + 256].view(np.uint8) == SENTINEL).all()


def test_sub_relu_cast_float_to_half_mask_bits_and_int16_to_int8(lib: ctypes.CDLL) -> None:
    a = RNG.uniform(-3, 3, 128).astype(np.float32)
    b = RNG.uniform(-3, 3, 128).astype(np.float32)
    c = RNG.integers(-10000, 10000, 128).astype(np.int16)  # sums stay inside int16
    e = RNG.integers(-10000, 10000, 128).astype(np.int16)
    data = np.frombuffer(a.tobytes() + b.tobytes() + c.tobytes() + e.tobytes(), np.uint8)
    out = ok(lib, "sub_relu_cast_and_int16", data)
    d = out[:512].view(np.float16)
    lanes = [*range(32), 40]
    others = np.setdiff1d(np.arange(64), lanes)
    for r in range(2):
        got = d[64 * r : 64 * r + 64]
        want = np.maximum(a[64 * r : 64 * r + 64] - b[64 * r : 64 * r + 64], 0).astype(np.float16)
        assert np.array_equal(got[lanes], want[lanes]), r
        assert (got[others].view(np.uint16) == 0xEEEE).all()
    s = np.maximum(c.astype(np.int32) + e, 0)
    assert s.max() > 127  # saturation to 127 is exercised
    assert np.array_equal(out[512:640].view(np.int8), to_int(s, np.int8))
