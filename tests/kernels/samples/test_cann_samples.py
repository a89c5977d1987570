"""CANN's matrix samples, written for this project from their documented behaviour
(tests/kernels/samples/cann_samples.cpp), run on the emulation against float64 references at a
single-core and a multi-core shape each."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_testlib import build_test_library, simrun

SRC = Path(__file__).resolve().parent / "cann_samples.cpp"
AIV, AIC = 0, 1
GEN = torch.Generator().manual_seed(26)


class SampleCase(ctypes.Structure):
    _fields_ = (
        ("kernel", ctypes.c_char_p),
        ("soc", ctypes.c_char_p),
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("dim", ctypes.c_int64),
        ("scale", ctypes.c_float),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("c", ctypes.c_void_p),
        ("ws", ctypes.c_void_p),
        ("ws_bytes", ctypes.c_int64),
        ("extra", ctypes.c_int64),
    )


@pytest.fixture(scope="module")
def samples(sim_build_root: Path) -> ctypes.CDLL:
    dll = ctypes.CDLL(str(build_test_library(SRC, sim_build_root)))
    dll.recsdk_sim_sample_run.restype = ctypes.c_int32
    return dll


def zz(a: torch.Tensor) -> torch.Tensor:
    """a [M, K] (multiples of 16) as Zz fractals of 16 x 16: rows of fractals, each row-major."""
    m, k = a.shape
    return a.reshape(m // 16, 16, k // 16, 16).permute(0, 2, 1, 3).contiguous()


def run(dll: ctypes.CDLL, kernel: str, m: int, n: int, k: int, *, dim: int = 0, scale=1.0, extra=0):
    a = torch.randn(m, k, generator=GEN).half()
    a_arg = zz(a) if extra == 3 else a
    b = torch.randn(k, n, generator=GEN).half()
    bias = torch.randn(n, generator=GEN)
    c = torch.full((m, n), float("nan"))
    ws = torch.full((m, n), float("nan"))
    case = SampleCase(
        kernel=kernel.encode(),
        soc=b"Ascend910B1",
        m=m,
        n=n,
        k=k,
        dim=dim,
        scale=scale,
        a=a_arg.data_ptr(),
        b=b.data_ptr(),
        bias=bias.data_ptr(),
        c=c.data_ptr(),
        ws=ws.data_ptr(),
        ws_bytes=ws.numel() * 4,
        extra=extra,
    )
    report = simrun._Report()
    dll.recsdk_sim_sample_run(ctypes.byref(case), ctypes.byref(report))
    result = simrun.LaunchResult(
        status=report.status,
        message=report.message.decode(errors="replace"),
        block_dim=report.block_dim,
        tiling_key=0,
        workspace_bytes=0,
        cores=[
            {name: getattr(report.cores[i], name) for name in simrun.STAT_FIELDS}
            for i in range(report.num_cores)
        ],
        model=simrun.Model.from_report(report),
    )
    return result, c, a.double(), b.double(), bias.double()


def fp32_bound(a64: torch.Tensor, b64: torch.Tensor, k: int) -> torch.Tensor:
    """Float accumulation of k exact products: |error| <= k * 2^-24 * sum |a||b| (+ the bias)."""
    return (k + 2) * 2.0**-24 * (a64.abs() @ b64.abs()) + 1e-6


# (M, N, K): one AIV's tile; then a grid over every vector core of the chip (SetDim(48)) with tails.
SHAPES = [(64, 48, 32), (600, 500, 64)]


@pytest.mark.parametrize("m,n,k", SHAPES, ids=["one_core", "all_aivs"])
def test_matmul_high_level_mix(samples, m, n, k) -> None:
    result, c, a64, b64, bias64 = run(samples, "matmul_custom", m, n, k)
    assert result.ok, result.message
    ref = a64 @ b64 + bias64
    assert bool(((c.double() - ref).abs() <= fp32_bound(a64, b64, k)).all())
    used = result.total("cube_useful_macs")
    assert used == m * n * k
    if m > 64:  # the tiling spread over more vector cores than there are AI cores
        busy = [x for x in result.kind(AIV) if x["gm_read_bytes"] > 0]
        assert len(busy) > 24 and result.block_dim == (len(busy) + 1) // 2


def test_matmul_high_level_mix_set_dim_above_aivs_is_refused(samples) -> None:
    """SetDim(96) on a chip of 48 AIVs: 96 tiles need 48 AI cores, twice the chip's."""
    result, *_ = run(samples, "matmul_custom", 2048, 2048, 32, dim=96)
    assert not result.ok
    assert "blockDim 48" in result.message and "24 AI cores" in result.message, result.message


