// Tiling of Permute2dSparseData (pure; shared by the CANN op_host and the sim launcher).
//
// Four phases, two SyncAll:
//   A. cores split the T input rows: row sums of lengths -> workspace;
//   B. cores split the T' output rows: gather lengths[permute[i]] -> permuted_lengths, row sums
//      -> workspace;
//   (SyncAll) C. each core turns its slice of both row-sum arrays into exclusive offsets, using
//      the per-core totals the others published;
//   (SyncAll) D. cores split the N' output values evenly; a core finds its first output row by
//      binary search and copies row segments values[in_off[permute[i]] + ...] (and weights).
// lengths are read twice (A and B), values and weights once, outputs written once; the
// workspace holds 8 bytes per row.
#ifndef PERMUTE2D_SPARSE_DATA_TILING_H
#define PERMUTE2D_SPARSE_DATA_TILING_H

#include "permute2d_sparse_data_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<Permute2dSparseDataTilingData> Permute2dSparseDataTiling(const OpArgs& a,
                                                                           const PlatformInfo& p) {
    using TD = Permute2dSparseDataTilingData;
    const TensorDesc& permute = a.inputs[0];
    const TensorDesc& lengths = a.inputs[1];
    const TensorDesc& values = a.inputs[2];
    const TensorDesc& weights = a.inputs[3];
    const TensorDesc& outLengths = a.outputs[0];
    const TensorDesc& outValues = a.outputs[1];
    const TensorDesc& outWeights = a.outputs[2];
    const int64_t rows = lengths.dims[0];
    const int64_t cols = lengths.ndim == 2 ? lengths.dims[1] : 1;
    const int64_t outRows = permute.dims[0];
    if (outLengths.dtype != lengths.dtype || outLengths.ndim != lengths.ndim ||
        outLengths.dims[0] != outRows || (lengths.ndim == 2 && outLengths.dims[1] != cols)) {
        return Reject<TD>(
            "permuted_lengths must have the dtype of lengths and shape [T', B], got " +
            outLengths.Shape());
    }
    if (outValues.dtype != values.dtype || outValues.ndim != 1) {
        return Reject<TD>("permuted_values must be 1-D with the dtype of values");
    }
    const int64_t sumAttr = a.attrs[0].i;
    if (sumAttr >= 0 && sumAttr != outValues.dims[0]) {
        return Reject<TD>("permuted_values has " + std::to_string(outValues.dims[0]) +
                          " elements but permuted_lengths_sum is " + std::to_string(sumAttr));
    }
    int64_t width = 0;
    if (weights.present) {
        width = weights.ndim == 2 ? weights.dims[1] : 1;
        if (weights.dims[0] != values.dims[0])
            return Reject<TD>("weights must have as many rows as values");
        if (!outWeights.present || outWeights.dtype != weights.dtype ||
            outWeights.ndim != weights.ndim || outWeights.dims[0] != outValues.dims[0] ||
            (weights.ndim == 2 && outWeights.dims[1] != width)) {
            return Reject<TD>("permuted_weights must have the dtype of weights and shape [N'" +
                              std::string(weights.ndim == 2 ? ", W]" : "]"));
        }
    } else if (outWeights.present) {
        return Reject<TD>("permuted_weights is given without weights");
    }
    TilingPlan<TD> plan;
    TD& td = plan.data;
    td.rows = rows;
    td.cols = cols;
    td.outRows = outRows;
    td.valueCount = values.dims[0];
    td.outValues = outValues.dims[0];
    td.weightWidth = width;
    // UB (192 KiB on A2/A3): lengths rows 1/4, two double-buffered copiers (values, weights)
    // 1/8 per buffer, two fill buffers 1/24, two windows 1/96, the row-sum block 8 KiB and
    // the per-core totals.
    td.rowBufBytes = static_cast<uint32_t>(UbShare(p, 4));
    td.copyBufBytes = static_cast<uint32_t>(UbShare(p, 8));
    td.fillBufBytes = static_cast<uint32_t>(UbShare(p, 24));
    td.windowBytes = static_cast<uint32_t>(UbShare(p, 96));
    td.sumBlock = UbShare(p, 24) / 8;
    const int64_t lenElem = DTypeSize(lengths.dtype);
    const int64_t rowBytes = AlignedBytes(cols, lenElem);
    const int64_t maxBlock = Min64(td.sumBlock, 4095);  // DataCopyPad blockCount <= 4095
    td.rowBlock =
        rowBytes == 0 ? maxBlock : Min64(static_cast<int64_t>(td.rowBufBytes) / rowBytes, maxBlock);
    td.rowChunk = ElemsPerBlocks(td.rowBufBytes, lenElem);
    const int64_t bytes = (rows + outRows) * cols * lenElem +
                          td.outValues * DTypeSize(values.dtype) * 2 +
                          (width > 0 ? td.outValues * width * DTypeSize(weights.dtype) * 2 : 0);
    SetCoreNum(plan, CoresForBytes(p, bytes));
    td.wsInOffsets = 0;
    td.wsOutOffsets = AlignedBytes(rows, 8);
    td.wsTotals = td.wsOutOffsets + AlignedBytes(outRows, 8);
    plan.workspace_bytes = static_cast<uint64_t>(td.wsTotals + 2 * PerCoreBlocks(td.coreNum));
    return plan;
}

}  // namespace mxrec

#endif  // PERMUTE2D_SPARSE_DATA_TILING_H
