"""The emulated Cube: the Matmul API against torch in float64 for every emulated dtype
combination, transposes, tails, bias, Iterate/GetTensorC, asynchronous IterateAll, atomic
add/max/min across calls and across cores; bit-exact fp16/bf16 outputs; buffer overflows and the
other rules the emulation enforces; a mixed AIC/AIV kernel handing a product through the workspace
with cross-core flags; and the counters and modelled time of a launch.

The kernels are tests/kernels/sim_checks/matmul_kernels.cpp; the host tiling is
kernels/common/matmul_tiling.h.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_testlib import arg, simrun
from matmul_testlib import Lib, build_matmul_library, make_case

OK, CHECK_FAILED, TRAP = 0, 2, 3
AIV, AIC = 0, 1


@pytest.fixture(scope="session")
def mm(sim_build_root: Path) -> Lib:
    return Lib(build_matmul_library(sim_build_root))


GEN = torch.Generator().manual_seed(11)


def operands(m, n, k, dtype, trans_a=False, trans_b=False):
    """A [M, K] and B [K, N] as stored (transposed: [K, M], [N, K]), and both as float64."""
    a = torch.randn((k, m) if trans_a else (m, k), generator=GEN)
    b = torch.randn((n, k) if trans_b else (k, n), generator=GEN)
    a, b = a.to(dtype).contiguous(), b.to(dtype).contiguous()
    a64 = (a.t() if trans_a else a).double()
    b64 = (b.t() if trans_b else b).double()
    return a, b, a64, b64


def fp32_bound(a64, b64, k):
    """What fp32 accumulation may deviate from the exact product: K roundings of partial sums no
    larger than sum |a||b|, plus one rounding per product (float inputs)."""
    return (2 * k + 2) * 2.0**-24 * (a64.abs() @ b64.abs())


COMBOS = [
    (torch.float32, torch.float32),
    (torch.float32, torch.float16),
    (torch.float32, torch.bfloat16),
    (torch.float16, torch.float32),
    (torch.float16, torch.float16),
    (torch.float16, torch.bfloat16),
    (torch.bfloat16, torch.float32),
    (torch.bfloat16, torch.float16),
    (torch.bfloat16, torch.bfloat16),
]
TRANS = [(False, False), (True, False), (False, True), (True, True)]


def run_matmul(mm, kernel, dtype, out_dtype, m, n, k, trans_a, trans_b, **kw):
    a, b, a64, b64 = operands(m, n, k, dtype, trans_a, trans_b)
    c = torch.full((m, n), float("nan"), dtype=out_dtype)
    case = make_case(kernel, a, b, c, trans_a=trans_a, trans_b=trans_b, **kw)
    result = mm.run(case, mm.tiling(case))
    return result, c, a64, b64


@pytest.mark.parametrize("dtype,out_dtype", COMBOS, ids=lambda t: str(t).removeprefix("torch."))
@pytest.mark.parametrize("trans", TRANS, ids=lambda t: f"tA{int(t[0])}tB{int(t[1])}")
def test_matmul_against_float64(mm: Lib, dtype, out_dtype, trans) -> None:
    # M, N, K not multiples of the base block (tails on every axis) and of the per-core tile.
    m, n, k = 75, 90, 70
    result, c, a64, b64 = run_matmul(mm, "mm_mix", dtype, out_dtype, m, n, k, *trans)
    assert result.ok, result.message
    ref = a64 @ b64
    tol = fp32_bound(a64, b64, k)
    if out_dtype != torch.float32:
        tol = tol + ref.abs() * (2.0**-8 if out_dtype == torch.bfloat16 else 2.0**-11) + 2.0**-24
    err = (c.double() - ref).abs()
    assert bool((err <= tol).all()), f"max error {float((err - tol).max())} over the bound"
    if out_dtype != torch.float32:
        # Bit-exact: the same computation with a float C, rounded once to nearest even by torch.
        result32, c32, _, _ = run_matmul_same(mm, dtype, m, n, k, trans, a64, b64)
        assert result32.ok, result32.message
        expected = c32.to(out_dtype)
        assert torch.equal(c.view(torch.int16), expected.view(torch.int16))


def run_matmul_same(mm, dtype, m, n, k, trans, a64, b64):
    """The float-C run on the same operands (a64/b64 hold them exactly)."""
    a = (a64.t() if trans[0] else a64).to(dtype).contiguous()
    b = (b64.t() if trans[1] else b64).to(dtype).contiguous()
    c = torch.full((m, n), float("nan"), dtype=torch.float32)
    case = make_case("mm_mix", a, b, c, trans_a=trans[0], trans_b=trans[1])
    return mm.run(case, mm.tiling(case)), c, a64, b64


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_cube_only_kernel_matches_mix(mm: Lib, dtype) -> None:
    """ASCENDC_CUBE_ONLY on an AIC-only launch computes what the AIV-driven MIX kernel computes."""
    m, n, k = 130, 96, 200
    a, b, a64, b64 = operands(m, n, k, dtype)
    outs = []
    for kernel in ("mm_mix", "mm_cube"):
        c = torch.full((m, n), float("nan"))
        case = make_case(kernel, a, b, c, blocks=3, tiles=6)
        result = mm.run(case, mm.tiling(case))
        assert result.ok, result.message
        outs.append(c)
    assert torch.equal(outs[0], outs[1])
    assert bool(((outs[0].double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())


def test_bias(mm: Lib) -> None:
    m, n, k = 40, 70, 50
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    bias = torch.randn(n)
    c = torch.full((m, n), float("nan"))
    case = make_case("mm_mix", a, b, c, bias=bias)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    ref = a64 @ b64 + bias.double()
    assert bool(((c.double() - ref).abs() <= fp32_bound(a64, b64, k) + 1e-6).all())


@pytest.mark.parametrize("extra", [1, 2, 3], ids=["iterate", "iterate_async", "iterateall_async"])
def test_iterate_and_async(mm: Lib, extra) -> None:
    m, n, k = 300, 280, 64  # several base blocks per tile
    a, b, a64, b64 = operands(m, n, k, torch.bfloat16)
    c = torch.full((m, n), float("nan"))
    case = make_case("mm_mix", a, b, c, extra=extra, blocks=1, tiles=2)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())


def run_to_ub(mm: Lib, extra: int):
    m, n, k = 150, 200, 40  # tails in every block direction
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    c = torch.full((m, n), float("nan"))
    case = make_case("mm_to_ub", a, b, c, blocks=2, tiles=3, extra=extra)
    tiling = mm.tiling(case)
    tiling.update({"baseM": 64, "baseN": 64})
    return mm.run(case, tiling), c, a64, b64, k


def test_get_tensor_c_into_unified_buffer(mm: Lib) -> None:
    """Iterate + GetTensorC(ub, 0, enSequentialWrite = true) into a VECIN tensor (the official
    samples' call), doubled by the vector unit, copied out by row."""
    result, c, a64, b64, k = run_to_ub(mm, 0)
    assert result.ok, result.message
    assert bool(((c.double() - 2 * (a64 @ b64)).abs() <= 2 * fp32_bound(a64, b64, k)).all())


def test_get_tensor_c_non_sequential_goes_to_its_place_in_the_tile(mm: Lib) -> None:
    """enSequentialWrite = false writes the block at its place in [singleCoreM, N] (GetTensorC.md):
    a baseM x baseN tensor cannot take the second block."""
    result, *_ = run_to_ub(mm, 2)
    assert result.status == CHECK_FAILED
    msg = result.message
    assert "Matmul::GetTensorC" in msg and "enSequentialWrite = true" in msg, msg


def test_get_tensor_c_into_ub_is_an_mte2_write(mm: Lib) -> None:
    """The block reaches the unified buffer by the AIV's MTE2 (ordered before its vector pipe by the
    API only): copying it straight out with MTE3 is a race."""
    result, *_ = run_to_ub(mm, 1)
    assert result.status == CHECK_FAILED
    msg = result.message
    assert "read-after-write" in msg and "Matmul::GetTensorC" in msg and "PIPE_MTE2" in msg, msg
    assert "DataCopyPad" in msg, msg


def async_peek(mm: Lib, extra: int):
    m, n, k = 32, 32, 32
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    c = torch.full((m, n), 7.0)
    out = torch.full((2,), -1, dtype=torch.int64)
    case = make_case("mm_async_peek", a, b, c, out=out, blocks=1, tiles=1, extra=extra)
    return mm.run(case, mm.tiling(case)), c, out, a64, b64, k


def test_async_iterate_all_read_after_wait(mm: Lib) -> None:
    result, c, out, a64, b64, k = async_peek(mm, 1)
    assert result.ok, result.message
    assert out.tolist() == [-1, 0]
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())


