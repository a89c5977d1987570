"""fbgemm-ascend's dense_embedding_codegen_lookup_function kernel (one row per index, the
sequence-embedding lookup) and its _grad kernel (the rows' gradients scatter-added into the
table), compiled unchanged against the emulation, against a torch gather and index_add."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from vendor import Field, TilingDef, VendorOp  # noqa: E402

CORES = 48  # Ascend910B1 vector cores
FIELDS = (
    "formerCoreNum",
    "formerCoreLength",
    "formerTileNum",
    "formerTileLength",
    "formerLastTileLength",
    "tailCoreNum",
    "tailCoreLength",
    "tailTileNum",
    "tailTileLength",
    "tailLastTileLength",
    "weightsOffsetsLength",
    "batchSize",
    "embedDimLength",
    "indicesAllLength",
    "devWeightsLength",
    "alignedEmbedDimLength",
)
LOOKUP_OP = VendorOp(
    "dense_embedding_codegen_lookup_function",
    TilingDef(
        "DenseEmbeddingCodegenLookupFunctionTilingData",
        "DenseEmbeddingCodegenLookupFunction",
        tuple(Field("int32_t", n) for n in FIELDS),
    ),
    11,
    ("DTYPE_INDICES=int64_t",),
)
GRAD_OP = VendorOp(
    "dense_embedding_codegen_lookup_function_grad",
    TilingDef(
        "DenseEmbeddingCodegenLookupFunctionGradTilingData",
        "DenseEmbeddingCodegenLookupFunctionGrad",
        tuple(Field("int32_t", n) for n in FIELDS),
    ),
    12,
    ("DTYPE_INDICES=int64_t",),
)


def tiles(length: int, per_tile: int) -> tuple[int, int, int]:
    """(tile count, tile length, last tile length) of a core's share."""
    tile = max(1, min(length, per_tile))
    count = max(1, -(-length // tile))
    return count, tile, length - (count - 1) * tile


def run_lookup(
    vendor_build, tables: int, rows: int, dim: int, batch: int, seed: int, grad: bool = False
):
    kernel = vendor_build(GRAD_OP if grad else LOOKUP_OP)
    g = torch.Generator().manual_seed(seed)
    weights = torch.randn(tables * rows * dim, generator=g)
    weights_offsets = torch.arange(tables, dtype=torch.int64) * rows * dim
    d_offsets = torch.arange(tables + 1, dtype=torch.int32) * dim
    u = torch.rand(tables * batch, generator=g)
    lengths = torch.floor(3.0 / (u + 0.1) - 2.0).clamp(min=0, max=40).to(torch.int64)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    n = int(offsets[-1])
    rank = torch.floor(1.0 / (torch.rand(n, generator=g) + 1e-3)).to(torch.int64)
    indices = (rank * 2654435761) % rows  # Zipf: hot rows repeat
    aligned = (dim + 7) // 8 * 8
    cores = min(CORES, n)
    base, rem = divmod(n, cores)
    per_tile = 32 * 1024 // (aligned * 4)  # the output tile: 32 KiB of the unified buffer
    f_tiles = tiles(base + 1, per_tile)
    t_tiles = tiles(base, per_tile) if base else (1, f_tiles[1], 0)
    fields = {
        "formerCoreNum": rem,
        "formerCoreLength": base + 1,
        "formerTileNum": f_tiles[0],
        "formerTileLength": f_tiles[1],
        "formerLastTileLength": f_tiles[2],
        "tailCoreNum": cores - rem,
        "tailCoreLength": base,
        "tailTileNum": t_tiles[0],
        "tailTileLength": t_tiles[1],
        "tailLastTileLength": t_tiles[2],
        "weightsOffsetsLength": tables,
        "batchSize": batch,
        "embedDimLength": dim,
        "indicesAllLength": n,
        "devWeightsLength": tables * rows,
        "alignedEmbedDimLength": aligned,
    }
    table = torch.repeat_interleave(torch.arange(tables), lengths.view(tables, batch).sum(1))
    row = weights_offsets[table] // dim + indices  # index i of table t: this row of the weights
    tensors = [weights_offsets, d_offsets, None, indices, offsets, None, None, None, None]
    if grad:
        # The gradient of each looked-up row, scatter-added into a zeroed table-sized output.
        grads = torch.randn(n, dim, generator=g)
        out = torch.zeros(tables * rows, dim)
        kernel.launch([weights, grads, *tensors, out], [11], fields, block_dim=cores)
        expected = torch.zeros(tables * rows, dim, dtype=torch.float64)
        expected.index_add_(0, row, grads.double())
        return out, expected.float()
    out = torch.empty(n, dim)
    kernel.launch([weights, *tensors, out], [10], fields, block_dim=cores)
    # fbgemm's CPU dense_embedding_codegen_lookup_function pools even for NONE, so the reference
    # is the gather itself.
    expected = weights.view(-1, dim)[row]
    return out, expected


def test_dense_lookup_small_case(vendor_build) -> None:
    out, expected = run_lookup(vendor_build, 2, 5, 8, 3, seed=1)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dim", [64, 128])
def test_dense_lookup_training_batch(vendor_build, dim: int) -> None:
    out, expected = run_lookup(vendor_build, 4, 5000, dim, 1024, seed=dim)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dim", [8, 64])
def test_dense_lookup_grad(vendor_build, dim: int) -> None:
    """Hot rows receive many gradients: the atomic adds from all cores must all land."""
    out, expected = run_lookup(vendor_build, 4, 3000, dim, 1024, seed=dim + 1, grad=True)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)