def test_async_iterate_all_never_waited_for_is_reported(samples) -> None:
    """IterateAll<false>(..., waitIterateAll = false) leaves the wait to the caller: reading C
    right after it is a race, not a synchronous result."""
    result, *_ = run(samples, "matmul_async_custom", 64, 48, 32, extra=4)
    assert not result.ok
    msg = result.message
    assert "GlobalTensor::GetValue" in msg and "Matmul::IterateAll at cann_samples.cpp:" in msg
    assert "waitIterateAll = false" in msg, msg


def test_async_iterate_all_ordered_by_a_later_synchronous_call(samples) -> None:
    m, n, k = 64, 48, 32
    result, c, a64, b64, bias64 = run(samples, "matmul_async_custom", m, n, k, extra=5)
    assert result.ok, result.message
    assert bool(((c.double() - (a64 @ b64 + bias64)).abs() <= fp32_bound(a64, b64, k)).all())


@pytest.mark.parametrize("m,n,k", [(64, 64, 32), (520, 320, 64)], ids=["one_core", "multi"])
def test_matmul_leakyrelu_through_ub(samples, m, n, k) -> None:
    result, c, a64, b64, bias64 = run(samples, "matmul_leakyrelu_custom", m, n, k)
    assert result.ok, result.message
    x = a64 @ b64 + bias64
    ref = torch.where(x >= 0, x, 0.001 * x)
    assert bool(((c.double() - ref).abs() <= fp32_bound(a64, b64, k)).all())


@pytest.mark.parametrize("m,n,k", [(40, 64, 48), (300, 96, 80)], ids=["one_core", "multi"])
def test_cube_writes_vector_post_processes(samples, m, n, k) -> None:
    result, c, a64, b64, _ = run(samples, "cube_vector_custom", m, n, k, scale=0.5)
    assert result.ok, result.message
    ref = (a64 @ b64).clamp(min=0) * 0.5
    assert bool(((c.double() - ref).abs() <= fp32_bound(a64, b64, k)).all())
    assert len(result.kind(AIC)) == result.block_dim
    assert all(x["cube_macs"] > 0 for x in result.kind(AIC))
    assert sum(x["cross_core_flags"] for x in result.kind(AIC)) == result.block_dim


def test_cube_write_ordered_for_an_aiv_through_another_and_sync_all(samples) -> None:
    """The AIC's result reaches the second AIV of each AI core only through the first (which waited
    for the AIC's flag) and SyncAll<true>: ordered, as SyncAll passes on what any AIV knew (a
    SyncAll<true> alone would not order an AIC's write: it meets the AIVs only)."""
    m, n, k = 300, 96, 80
    result, c, a64, b64, _ = run(samples, "cube_vector_custom", m, n, k, scale=0.5, extra=6)
    assert result.ok, result.message
    ref = (a64 @ b64).clamp(min=0) * 0.5
    assert bool(((c.double() - ref).abs() <= fp32_bound(a64, b64, k)).all())


