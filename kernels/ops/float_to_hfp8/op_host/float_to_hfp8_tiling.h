// Tiling of FloatToHFP8 (pure; shared by the CANN op_host and the sim launcher).
//
// Elements are independent: a stream of rows of one element (codec_tiling.h), a float in and a
// byte out each. The format's parameters are checked here, where fbgemm's bit arithmetic stops
// describing a format (see hfp8_encode.h).
#ifndef FLOAT_TO_HFP8_TILING_H
#define FLOAT_TO_HFP8_TILING_H

#include <cmath>
#include <string>

#include "codec_tiling.h"
#include "float_to_hfp8_op_args.h"
#include "float_to_hfp8_tiling_data.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<FloatToHFP8TilingData> FloatToHFP8Tiling(const FloatToHFP8Args& a,
                                                           const PlatformInfo& p) {
    const std::string format = Hfp8FormatProblem(a.ebits, a.exponentBias);
    if (!format.empty())
        return Reject(format);
    if (!(a.maxPos > 0.0 && a.maxPos < std::ldexp(1.0, 100)) ||
        static_cast<double>(static_cast<float>(a.maxPos)) <= 0.0) {
        return Reject("max_pos must be positive, finite and below 2^100, got " +
                      std::to_string(a.maxPos));
    }
    const std::string bad =
        CodecOutputProblem(a.input, a.output, DType::kUInt8, a.input.dims[a.input.ndim - 1], "");
    if (!bad.empty())
        return Reject(bad);
    CodecRowCost cost = ElementwiseCost(a.input, a.output);
    cost.reservedUb = 2 * kBlockBytes;
    TilingPlan<FloatToHFP8TilingData> plan = PlanCodecRows<FloatToHFP8TilingData>(cost, p);
    plan.data.format =
        Hfp8Format{static_cast<int32_t>(a.ebits), static_cast<int32_t>(a.exponentBias),
                   static_cast<float>(a.maxPos), 0};
    return plan;
}

}  // namespace mxrec

#endif  // FLOAT_TO_HFP8_TILING_H
