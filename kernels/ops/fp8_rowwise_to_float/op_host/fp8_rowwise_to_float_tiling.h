// Tiling of FP8RowwiseToFloat (pure; shared by the CANN op_host and the sim launcher).
//
// A stream of rows (codec_tiling.h): per row UB holds the input bytes (a row's scale follows its
// bytes) and the output floats. Each core decodes the 256 codes once into a UB table (1 KB).
#ifndef FP8_ROWWISE_TO_FLOAT_TILING_H
#define FP8_ROWWISE_TO_FLOAT_TILING_H

#include <string>

#include "codec_tiling.h"
#include "fp8_rowwise_to_float_op_args.h"
#include "fp8_rowwise_to_float_tiling_data.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<FP8RowwiseToFloatTilingData> FP8RowwiseToFloatTiling(
    const FP8RowwiseToFloatArgs& a, const PlatformInfo& p) {
    const int64_t width = a.input.dims[a.input.ndim - 1];
    if (width < 5) {
        return Reject("input rows must hold at least 5 bytes (ceil4(W) - 8 outputs), got " +
                      a.input.Shape());
    }
    const int64_t dim = (width + 3) / 4 * 4 - 8;
    const std::string bad =
        CodecOutputProblem(a.input, a.output, DType::kFloat32, dim,
                           "with a last dim of ceil4(W) - 8 = " + std::to_string(dim));
    if (!bad.empty())
        return Reject(bad);
    CodecRowCost cost = RowwiseCost(a.input, a.output);
    cost.reservedUb = 256 * 4 + 2 * kBlockBytes;  // the table
    TilingPlan<FP8RowwiseToFloatTilingData> plan =
        PlanCodecRows<FP8RowwiseToFloatTilingData>(cost, p);
    plan.data.format = Fp8RowwiseFormat(a.forward);
    plan.data.format.maxPos = 0.0f;  // a decoder's
    return plan;
}

}  // namespace mxrec

#endif  // FP8_ROWWISE_TO_FLOAT_TILING_H
