"""fbgemm-ascend's offsets_range and asynchronous_complete_cumsum kernels, compiled unchanged
against the emulation, against fbgemm's CPU operators."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from vendor import Field, TilingDef, VendorOp  # noqa: E402

fbgemm = torch.ops.fbgemm
CORES = 48  # Ascend910B1 vector cores
UB_BYTES = 192 * 1024


def zipf_lengths(batch: int, mean: float, seed: int) -> torch.Tensor:
    """Bag lengths of a training batch: heavy-tailed, many short bags, some empty."""
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(batch, generator=g)
    return torch.floor(mean * 0.5 / (u + 0.02)).clamp(max=40 * mean).to(torch.int64)


# ---- offsets_range ------------------------------------------------------------------------------


def offsets_range_op(dtype: str) -> VendorOp:
    tiling = TilingDef(
        "OffsetsRangeTilingData",
        "OffsetsRange",
        tuple(Field("int64_t", n) for n in ("offsetsLen", "totalRows", "rangeSize", "lutSize")),
    )
    return VendorOp("offsets_range", tiling, 2, (f"DTYPE_OFFSETS={dtype}",))


def offsets_range_tiling(rows: int, range_size: int) -> tuple[dict[str, int], int]:
    """A lookup table of about sqrt(2048 * range / rows) indices (whole 32-byte blocks, at most a
    third of the unified buffer: the kernel double-buffers two more of it), and one core per
    table's worth of output."""
    lut = math.isqrt(max(1, 2048 * range_size // max(rows, 1))) + 1
    lut = min((lut + 7) // 8 * 8, (UB_BYTES - 64) // 3 // 4 // 8 * 8)
    block_dim = max(1, min(CORES, -(-range_size // lut)))
    fields = {"offsetsLen": rows, "totalRows": rows, "rangeSize": range_size, "lutSize": lut}
    return fields, block_dim


def run_offsets_range(vendor_build, offsets: torch.Tensor, range_size: int) -> torch.Tensor:
    kernel = vendor_build(offsets_range_op("int32_t"))
    out = torch.empty(range_size, dtype=offsets.dtype)
    fields, block_dim = offsets_range_tiling(offsets.numel(), range_size)
    kernel.launch([offsets, out], outputs=[1], tiling=fields, block_dim=block_dim)
    return out


def test_offsets_range_hand_case(vendor_build) -> None:
    offsets = torch.tensor([0, 2, 2, 5], dtype=torch.int32)
    out = run_offsets_range(vendor_build, offsets, 7)
    assert out.tolist() == [0, 1, 0, 1, 2, 0, 1]


@pytest.mark.parametrize("batch", [1, 37, 4096])
def test_offsets_range_training_batch(vendor_build, batch: int) -> None:
    lengths = zipf_lengths(batch, 20.0, seed=batch)
    offsets = torch.cumsum(lengths, 0) - lengths  # exclusive: one start per row
    total = int(lengths.sum())
    offsets = offsets.to(torch.int32)
    out = run_offsets_range(vendor_build, offsets, total)
    torch.testing.assert_close(out, fbgemm.offsets_range(offsets, total), rtol=0, atol=0)


# ---- asynchronous_complete_cumsum ---------------------------------------------------------------

CUMSUM_BLOCK = 256  # elements a kernel block sums (the kernel's BLOCK_SIZE)


def cumsum_op(dtype: str) -> VendorOp:
    tiling = TilingDef(
        "AsynchronousCompleteCumsumTilingData",
        "AsynchronousCompleteCumsum",
        tuple(
            Field("int64_t", n)
            for n in ("totalLength", "totalBlocks", "blocksPerCore", "remainderBlocks")
        ),
    )
    return VendorOp("asynchronous_complete_cumsum", tiling, 2, (f"DTYPE_X={dtype}",))


def run_cumsum(vendor_build, x: torch.Tensor, cores: int = CORES) -> torch.Tensor:
    ctype = {torch.int32: "int32_t", torch.int64: "int64_t"}[x.dtype]
    kernel = vendor_build(cumsum_op(ctype))
    n = x.numel()
    blocks = max(1, -(-n // CUMSUM_BLOCK))
    block_dim = min(cores, blocks)
    fields = {
        "totalLength": n,
        "totalBlocks": blocks,
        "blocksPerCore": blocks // block_dim,
        "remainderBlocks": blocks % block_dim,
    }
    out = torch.empty(n + 1, dtype=x.dtype)
    # The kernel shares each block's sum through the user workspace, one 64-byte line a block.
    kernel.launch([x, out], outputs=[1], tiling=fields, block_dim=block_dim, workspace=blocks * 64)
    return out


def test_cumsum_hand_case(vendor_build) -> None:
    out = run_cumsum(vendor_build, torch.tensor([2, 3, 1, 4], dtype=torch.int32))
    assert out.tolist() == [0, 2, 5, 6, 10]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("batch", [255, 256, 257, 26 * 4096])
def test_cumsum_training_batch(vendor_build, dtype: torch.dtype, batch: int) -> None:
    lengths = zipf_lengths(batch, 20.0, seed=batch).to(dtype)
    out = run_cumsum(vendor_build, lengths)
    torch.testing.assert_close(out, fbgemm.asynchronous_complete_cumsum(lengths), rtol=0, atol=0)
