"""Compare / Compares / CompareScalar, Select, GatherMask and the CmpMask register
(samples/vector_cmpsel.cpp)
against numpy: the bit layout (element i in bit i % 8 of byte i / 8), the A2 rules (mask ignored
by Compare, bits of repeats packed, count forms comparing whole 256-byte repeats, int32 in EQ
only), Select's three modes with masks and repeat strides, and the register forms."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import build_test_library, vector_case

SRC = Path(__file__).resolve().parent / "vector_cmpsel.cpp"
OUT_BYTES = 4096

# Quarters in [-3, 3]: exact in half and float, with many ties for EQ / LE / GE.
IN = (np.random.default_rng(26).integers(-12, 13, 512) / 4).astype(np.float32)
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


def bits(flags: np.ndarray) -> np.ndarray:
    """The bytes holding one bit per flag, flag i in bit i % 8 of byte i / 8."""
    return np.packbits(flags.astype(np.uint8), bitorder="little")


def unbits(raw: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool)


MODES = [np.less, np.greater, np.equal, np.less_equal, np.greater_equal, np.not_equal]


def test_compare_count_form_all_modes_and_whole_repeats_only(lib: ctypes.CDLL) -> None:
    out = ok(lib, "cmp_count_float")
    for m, op in enumerate(MODES):
        assert np.array_equal(out[32 * m : 32 * m + 32], bits(op(A, B))), op.__name__
    # count 300: 4 whole repeats of 64 compared, the tail of 44 not; the rest of dst untouched
    assert np.array_equal(out[192:224], bits(A < B))
    assert (out[224:256] == 0xAA).all()


def test_compare_level0_half_ignores_mask_and_packs_repeats(lib: ctypes.CDLL) -> None:
    out = ok(lib, "cmp_level0_half")
    a = IN.astype(np.float16)
    b = np.concatenate([B, -B]).astype(np.float16)
    flags = []
    for r in range(2):
        for j in range(128):
            blk, e = divmod(j, 16)
            x = a[r * 256 + blk * 16 + e]  # src0: repeats 16 blocks apart
            y = b[r * 128 + 2 * blk * 16 + e]  # src1: blocks 2 apart, repeats 8 apart
            flags.append(x <= y)
    assert np.array_equal(out[:32], bits(np.array(flags)))
    assert (out[32:64] == 0xAA).all()


def test_compares_and_compare_scalar(lib: ctypes.CDLL) -> None:
    out = ok(lib, "compares_scalar")
    src = np.concatenate([IN[r * 128 : r * 128 + 64] for r in range(4)])
    assert np.array_equal(out[:32], bits(src < 0.5))
    assert np.array_equal(out[32:96], bits(np.floor(IN).astype(np.int32) == 1))


def test_compare_int32_outside_eq_is_refused(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "cmp_int32_lt_refused")
    assert status == 2 and "int32_t is compared in CMPMODE::EQ only" in message, message


def test_compare_to_register_get_cmp_mask_and_select_register_form(lib: ctypes.CDLL) -> None:
    out = ok(lib, "cmp_register_select")
    gt = A[:64] > B[:64]
    assert np.array_equal(out[:8], bits(gt)) and (out[8:32] == 0).all()
    d = out[32 : 32 + 512].view(np.float32)
    assert np.array_equal(d[:64], np.where(gt, A[:64], B[:64]))
    assert np.array_equal(d[64:128], np.where(gt, A[64:128], B[64:128]))


def test_set_cmp_mask_feeds_select(lib: ctypes.CDLL) -> None:
    d = ok(lib, "set_cmp_mask_select")[:256].view(np.float32)
    take_a = np.arange(64) % 2 == 0  # 0x55: bits 0, 2, 4, 6 of every byte
    assert np.array_equal(d, np.where(take_a, A[:64], B[:64]))


def test_select_tensor_tensor_mode_with_mask_and_strides(lib: ctypes.CDLL) -> None:
    d = ok(lib, "select_mode2_mask_strides")[: 384 * 4].view(np.float32)
    b = np.concatenate([B, -B])
    sel = np.concatenate([A > B, np.zeros(256, dtype=bool)])  # the 32-byte selMask, then zeros
    expected = np.full(384, -100.0, dtype=np.float32)
    for r in range(3):
        for j in range(64):
            if (j // 8) % 2 == 0:  # mask 0x00FF00FF00FF00FF
                s = sel[r * 64 + j]
                expected[r * 128 + j] = A[r * 64 + j] if s else b[r * 128 + j]
    assert np.array_equal(d, expected)


def test_select_tensor_scalar_mode_count_form(lib: ctypes.CDLL) -> None:
    d = ok(lib, "select_mode1_count")[:1024].view(np.float32)
    expected = np.full(256, -100.0, dtype=np.float32)
    expected[:200] = np.maximum(A[:200], 0)
    assert np.array_equal(d, expected)


def test_select_cmpmask_mode_reuses_the_first_bits_every_repeat(lib: ctypes.CDLL) -> None:
    out = ok(lib, "select_mode0_count_half")
    a = np.concatenate([A, A + 0.25]).astype(np.float16)
    b = np.concatenate([B, B]).astype(np.float16)
    lt = a[:256] < b[:256]
    assert np.array_equal(out[:32], bits(lt))
    d = out[32 : 32 + 1024].view(np.float16)
    take_a = np.resize(lt[:128], 300)
    expected = np.full(512, -100.0, dtype=np.float16)
    expected[:300] = np.where(take_a, a[:300], b[:300])
    assert np.array_equal(d, expected)
    assert not np.array_equal(take_a[128:256], lt[128:256]), "the case cannot tell the modes apart"


def test_select_scalar_needs_the_scalar_mode(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "select_scalar_mode_mismatch")
    assert status == 2 and "a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE" in message


def test_gather_mask_user_pattern_counter_mode_and_built_in_pattern(lib: ctypes.CDLL) -> None:
    out = ok(lib, "gather_mask")
    gt, lt = A > B, A < B
    kept1 = [A[j] for j in range(40) if gt[j]] + [A[64 + j] for j in range(40) if lt[j]]
    kept2 = [A[j] for j in range(1, 128, 2)]
    d1, d2 = out[:512].view(np.float32), out[512:1024].view(np.float32)
    assert d1[: len(kept1)].tolist() == kept1 and (d1[len(kept1) :] == -100).all()
    assert d2[:64].tolist() == kept2 and (d2[64:] == -100).all()
    assert out[1024:1032].view(np.float32).tolist() == [len(kept1), 64]
