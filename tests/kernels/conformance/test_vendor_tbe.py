"""fbgemm-ascend's split_embedding_codegen_forward_unweighted (TBE forward) kernel, compiled
unchanged against the emulation, against fbgemm's CPU split_embedding_codegen_forward_cpu."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from vendor import Field, TilingDef, VendorOp  # noqa: E402

fbgemm = torch.ops.fbgemm
CORES = 48  # Ascend910B1 vector cores
UB_BYTES = 192 * 1024
SUM, MEAN = 0, 1

INT_FIELDS = (
    "devWeightsDim0",
    "weightsOffsetsDim0",
    "dOffsetsDim0",
    "indicesDim0",
    "offsetsDim0",
    "outDim0",
    "outDim1",
    "bytesOfDataType",
    "offsetDataType",
    "splitBaseLen",
    "tailSplitIndex",
    "ubCanUsed",
    "poolMode",
    "maxD",
)
TBE_OP = VendorOp(
    "split_embedding_codegen_forward_unweighted",
    TilingDef(
        "SplitEmbeddingCodegenForwardUnweightedTilingData",
        "SplitEmbeddingCodegenForwardUnweighted",
        (
            *(Field("int64_t", n) for n in INT_FIELDS),
            Field("bool", "enableHash"),
            Field("bool", "enableRowsPerTable"),
        ),
    ),
    13,
)


def zipf_batch(rows: list[int], batch: int, mean_len: float, seed: int):
    """Bags of Zipf-distributed ids (hot rows repeat), table-major offsets as TBE takes them."""
    g = torch.Generator().manual_seed(seed)
    lengths, ids = [], []
    for r in rows:
        u = torch.rand(batch, generator=g)
        n = torch.floor(mean_len * 0.3 / (u + 0.05)).clamp(max=8 * mean_len).to(torch.int64)
        lengths.append(n)
        total = int(n.sum())
        rank = torch.floor(1.0 / (torch.rand(total, generator=g) + 1e-3)).to(torch.int64)
        ids.append((rank * 2654435761) % r)  # Zipf ranks scattered over the table
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cat(lengths).cumsum(0)])
    return torch.cat(ids), offsets


def run_tbe(vendor_build, dims: list[int], rows: list[int], batch: int, mode: int, rows_per_table):
    kernel = vendor_build(TBE_OP)
    g = torch.Generator().manual_seed(sum(dims) + mode)
    sizes = [r * d for r, d in zip(rows, dims, strict=True)]
    weights = torch.randn(sum(sizes), generator=g)
    weights_offsets = torch.tensor([sum(sizes[:t]) for t in range(len(dims))], dtype=torch.int64)
    d_offsets = torch.tensor([sum(dims[:t]) for t in range(len(dims) + 1)], dtype=torch.int32)
    indices, offsets = zipf_batch(rows, batch, 10.0, seed=len(dims) + batch)
    bags = len(dims) * batch
    fields = {
        "devWeightsDim0": weights.numel(),
        "weightsOffsetsDim0": len(dims),
        "dOffsetsDim0": len(dims) + 1,
        "indicesDim0": indices.numel(),
        "offsetsDim0": offsets.numel(),
        "outDim0": batch,
        "outDim1": sum(dims),
        "bytesOfDataType": 4,
        "offsetDataType": 1,
        "splitBaseLen": bags // CORES,
        "tailSplitIndex": bags % CORES,
        "ubCanUsed": (UB_BYTES - 8 * 1024) // 64 * 64,
        "poolMode": mode,
        "maxD": max(dims),
        "enableHash": False,
        "enableRowsPerTable": rows_per_table,
    }
    rows_t = torch.tensor(rows, dtype=torch.int64)
    # The host operator allocates the output zeroed: the kernel adds each bag in atomically.
    out = torch.zeros(batch, sum(dims))
    tensors = [weights, None, None, None, weights_offsets, d_offsets, indices, offsets]
    tensors += [None, None, None, rows_t if rows_per_table else None, out]
    kernel.launch(tensors, [12], fields, block_dim=CORES, tiling_key=mode)
    # fbgemm's CPU TBE lookup (SGD with learning rate 0: the forward only).
    expected = fbgemm.split_embedding_codegen_lookup_sgd_function_cpu(
        host_weights=weights.clone(),
        weights_placements=torch.zeros(len(dims), dtype=torch.int32),
        weights_offsets=weights_offsets,
        D_offsets=d_offsets,
        total_D=sum(dims),
        max_D=max(dims),
        hash_size_cumsum=torch.tensor([sum(rows[:t]) for t in range(len(rows) + 1)]),
        total_hash_size_bits=0,
        indices=indices,
        offsets=offsets,
        pooling_mode=mode,
        indice_weights=None,
        feature_requires_grad=None,
        gradient_clipping=False,
        max_gradient=1.0,
        stochastic_rounding=False,
        learning_rate=0.0,
        output_dtype=0,
    )
    return out, expected


def test_tbe_small_case(vendor_build) -> None:
    """Two tiny tables (D = 8, 16), batch 2."""
    kernel_out, expected = run_tbe(vendor_build, [8, 16], [3, 4], 2, SUM, False)
    torch.testing.assert_close(kernel_out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", [SUM, MEAN])
@pytest.mark.parametrize("rows_per_table", [False, True])
def test_tbe_training_batch(vendor_build, mode: int, rows_per_table: bool) -> None:
    # A large table and a small one (under the kernel's 64 KiB threshold: cached in UB when the
    # rows per table are given), D 64-128.
    dims, rows = [128, 64, 96, 64], [20000, 100, 5000, 3000]
    out, expected = run_tbe(vendor_build, dims, rows, 2048, mode, rows_per_table)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
