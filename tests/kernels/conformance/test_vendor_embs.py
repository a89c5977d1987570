"""fbgemm-ascend's permute_pooled_embs and dense_to_jagged kernels, compiled unchanged against
the emulation, against fbgemm's CPU operators."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from vendor import Field, TilingDef, VendorOp  # noqa: E402

fbgemm = torch.ops.fbgemm
CORES = 48  # Ascend910B1 vector cores
UB_BYTES = 192 * 1024
CTYPE = {
    torch.float32: "float",
    torch.float16: "half",
    torch.int32: "int32_t",
    torch.int64: "int64_t",
}


# ---- permute_pooled_embs ------------------------------------------------------------------------


def permute_pooled_op(dtype: torch.dtype) -> VendorOp:
    fields = ("batchSize", "totalFeatureNum", "totalDim", "baseBatchLen", "tailSplitIndex")
    tiling = TilingDef(
        "PermutePooledEmbsTilingData",
        "PermutePooledEmbs",
        tuple(Field("int64_t", n) for n in (*fields, "ubCanUsed")),
    )
    return VendorOp("permute_pooled_embs", tiling, 5, (f"DTYPE_POOLED_EMBS={CTYPE[dtype]}",))


def run_permute_pooled(vendor_build, pooled: torch.Tensor, dims: list[int], permute: list[int]):
    """The kernel splits the output's columns over the cores: one column range each."""
    kernel = vendor_build(permute_pooled_op(pooled.dtype))
    offsets = torch.tensor([0, *torch.tensor(dims).cumsum(0).tolist()], dtype=torch.int64)
    perm = torch.tensor(permute, dtype=torch.int64)
    inv_dims = [dims[p] for p in permute]
    inv_offsets = torch.tensor([0, *torch.tensor(inv_dims).cumsum(0).tolist()], dtype=torch.int64)
    batch, total_dim = pooled.shape
    cores = min(CORES, total_dim)
    fields = {
        "batchSize": batch,
        "totalFeatureNum": len(dims),
        "totalDim": total_dim,
        "baseBatchLen": total_dim // cores,
        "tailSplitIndex": total_dim % cores,
        "ubCanUsed": UB_BYTES // 64 * 64,  # two queue buffers of whole 32-byte blocks
    }
    out = torch.empty_like(pooled)
    kernel.launch([pooled, offsets, perm, inv_offsets, out], [4], fields, block_dim=cores)
    inv_perm = torch.argsort(perm)
    expected = fbgemm.permute_pooled_embs(pooled, offsets, perm, inv_offsets, inv_perm)
    return out, expected


def test_permute_pooled_hand_case(vendor_build) -> None:
    pooled = torch.arange(2 * 6, dtype=torch.float32).view(2, 6)
    out, expected = run_permute_pooled(vendor_build, pooled, [1, 2, 3], [2, 0, 1])
    assert out.tolist() == [[3, 4, 5, 0, 1, 2], [9, 10, 11, 6, 7, 8]]
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("dtype", "dims"),
    [
        (torch.float32, [64, 128, 64, 96, 128, 64, 32, 128]),  # 32-byte aligned columns
        (torch.float32, [3, 17, 64, 5, 128]),  # unaligned: the DataCopyPad path
        (torch.float16, [64, 16, 128, 48, 8]),
    ],
)
def test_permute_pooled_training_batch(vendor_build, dtype: torch.dtype, dims: list[int]) -> None:
    g = torch.Generator().manual_seed(len(dims))
    batch = 2048
    pooled = torch.randn(batch, sum(dims), generator=g).to(dtype)
    permute = torch.randperm(len(dims), generator=g).tolist()
    out, expected = run_permute_pooled(vendor_build, pooled, dims, permute)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


# ---- dense_to_jagged ----------------------------------------------------------------------------


def dense_to_jagged_op(dtype: torch.dtype, offset_dtype: torch.dtype) -> VendorOp:
    ints = ("denseDim1", "denseDim2", "left", "singleCoreBatch", "singleLoopSize")
    tiling = TilingDef(
        "DenseToJaggedTilling",
        "DenseToJagged",
        (
            *(Field("int32_t", n) for n in (*ints, "denseType", "offsetType")),
            Field("int64_t", "denseTotal"),
            Field("int64_t", "jaggedTotal"),
        ),
    )
    defines = (f"DTYPE_DENSE={CTYPE[dtype]}", f"DTYPE_OFFSET={CTYPE[offset_dtype]}")
    return VendorOp("dense_to_jagged", tiling, 3, defines)


def run_dense_to_jagged(vendor_build, dense: torch.Tensor, offsets: torch.Tensor):
    kernel = vendor_build(dense_to_jagged_op(dense.dtype, offsets.dtype))
    batch, max_len, dim = dense.shape
    total = int(offsets[-1])
    fields = {
        "denseDim1": max_len,
        "denseDim2": dim,
        "left": batch % CORES,
        "singleCoreBatch": batch // CORES,
        # Two single-buffered queues in what the unified buffer leaves, in 512-byte units.
        "singleLoopSize": (UB_BYTES - 8 * 1024) // 2 // 512 * 512,
        "denseTotal": dense.numel(),
        "jaggedTotal": total * dim,
    }
    values = torch.empty(total, dim, dtype=dense.dtype)
    result = kernel.launch([dense, offsets, values], [2], fields, block_dim=CORES)
    expected = fbgemm.dense_to_jagged(dense, [offsets], total)[0]
    return values, expected, result


def test_dense_to_jagged_hand_case(vendor_build) -> None:
    dense = torch.arange(3 * 2 * 3, dtype=torch.float32).view(3, 2, 3)
    offsets = torch.tensor([0, 1, 1, 3], dtype=torch.int64)
    values, expected, result = run_dense_to_jagged(vendor_build, dense, offsets)
    assert values.tolist() == [[0, 1, 2], [12, 13, 14], [15, 16, 17]]
    torch.testing.assert_close(values, expected, rtol=0, atol=0)
    # D = 3 floats: the kernel copies each batch's rows in whole 32-byte blocks, so the last
    # batch reads up to 31 bytes past the dense tensor: allowed, reported as a warning.
    assert result.total("gm_overread_bytes") > 0


@pytest.mark.parametrize(
    ("dtype", "offset_dtype", "dim"),
    [
        (torch.float32, torch.int64, 128),
        (torch.float32, torch.int32, 64),
        (torch.float16, torch.int64, 64),
    ],
)
def test_dense_to_jagged_training_batch(vendor_build, dtype, offset_dtype, dim: int) -> None:
    g = torch.Generator().manual_seed(dim)
    batch, max_len = 2048, 20
    lengths = torch.floor(10.0 / (torch.rand(batch, generator=g) + 0.05)).clamp(max=2 * max_len)
    offsets = torch.cat([torch.zeros(1), lengths.clamp(max=max_len).cumsum(0)]).to(offset_dtype)
    dense = torch.randn(batch, max_len, dim, generator=g).to(dtype)
    values, expected, _ = run_dense_to_jagged(vendor_build, dense, offsets)
    torch.testing.assert_close(values, expected, rtol=0, atol=0)
