"""ReduceMax / ReduceMin (count and level-0 forms, calIndex, the sharedTmpBuffer minimum),
ReduceSum's level-0 forms, BlockReduceMax / Min / Sum, PairReduceSum and the unified names
ReduceDataBlock / ReducePairElem / ReduceRepeat, and the ReduceSum register (GetReduceRepeatSumSpr,
GetAccVal) (samples/vector_reduce.cpp) against numpy."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import build_test_library, vector_case

SRC = Path(__file__).resolve().parent / "vector_reduce.cpp"
OUT_BYTES = 4096

# Quarters in [-3, 3]: exact in half and float, sums of a few hundred exact too; many ties.
IN = (np.random.default_rng(2026).integers(-12, 13, 512) / 4).astype(np.float32)


@pytest.fixture(scope="module")
def lib(sim_build_root: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))


def run(dll: ctypes.CDLL, name: str) -> tuple[int, str, np.ndarray]:
    return vector_case(dll, name, IN, OUT_BYTES)


def ok(dll: ctypes.CDLL, name: str) -> np.ndarray:
    status, message, out = run(dll, name)
    assert status == 0, message
    return out


def first_extreme(values: np.ndarray, positions: np.ndarray, is_max: bool) -> tuple[float, int]:
    """The extreme of `values` and the smallest position holding it."""
    best = values.max() if is_max else values.min()
    return float(best), int(positions[values == best].min())


def test_reduce_max_min_count_form_with_index(lib: ctypes.CDLL) -> None:
    out = ok(lib, "reduce_count_float")
    f, u = out[:32].view(np.float32), out[:32].view(np.uint32)
    x = IN[:300]
    pos = np.arange(300)
    vmax, imax = first_extreme(x, pos, True)
    vmin, imin = first_extreme(x, pos, False)
    assert (f[0], u[1]) == (vmax, imax)
    assert (f[2], u[3]) == (vmin, imin)
    assert f[4] == vmax and f[5] == -100  # without calIndex only the value is written
    assert (x == vmax).sum() > 1, "the case cannot tell the first index from another"


def test_reduce_level0_half_masks_strides_and_index(lib: ctypes.CDLL) -> None:
    out = ok(lib, "reduce_level0_half")
    h, u = out[:32].view(np.float16), out[:32].view(np.uint16)
    src = np.concatenate([IN, -IN[:256]]).astype(np.float16)
    lanes = [j for j in range(128) if (j < 64 and (j % 8) >= 4) or j == 64]
    pos = np.array([r * 256 + j for r in range(3) for j in lanes])
    vmax, imax = first_extreme(src[pos], pos, True)
    assert (float(h[0]), int(u[1])) == (vmax, imax)
    pos = np.array([r * 128 + j for r in range(6) for j in range(100)])
    vmin, imin = first_extreme(src[pos], pos, False)
    assert (float(h[2]), int(u[3])) == (vmin, imin)


def test_reduce_sum_level0_forms(lib: ctypes.CDLL) -> None:
    f = ok(lib, "reduce_sum_level0")[:32].view(np.float32)
    x = IN.astype(np.float64)
    assert f[0] == sum(x[r * 64 : r * 64 + 40].sum() for r in range(5))
    assert f[1] == sum(x[r * 128 : r * 128 + 64 : 3].sum() for r in range(3))


def test_reduce_max_refuses_a_short_shared_tmp_buffer(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "reduce_tmp_too_small")
    assert status == 2 and "sharedTmpBuffer holds 64 elements; this call needs 216" in message


def test_reduce_max_same_data_every_repeat_gives_the_lane_index(lib: ctypes.CDLL) -> None:
    out = ok(lib, "reduce_repeats_same_data")
    vmax, imax = first_extreme(IN[:64], np.arange(64), True)
    assert (out[:4].view(np.float32)[0], out[4:8].view(np.uint32)[0]) == (vmax, imax)


def test_block_reductions(lib: ctypes.CDLL) -> None:
    out = ok(lib, "block_reduce")
    d = out[:192].view(np.float32)
    x = IN[:128].reshape(2, 8, 8)[:, :, ::2]  # even lanes of each 8-float block
    expected = np.full(48, -100.0, dtype=np.float32)
    expected[:16] = x.max(axis=2).ravel()
    expected[16:24] = x[0].min(axis=1)  # dstRepStride 2: repeat 1 two units on
    expected[32:40] = x[1].min(axis=1)
    assert np.array_equal(d, expected)
    e = out[192:256].view(np.float16)
    h = IN[:256].astype(np.float16).astype(np.float64).reshape(2, 8, 16).sum(axis=2)
    assert np.array_equal(e[:16].astype(np.float64), h.ravel())
    assert (e[16:] == -100).all()


def test_block_reduce_max_refuses_a_block_without_lanes(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "block_reduce_empty_block")
    assert status == 2 and "block 7 of repeat 0 has no lane selected" in message, message


def test_pair_reduce_sum(lib: ctypes.CDLL) -> None:
    d = ok(lib, "pair_reduce")[:256].view(np.float16).astype(np.float64)
    x = IN[:256].astype(np.float16).astype(np.float64).reshape(2, 128).copy()
    x[:, 100:] = 0
    assert np.array_equal(d, x.reshape(2, 64, 2).sum(axis=2).ravel())


def test_unified_names(lib: ctypes.CDLL) -> None:
    d = ok(lib, "unified_names")[:256].view(np.float32)
    x = IN[:64]
    assert np.array_equal(d[:8], x.reshape(8, 8).max(axis=1))
    assert np.array_equal(d[8:40], x.reshape(32, 2).sum(axis=1))
    assert d[40] == x.min() and (d[41:] == -100).all()


def test_reduce_sum_register_holds_the_count_form_sum(lib: ctypes.CDLL) -> None:
    out = ok(lib, "reduce_sum_spr")
    spr, own = out[:8].view(np.float32)
    assert spr == IN[:300].astype(np.float64).sum() and spr == own  # quarters: the sum is exact
    acc = out[8:10].view(np.float16)[0]
    assert acc == IN[:200].astype(np.float64).sum()
    for case, why in [
        ("reduce_sum_spr_unset", "no ReduceSum count form ran before it"),
        ("reduce_sum_spr_after_level0", "no ReduceSum count form ran before it"),
        ("reduce_sum_spr_wrong_type", "read as half after a ReduceSum of float"),
    ]:
        status, message, _ = run(lib, case)
        assert status == 2 and "GetReduceRepeatSumSpr at" in message and why in message, message
