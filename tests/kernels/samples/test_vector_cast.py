"""Cast's Atlas A2 table (samples/vector_cast.cpp): the rounding modes into integers, half,
bfloat16_t and float (integral rounding), saturation, the level-0 lanes of a half -> int32_t
conversion (64 a repeat, each operand's blocks in its own type), and the refused combinations;
against a reference worked with exact fractions."""

from __future__ import annotations

import ctypes
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import build_test_library, vector_case

SRC = Path(__file__).resolve().parent / "vector_cast.cpp"
OUT_BYTES = 8192

# Quarters in [-3, 3]: ties (x.5) and non-ties for every rounding mode.
IN = (np.random.default_rng(11).integers(-12, 13, 512) / 4).astype(np.float32)
MODES = ["none", "rint", "floor", "ceil", "round", "trunc"]


@pytest.fixture(scope="module")
def lib(sim_build_root: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))


def run(dll: ctypes.CDLL, name: str) -> tuple[int, str, np.ndarray]:
    return vector_case(dll, name, IN, OUT_BYTES)


def ok(dll: ctypes.CDLL, name: str) -> np.ndarray:
    status, message, out = run(dll, name)
    assert status == 0, message
    return out


def to_int(v: Fraction, mode: str) -> int:
    fl = math.floor(v)
    if mode == "floor":
        return fl
    if mode == "ceil":
        return math.ceil(v)
    if mode == "trunc":
        return int(v)  # toward zero
    if mode == "round":  # ties away from zero
        r = math.floor(abs(v) + Fraction(1, 2))
        return r if v >= 0 else -r
    diff = v - fl  # rint: ties to even
    if diff != Fraction(1, 2):
        return fl if diff < Fraction(1, 2) else fl + 1
    return fl if fl % 2 == 0 else fl + 1


def choose(v: Fraction, lo: float, hi: float, lo_odd: bool, mode: str) -> float:
    """The neighbour of v (lo < v < hi) a rounding mode picks."""
    dl, dh = v - Fraction(lo), Fraction(hi) - v
    if mode == "floor":
        return lo
    if mode == "ceil":
        return hi
    if mode == "trunc":
        return lo if v > 0 else hi
    if mode == "odd":
        return lo if lo_odd else hi
    if dl != dh:
        return lo if dl < dh else hi
    if mode == "round":
        return hi if v > 0 else lo
    return hi if lo_odd else lo  # rint / none: the even one


def to_float_type(v: Fraction, dtype: type, mode: str) -> float:
    top = float(np.finfo(dtype).max)
    if v > top:
        return top
    if v < -top:
        return -top
    n = dtype(float(v))
    if Fraction(float(n)) == v:
        return float(n)
    up = Fraction(float(n)) < v
    lo = n if up else np.nextafter(n, dtype(-np.inf))
    hi = np.nextafter(n, dtype(np.inf)) if up else n
    odd = bool(np.array(lo).view(np.uint16 if dtype is np.float16 else np.uint32) & 1)
    return choose(v, float(lo), float(hi), odd, mode)


def to_bf16(v: Fraction, mode: str) -> float:
    bits = int(np.float32(float(v)).view(np.uint32))  # v is a float here
    t = bits & 0xFFFF0000  # toward zero
    a = np.array([t], dtype=np.uint32).view(np.float32)[0]
    if Fraction(float(a)) == v:
        return float(a)
    b = np.array([t + 0x10000], dtype=np.uint32).view(np.float32)[0]  # away from zero
    lo, hi = (a, b) if v > 0 else (b, a)
    lo_odd = bool((int(np.float32(lo).view(np.uint32)) >> 16) & 1)
    return choose(v, float(lo), float(hi), lo_odd, mode)


def test_float_to_int32_modes_and_saturation(lib: ctypes.CDLL) -> None:
    d = ok(lib, "float_to_int32")[:2560].view(np.int32).reshape(5, 128)
    x = np.concatenate([IN[:64], IN[:64] * np.float32(1e9)])
    for m, mode in enumerate(MODES[1:]):
        expected = [max(-(2**31), min(2**31 - 1, to_int(Fraction(float(v)), mode))) for v in x]
        assert d[m].tolist() == expected, mode


def test_float_to_half_modes_odd_and_saturation(lib: ctypes.CDLL) -> None:
    d = ok(lib, "float_to_half")[:3584].view(np.float16).reshape(7, 256)
    x = np.concatenate([IN[:128] + np.float32(1 / 3), IN[128:256] * np.float32(30000)])
    for m, mode in enumerate([*MODES, "odd"]):
        expected = [to_float_type(Fraction(float(v)), np.float16, mode) for v in x]
        assert d[m].astype(np.float64).tolist() == expected, mode
    assert (np.abs(d[0]) == 65504).any(), "the case does not saturate"


def test_int32_to_float_modes(lib: ctypes.CDLL) -> None:
    d = ok(lib, "int32_to_float")[:3072].view(np.float32).reshape(6, 128)
    x = np.arange(16777200, 16777264)
    x = np.concatenate([x, -x])
    for m, mode in enumerate(MODES):
        expected = [to_float_type(Fraction(int(v)), np.float32, mode) for v in x]
        assert d[m].astype(np.float64).tolist() == expected, mode


def test_float_to_float_and_bf16(lib: ctypes.CDLL) -> None:
    out = ok(lib, "float_to_float_bf16")
    d = out[:1280].view(np.float32).reshape(5, 64)
    e = out[1280:1920].view(np.uint16).reshape(5, 64).astype(np.uint32) << 16
    b = IN[:64] + np.float32(1 / 3)
    for m, mode in enumerate(MODES[1:]):
        assert d[m].tolist() == [float(to_int(Fraction(float(v)), mode)) for v in IN[:64]]
        got = e[m].view(np.float32).astype(np.float64).tolist()
        assert got == [to_bf16(Fraction(float(v)), mode) for v in b], mode


def test_half_int8_round_trip_saturates(lib: ctypes.CDLL) -> None:
    out = ok(lib, "half_int8")
    x = (IN[:256] * 50).astype(np.float16)
    q = [max(-128, min(127, to_int(Fraction(float(v)), "rint"))) for v in x]
    assert out[:256].view(np.int8).tolist() == q
    assert out[256:768].view(np.float16).tolist() == [float(v) for v in q]
    assert max(q) == 127 and min(q) == -128


def test_level0_half_to_int32_lanes(lib: ctypes.CDLL) -> None:
    d = ok(lib, "level0_half_to_int32")[:2048].view(np.int32)
    h = (IN[:256] + np.float32(0.125)).astype(np.float16).astype(np.float64)
    expected = np.full(512, -7)
    for r in range(2):
        for j in range(40):
            expected[r * 64 + j] = math.floor(h[r * 128 + j])
        for j in range(64):
            if j % 16 < 8:
                expected[256 + r * 128 + j] = math.ceil(h[r * 64 + j])
    assert d.tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("case", "text"),
    [
        ("refused_float_to_uint8", "conversion float -> uint8_t is not supported"),
        ("refused_half_to_float_rint", "conversion half -> float does not take round mode 1"),
        ("refused_int32_to_half", "DEQSCALE register"),
    ],
)
def test_refused_conversions(lib: ctypes.CDLL, case: str, text: str) -> None:
    status, message, _ = run(lib, case)
    assert status == 2 and text in message, message
