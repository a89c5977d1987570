// Tiling of HFP8ToFloat (pure; shared by the CANN op_host and the sim launcher).
//
// Elements are independent: cores take even shares, and a core moves its share through UB in
// chunks. A byte has 256 values, so each core first decodes all 256 into a UB table (1 KB);
// per chunk the vector unit turns bytes into table offsets and gathers the floats.
#ifndef HFP8_TO_FLOAT_TILING_H
#define HFP8_TO_FLOAT_TILING_H

#include <string>

#include "hfp8_to_float_op_args.h"
#include "hfp8_to_float_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<HFP8ToFloatTilingData> HFP8ToFloatTiling(const HFP8ToFloatArgs& a,
                                                           const PlatformInfo& p) {
    // fbgemm's bit arithmetic describes a format only for these (hfp8_decode.h).
    if (a.ebits < 1 || a.ebits > 7) {
        return Reject(
            "ebits must be in [1, 7] (a sign bit, ebits exponent bits and 7 - ebits mantissa "
            "bits), got " +
            std::to_string(a.ebits));
    }
    if (a.exponentBias < 1 || a.exponentBias > 127)
        return Reject("exponent_bias must be in [1, 127], got " + std::to_string(a.exponentBias));
    bool same = a.output.ndim == a.input.ndim && a.output.dtype == DType::kFloat32;
    int64_t count = 1;
    for (int d = 0; d < a.input.ndim; ++d) {
        same = same && a.output.dims[d] == a.input.dims[d];
        count *= a.input.dims[d];
    }
    if (!same) {
        return Reject("output must be float32 " + a.input.Shape() + ", got " + a.output.Shape() +
                      " " + DTypeName(a.output.dtype));
    }
    TilingPlan<HFP8ToFloatTilingData> plan;
    HFP8ToFloatTilingData& td = plan.data;
    td.count = count;
    td.ebits = static_cast<int32_t>(a.ebits);
    td.bias = static_cast<int32_t>(a.exponentBias);
    // Per element: the byte in, its half and int32 forms (the table offset), the float out.
    td.chunkElems = StepElems(UbBytes(p) - 256 * 4 - 4 * kBlockBytes, 1 + 2 + 4 + 4, 32);
    SetCoreNum(plan, CoresForBytes(p, count * 5));
    return plan;
}

}  // namespace mxrec

#endif  // HFP8_TO_FLOAT_TILING_H
