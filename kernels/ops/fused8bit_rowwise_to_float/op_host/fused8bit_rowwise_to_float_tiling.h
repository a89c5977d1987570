// Tiling of Fused8BitRowwiseToFloat (pure; shared by the CANN op_host and the sim launcher).
//
// Rows are independent: cores take even shares of them, and a core moves its rows through UB in
// chunks of whole rows (a row's scale and bias follow its bytes).
#ifndef FUSED8BIT_ROWWISE_TO_FLOAT_TILING_H
#define FUSED8BIT_ROWWISE_TO_FLOAT_TILING_H

#include <string>

#include "fused8bit_rowwise_to_float_op_args.h"
#include "fused8bit_rowwise_to_float_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<Fused8BitRowwiseToFloatTilingData> Fused8BitRowwiseToFloatTiling(
    const Fused8BitRowwiseToFloatArgs& a, const PlatformInfo& p) {
    const int nd = a.input.ndim;
    const int64_t width = a.input.dims[nd - 1];
    if (width < 8) {
        return Reject("input rows must hold at least the 8 bytes of scale and bias, got " +
                      a.input.Shape());
    }
    const int64_t dim = width - 8;
    bool same = a.output.ndim == nd && a.output.dims[nd - 1] == dim;
    int64_t rows = 1;
    for (int d = 0; d + 1 < nd; ++d) {
        same = same && a.output.dims[d] == a.input.dims[d];
        rows *= a.input.dims[d];
    }
    if (!same || a.output.dtype != DType::kFloat32) {
        return Reject("output must be float32 " + a.input.Shape() +
                      " less 8 in the last dim, got " + a.output.Shape() + " " +
                      DTypeName(a.output.dtype));
    }
    TilingPlan<Fused8BitRowwiseToFloatTilingData> plan;
    Fused8BitRowwiseToFloatTilingData& td = plan.data;
    td.rows = rows;
    td.dim = dim;
    td.inRowBytes = AlignedBytes(width, 1);
    td.rowElems = AlignedBytes(dim, 4) / 4;
    // Input row + output row in UB at once; a DMA moves at most 4095 rows.
    const int64_t perRow = td.inRowBytes + td.rowElems * 4;
    const int64_t fit = (UbBytes(p) - kBlockBytes) / perRow;
    if (fit < 1) {
        return Reject("rows of " + std::to_string(dim) + " bytes do not fit in UB (at most " +
                      std::to_string((UbBytes(p) - 3 * kBlockBytes - 8) / 5) + ")");
    }
    const int64_t bytes = rows * (width + dim * 4);
    SetCoreNum(plan, Max64(1, Min64(CoresForBytes(p, bytes), rows)));
    td.chunkRows = Max64(1, Min64(Min64(fit, 4095), CeilDiv(rows, td.coreNum)));
    return plan;
}

}  // namespace mxrec

#endif  // FUSED8BIT_ROWWISE_TO_FLOAT_TILING_H