def test_async_iterate_all_read_before_wait_is_reported(mm: Lib) -> None:
    """IterateAll<false>(..., waitIterateAll = true) has finished only at WaitIterateAll: reading C
    before it is a race, named with both calls."""
    result, *_ = async_peek(mm, 0)
    assert result.status == CHECK_FAILED
    msg = result.message
    assert "GlobalTensor::GetValue" in msg and "Matmul::IterateAll at matmul_kernels.cpp:" in msg
    assert "WaitIterateAll" in msg, msg


def test_atomic_add_across_calls(mm: Lib) -> None:
    m, n, k = 64, 48, 40
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    start = torch.randn(m, n)
    c = start.clone()
    case = make_case("mm_mix", a, b, c, atomic=1, repeat=3)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    ref = start.double() + 3 * (a64 @ b64)
    assert bool(
        ((c.double() - ref).abs() <= 3 * fp32_bound(a64, b64, k) + 1e-5 * ref.abs() + 1e-6).all()
    )
    aic = result.kind(AIC)
    assert sum(x["atomic_write_bytes"] for x in aic) == 3 * m * n * 4


@pytest.mark.parametrize("kernel", ["mm_mix", "mm_cube"])
def test_atomic_add_across_cores(mm: Lib, kernel) -> None:
    """K split over cores, the partial products added with enAtomic = 1 into a zeroed C."""
    m, n, k = 64, 64, 256
    a, b, a64, b64 = operands(m, n, k, torch.float32)
    c = torch.zeros(m, n)
    case = make_case(kernel, a, b, c, atomic=1, k_split=4, blocks=4, tiles=1)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k) * 2 + 1e-6).all())
    # Four slices: on four AICs, or (MIX) on AIVs 0-3, served by AICs 0 and 1.
    busy = [x for x in result.kind(AIC) if x["cube_macs"] > 0]
    assert len(busy) == (4 if kernel == "mm_cube" else 2)
    assert all(x["atomic_write_bytes"] > 0 for x in busy)


