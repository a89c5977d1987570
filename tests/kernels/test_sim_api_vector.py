"""The AscendC APIs the emulation gained for Huawei's vendor kernels (level-0 vector forms with
masks and repeat strides, counter mode, reductions, activations, atomic max/min, set_flag,
GetPhyAddr, the DeQue forms, ASCENDC_ASSERT), on kernels whose results are worked out by hand
or with torch (sim_checks/api_kernels.cpp)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from kernel_testlib import build_test_library, simrun

torch = pytest.importorskip("torch")

SRC = Path(__file__).resolve().parent / "sim_checks" / "api_kernels.cpp"
OUT = 512


@pytest.fixture(scope="module")
def api_library(sim_build_root: Path) -> Path:
    return build_test_library(SRC, sim_build_root)


def run(lib: Path, name: str) -> tuple[int, str, torch.Tensor]:
    dll = ctypes.CDLL(str(lib))
    out = torch.zeros(OUT)
    report = simrun._Report()
    status = dll.recsdk_sim_api_case(
        name.encode(),
        ctypes.c_void_p(out.data_ptr()),
        OUT,
        ctypes.byref(report),
    )
    return status, report.message.decode(), out


def ok(lib: Path, name: str) -> torch.Tensor:
    status, message, out = run(lib, name)
    assert status == 0, message
    return out


def test_duplicate_mask_bits(api_library: Path) -> None:
    out = ok(api_library, "dup_mask_bits")[:128]
    expected = torch.zeros(128)
    expected[[0, 1, 3, 64, 65, 67]] = 7
    assert torch.equal(out, expected)


def test_duplicate_mask_count_and_strides(api_library: Path) -> None:
    out = ok(api_library, "dup_mask_count_strides")[:256]
    expected = torch.zeros(256)
    # lanes 0-7 in block 0, lanes 8-9 in block 1 placed 2 blocks on; repeat 1 16 blocks on
    expected[[*range(8), 16, 17, *range(128, 136), 144, 145]] = 5
    assert torch.equal(out, expected)


def test_add_level0(api_library: Path) -> None:
    out = ok(api_library, "add_level0")[:128]
    assert torch.equal(out, torch.arange(128.0) + 100)


def test_counter_mode(api_library: Path) -> None:
    out = ok(api_library, "counter_mode")[:128]
    expected = torch.zeros(128)
    expected[:70] = torch.arange(70.0) + 1
    assert torch.equal(out, expected)


def test_whole_and_block_reduce_sum(api_library: Path) -> None:
    out = ok(api_library, "whole_reduce_sum")
    assert out[:2].tolist() == [sum(range(1, 65)), sum(range(65, 129))]
    out = ok(api_library, "block_reduce_sum")
    assert out[:8].tolist() == [sum(range(8 * b + 1, 8 * b + 9)) for b in range(8)]


def test_activations(api_library: Path) -> None:
    out = ok(api_library, "activations")
    x = torch.arange(64, dtype=torch.float64) / 8 - 4
    torch.testing.assert_close(out[:64].double(), x / (1 + torch.exp(-x)), rtol=1e-6, atol=1e-6)
    assert torch.equal(out[64:128].double(), x.clamp(min=0))
    torch.testing.assert_close(out[128:192].double(), torch.where(x >= 0, x, 0.1 * x))
    torch.testing.assert_close(out[192:256].double(), torch.exp(x), rtol=1e-6, atol=0)


def test_atomic_max_min(api_library: Path) -> None:
    out = ok(api_library, "atomic_max_min")
    v = torch.tensor([-1, 5, 2, -3, 0.5, -0.5, 9, -9])
    assert torch.equal(out[:8], v.clamp(min=0))
    assert torch.equal(out[8:16], v.clamp(max=0))


def test_set_flag_orders_and_its_absence_races(api_library: Path) -> None:
    assert torch.equal(ok(api_library, "flags_ordered")[:64], torch.full((64,), 3.0))
    status, message, _ = run(api_library, "flags_missing")
    assert status == 2 and "read-after-write hazard" in message, message


def test_phy_addr_deque_forms_and_gm_operator(api_library: Path) -> None:
    out = ok(api_library, "phy_addr_and_queues")
    assert out[2] == 42 and out[3] == 0 and out[10] == 11


def test_ascendc_assert_stops_the_kernel(api_library: Path) -> None:
    status, message, _ = run(api_library, "assert_fails")
    assert status == 3 and "assertion failed: GetBlockNum() == 2" in message, message


def test_mask_count_out_of_range_is_refused(api_library: Path) -> None:
    status, message, _ = run(api_library, "mask_count_too_large")
    assert status == 2 and "mask 65 is outside [1, 64]" in message, message


def test_mask_registers_start_reset_at_every_launch(api_library: Path) -> None:
    # Both launches run on this thread (one core runs on the caller's thread): the first leaves
    # counter mode with a count of 3 and a compare result in the CmpMask register; the second
    # must start with the reset registers, as every launch does on the device.
    ok(api_library, "mask_left_set")
    out = ok(api_library, "mask_fresh")
    assert torch.equal(out[:64], torch.full((64,), 7.0)), out[:64]
    # the register's 16 bytes (the rest of the 32-byte block is whatever UB held)
    assert torch.equal(out[64:68].view(torch.int32), torch.zeros(4, dtype=torch.int32))


def test_gather_mask_count_form(api_library: Path) -> None:
    out = ok(api_library, "gather_level0_count")[:256]
    expected = torch.zeros(256)
    for r in range(2):
        for j in range(40):
            # src[k] = k + 1; byte 16 + 4 * ((64 r + j) * 5 % 100) is element 4 + that
            expected[128 * r + j] = 5 + ((64 * r + j) * 5) % 100
    assert torch.equal(out, expected)


def test_gather_mask_bit_form(api_library: Path) -> None:
    out = ok(api_library, "gather_level0_bits")[:256]
    lanes = [*range(0, 64, 2), 64, 127]
    expected = torch.zeros(256)
    for r in range(2):
        for j in lanes:
            expected[128 * r + j] = 255 - (128 * r + j)  # src[k] = k, offsets reversed
    assert torch.equal(out, expected)


def test_gather_level0_rejects_what_the_hardware_would(api_library: Path) -> None:
    status, message, _ = run(api_library, "gather_mask_too_large")
    assert status == 2 and "Gather" in message and "mask 65 is outside [1, 64]" in message, message
    status, message, _ = run(api_library, "gather_offset_misaligned")
    assert status == 2 and "offset 2 is not aligned to the element size" in message, message


DEQ_SRC = [0, 1, 3, -3, 5, 2049, 2051, -2051, 4097, 70000, -70000, 131007, 16785409, 7, -7, 12345]


def deq_reference(values: list[int], scale: float) -> torch.Tensor:
    """SetDeqScale.md / CastDequant.md: Cast(src * scale), one round to nearest even from the
    exact product (float64 holds it; numpy converts float64 -> float16 in one rounding),
    saturating at the half range."""
    import numpy as np

    exact = np.array(values, dtype=np.float64) * scale
    return torch.from_numpy(np.clip(exact, -65504, 65504).astype(np.float16).astype(np.float32))


def test_dequantising_cast_scales_by_the_deqscale_half(api_library: Path) -> None:
    out = ok(api_library, "deq_cast")
    assert torch.equal(out[:16], deq_reference(DEQ_SRC, 0.5))
    # 16785409 * 2^-14 = 1024.50006: 1025, where rounding to float first would give 1024
    assert torch.equal(out[16:32], deq_reference(DEQ_SRC, 2.0**-14))
    assert out[16 + 12].item() == 1025
    src = [DEQ_SRC[k % 16] + k // 16 for k in range(128)]
    expected = torch.zeros(128)
    for r in range(2):
        lanes = [src[64 * r + j] for j in range(10)]
        expected[80 * r : 80 * r + 10] = deq_reference(lanes, 0.5)
    assert torch.equal(out[64:192], expected)


def test_dequantising_cast_needs_the_half_scale(api_library: Path) -> None:
    status, message, _ = run(api_library, "deq_unset")
    assert status == 2 and "which no SetDeqScale(half) has set" in message, message
    status, message, out = run(api_library, "deq_vector_words")
    assert status == 2 and "CastDequant" in message and "int16_t -> b8" in message, message
    words = out[:32].view(torch.int32).view(torch.int64).tolist()
    for i, word in enumerate(words):  # SetDeqScale.md table 1, by hand
        scale_bits = torch.tensor([0.25 * (i + 1)]).view(torch.int32).item()
        expected = ((i % 2 == 0) << 46) | (((i - 8) & 0x1FF) << 37) | scale_bits
        assert word == expected, (i, hex(word), hex(expected))


def test_scalar_cast_forms(api_library: Path) -> None:
    out = ok(api_library, "scalar_cast")[:7].tolist()
    # bf16 nearest-even of 3.14159 (the example of Cast（float转bfloat16_t）.md), then the
    # float -> int32_t round modes on ties, and CAST_ODD to half: 1 + 2^-12 lies between 1 and
    # 1 + 2^-10
    assert out == [3.140625, 3, 2, -3, -2, 1 + 2**-10, 1]


def test_soft_sync_all_checks_its_workspace(api_library: Path) -> None:
    status, message, out = run(api_library, "soft_sync_all")
    assert out[100].item() == 1  # the first call, with the page's sizes, passed
    assert status == 2 and "gmWorkspace holds 16 bytes" in message, message


def test_bilinear_interpolation_follows_the_page_steps(api_library: Path) -> None:
    import numpy as np

    out = ok(api_library, "bilinear").numpy()
    src0 = np.arange(1, 513, dtype=np.float16).reshape(4, 128)  # the 4 gathered repeats
    src1 = np.arange(2, 34, dtype=np.float16)
    # repeatMode false: repeat k times src1[k]; each vertical repeat adds its 2 products (in half)
    prod = src0 * src1[:4, None]
    assert np.array_equal(out[:128], (prod[0] + prod[1]).astype(np.float32))
    assert np.array_equal(out[128:256], (prod[2] + prod[3]).astype(np.float32))
    # repeatMode true: block b of repeat k times src1[8k + b]; lanes 64..127 keep dst's -1
    prod = src0 * np.repeat(src1.reshape(4, 8), 16, axis=1)
    for i in range(2):
        row = out[256 + 128 * i : 384 + 128 * i]
        assert np.array_equal(row[:64], (prod[2 * i] + prod[2 * i + 1])[:64].astype(np.float32))
        assert (row[64:] == -1).all()


def test_init_output_fills_global_memory(api_library: Path) -> None:
    out = ok(api_library, "init_output")
    expected = torch.zeros(OUT)
    expected[8:24] = 2.5
    assert torch.equal(out, expected)
