// Tiling of FP8RowwiseToFloat (pure; shared by the CANN op_host and the sim launcher).
//
// Rows are independent: cores take even shares of them, and a core moves its rows through UB in
// chunks of whole rows (a row's scale follows its bytes). Each core decodes the 256 codes once
// into a UB table (1 KB).
#ifndef FP8_ROWWISE_TO_FLOAT_TILING_H
#define FP8_ROWWISE_TO_FLOAT_TILING_H

#include <string>

#include "fp8_rowwise_to_float_op_args.h"
#include "fp8_rowwise_to_float_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<FP8RowwiseToFloatTilingData> FP8RowwiseToFloatTiling(
    const FP8RowwiseToFloatArgs& a, const PlatformInfo& p) {
    const int nd = a.input.ndim;
    const int64_t width = a.input.dims[nd - 1];
    if (width < 5) {
        return Reject("input rows must hold at least 5 bytes (ceil4(W) - 8 outputs), got " +
                      a.input.Shape());
    }
    const int64_t dim = (width + 3) / 4 * 4 - 8;
    bool same = a.output.ndim == nd && a.output.dims[nd - 1] == dim;
    int64_t rows = 1;
    for (int d = 0; d + 1 < nd; ++d) {
        same = same && a.output.dims[d] == a.input.dims[d];
        rows *= a.input.dims[d];
    }
    if (!same || a.output.dtype != DType::kFloat32) {
        return Reject("output must be float32 " + a.input.Shape() +
                      " with a last dim of ceil4(W) - 8 = " + std::to_string(dim) + ", got " +
                      a.output.Shape() + " " + DTypeName(a.output.dtype));
    }
    TilingPlan<FP8RowwiseToFloatTilingData> plan;
    FP8RowwiseToFloatTilingData& td = plan.data;
    td.rows = rows;
    td.width = width;
    td.dim = dim;
    td.inRowBytes = AlignedBytes(width, 1);
    td.rowElems = AlignedBytes(dim, 4) / 4;
    td.ebits = a.forward ? 4 : 5;
    td.bias = a.forward ? 15 : 31;
    // Input row + output row in UB at once, beside the table; a DMA moves at most 4095 rows.
    const int64_t perRow = td.inRowBytes + td.rowElems * 4;
    const int64_t fit = (UbBytes(p) - 256 * 4 - 2 * kBlockBytes) / perRow;
    if (fit < 1) {
        return Reject("rows of " + std::to_string(width) + " bytes do not fit in UB (at most " +
                      std::to_string((UbBytes(p) - 256 * 4 - 4 * kBlockBytes) / 5) + ")");
    }
    const int64_t bytes = rows * (width + dim * 4);
    SetCoreNum(plan, Max64(1, Min64(CoresForBytes(p, bytes), rows)));
    td.chunkRows = Max64(1, Min64(Min64(fit, 4095), CeilDiv(rows, td.coreNum)));
    return plan;
}

}  // namespace mxrec

#endif  // FP8_ROWWISE_TO_FLOAT_TILING_H