@pytest.mark.parametrize("atomic", [2, 3], ids=["max", "min"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16], ids=str)
def test_atomic_max_min(mm: Lib, atomic, out_dtype) -> None:
    m, n, k = 48, 40, 32
    a, b, _, _ = operands(m, n, k, torch.float16)
    start = torch.randn(m, n).to(out_dtype)
    c_plain = torch.full((m, n), float("nan"), dtype=out_dtype)
    case = make_case("mm_mix", a, b, c_plain)
    assert mm.run(case, mm.tiling(case)).ok
    c = start.clone()
    case = make_case("mm_mix", a, b, c, atomic=atomic)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    expected = torch.maximum(start, c_plain) if atomic == 2 else torch.minimum(start, c_plain)
    assert torch.equal(c, expected)


# ---- on-chip buffers ----------------------------------------------------------------------------

OVERFLOWS = {
    # buffer: (dtype, M, N, K, tiling changes, capacity in the message)
    "L0A": (torch.float16, 256, 16, 128, {"baseM": 256, "baseK": 128, "dbL0A": 2}, 65536),
    "L0B": (torch.float16, 16, 256, 128, {"baseN": 256, "baseK": 128, "dbL0B": 2}, 65536),
    "L0C": (torch.float16, 256, 256, 16, {"baseM": 256, "baseN": 256, "dbL0C": 1}, 131072),
    "L1": (
        torch.float32,
        128,
        256,
        1024,
        {
            "baseM": 128,
            "baseN": 256,
            "baseK": 32,
            "dbL0A": 1,
            "dbL0B": 1,
            "stepKa": 32,
            "stepKb": 32,
            "depthA1": 32,
            "depthB1": 32,
        },
        524288,
    ),
}


