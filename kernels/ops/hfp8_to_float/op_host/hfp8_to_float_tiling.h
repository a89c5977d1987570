// Tiling of HFP8ToFloat (pure; shared by the CANN op_host and the sim launcher).
//
// Elements are independent: a stream of rows of one element (codec_tiling.h). A byte has 256
// values, so each core first decodes all 256 into a UB table (1 KB); per chunk the vector unit
// turns bytes into table offsets and gathers the floats.
#ifndef HFP8_TO_FLOAT_TILING_H
#define HFP8_TO_FLOAT_TILING_H

#include <string>

#include "codec_tiling.h"
#include "hfp8_to_float_op_args.h"
#include "hfp8_to_float_tiling_data.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<HFP8ToFloatTilingData> HFP8ToFloatTiling(const HFP8ToFloatArgs& a,
                                                           const PlatformInfo& p) {
    const std::string format = Hfp8FormatProblem(a.ebits, a.exponentBias);
    if (!format.empty())
        return Reject(format);
    const std::string bad =
        CodecOutputProblem(a.input, a.output, DType::kFloat32, a.input.dims[a.input.ndim - 1], "");
    if (!bad.empty())
        return Reject(bad);
    CodecRowCost cost = ElementwiseCost(a.input, a.output);
    cost.scratchBytes = 2 + 4;  // the byte's half and int32 forms (the table offset)
    cost.reservedUb = 256 * 4 + 4 * kBlockBytes;  // the table
    TilingPlan<HFP8ToFloatTilingData> plan = PlanCodecRows<HFP8ToFloatTilingData>(cost, p);
    plan.data.format =
        Hfp8Format{static_cast<int32_t>(a.ebits), static_cast<int32_t>(a.exponentBias), 0.0f, 0};
    return plan;
}

}  // namespace mxrec

#endif  // HFP8_TO_FLOAT_TILING_H
