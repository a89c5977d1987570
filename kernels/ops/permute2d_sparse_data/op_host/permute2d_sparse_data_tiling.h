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

#include "permute2d_sparse_data_op_args.h"
#include "permute2d_sparse_data_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<Permute2dSparseDataTilingData> Permute2dSparseDataTiling(
    const Permute2dSparseDataArgs& a, const PlatformInfo& p) {
    const int64_t rows = a.lengths.dims[0];
    const int64_t cols = a.lengths.ndim == 2 ? a.lengths.dims[1] : 1;
    const int64_t outRows = a.permute.dims[0];
    if (a.permutedLengths.dtype != a.lengths.dtype || a.permutedLengths.ndim != a.lengths.ndim ||
        a.permutedLengths.dims[0] != outRows ||
        (a.lengths.ndim == 2 && a.permutedLengths.dims[1] != cols)) {
        return Reject("permuted_lengths must have the dtype of lengths and shape [T', B], got " +
                      a.permutedLengths.Shape());
    }
    if (a.permutedValues.dtype != a.values.dtype || a.permutedValues.ndim != 1) {
        return Reject("permuted_values must be 1-D with the dtype of values");
    }
    const int64_t sumAttr = a.permutedLengthsSum;
    if (sumAttr >= 0 && sumAttr != a.permutedValues.dims[0]) {
        return Reject("permuted_values has " + std::to_string(a.permutedValues.dims[0]) +
                      " elements but permuted_lengths_sum is " + std::to_string(sumAttr));
    }
    int64_t width = 0;
    if (a.weights.present) {
        width = a.weights.ndim == 2 ? a.weights.dims[1] : 1;
        if (a.weights.dims[0] != a.values.dims[0])
            return Reject("weights must have as many rows as values");
        if (!a.permutedWeights.present || a.permutedWeights.dtype != a.weights.dtype ||
            a.permutedWeights.ndim != a.weights.ndim ||
            a.permutedWeights.dims[0] != a.permutedValues.dims[0] ||
            (a.weights.ndim == 2 && a.permutedWeights.dims[1] != width)) {
            return Reject("permuted_weights must have the dtype of weights and shape [N'" +
                          std::string(a.weights.ndim == 2 ? ", W]" : "]"));
        }
    } else if (a.permutedWeights.present) {
        return Reject("permuted_weights is given without weights");
    }
    TilingPlan<Permute2dSparseDataTilingData> plan;
    Permute2dSparseDataTilingData& td = plan.data;
    td.rows = rows;
    td.cols = cols;
    td.outRows = outRows;
    td.valueCount = a.values.dims[0];
    td.outValues = a.permutedValues.dims[0];
    td.weightWidth = width;
    // UB (192 KiB on A2/A3): lengths rows 1/4, two double-buffered copiers (values, weights)
    // 1/8 per buffer, two fill buffers 1/24, two windows 1/96, the row-sum block 8 KiB and
    // the per-core totals.
    td.rowBufBytes = static_cast<uint32_t>(UbShare(p, 4));
    td.copyBufBytes = static_cast<uint32_t>(UbShare(p, 8));
    td.fillBufBytes = static_cast<uint32_t>(UbShare(p, 24));
    td.windowBytes = static_cast<uint32_t>(UbShare(p, 96));
    td.sumBlock = UbShare(p, 24) / 8;
    const int64_t lenElem = DTypeSize(a.lengths.dtype);
    const int64_t rowBytes = AlignedBytes(cols, lenElem);
    const int64_t maxBlock = Min64(td.sumBlock, 4095);  // DataCopyPad blockCount <= 4095
    td.rowBlock =
        rowBytes == 0 ? maxBlock : Min64(static_cast<int64_t>(td.rowBufBytes) / rowBytes, maxBlock);
    td.rowChunk = ElemsPerBlocks(td.rowBufBytes, lenElem);
    const int64_t bytes = (rows + outRows) * cols * lenElem +
                          td.outValues * DTypeSize(a.values.dtype) * 2 +
                          (width > 0 ? td.outValues * width * DTypeSize(a.weights.dtype) * 2 : 0);
    SetCoreNum(plan, CoresForBytes(p, bytes));
    td.wsInOffsets = 0;
    td.wsOutOffsets = AlignedBytes(rows, 8);
    td.wsTotals = td.wsOutOffsets + AlignedBytes(outRows, 8);
    plan.workspace_bytes = static_cast<uint64_t>(td.wsTotals + 2 * PerCoreBlocks(td.coreNum));
    return plan;
}

}  // namespace mxrec

#endif  // PERMUTE2D_SPARSE_DATA_TILING_H