@pytest.mark.parametrize("buffer", sorted(OVERFLOWS))
def test_tile_overflow(mm: Lib, buffer) -> None:
    dtype, m, n, k, changes, capacity = OVERFLOWS[buffer]
    a, b, _, _ = operands(m, n, k, dtype)
    c = torch.zeros(m, n)
    case = make_case("mm_mix", a, b, c, blocks=1, tiles=1)
    tiling = mm.tiling(case)
    tiling.update(changes)
    result = mm.run(case, tiling)
    assert result.status == CHECK_FAILED
    msg = result.message
    assert f"{buffer} overflow: the tile needs" in msg and f"the buffer holds {capacity}" in msg, (
        msg
    )
    assert "Matmul::IterateAll" in msg and "Ascend910B1" in msg and "matmul_kernels.cpp:" in msg


def test_effective_tile_fits(mm: Lib) -> None:
    """A base block larger than the buffers is fine when the tile it is used on is small
    (RecSDK's SV base {128, 512, 128} with D = 64): the check is on the tile a call uses."""
    m, n, k = 128, 64, 128
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    c = torch.zeros(m, n)
    case = make_case("mm_mix", a, b, c, blocks=1, tiles=1)
    tiling = mm.tiling(case)
    tiling.update(
        {
            "baseM": 128,
            "baseN": 512,
            "baseK": 128,
            "dbL0A": 1,
            "dbL0B": 1,
            "dbL0C": 1,
            "stepKa": 1,
            "stepKb": 1,
            "depthA1": 1,
            "depthB1": 1,
        }
    )
    result = mm.run(case, tiling)
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())


