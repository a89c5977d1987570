// Tiling of Fused8BitRowwiseToFloat (pure; shared by the CANN op_host and the sim launcher).
//
// A stream of rows (codec_tiling.h): per row UB holds the input bytes (a row's scale and bias
// follow its bytes) and the output floats.
#ifndef FUSED8BIT_ROWWISE_TO_FLOAT_TILING_H
#define FUSED8BIT_ROWWISE_TO_FLOAT_TILING_H

#include <string>

#include "codec_tiling.h"
#include "fused8bit_rowwise_to_float_op_args.h"
#include "fused8bit_rowwise_to_float_tiling_data.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<Fused8BitRowwiseToFloatTilingData> Fused8BitRowwiseToFloatTiling(
    const Fused8BitRowwiseToFloatArgs& a, const PlatformInfo& p) {
    const int64_t width = a.input.dims[a.input.ndim - 1];
    if (width < 8) {
        return Reject("input rows must hold at least the 8 bytes of scale and bias, got " +
                      a.input.Shape());
    }
    const std::string bad =
        CodecOutputProblem(a.input, a.output, DType::kFloat32, width - 8, "less 8 in the last dim");
    if (!bad.empty())
        return Reject(bad);
    return PlanCodecRows<Fused8BitRowwiseToFloatTilingData>(RowwiseCost(a.input, a.output), p);
}

}  // namespace mxrec

#endif  // FUSED8BIT_ROWWISE_TO_FLOAT_TILING_H
