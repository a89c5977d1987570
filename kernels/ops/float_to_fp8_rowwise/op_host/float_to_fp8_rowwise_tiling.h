// Tiling of FloatToFP8Rowwise (pure; shared by the CANN op_host and the sim launcher).
//
// A stream of rows (codec_tiling.h): per row UB holds the floats and the output bytes.
#ifndef FLOAT_TO_FP8_ROWWISE_TILING_H
#define FLOAT_TO_FP8_ROWWISE_TILING_H

#include <string>

#include "codec_tiling.h"
#include "float_to_fp8_rowwise_op_args.h"
#include "float_to_fp8_rowwise_tiling_data.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<FloatToFP8RowwiseTilingData> FloatToFP8RowwiseTiling(
    const FloatToFP8RowwiseArgs& a, const PlatformInfo& p) {
    const int64_t dim = a.input.dims[a.input.ndim - 1];
    const int64_t width = (dim + 3) / 4 * 4 + 8;
    const std::string bad =
        CodecOutputProblem(a.input, a.output, DType::kUInt8, width,
                           "with a last dim of ceil4(D) + 8 = " + std::to_string(width));
    if (!bad.empty())
        return Reject(bad);
    CodecRowCost cost = RowwiseCost(a.input, a.output);
    cost.reservedUb = 2 * kBlockBytes;
    TilingPlan<FloatToFP8RowwiseTilingData> plan =
        PlanCodecRows<FloatToFP8RowwiseTilingData>(cost, p);
    plan.data.format = Fp8RowwiseFormat(a.forward);
    return plan;
}

}  // namespace mxrec

#endif  // FLOAT_TO_FP8_ROWWISE_TILING_H