def test_host_tiling_fits_and_counts_cores(mm: Lib) -> None:
    for dtype in (torch.float32, torch.float16):
        a, b, _, _ = operands(1000, 700, 600, dtype)
        c = torch.zeros(1000, 700)
        t = mm.tiling(make_case("mm_mix", a, b, c, tiles=24))
        assert t["usedCoreNum"] <= 24
        assert t["singleCoreK"] == 600 and t["Ka"] == t["Kb"] == 600
        assert -(-1000 // t["singleCoreM"]) * -(-700 // t["singleCoreN"]) == t["usedCoreNum"]
        assert t["baseM"] % 16 == 0 and t["baseN"] % 16 == 0
        assert t["depthA1"] % t["stepKa"] == 0 and t["dbL0A"] in (1, 2)


# ---- rules --------------------------------------------------------------------------------------

BAD = {
    # kernel: (status, API call named, message fragment)
    "bad_five_objects": (TRAP, "REGIST_MATMUL_OBJ", "at most 4 per kernel"),
    "bad_regist_after_initbuffer": (CHECK_FAILED, "REGIST_MATMUL_OBJ", "before InitBuffer"),
    "bad_trans_without_istrans": (CHECK_FAILED, "Matmul::SetTensorB", "needs ISTRANS = true"),
    "bad_wait_without_async": (CHECK_FAILED, "Matmul::WaitIterateAll", "deadlock"),
    "bad_missing_end": (CHECK_FAILED, "Matmul::IterateAll", "End() is required"),
    "bad_flag_collision": (CHECK_FAILED, "CrossCoreSetFlag", "the Matmul API uses"),
    "bad_matmul_aiv_only": (CHECK_FAILED, "REGIST_MATMUL_OBJ", "no cube cores"),
    "bad_kernel_type": (CHECK_FAILED, "KERNEL_TASK_TYPE_DEFAULT", "declares KERNEL_TYPE_AIV_ONLY"),
    "bad_syncall_and_flag": (CHECK_FAILED, "", "deadlock"),
}


@pytest.mark.parametrize("kernel", sorted(BAD))
def test_rule_fires(mm: Lib, kernel) -> None:
    status, call, fragment = BAD[kernel]
    a, b, _, _ = operands(32, 32, 32, torch.float16)
    c = torch.zeros(32, 32)
    case = make_case(kernel, a, b, c, blocks=1, tiles=1)
    result = mm.run(case, mm.tiling(case))
    assert result.status == status, result.message
    assert (
        f"kernel '{kernel}'" in result.message
        and call in result.message
        and fragment in result.message
    ), result.message
    assert "matmul_kernels.cpp:" in result.message


def test_syncall_and_flag_deadlock_names_both_waits(mm: Lib) -> None:
    a, b, _, _ = operands(16, 16, 16, torch.float16)
    c = torch.zeros(16, 16)
    case = make_case("bad_syncall_and_flag", a, b, c, blocks=1, tiles=1)
    msg = mm.run(case, mm.tiling(case)).message
    assert "SyncAll #1" in msg and "CrossCoreWaitFlag(9)" in msg, msg


# ---- mixed AIC/AIV kernels ----------------------------------------------------------------------


@pytest.mark.parametrize("blocks", [1, 3])
def test_mixed_kernel_cube_to_vector(mm: Lib, blocks) -> None:
    """The AIC writes A*B to the workspace and sets a flag; its two AIVs wait and write 2x+1."""
    m, n, k = 60, 64, 48
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    c = torch.full((m, n), float("nan"))
    ws = torch.full((m, n), float("nan"))
    case = make_case("mix_postprocess", a, b, c, ws=ws, blocks=blocks, tiles=1, shape=(m, n, k))
    tiling = mm.tiling(case)
    result = mm.run(case, tiling)
    assert result.ok, result.message
    prod = a64 @ b64
    assert bool(((ws.double() - prod).abs() <= fp32_bound(a64, b64, k)).all())
    assert torch.equal(c, ws * 2 + 1)
    assert len(result.kind(AIC)) == blocks and len(result.kind(AIV)) == 2 * blocks
    assert all(x["vector_elements"] > 0 for x in result.kind(AIV))
    assert all(x["cube_macs"] > 0 for x in result.kind(AIC))
    assert sum(x["cross_core_flags"] for x in result.kind(AIC)) == blocks


def test_mixed_kernel_without_cross_core_sync_is_reported(mm: Lib) -> None:
    """The AIC signals through a word in global memory the AIVs poll: nothing orders the Cube's
    write of the workspace before their reads (CrossCoreSetFlag/WaitFlag would)."""
    m, n, k = 32, 32, 32
    a, b, _, _ = operands(m, n, k, torch.float16)
    c = torch.zeros(m, n)
    ws = torch.zeros(m, n)
    out = torch.zeros(2, dtype=torch.int64)
    case = make_case("mix_postprocess", a, b, c, ws=ws, out=out, blocks=2, tiles=1, extra=2)
    result = mm.run(case, mm.tiling(case))
    assert result.status == CHECK_FAILED
    msg = result.message
    assert "DataCopy" in msg and "AIV core" in msg and "'workspace'" in msg, msg
    assert "Matmul::IterateAll at matmul_kernels.cpp:" in msg and "AIC core" in msg, msg
    assert "CrossCoreSetFlag" in msg, msg


def test_mixed_kernel_missing_set_is_a_deadlock(mm: Lib) -> None:
    m, n, k = 32, 32, 32
    a, b, _, _ = operands(m, n, k, torch.float16)
    c = torch.zeros(m, n)
    ws = torch.zeros(m, n)
    case = make_case("mix_postprocess", a, b, c, ws=ws, blocks=2, tiles=1, extra=1)
    result = mm.run(case, mm.tiling(case))
    assert result.status == CHECK_FAILED
    msg = result.message
    assert "CrossCoreWaitFlag" in msg and "deadlock" in msg and "AIV core" in msg, msg
    assert "returned from the kernel" in msg


def test_mixed_core_indices(mm: Lib) -> None:
    blocks = 3
    out = torch.full((3 * blocks * 6,), -1, dtype=torch.int64)
    a, b, _, _ = operands(16, 16, 16, torch.float16)
    c = torch.zeros(16, 16)
    case = make_case("mix_ids", a, b, c, out=out, blocks=blocks, tiles=1)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    rows = out.view(-1, 6).tolist()
    for i in range(blocks):  # AICs: type 1, index i, ratio 1
        assert rows[i] == [1, i, blocks, 0, 1, 1]
    for j in range(
        2 * blocks
    ):  # AIVs: type 2, index in [0, 2 * blockDim), sub-block j % 2, ratio 2
        assert rows[blocks + j] == [2, j, blocks, j % 2, 2, 2]
    assert [x["core_type"] for x in result.cores] == [AIC] * blocks + [AIV] * 2 * blocks


def test_cross_core_flag_modes(mm: Lib) -> None:
    blocks = 2
    out = torch.zeros(2 * blocks, dtype=torch.int64)
    a, b, _, _ = operands(16, 16, 16, torch.float16)
    c = torch.zeros(16, 16)
    case = make_case("mix_flag_modes", a, b, c, out=out, blocks=blocks, tiles=1)
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    assert out.tolist() == [2] * (2 * blocks)


# ---- counters and the modelled time -------------------------------------------------------------


def one_cube_core(mm: Lib, dtype: torch.dtype, m: int, n: int, k: int):
    """mm_cube of [m, k] x [k, n] (float32 out) as one block and one tile: the launch result and
    the counters of its only core."""
    result, _, _, _ = run_matmul(
        mm, "mm_cube", dtype, torch.float32, m, n, k, False, False, blocks=1, tiles=1
    )
    assert result.ok, result.message
    (core,) = result.cores
    return result, core


def test_counters_and_model(mm: Lib) -> None:
    m, n, k = 256, 256, 128
    result, core = one_cube_core(mm, torch.float32, m, n, k)
    assert core["core_type"] == AIC
    assert core["cube_useful_macs"] == m * n * k
    assert core["cube_macs"] == m * n * k  # every dimension a multiple of the fractal
    assert core["cube_cycles"] == m * n * k // 1024  # float: 16 x 16 x 4 MACs per cycle
    assert core["l0c_out_bytes"] == m * n * 4
    assert core["gm_to_l1_bytes"] >= (m * k + k * n) * 4
    assert core["gm_read_bytes"] >= core["gm_to_l1_bytes"]
    assert core["gm_write_bytes"] == m * n * 4
    model = result.model
    assert model is not None and model.seconds > 0
    clock = model.peak["clock_hz"]
    assert model.cube_seconds == pytest.approx(m * n * k / 1024 / clock)
    assert model.seconds == max(
        model.cube_seconds, model.vector_seconds, model.dma_seconds, model.hbm_seconds
    )
    assert model.bound in ("cube", "dma")


def test_padding_counts_issued_macs(mm: Lib) -> None:
    m, n, k = 17, 20, 9
    _, core = one_cube_core(mm, torch.float16, m, n, k)
    assert core["cube_useful_macs"] == m * n * k
    assert core["cube_macs"] == 32 * 32 * 16  # m, n to 16, k to k0 = 16 for half


# ---- a mixed operator through the op launcher --------------------------------------------------


class _MmOpSpec:
    """What simrun.SimOp reads of an operator spec: its name and (no) attributes."""

    name = "mm_op"
    attrs = ()


@pytest.mark.parametrize("max_cores", [0, 3])
def test_mixed_operator_through_launcher(mm: Lib, max_cores) -> None:
    """OpSpec::kernel_type = KERNEL_TYPE_MIX_AIC_1_2: the tiling sees the platform's AI cores and
    L1/L0 sizes, blockDim counts AI cores, the report lists each AI core's AIC and two AIVs."""
    m, n, k = 200, 300, 96
    a, b, a64, b64 = operands(m, n, k, torch.float16)
    c = torch.empty(m, n)
    op = simrun.SimOp(mm.path, _MmOpSpec())
    result = op.launch([arg(a), arg(b), arg(c)], max_cores=max_cores)
    assert result.ok, result.message
    assert 1 <= result.block_dim <= (max_cores or 24)
    assert (
        len(result.kind(AIC)) == result.block_dim and len(result.kind(AIV)) == 2 * result.block_dim
    )
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())
    assert sum(x["cube_useful_macs"] for x in result.kind(AIC)) == m * n * k


