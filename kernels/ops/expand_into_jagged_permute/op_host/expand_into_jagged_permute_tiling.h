// Tiling of ExpandIntoJaggedPermute (pure; shared by the CANN op_host and the sim launcher).
//
// Cores split the output evenly; each finds the segment its share starts in by binary search
// of output_offset and walks the segments through two windows (output_offset, permute), each
// segment's input start read once; the expanded positions leave UB staging in whole pieces.
#ifndef EXPAND_INTO_JAGGED_PERMUTE_TILING_H
#define EXPAND_INTO_JAGGED_PERMUTE_TILING_H

#include "expand_into_jagged_permute_op_args.h"
#include "expand_into_jagged_permute_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<ExpandIntoJaggedPermuteTilingData> ExpandIntoJaggedPermuteTiling(
    const ExpandIntoJaggedPermuteArgs& a, const PlatformInfo& p) {
    const int64_t segments = a.permute.dims[0];
    if (a.inputOffset.dims[0] != segments + 1 || a.outputOffset.dims[0] != segments + 1) {
        return Reject(
            "input_offset and output_offset must have T + 1 = " + std::to_string(segments + 1) +
            " entries, got " + a.inputOffset.Shape() + " and " + a.outputOffset.Shape());
    }
    const TensorDesc& out = a.outputPermute;
    if (out.dtype != a.permute.dtype || out.ndim != 1 || out.dims[0] != a.outputSize) {
        return Reject("output_permute must be [output_size] = [" + std::to_string(a.outputSize) +
                      "] with the dtype of permute, got " + out.Shape() + " " +
                      DTypeName(out.dtype));
    }
    TilingPlan<ExpandIntoJaggedPermuteTilingData> plan;
    ExpandIntoJaggedPermuteTilingData& td = plan.data;
    td.segments = segments;
    td.outputSize = a.outputSize;
    const int64_t elem = DTypeSize(a.permute.dtype);
    SetCoreNum(plan, CoresForBytes(p, (td.outputSize + 3 * segments) * elem));
    td.stageBytes = static_cast<uint32_t>(UbShare(p, 3));
    // A window load reads a whole window: about a core's share of the segments keeps the cores
    // from each reading far past their own.
    td.windowBytes = static_cast<uint32_t>(
        Min64(UbShare(p, 8), AlignedBytes(CeilDiv(segments + 1, td.coreNum) + 8, elem)));
    return plan;
}

}  // namespace mxrec

#endif  // EXPAND_INTO_JAGGED_PERMUTE_TILING_H
