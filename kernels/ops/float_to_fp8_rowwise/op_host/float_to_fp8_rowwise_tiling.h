// Tiling of FloatToFP8Rowwise (pure; shared by the CANN op_host and the sim launcher).
//
// Rows are independent: cores take even shares of them, and a core moves its rows through UB in
// chunks of whole rows (the row's scale needs all of it). Per row UB holds the floats and the
// output bytes.
#ifndef FLOAT_TO_FP8_ROWWISE_TILING_H
#define FLOAT_TO_FP8_ROWWISE_TILING_H

#include <string>

#include "float_to_fp8_rowwise_op_args.h"
#include "float_to_fp8_rowwise_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<FloatToFP8RowwiseTilingData> FloatToFP8RowwiseTiling(
    const FloatToFP8RowwiseArgs& a, const PlatformInfo& p) {
    const int nd = a.input.ndim;
    const int64_t dim = a.input.dims[nd - 1];
    const int64_t width = (dim + 3) / 4 * 4 + 8;
    int64_t rows = 1;
    for (int d = 0; d + 1 < nd; ++d)
        rows *= a.input.dims[d];
    bool sameLead = a.output.ndim == nd && a.output.dims[nd - 1] == width;
    for (int d = 0; sameLead && d + 1 < nd; ++d)
        sameLead = a.output.dims[d] == a.input.dims[d];
    if (!sameLead || a.output.dtype != DType::kUInt8) {
        return Reject("output must be uint8 " + a.input.Shape() +
                      " with a last dim of ceil4(D) + 8 = " + std::to_string(width) + ", got " +
                      a.output.Shape() + " " + DTypeName(a.output.dtype));
    }
    TilingPlan<FloatToFP8RowwiseTilingData> plan;
    FloatToFP8RowwiseTilingData& td = plan.data;
    td.rows = rows;
    td.dim = dim;
    td.outWidth = width;
    td.rowElems = AlignedBytes(dim, 4) / 4;
    td.outRowBytes = AlignedBytes(width, 1);
    td.ebits = a.forward ? 4 : 5;
    td.bias = a.forward ? 15 : 31;
    td.maxPos = a.forward ? 0.9375f : 0.875f;
    td.pad = 0;
    // Float row + output row in UB at once; a DMA moves at most 4095 rows.
    const int64_t perRow = td.rowElems * 4 + td.outRowBytes;
    const int64_t fit = (UbBytes(p) - 2 * kBlockBytes) / perRow;
    if (fit < 1) {
        return Reject("rows of " + std::to_string(dim) + " floats do not fit in UB (at most " +
                      std::to_string((UbBytes(p) - 4 * kBlockBytes - 40) / 5) + ")");
    }
    const int64_t bytes = rows * (dim * 4 + width);
    SetCoreNum(plan, Max64(1, Min64(CoresForBytes(p, bytes), rows)));
    td.chunkRows = Max64(1, Min64(Min64(fit, 4095), CeilDiv(rows, td.coreNum)));
    return plan;
}

}  // namespace mxrec

#endif  // FLOAT_TO_FP8_ROWWISE_TILING_H