# ---- operands in L1 (TSCM) ----------------------------------------------------------------------

TSCM_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", TSCM_DTYPES, ids=lambda t: str(t).removeprefix("torch."))
@pytest.mark.parametrize("trans_b", [False, True], ids=["tB0", "tB1"])
@pytest.mark.parametrize("kernel", ["mm_tscm", "mm_tscm_a"])
def test_tscm_operands_against_float64(mm: Lib, kernel, dtype, trans_b) -> None:
    """A (and B) copied GM -> L1 as NZ by the vector core and read in place by the Cube: the
    product is right for sizes that pad every NZ dimension, and what the Cube loaded from GM is
    only the operand it did not find in L1."""
    m, n, k = 45, 70, 40
    result, c, a64, b64 = run_matmul(mm, kernel, dtype, torch.float32, m, n, k, False, trans_b)
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())
    size = torch.empty((), dtype=dtype).element_size()
    l1 = result.total("gm_to_l1_bytes")
    # The vector core's ND2NZ copies (A, and B for mm_tscm) plus the Cube's loads of a GM B.
    assert l1 == (m * k + k * n) * size


def nz(a: torch.Tensor) -> torch.Tensor:
    """a [R, C] (R a multiple of 16, C of the 32-byte C0) as NZ: column groups of C0, each all R
    rows of C0 elements."""
    c0 = 32 // a.element_size()
    r, c = a.shape
    return a.reshape(r, c // c0, c0).permute(1, 0, 2).contiguous()


@pytest.mark.parametrize("dtype", TSCM_DTYPES, ids=lambda t: str(t).removeprefix("torch."))
def test_tscm_contiguous_copy_of_nz_data(mm: Lib, dtype) -> None:
    """A already NZ in global memory reaches L1 with a plain DataCopy and is read as NZ."""
    m, n, k = 48, 70, 32
    a, b, a64, b64 = operands(m, n, k, dtype)
    c = torch.full((m, n), float("nan"))
    a_nz = nz(a)  # held: the case keeps only its address
    case = make_case("mm_tscm_a", a_nz, b, c, blocks=1, tiles=1, extra=7, shape=(m, n, k))
    result = mm.run(case, mm.tiling(case))
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())


