"""Every check of the AscendC emulation fires on a kernel that breaks its rule, naming the kernel,
the core and the call (with the kernel's source line); and the semantics kernels rely on
(atomic add across cores, SyncAll, DataCopyPad padding, counters) hold."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import pytest
from kernel_testlib import CHECKS_SRC, simrun

_Report = simrun._Report

CHECK_FAILED, TRAP = 2, 3

GM_UNALIGNED = "not aligned to sizeof(float)"
B64_PADDING = "64-bit type must be 0"
# case -> (cores, status, the API call named, what the message must say)
BAD = {
    "bad_datacopy_length": (1, CHECK_FAILED, "DataCopy(GM->UB)", "not a multiple of 32"),
    "bad_datacopy_ub_address": (1, CHECK_FAILED, "DataCopy(GM->UB)", "not 32-byte aligned"),
    "bad_datacopy_gm_address": (1, CHECK_FAILED, "DataCopy(GM->UB)", GM_UNALIGNED),
    "bad_datacopy_ub_to_gm_length": (1, CHECK_FAILED, "DataCopy(UB->GM)", "not a multiple of 32"),
    "bad_local_overrun": (1, CHECK_FAILED, "DataCopy(GM->UB)", "exceed the 16 elements"),
    "bad_datacopypad_b64_padding": (1, CHECK_FAILED, "DataCopyPad(GM->UB)", B64_PADDING),
    "bad_ub_overflow": (1, CHECK_FAILED, "TPipe::InitBuffer", "unified buffer overflow"),
    "bad_gm_read_past_end": (1, CHECK_FAILED, "DataCopyPad(GM->UB)", "read of 1056 bytes outside"),
    "bad_gm_write_past_end": (1, CHECK_FAILED, "DataCopy(UB->GM)", "write of 256 bytes outside"),
    "bad_gm_scalar_read": (1, CHECK_FAILED, "GlobalTensor::GetValue", "outside the tensors"),
    "bad_gm_write_input": (1, CHECK_FAILED, "GlobalTensor::SetValue", "read-only input"),
    "bad_deque_empty": (1, CHECK_FAILED, "TQue::DeQue", "DeQue of an empty queue"),
    "bad_double_free": (1, CHECK_FAILED, "TQue::FreeTensor", "double free"),
    "bad_alloc_beyond_buffers": (1, CHECK_FAILED, "TQue::AllocTensor", "all 2 buffers"),
    "bad_enque_beyond_depth": (1, CHECK_FAILED, "TQue::EnQue", "beyond the queue depth 1"),
    "bad_leak_at_exit": (1, CHECK_FAILED, "at kernel exit", "still allocated"),
    "bad_use_after_free": (1, CHECK_FAILED, "Duplicate", "after FreeTensor"),
    "bad_free_enqueued": (1, CHECK_FAILED, "TQue::FreeTensor", "still enqueued"),
    # Which core notices first varies: a core reaching SyncAll after another returned, or a core
    # returning while others wait in SyncAll. Both name the SyncAll line.
    "bad_syncall_deadlock": (4, CHECK_FAILED, "SyncAll", "would"),
    "bad_syncall_count": (4, CHECK_FAILED, "SyncAll", "would"),
    "bad_waitflag_without_setflag": (1, CHECK_FAILED, "WaitFlag", "no SetFlag"),
    "bad_vector_int64": (1, CHECK_FAILED, "Duplicate", "int64_t is not a supported data type"),
    "bad_atomic_type": (1, CHECK_FAILED, "DataCopy(UB->GM)", "SetAtomicAdd<float> is active"),
    "bad_atomic_int64": (1, CHECK_FAILED, "SetAtomicAdd", "not supported on Ascend910B1"),
    "bad_trap": (1, TRAP, "Trap", "trapped"),
    "bad_release_event_id": (
        1,
        CHECK_FAILED,
        "TPipe::ReleaseEventID",
        "AllocEventID did not hand out",
    ),
    "bad_event_ids_exhausted": (
        1,
        CHECK_FAILED,
        "TPipe::AllocEventID",
        "all 8 event ids of HardEvent::S_MTE3",
    ),
    "bad_deque_other_path": (1, CHECK_FAILED, "TQue::DeQue", "another path than the EnQue"),
}

# Pipe hazards: case -> (compiled with --cce-auto-sync, the earlier call, the reported call, what
# the message says). The two calls carry "// @hz <case> 1" / "2" in check_kernels.cpp.
HAZARDS = {
    "bad_hazard_mte2_v": (True, "DataCopy(GM->UB)", "Muls", "read-after-write"),
    "bad_hazard_v_mte3": (True, "Duplicate", "DataCopy(UB->GM)", "read-after-write"),
    "bad_hazard_war_mte2": (True, "Muls", "DataCopy(GM->UB)", "write-after-read"),
    "bad_hazard_mte2_s": (False, "DataCopy(GM->UB)", "LocalTensor::GetValue", "read-after-write"),
    "bad_hazard_mte2_waw": (True, "DataCopy(GM->UB)", "DataCopy(GM->UB)", "PipeBarrier<PIPE_MTE2>"),
    "bad_hazard_v_v": (False, "Duplicate", "Muls", "PipeBarrier<PIPE_V>"),
    "bad_hazard_vecin_to_gm": (True, "DataCopy(GM->UB)", "DataCopy(UB->GM)", "MTE2_MTE3"),
    "bad_setflag_twice": (True, "SetFlag", "SetFlag", "still set"),
    "bad_event_id_in_use": (True, "TQue::EnQue", "SetFlag", "still set"),
}

# case -> cores, compiled with --cce-auto-sync
GOOD_HAZARD = {
    "good_hazard_mte2_v": (1, True),
    "good_hazard_v_mte3": (1, True),
    "good_hazard_war_mte2": (1, True),
    "good_hazard_mte2_s": (1, False),
    "good_hazard_chain": (1, False),
    "good_hazard_mte2_waw": (1, True),
    "good_hazard_v_v": (1, False),
    "good_hazard_bound_queue": (1, True),
    "good_hazard_queues": (1, False),
    "good_hazard_barriers": (4, False),
    "good_event_ids": (1, True),
    "good_hazard_model": (1, False),
    "good_tquesync": (1, True),
    "good_free_all_event": (1, True),
    # What the compiler synchronises by itself is not a hazard when it does.
    "bad_hazard_mte2_s": (1, True),
    "bad_hazard_v_v": (1, True),
}

GOOD = {
    "good_atomic_add": 48,
    "good_syncall_exchange": 48,
    "good_datacopypad_padding": 1,
    "good_datacopypad_dummy": 1,
    "good_counters": 1,
}


def _run(
    lib: Path, name: str, cores: int, soc: str = "Ascend910B1", auto_sync: bool = True
) -> tuple[int, str, _Report]:
    dll = ctypes.CDLL(str(lib))
    report = _Report()
    status = dll.recsdk_sim_run_case_sync(
        name.encode(), cores, soc.encode(), int(auto_sync), ctypes.byref(report)
    )
    return status, report.message.decode(), report


def _marked_lines() -> dict[tuple[str, str], int]:
    """(case, "1"|"2") -> line of check_kernels.cpp carrying "// @hz <case> <n>"."""
    lines = {}
    for number, text in enumerate(CHECKS_SRC.read_text().splitlines(), start=1):
        m = re.search(r"// @hz (\w+) ([12])$", text)
        if m:
            lines[(m.group(1), m.group(2))] = number
    return lines


@pytest.mark.parametrize("name", sorted(BAD))
def test_check_fires(checks_library: Path, name: str) -> None:
    cores, expected_status, call, detail = BAD[name]
    status, message, _ = _run(checks_library, name, cores)
    assert status == expected_status, message
    assert f"kernel '{name}'" in message
    assert f"of {cores}" in message and "core " in message
    assert call in message and detail in message, message
    if name != "bad_leak_at_exit":
        assert "check_kernels.cpp:" in message, "the message names the kernel's source line"


@pytest.mark.parametrize("name", sorted(GOOD))
def test_semantics(checks_library: Path, name: str) -> None:
    status, message, _ = _run(checks_library, name, GOOD[name])
    assert status == 0, message


def test_counters(checks_library: Path) -> None:
    status, message, report = _run(checks_library, "good_counters", 1)
    assert status == 0, message
    core = report.cores[0]
    assert (core.gm_read_bytes, core.gm_write_bytes, core.dma_transfers) == (256, 256, 2)
    assert core.vector_elements == 64 and core.vector_instrs == 1
    assert core.ub_peak_bytes == 4 * 256


def test_datacopypad_missing_on_310p(checks_library: Path) -> None:
    status, message, _ = _run(checks_library, "good_datacopypad_dummy", 1, soc="Ascend310P3")
    assert status == CHECK_FAILED
    assert "DataCopyPad is not available on Ascend310P3" in message


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard_names_both_calls(checks_library: Path, name: str) -> None:
    auto_sync, first, second, detail = HAZARDS[name]
    status, message, _ = _run(checks_library, name, 1, auto_sync=auto_sync)
    assert status == CHECK_FAILED, message
    lines = _marked_lines()
    assert (
        f"kernel '{name}', core 0 of 1, {second} at check_kernels.cpp:{lines[(name, '2')]}:"
        in message
    )
    assert f"{first} at check_kernels.cpp:{lines[(name, '1')]}" in message, message
    assert detail in message, message


@pytest.mark.parametrize("name", sorted(GOOD_HAZARD))
def test_hazard_free(checks_library: Path, name: str) -> None:
    cores, auto_sync = GOOD_HAZARD[name]
    status, message, _ = _run(checks_library, name, cores, auto_sync=auto_sync)
    assert status == 0, message