@pytest.mark.parametrize(
    "m,n,k", [(48, 32, 40), (200, 80, 300)], ids=["one_core", "multi_k_slices"]
)
def test_low_level_load_data_mmad_fixpipe(samples, m, n, k) -> None:
    """LoadData L1 -> L0A/L0B (B transposed per fractal), Mmad accumulating K slices in L0C,
    Fixpipe NZ -> ND: bands of 64 rows on as many AICs, tails in M and K."""
    result, c, a64, b64, _ = run(samples, "mmad_custom", m, n, k)
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, k)).all())
    assert result.block_dim == -(-m // 64) and len(result.kind(AIC)) == result.block_dim
    assert result.total("cube_useful_macs") == m * n * k
    assert result.total("l1_to_l0_bytes") > 0 and result.total("l0c_out_bytes") == m * n * 4


def test_low_level_hard_event_orders_mte1_before_m(samples) -> None:
    """SetFlag/WaitFlag<HardEvent::MTE1_M> in place of the A2/B2 queues' EnQue/DeQue."""
    result, c, a64, b64, _ = run(samples, "mmad_custom", 64, 32, 48, extra=2)
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, 48)).all())


def test_low_level_mmad_unordered_after_load_data_is_reported(samples) -> None:
    """Mmad (PIPE_M) reading L0A that LoadData (PIPE_MTE1) wrote, with nothing between: the
    compiler synchronises nothing on the Cube side."""
    result, *_ = run(samples, "mmad_custom", 64, 32, 48, extra=1)
    assert not result.ok
    msg = result.message
    assert "read-after-write" in msg and "Mmad at cann_samples.cpp:" in msg, msg
    assert "LoadData(L1->L0A/L0B) at cann_samples.cpp:" in msg and "MTE1_M" in msg, msg


def test_low_level_load_data_from_gm(samples) -> None:
    """LoadData GM -> L0A of A already in Zz fractals (MTE2), B through L1 as before."""
    result, c, a64, b64, _ = run(samples, "mmad_custom", 128, 32, 48, extra=3)
    assert result.ok, result.message
    assert bool(((c.double() - a64 @ b64).abs() <= fp32_bound(a64, b64, 48)).all())


def zn_identity(k: int) -> torch.Tensor:
    """The k x k float identity as Zn fractals (8 x 16, fractals rows-first, columns inside)."""
    n_blocks = k // 16
    eye = torch.zeros(k * k)
    for i in range(k):
        eye[((i // 8) * n_blocks + i // 16) * 128 + (i % 16) * 8 + i % 8] = 1.0
    return eye


@pytest.mark.parametrize(
    "start,stride,dst_gap,frac_gap", [(1, 1, 1, 0), (0, 2, 0, 1)], ids=["packed", "frac_gap"]
)
def test_load_data_with_transpose_b32(samples, start, stride, dst_gap, frac_gap) -> None:
    """Two float squares (each two 16 x 8 NZ fractals side by side) transposed into L0A, read back
    through Mmad with a Zn identity: L0A as Zz is the squares' transposes, their column halves
    placed by dstGap / dstFracGap (LoadDataWithTranspose.md)."""
    squares = torch.arange(4 * 256, dtype=torch.float32)
    eye = zn_identity(32)
    c = torch.full((16, 32), float("nan"))
    case = SampleCase(
        kernel=b"ldt_custom",
        soc=b"Ascend910B1",
        m=16,
        n=start,
        k=32,
        dim=2 | stride << 8 | dst_gap << 16 | frac_gap << 24,
        a=squares.data_ptr(),
        b=eye.data_ptr(),
        c=c.data_ptr(),
        extra=squares.numel(),
    )
    report = simrun._Report()
    samples.recsdk_sim_sample_run(ctypes.byref(case), ctypes.byref(report))
    assert report.status == 0, report.message.decode()
    # Square s: columns 0-7 from its first fractal, 8-15 from its second, each 16 x 8 row-major.
    t = [
        torch.cat([sq[:128].view(16, 8), sq[128:].view(16, 8)], dim=1).T
        for sq in (squares[(start + i * stride) * 256 :][:256] for i in range(2))
    ]
    if frac_gap == 0:  # repeat i at fractals 2i, 2i + 1
        expected = torch.cat([t[0], t[1]], dim=1)
    else:  # repeat i at fractals i and i + 2
        expected = torch.cat([t[0][:, :8], t[1][:, :8], t[0][:, 8:], t[1][:, 8:]], dim=1)
    assert torch.equal(c, expected)