TSCM_BAD = {
    # extra: (API call named, message fragment)
    1: ("Matmul::IterateAll", "MTE2"),
    2: ("Matmul::IterateAll", "must hold the whole 45 x 40 matrix"),
    3: ("Duplicate", "not in the unified buffer"),
    4: ("TPipe::InitBuffer", "L1 overflow"),
    5: ("Matmul::IterateAll", "L1 overflow"),
    6: ("Matmul::IterateAll", "after FreeTensor"),
}


@pytest.mark.parametrize("extra", sorted(TSCM_BAD))
def test_tscm_rule_fires(mm: Lib, extra) -> None:
    """What the hardware would get wrong with an operand in L1: the Cube reading it before the
    copy is known to be done (no EnQue/DeQue: the hazard checker names the pipes), a buffer that
    does not hold the whole matrix, a vector instruction on L1, the TSCM of an AI core's two
    vector cores beyond its L1, the API's own buffers not fitting beside TSCM, and a freed
    buffer."""
    call, fragment = TSCM_BAD[extra]
    kernel = "mm_tscm_a" if extra == 5 else "mm_tscm"
    a, b, _, _ = operands(45, 70, 40, torch.float16)
    c = torch.zeros(45, 70)
    case = make_case(kernel, a, b, c, blocks=1, tiles=1, extra=extra)
    result = mm.run(case, mm.tiling(case))
    assert result.status == CHECK_FAILED, result.message
    assert call in result.message and fragment in result.message, result.message
