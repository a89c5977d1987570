"""fbgemm-ascend's permute2d_sparse_data kernel, compiled unchanged against the emulation,
against fbgemm's CPU permute_2D_sparse_data."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from vendor import Field, TilingDef, VendorOp  # noqa: E402

fbgemm = torch.ops.fbgemm
CORES = 48  # Ascend910B1 vector cores
UB_BYTES = 192 * 1024
CTYPE = {torch.float32: "float", torch.int32: "int32_t", torch.int64: "int64_t"}
INT_FIELDS = (
    "coreNum",
    "permuteDim0",
    "lengthsT",
    "lengthsB",
    "valuesDim",
    "valuesOutDim",
    "weightsColumns",
    "totalBatch",
    "baseBatchLen",
    "tailSplitIndex",
    "ubCanUsed",
)


def permute2d_op(lengths: torch.dtype, values: torch.dtype) -> VendorOp:
    tiling = TilingDef(
        "Permute2dSparseDataTilingData",
        "Permute2dSparseData",
        (
            *(Field("int64_t", n) for n in INT_FIELDS),
            Field("bool", "enableWeights"),
            Field("bool", "enableTotalOffset"),
        ),
    )
    defines = (
        "DTYPE_PERMUTE=int32_t",
        f"DTYPE_LENGTHS={CTYPE[lengths]}",
        f"DTYPE_VALUES={CTYPE[values]}",
        "DTYPE_WEIGHTS=float",
    )
    return VendorOp("permute2d_sparse_data", tiling, 10, defines)


def run_permute2d(vendor_build, permute, lengths, values, weights, key: int):
    """Key 1 permutes lengths and data with per-feature value offsets (totalOffset); key 2 only
    the data, row by row, with the offsets of every (feature, batch) row before and after."""
    kernel = vendor_build(permute2d_op(lengths.dtype, values.dtype))
    t, b = lengths.shape
    rows = lengths.long().sum(1)
    total_offset = torch.cat([torch.zeros(1, dtype=torch.int64), rows.cumsum(0)])
    out_total = int(rows[permute.long()].sum())
    permuted_rows = rows[permute.long()]
    permuted_offset = torch.cat([torch.zeros(1, dtype=torch.int64), permuted_rows.cumsum(0)])
    n = permute.numel()
    fields = {
        "coreNum": CORES,
        "permuteDim0": n,
        "lengthsT": t,
        "lengthsB": b,
        "valuesDim": values.numel(),
        "valuesOutDim": out_total,
        "weightsColumns": 1,
        "totalBatch": n,
        "baseBatchLen": n // CORES,
        "tailSplitIndex": n % CORES,
        "ubCanUsed": UB_BYTES // 64 * 64,
        "enableWeights": weights is not None,
        "enableTotalOffset": key == 1,
    }
    out_lengths = torch.zeros(n, b, dtype=lengths.dtype)
    out_values = torch.empty(out_total, dtype=values.dtype)
    out_weights = None if weights is None else torch.empty(out_total, dtype=weights.dtype)
    tensors = [
        permute,
        lengths,
        values,
        weights,
        total_offset if key == 1 else None,
        total_offset if key == 2 else None,  # per feature here: one row of values per feature
        permuted_offset if key == 2 else None,
        out_lengths,
        out_values,
        out_weights,
    ]
    kernel.launch(tensors, [7, 8, 9], fields, block_dim=CORES, tiling_key=key)
    expected = fbgemm.permute_2D_sparse_data(permute, lengths, values, weights, out_total)
    return (out_lengths, out_values, out_weights), expected


def test_permute2d_hand_case(vendor_build) -> None:
    permute = torch.tensor([2, 0, 1], dtype=torch.int32)
    lengths = torch.tensor([[1, 2], [0, 1], [2, 0]], dtype=torch.int32)
    values = torch.arange(6, dtype=torch.int64)
    (lengths_out, values_out, _), expected = run_permute2d(
        vendor_build, permute, lengths, values, None, 1
    )
    assert lengths_out.tolist() == [[2, 0], [1, 2], [0, 1]]
    assert values_out.tolist() == [4, 5, 0, 1, 2, 3]
    torch.testing.assert_close(lengths_out, expected[0], rtol=0, atol=0)
    torch.testing.assert_close(values_out, expected[1], rtol=0, atol=0)


@pytest.mark.parametrize("key", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_permute2d_training_batch(vendor_build, key: int, weighted: bool) -> None:
    g = torch.Generator().manual_seed(key * 2 + weighted)
    features, batch = 26, 2048
    u = torch.rand(features, batch, generator=g)
    lengths = torch.floor(1.0 / (u + 0.05) - 1.0).clamp(min=0, max=30).to(torch.int64)
    values = torch.randint(0, 10**6, (int(lengths.sum()),), generator=g, dtype=torch.int64)
    weights = torch.rand(values.numel(), generator=g) if weighted else None
    permute = torch.randperm(features, generator=g).to(torch.int32)
    (lengths_out, values_out, weights_out), expected = run_permute2d(
        vendor_build, permute, lengths, values, weights, key
    )
    if key == 1:  # key 2 leaves the lengths to the host
        torch.testing.assert_close(lengths_out, expected[0], rtol=0, atol=0)
    torch.testing.assert_close(values_out, expected[1], rtol=0, atol=0)
    if weighted:
        torch.testing.assert_close(weights_out, expected[2], rtol=0, atol=0)
