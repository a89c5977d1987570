// Tiling of FloatToFused8BitRowwise (pure; shared by the CANN op_host and the sim launcher).
//
// Rows are independent: cores take even shares of them, and a core moves its rows through UB in
// chunks of whole rows (the row's min and max need all of it). Per row UB holds the floats (in
// a queue, shifted and scaled in place), their rounded int32 values and the output bytes.
#ifndef FLOAT_TO_FUSED8BIT_ROWWISE_TILING_H
#define FLOAT_TO_FUSED8BIT_ROWWISE_TILING_H

#include <string>

#include "float_to_fused8bit_rowwise_op_args.h"
#include "float_to_fused8bit_rowwise_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<FloatToFused8BitRowwiseTilingData> FloatToFused8BitRowwiseTiling(
    const FloatToFused8BitRowwiseArgs& a, const PlatformInfo& p) {
    const int nd = a.input.ndim;
    const int64_t dim = a.input.dims[nd - 1];
    int64_t rows = 1;  // the leading dims' product: rows of D = 0 still get a scale and bias
    for (int d = 0; d + 1 < nd; ++d)
        rows *= a.input.dims[d];
    bool sameLead = a.output.ndim == nd && a.output.dims[nd - 1] == dim + 8;
    for (int d = 0; sameLead && d + 1 < nd; ++d)
        sameLead = a.output.dims[d] == a.input.dims[d];
    if (!sameLead || a.output.dtype != DType::kUInt8) {
        return Reject("output must be uint8 " + a.input.Shape() +
                      " with 8 more bytes in the last dim, got " + a.output.Shape() + " " +
                      DTypeName(a.output.dtype));
    }
    TilingPlan<FloatToFused8BitRowwiseTilingData> plan;
    FloatToFused8BitRowwiseTilingData& td = plan.data;
    td.rows = rows;
    td.dim = dim;
    td.rowElems = AlignedBytes(dim, 4) / 4;
    td.outRowBytes = AlignedBytes(dim + 8, 1);
    // float row + int32 row + output row, all in UB at once; a DMA moves at most 4095 rows.
    const int64_t perRow = td.rowElems * 8 + td.outRowBytes;
    const int64_t fit = (UbBytes(p) - kBlockBytes) / perRow;
    if (fit < 1) {
        return Reject("rows of " + std::to_string(dim) + " floats do not fit in UB (at most " +
                      std::to_string((UbBytes(p) - 2 * kBlockBytes - 32) / 9) + ")");
    }
    const int64_t bytes = rows * (dim * 4 + dim + 8);
    SetCoreNum(plan, Max64(1, Min64(CoresForBytes(p, bytes), rows)));
    td.chunkRows = Max64(1, Min64(Min64(fit, 4095), CeilDiv(rows, td.coreNum)));
    return plan;
}

}  // namespace mxrec

#endif  // FLOAT_TO_FUSED8BIT_ROWWISE_TILING_H
