"""ShiftLeft and ShiftRight (samples/vector_shift.cpp) against numpy and the documented examples:
count and level-0 forms (mask array, mask count, counter mode), the signed rules (the sign bit
kept by a left shift, copied in by a right shift), roundEn, both ends of the shift range, and the
refusals (dtype, range, roundEn by 0, the tensor-of-shifts form A2 lacks)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import KERNELS, build_test_library, vector_case

SRC = Path(__file__).resolve().parent / "vector_shift.cpp"
OUT_BYTES = 8192

# Random bits, led by the pages' own examples: 0b1010101010101010 (ShiftLeft.md, ShiftRight.md)
# and 17 (ShiftRight.md's roundEn example), then the sign boundaries.
_BITS = np.random.default_rng(29).integers(0, 1 << 16, 1024, dtype=np.uint16)
_BITS[:6] = [0b1010101010101010, 17, 0x7FFF, 0x8000, 0xFFFF, 0x0001]
IN = _BITS.view(np.float32)
U16, I16 = _BITS, _BITS.view(np.int16)
U32, I32 = _BITS.view(np.uint32), _BITS.view(np.int32)


@pytest.fixture(scope="module")
def lib(sim_build_root: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))


def ok(dll: ctypes.CDLL, name: str) -> np.ndarray:
    status, message, out = vector_case(dll, name, IN, OUT_BYTES)
    assert status == 0, message
    return out


# References on the bit strings, as the pages describe the shifts.
def shl(x: int, n: int, width: int, signed: bool) -> int:
    bits = format(x & ((1 << width) - 1), f"0{width}b")
    if signed:  # the sign bit stays; the bits below it move left, zeros come in
        body = (bits[1:] + "0" * n)[n:]
        return int(bits[0] + body, 2)
    return int((bits + "0" * n)[n:], 2)


def shr(x: int, n: int, width: int, signed: bool, round_en: bool = False) -> int:
    bits = format(x & ((1 << width) - 1), f"0{width}b")
    fill = bits[0] if signed else "0"
    out = int((fill * n + bits)[:width], 2)
    if round_en and signed and bits[width - n] == "1":  # the last bit shifted out
        out = (out + 1) & ((1 << width) - 1)
    return out


def ref(fn, xs: np.ndarray, n: int, width: int, signed: bool, **kw) -> np.ndarray:
    dtype = {16: np.uint16, 32: np.uint32}[width]
    return np.array([fn(int(x), n, width, signed, **kw) for x in xs], dtype=dtype)


def test_count_forms(lib: ctypes.CDLL) -> None:
    out = ok(lib, "shift_count")
    d1 = out[:2048].view(np.uint16)
    assert d1[0] == 0b1101010101010000  # ShiftLeft.md: int16 1010101010101010 << 3
    assert np.array_equal(d1, ref(shl, I16, 3, 16, True))
    d2 = out[2048:4096].view(np.uint16)
    assert np.array_equal(d2, ref(shr, I16, 5, 16, True))
    assert np.array_equal(d2.view(np.int16), I16 >> 5)  # numpy's arithmetic shift agrees
    d3 = out[4096:6144].view(np.uint32)
    assert np.array_equal(d3, U32 << np.uint32(7))
    d4 = out[6144:8192].view(np.int32)
    assert np.array_equal(d4, I32 >> 13)


def test_the_ends_of_the_shift_range(lib: ctypes.CDLL) -> None:
    out = ok(lib, "shift_edges")
    d1 = out[:2048].view(np.int16)
    assert np.array_equal(d1, np.where(I16 < 0, np.int16(-32768), np.int16(0)))
    d2 = out[2048:4096].view(np.int16)
    assert np.array_equal(d2, np.where(I16 < 0, np.int16(-1), np.int16(0)))
    assert not out[4096:6144].any()  # uint32 << 32
    d4 = out[6144:8192].view(np.uint16)
    assert np.array_equal(d4[:1000], U16[:1000]) and (d4[1000:] == 0x1234).all()


def test_level0_forms_masks_strides_round(lib: ctypes.CDLL) -> None:
    out = ok(lib, "shift_level0")
    d1 = out[:512].view(np.uint16)
    e1 = np.full(256, 0x7777, dtype=np.uint16)
    lanes = [j for j in range(64) if (0x00FF00FF00FF00FF >> j) & 1] + list(range(112, 128))
    for r in range(2):
        for j in lanes:
            e1[r * 128 + j] = shr(int(I16[r * 256 + j]), 4, 16, True, round_en=True)
    assert np.array_equal(d1, e1)
    assert shr(17, 5, 16, True, round_en=True) == 1  # ShiftRight.md's roundEn example
    d2 = out[512:2048].view(np.uint16)
    e2 = np.full(768, 0x5555, dtype=np.uint16)
    for r in range(3):
        for j in range(40):
            e2[(r * 16 + (j // 16) * 2) * 16 + j % 16] = (int(U16[r * 128 + j]) << 1) & 0xFFFF
    assert np.array_equal(d2, e2)
    d3 = out[2048:2560].view(np.uint32)
    assert np.array_equal(d3[:100], U32[:100] >> np.uint32(9))
    assert (d3[100:] == 0xAAAAAAAA).all()


def test_refusals_name_the_api(lib: ctypes.CDLL) -> None:
    status, message, _ = vector_case(lib, "shift_float_refused", IN, OUT_BYTES)
    assert status == 2 and "ShiftLeft at" in message and "float is not a supported" in message
    status, message, _ = vector_case(lib, "shift_out_of_range", IN, OUT_BYTES)
    assert status == 2 and "shift 17 is outside [0, 16] for int16" in message, message
    status, message, _ = vector_case(lib, "shift_round_by_zero", IN, OUT_BYTES)
    assert status == 2 and "roundEn with a shift of 0" in message, message


def test_tensor_of_shifts_is_refused_at_compile_time(tmp_path: Path) -> None:
    src = tmp_path / "probe.cpp"
    src.write_text(
        '#include "kernel_operator.h"\n'
        "void probe(AscendC::LocalTensor<int16_t> a, AscendC::LocalTensor<int16_t> b) {\n"
        "    AscendC::ShiftRight(a, a, b, 16);\n"
        "}\n",
        encoding="utf-8",
    )
    cmd = ["g++", "-std=c++17", "-fsyntax-only", f"-I{KERNELS / 'sim' / 'include'}"]
    proc = subprocess.run(
        [*cmd, f"-I{KERNELS / 'common'}", str(src)], capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "ShiftRight with a tensor of shifts is not emulated" in proc.stderr, proc.stderr[-2000:]
