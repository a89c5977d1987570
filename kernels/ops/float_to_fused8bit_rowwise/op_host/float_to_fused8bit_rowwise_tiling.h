// Tiling of FloatToFused8BitRowwise (pure; shared by the CANN op_host and the sim launcher).
//
// A stream of rows (codec_tiling.h): per row UB holds the floats (in a queue, shifted and scaled
// in place), their rounded int32 values and the output bytes.
#ifndef FLOAT_TO_FUSED8BIT_ROWWISE_TILING_H
#define FLOAT_TO_FUSED8BIT_ROWWISE_TILING_H

#include <string>

#include "codec_tiling.h"
#include "float_to_fused8bit_rowwise_op_args.h"
#include "float_to_fused8bit_rowwise_tiling_data.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<FloatToFused8BitRowwiseTilingData> FloatToFused8BitRowwiseTiling(
    const FloatToFused8BitRowwiseArgs& a, const PlatformInfo& p) {
    const int64_t dim = a.input.dims[a.input.ndim - 1];
    const std::string bad = CodecOutputProblem(a.input, a.output, DType::kUInt8, dim + 8,
                                               "with 8 more bytes in the last dim");
    if (!bad.empty())
        return Reject(bad);
    CodecRowCost cost = RowwiseCost(a.input, a.output);
    cost.scratchBytes = 4;  // the int32 values
    return PlanCodecRows<FloatToFused8BitRowwiseTilingData>(cost, p);
}

}  // namespace mxrec

#endif  // FLOAT_TO_FUSED8BIT_ROWWISE_TILING_H
