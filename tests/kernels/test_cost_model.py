"""The emulator's cost model (recsdk_sim/model.h) on micro-kernels in CANN's idiom
(sim_checks/cost_kernels.cpp): one big DMA against many small ones moving the same bytes, a
double-buffered pipeline against a single-buffered one, the vector instructions' rates. The
expected times are worked out here from the vendor's constants (each with its source), not read
back from the model."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import pytest
from kernel_testlib import build_test_library, simrun

torch = pytest.importorskip("torch")

SRC = Path(__file__).resolve().parent / "sim_checks" / "cost_kernels.cpp"
ELEMS = 2048 * 8

# The figures the model is pinned to (kernels/bench/README.md lists their sources).
CLOCK = 1.8e9  # dav-2201, asc-devkit tests/perf/mmad_perf/generate_roofline.py
HBM = 1.6e12  # docs L2-Cache切分.md
CORES = 48  # Ascend910B1 vector cores
ISSUE = 1.0  # scalar cycles per instruction, Vector指令理论性能汇总.md table 4
HEAD = 28.0  # DMA fixed latency (proxy: load_data_perf README, L1->L0 latency)
BURST = 32  # bytes
SHARE = HBM / CORES / CLOCK  # bytes per cycle of one core


@pytest.fixture(scope="module")
def cost_library(sim_build_root: Path) -> Path:
    return build_test_library(SRC, sim_build_root)


def run(lib: Path, name: str) -> dict[str, int]:
    dll = ctypes.CDLL(str(lib))
    x = torch.rand(ELEMS)
    y = torch.zeros(ELEMS)
    report = simrun._Report()
    status = dll.recsdk_sim_cost_case(
        name.encode(),
        ctypes.c_void_p(x.data_ptr()),
        ctypes.c_void_p(y.data_ptr()),
        ELEMS,
        ctypes.byref(report),
    )
    assert status == 0, report.message.decode()
    assert report.peak.clock_hz == CLOCK and report.peak.hbm_bytes_per_s == HBM
    (core,) = [{f: getattr(report.cores[0], f) for f in simrun.STAT_FIELDS}]
    return core


def cycles(core: dict[str, int], field: str) -> float:
    return core[field] / 1000.0


def dma(nbytes: int) -> float:
    return HEAD + math.ceil(nbytes / BURST) * BURST / SHARE


def test_one_big_dma_against_many_small(cost_library: Path) -> None:
    big = run(cost_library, "dma_big")
    small = run(cost_library, "dma_small")
    # One DMA of 16 KB, issued after one scalar cycle.
    assert cycles(big, "model_end_mte2") == pytest.approx(ISSUE + dma(16384), abs=0.01)
    # 512 DMAs of 32 bytes: each pays the head; the scalar unit keeps ahead of MTE2.
    assert cycles(small, "model_end_mte2") == pytest.approx(ISSUE + 512 * dma(32), abs=0.5)
    assert cycles(small, "model_busy_s") >= 512 * ISSUE
    assert small["model_core"] > 15 * big["model_core"]


def test_small_dmas_pay_whole_bursts(cost_library: Path) -> None:
    # 32 bytes cost one burst; the head dominates: 28 + 32 / 18.5 cycles each.
    assert dma(32) == pytest.approx(28 + 1.728, abs=0.01)
    small = run(cost_library, "dma_small")
    assert small["dma_transfers"] == 512


def test_double_buffering_overlaps_copies_with_compute(cost_library: Path) -> None:
    tiles, tile_bytes, adds = 8, 2048 * 4, 28
    c2 = c3 = dma(tile_bytes)
    transfer = tile_bytes / SHARE
    cv = adds * tile_bytes / 256  # one cycle per 256-byte repeat (Vector指令理论性能汇总.md)
    single = run(cost_library, "pipeline_single")
    double = run(cost_library, "pipeline_double")
    assert cycles(single, "model_busy_v") == pytest.approx(tiles * cv)
    # Single buffering: the vector pipe waits for each tile's copy-in and for the previous tile's
    # copy-out to free the one output buffer; the next copy-in may start once the compute has freed
    # the one input buffer, so it runs beside the copy-out.
    serial = c2 + tiles * cv + (tiles - 1) * max(c2, c3) + c3
    slack = tiles * (adds + 8) * ISSUE  # issue cycles the model may add on the way
    assert serial <= cycles(single, "model_core") <= serial + slack
    # Double buffering: the vector pipe and the core's GM link (MTE2 and MTE3 share it) overlap;
    # the slower of the two sets the pace, plus filling and draining the pipeline.
    steady = tiles * max(cv, 2 * transfer)
    assert cycles(double, "model_busy_gm") == pytest.approx(2 * tiles * transfer, abs=0.01)
    assert steady <= cycles(double, "model_core") <= steady + c2 + c3 + cv + slack
    assert cycles(double, "model_core") < 0.75 * cycles(single, "model_core")


CUBE_MACS_B16 = 16 * 16 * 16  # per cycle, Cube指令理论性能汇总.md


def test_cube_bound_against_mte_bound(cost_library: Path) -> None:
    rounds, k = 256, 256
    cube = run(cost_library, "cube_bound")
    mte = run(cost_library, "mte_bound")
    # Operands loaded once, 256 Mmads of 16 x 16 x 256: the Cube's cycles are the time.
    cube_cycles = rounds * 16 * 16 * k / CUBE_MACS_B16
    assert cycles(cube, "model_busy_m") == pytest.approx(cube_cycles)
    assert cycles(cube, "model_core") == pytest.approx(cube_cycles)
    # Operands reloaded every round: two DMAs of 8 KB each per round (A to L0A, B to L1) at the
    # core's share of HBM, which the Cube's work no longer covers.
    reload = rounds * 2 * dma(16 * k * 2)
    assert cycles(mte, "model_busy_m") == pytest.approx(cube_cycles)
    assert cycles(mte, "model_core") == pytest.approx(reload, rel=0.01)
    assert mte["model_core"] > 10 * cube["model_core"]


# Elements per cycle, Atlas A2/A3 (docs/api/附录/Vector指令理论性能汇总.md, 表3 基础算术类指令理论
# 性能汇总, "硬件并行度（单位：element/cycle）"): Add half 128 / float 64 (one 256-byte repeat a
# cycle), Exp, Ln, Sqrt and Div 32 in both, Reciprocal 128 / 64.
RATES = {
    "add": {4: 64, 2: 128},
    "exp": {4: 32, 2: 32},
    "ln": {4: 32, 2: 32},
    "sqrt": {4: 32, 2: 32},
    "div": {4: 32, 2: 32},
    "reciprocal": {4: 64, 2: 128},
}
TILE = 2048  # elements of each vector case (cost_kernels.cpp kTile)


@pytest.mark.parametrize(
    "case",
    [
        "add_f32",
        "add_f16",
        "exp_f32",
        "exp_f16",
        "exp_f16_level0",
        "ln_f32",
        "sqrt_f32",
        "div_f32",
        "div_f16",
        "reciprocal_f32",
    ],
)
def test_vector_instruction_rates(cost_library: Path, case: str) -> None:
    op, dtype = case.split("_")[:2]
    esz = 4 if dtype == "f32" else 2
    fill = 2 * TILE * esz / 256  # the two Duplicates: full rate, one repeat a cycle
    expected = fill + TILE / RATES[op][esz]
    core = run(cost_library, case)
    assert cycles(core, "model_busy_v") == pytest.approx(expected)


def test_exp_is_slower_than_add_by_the_documented_ratio(cost_library: Path) -> None:
    # float: 2 cycles a repeat against 1; half: 4 against 1 (32 against 64 / 128 elements).
    fill32, fill16 = 2 * TILE * 4 / 256, 2 * TILE * 2 / 256
    add32 = cycles(run(cost_library, "add_f32"), "model_busy_v") - fill32
    exp32 = cycles(run(cost_library, "exp_f32"), "model_busy_v") - fill32
    add16 = cycles(run(cost_library, "add_f16"), "model_busy_v") - fill16
    exp16 = cycles(run(cost_library, "exp_f16"), "model_busy_v") - fill16
    assert exp32 == pytest.approx(2 * add32)
    assert exp16 == pytest.approx(4 * add16)
