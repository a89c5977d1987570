// Tiling of SegmentSumCsr (pure; shared by the CANN op_host and the sim launcher).
//
// Cores split the summed values evenly; a core takes the segments that start in its share
// (found by binary search of csr_seg), so uneven segments still spread, and every segment is
// summed whole by one core in fbgemm's order. Values stream through a queue,
// csr_seg through a window, the sums leave from a staging buffer.
#ifndef SEGMENT_SUM_CSR_TILING_H
#define SEGMENT_SUM_CSR_TILING_H

#include "segment_sum_csr_op_args.h"
#include "segment_sum_csr_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<SegmentSumCsrTilingData> SegmentSumCsrTiling(const SegmentSumCsrArgs& a,
                                                               const PlatformInfo& p) {
    if (a.csrSeg.dims[0] < 1)
        return Reject("csr_seg must have at least one entry (S + 1 offsets)");
    const int64_t segments = a.csrSeg.dims[0] - 1;
    if (a.out.dtype != a.values.dtype || a.out.ndim != 1 || a.out.dims[0] != segments) {
        return Reject("out must be [S] = [" + std::to_string(segments) +
                      "] with the dtype of values, got " + a.out.Shape() + " " +
                      DTypeName(a.out.dtype));
    }
    if (a.batchSize < 0)
        return Reject("batch_size must be >= 0, got " + std::to_string(a.batchSize));
    TilingPlan<SegmentSumCsrTilingData> plan;
    SegmentSumCsrTilingData& td = plan.data;
    td.segments = segments;
    td.valueCount = a.values.Numel();
    td.batchSize = a.batchSize;
    td.valueBufBytes = static_cast<uint32_t>(UbShare(p, 2));
    td.outBufBytes = static_cast<uint32_t>(UbShare(p, 8));
    const int64_t bytes = td.valueCount * DTypeSize(a.values.dtype) + segments * 8;
    SetCoreNum(plan, CoresForBytes(p, bytes));
    // A window load reads a whole window: about a core's share of csr_seg keeps the cores from
    // each reading far past their own segments.
    td.windowBytes = static_cast<uint32_t>(
        Min64(UbShare(p, 8), AlignedBytes(CeilDiv(segments + 1, td.coreNum) + 8, 4)));
    return plan;
}

}  // namespace mxrec

#endif  // SEGMENT_SUM_CSR_TILING_H
