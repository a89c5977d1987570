// Tiling of OffsetsRange (pure; shared by the CANN op_host and the sim launcher).
//
// Cores split the output evenly; each finds the segment its share starts in by binary search
// of offsets, then writes the positions segment by segment into UB staging, which leaves in
// whole pieces (offsets are read once through a window, the output written once).
#ifndef OFFSETS_RANGE_TILING_H
#define OFFSETS_RANGE_TILING_H

#include "offsets_range_op_args.h"
#include "offsets_range_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<OffsetsRangeTilingData> OffsetsRangeTiling(const OffsetsRangeArgs& a,
                                                             const PlatformInfo& p) {
    if (a.range.dtype != a.offsets.dtype || a.range.ndim != 1 || a.range.dims[0] != a.rangeSize) {
        return Reject("range must be [range_size] = [" + std::to_string(a.rangeSize) +
                      "] with the dtype of offsets, got " + a.range.Shape() + " " +
                      DTypeName(a.range.dtype));
    }
    TilingPlan<OffsetsRangeTilingData> plan;
    OffsetsRangeTilingData& td = plan.data;
    td.count = a.offsets.dims[0];
    td.rangeSize = a.rangeSize;
    td.stageBytes = static_cast<uint32_t>(UbShare(p, 3));
    const int64_t elem = DTypeSize(a.offsets.dtype);
    SetCoreNum(plan, CoresForBytes(p, (td.rangeSize + td.count) * elem));
    // A window load reads a whole window: about a core's share of offsets keeps the cores from
    // each reading far past their own segments.
    td.windowBytes = static_cast<uint32_t>(
        Min64(UbShare(p, 4), AlignedBytes(CeilDiv(td.count, td.coreNum) + 8, elem)));
    return plan;
}

}  // namespace mxrec

#endif  // OFFSETS_RANGE_TILING_H
