// Tiling of FloatToHFP8 (pure; shared by the CANN op_host and the sim launcher).
//
// Elements are independent: cores take even shares, and a core moves its share through UB in
// chunks of floats in and bytes out. The format's parameters are checked here, where fbgemm's
// bit arithmetic stops describing a format (see hfp8_encode.h).
#ifndef FLOAT_TO_HFP8_TILING_H
#define FLOAT_TO_HFP8_TILING_H

#include <cmath>
#include <string>

#include "float_to_hfp8_op_args.h"
#include "float_to_hfp8_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

// fbgemm's bit arithmetic describes a format only for these (hfp8_encode.h).
inline std::string FloatToHFP8FormatProblem(int64_t ebits, int64_t bias) {
    if (ebits < 1 || ebits > 7)
        return "ebits must be in [1, 7] (a sign bit, ebits exponent bits and 7 - ebits mantissa "
               "bits), got " +
               std::to_string(ebits);
    if (bias < 1 || bias > 127)
        return "exponent_bias must be in [1, 127], got " + std::to_string(bias);
    return "";
}

inline TilingPlan<FloatToHFP8TilingData> FloatToHFP8Tiling(const FloatToHFP8Args& a,
                                                           const PlatformInfo& p) {
    const std::string bad = FloatToHFP8FormatProblem(a.ebits, a.exponentBias);
    if (!bad.empty())
        return Reject(bad);
    if (!(a.maxPos > 0.0 && a.maxPos < std::ldexp(1.0, 100)) ||
        static_cast<double>(static_cast<float>(a.maxPos)) <= 0.0) {
        return Reject("max_pos must be positive, finite and below 2^100, got " +
                      std::to_string(a.maxPos));
    }
    bool same = a.output.ndim == a.input.ndim && a.output.dtype == DType::kUInt8;
    int64_t count = 1;
    for (int d = 0; d < a.input.ndim; ++d) {
        same = same && a.output.dims[d] == a.input.dims[d];
        count *= a.input.dims[d];
    }
    if (!same) {
        return Reject("output must be uint8 " + a.input.Shape() + ", got " + a.output.Shape() +
                      " " + DTypeName(a.output.dtype));
    }
    TilingPlan<FloatToHFP8TilingData> plan;
    FloatToHFP8TilingData& td = plan.data;
    td.count = count;
    td.ebits = static_cast<int32_t>(a.ebits);
    td.bias = static_cast<int32_t>(a.exponentBias);
    td.maxPos = static_cast<float>(a.maxPos);
    td.pad = 0;
    // A float in and a byte out per element; multiples of 32 keep both buffers whole blocks.
    td.chunkElems = StepElems(UbBytes(p) - 2 * kBlockBytes, 5, 32);
    SetCoreNum(plan, CoresForBytes(p, count * 5));
    return plan;
}

}  // namespace mxrec

#endif  // FLOAT_TO_HFP8_TILING_H
