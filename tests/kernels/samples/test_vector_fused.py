"""AddRelu, SubRelu, FusedMulAdd, MulAddRelu, MulAddDst, Axpy, And, Or, Not and Rsqrt in their
count and level-0 forms, and Brcb (samples/vector_fused.cpp) against numpy: masks, repeat strides,
instructions that read dst, half sources into a float dst, and the dtype refusals."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import build_test_library, vector_case

SRC = Path(__file__).resolve().parent / "vector_fused.cpp"
OUT_BYTES = 4096

# Quarters in [-3, 3]: products and sums of a few are exact in float and half.
IN = (np.random.default_rng(7).integers(-12, 13, 512) / 4).astype(np.float32)
A, B = IN[:256], IN[256:]


@pytest.fixture(scope="module")
def lib(sim_build_root: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))


def run(dll: ctypes.CDLL, name: str) -> tuple[int, str, np.ndarray]:
    return vector_case(dll, name, IN, OUT_BYTES)


def ok(dll: ctypes.CDLL, name: str) -> np.ndarray:
    status, message, out = run(dll, name)
    assert status == 0, message
    return out


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def test_add_relu_and_sub_relu(lib: ctypes.CDLL) -> None:
    out = ok(lib, "relu_ops")
    assert np.array_equal(out[:1024].view(np.float32), relu(A + B))
    e = out[1024:1536].view(np.float16)
    x = np.concatenate([A, -A]).astype(np.float16)
    y = B.astype(np.float16)
    expected = np.full(256, -100, dtype=np.float16)
    for r in range(2):
        for j in range(128):
            if j % 16 < 4:
                expected[r * 128 + j] = relu(x[r * 256 + j] - y[r * 128 + j])
    assert np.array_equal(e, expected)
    p, q = A.view(np.int16).astype(np.int32), B.view(np.int16).astype(np.int32)
    f = out[1536:2560].view(np.int16).astype(np.int32)
    fits = np.abs(p + q) <= 32767  # int16 overflow is not documented: compared where none
    assert fits.sum() > 256
    assert np.array_equal(f[fits], relu(p + q)[fits])


def test_multiply_add_family(lib: ctypes.CDLL) -> None:
    out = ok(lib, "fma_ops")
    b = np.concatenate([B, A])
    assert np.array_equal(out[:1024].view(np.float32), A * B + B)  # FusedMulAdd: a * dst + b
    d2 = A[:128].copy()
    for r in range(2):
        for j in range(40):
            d2[r * 64 + j] = relu(A[r * 64 + j] * A[r * 64 + j] + b[r * 128 + j])
    assert np.array_equal(out[1024:1536].view(np.float32), d2)
    assert np.array_equal(out[1536:1792].view(np.float32), A[:64] * B[:64] + B[:64])
    assert np.array_equal(out[1792:2048].view(np.float32), A[:64] * B[:64] + B[:64])
    d5 = B[:64].copy()
    d5[32:] += 0.5 * A[32:64]
    assert np.array_equal(out[2048:2304].view(np.float32), d5)
    assert np.array_equal(out[2304:2560].view(np.float32), -2 * A[:64] + B[:64])


def test_logic_and_rsqrt(lib: ctypes.CDLL) -> None:
    out = ok(lib, "logic_rsqrt")
    p, q = A.view(np.int16)[:256], B.view(np.int16)[:256]
    assert np.array_equal(out[:512].view(np.int16), p & q)
    assert np.array_equal(out[512:1024].view(np.int16), p | q)
    d3 = np.full(256, 0x5555, dtype=np.int16)
    for r in range(2):
        d3[r * 128 : r * 128 + 100] = ~p[r * 128 : r * 128 + 100]
    assert np.array_equal(out[1024:1536].view(np.int16), d3)
    x = np.abs(A).astype(np.float64) + 0.25
    assert np.array_equal(out[1536:2560].view(np.float32), (1 / np.sqrt(x)).astype(np.float32))
    h = out[2560:3072].view(np.float16).astype(np.float64)
    expected = np.where(np.arange(256) % 2 == 0, 1 / np.sqrt(x), -100)
    np.testing.assert_allclose(h, expected, rtol=1e-3)


def test_dtype_and_layout_refusals(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "and_float_refused")
    assert status == 2 and "And at" in message and "float is not a supported" in message, message
    status, message, _ = run(lib, "axpy_mixed_level0_refused")
    assert status == 2 and "half sources into a float dst" in message, message


def test_brcb_blocks_and_strides(lib: ctypes.CDLL) -> None:
    out = ok(lib, "brcb")
    assert np.array_equal(out[:512].view(np.float32), np.repeat(A[:16], 8))
    e = out[512:1536].view(np.float16)
    expected = np.full(512, -100, dtype=np.float16)
    for i in range(2):
        for j in range(8):
            at = (i * 16 + j * 2) * 16  # blocks of 16 halves
            expected[at : at + 16] = np.float16(A[i * 8 + j])
    assert np.array_equal(e, expected)
