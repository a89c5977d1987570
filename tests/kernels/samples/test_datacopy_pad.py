"""DataCopyPad's DataCopyParams + DataCopyPadParams forms in both directions, SetPadValue and the
UB->UB DataCopyParams form, WholeReduceMax/Min, DumpTensor and printf (samples/datacopy_pad.cpp),
against hand-worked layouts."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import build_test_library, simrun

SRC = Path(__file__).resolve().parent / "datacopy_pad.cpp"
UNTOUCHED_GM = -7  # the output's fill
UNTOUCHED_UB = -1  # the UB tensors' fill


@pytest.fixture(scope="module")
def lib(sim_build_root: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))


def run(dll: ctypes.CDLL, name: str) -> tuple[int, str, torch.Tensor]:
    inp = torch.arange(1, 65, dtype=torch.int32)
    out = torch.full((256,), UNTOUCHED_GM, dtype=torch.int32)
    report = simrun._Report()
    status = dll.recsdk_sim_copy_case(
        name.encode(),
        ctypes.c_void_p(inp.data_ptr()),
        ctypes.c_void_p(out.data_ptr()),
        ctypes.byref(report),
    )
    return status, report.message.decode(), out


def ok(dll: ctypes.CDLL, name: str) -> torch.Tensor:
    status, message, out = run(dll, name)
    assert status == 0, message
    return out


def test_gm_to_ub_with_datacopy_params_and_pad_params(lib: ctypes.CDLL) -> None:
    out = ok(lib, "pad_params_gm_to_ub")[:32].tolist()
    p, u = 0x7F, UNTOUCHED_UB
    # block 0: pad, in[0..4], pad, then padding up to 32 bytes; the empty dstStride block;
    # block 1 starts 20 + 4 bytes into GM (in[6] = 7)
    assert out == [p, 1, 2, 3, 4, 5, p, p, *[u] * 8, p, 7, 8, 9, 10, 11, p, p, *[u] * 8]


def test_pad_params_value_is_the_bit_pattern(lib: ctypes.CDLL) -> None:
    out = ok(lib, "pad_params_raw_bits")[:16]
    as_float = out.view(torch.float32)
    assert out[:2].tolist() == [1, 2] and out[8:10].tolist() == [1, 2]
    assert as_float[2:8].tolist() == [1.0] * 6  # DataCopyPadParams: 0x3F800000
    assert as_float[10:16].tolist() == [2.0] * 6  # DataCopyPadExtParams<float>: 2.0f


def test_dummy_repeats_the_first_element_without_padding(lib: ctypes.CDLL) -> None:
    out = ok(lib, "pad_params_dummy")[:16].tolist()
    # blocks of in[2..4] and in[5..7]; their 32-byte units are filled with their first element
    assert out == [3, 4, 5, 3, 3, 3, 3, 3, 6, 7, 8, 6, 6, 6, 6, 6]


def test_set_pad_value_fills_padding_of_a_copy_without_its_own(lib: ctypes.CDLL) -> None:
    assert ok(lib, "set_pad_value")[:8].tolist() == [1, 2, 3, 9, 9, 9, 9, 9]


def test_ub_to_gm_with_datacopy_params(lib: ctypes.CDLL) -> None:
    out = ok(lib, "pad_params_ub_to_gm")
    g = UNTOUCHED_GM
    # UB blocks at elements 0 and 16 (12 bytes + one 32-byte gap); GM blocks 12 + 8 bytes apart
    assert out[:10].tolist() == [1, 2, 3, g, g, 17, 18, 19, g, g]
    assert torch.all(out[10:] == g)


def test_ub_to_ub_with_datacopy_params(lib: ctypes.CDLL) -> None:
    out = ok(lib, "params_ub_to_ub")[:32].tolist()
    assert out == [*range(1, 9), *range(17, 25), *[UNTOUCHED_UB] * 16]


def test_padding_wider_than_32_bytes_is_refused(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "pad_too_wide")
    assert status != 0 and "DataCopyPad(GM->UB, DataCopyParams)" in message, message
    assert "leftPadding/rightPadding exceed 32 bytes" in message, message


def test_whole_reduce_max_and_min(lib: ctypes.CDLL) -> None:
    out = ok(lib, "whole_reduce_max_min")[:8]
    values = out.view(torch.float32)
    x = [(37 * j) % 64 - 20 for j in range(64)]
    reps = [x, [-v for v in x]]
    for r in range(2):  # [value, index] of the maximum over 64 lanes
        best = max(range(64), key=lambda j: reps[r][j])
        assert values[2 * r].item() == reps[r][best] and out[2 * r + 1].item() == best
    for r in range(2):  # [index, value] of the minimum over lanes 0-9
        best = min(range(10), key=lambda j: reps[r][j])
        assert out[4 + 2 * r].item() == best and values[5 + 2 * r].item() == reps[r][best]


def test_dump_tensor_and_printf_print_on_the_host(
    lib: ctypes.CDLL, capfd: pytest.CaptureFixture[str]
) -> None:
    ok(lib, "dump_and_printf")
    printed = capfd.readouterr().out
    assert "DumpTensor: desc=5, addr=" in printed and "data_type=int32, position=VECCALC" in printed
    assert "dump_size=4\n[1, 2, 3, 4]\n" in printed
    assert "block 0 of 1\n" in printed and "value 4\n" in printed


def test_repeat_stride_modes_are_refused(lib: ctypes.CDLL) -> None:
    status, message, _ = run(lib, "stride_mode_refused")
    assert status != 0 and "Add" in message and "repeatStrideMode" in message, message


def test_reduce_sum_count_form(lib: ctypes.CDLL) -> None:
    values = ok(lib, "reduce_sum")[:16].view(torch.float32)
    assert values[0].item() == sum(j / 2 - 10 for j in range(130))
    assert values[8].item() == sum(j / 2 - 10 for j in range(7))
    assert out_untouched(values)


def out_untouched(values: torch.Tensor) -> bool:
    """The UB words ReduceSum must not write keep the fill (-1 as int32)."""
    words = values.view(torch.int32)
    return bool((words[1:8] == UNTOUCHED_UB).all() and (words[9:16] == UNTOUCHED_UB).all())
