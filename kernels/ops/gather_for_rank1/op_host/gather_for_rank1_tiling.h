// Tiling of GatherForRank1 (pure; shared by the CANN op_host and the sim launcher).
//
// x fits in half the unified buffer (the common case: a table of unique values gathered by
// many indices): every core loads x once and gathers its share of the indices in UB with the
// vector Gather (32- and 16-bit types; 64-bit types gather with scalar code). Since each core
// reads all of x, the number of cores is capped so that those copies stay under a quarter of
// the unavoidable traffic. A larger x is read element by element from global memory.
#ifndef GATHER_FOR_RANK1_TILING_H
#define GATHER_FOR_RANK1_TILING_H

#include "gather_for_rank1_op_args.h"
#include "gather_for_rank1_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<GatherForRank1TilingData> GatherForRank1Tiling(const GatherForRank1Args& a,
                                                                 const PlatformInfo& p) {
    if (a.out.dtype != a.x.dtype || a.out.ndim != 1 || a.out.dims[0] != a.index.dims[0]) {
        return Reject("out must be [M] = [" + std::to_string(a.index.dims[0]) +
                      "] with the dtype of x, got " + a.out.Shape());
    }
    const int64_t elem = DTypeSize(a.x.dtype);
    const int64_t idxElem = DTypeSize(a.index.dtype);
    const int64_t ub = UbBytes(p);
    TilingPlan<GatherForRank1TilingData> plan;
    GatherForRank1TilingData& td = plan.data;
    td.xLen = a.x.dims[0];
    td.indexLen = a.index.dims[0];
    // Compared in 64 bits before narrowing: an x of 4 GiB or more must not wrap into "fits".
    const int64_t xBytes = AlignUp(Max64(td.xLen * elem, 1), kBlockBytes);
    const bool resident = xBytes <= ub / 2;
    plan.tiling_key = resident ? GATHER_KEY_UB : GATHER_KEY_GM;
    td.xBufBytes = resident ? static_cast<uint32_t>(xBytes) : 0;
    // The rest of UB: indices and gathered values (double buffered) and int32 byte offsets.
    const int64_t perIndex = 2 * idxElem + 4 + 2 * elem;
    td.chunk = StepElems(ub - static_cast<int64_t>(td.xBufBytes) - 4 * kBlockBytes, perIndex);
    td.idxBufBytes = static_cast<uint32_t>(AlignedBytes(td.chunk, idxElem));
    td.offBufBytes = static_cast<uint32_t>(AlignedBytes(td.chunk, 4));
    td.outBufBytes = static_cast<uint32_t>(AlignedBytes(td.chunk, elem));
    const int64_t work = td.indexLen * (idxElem + elem);
    const int64_t cores = CoresForBytes(p, work);
    SetCoreNum(plan, resident ? CapForCopies(cores, work, td.xLen * elem) : cores);
    return plan;
}

}  // namespace mxrec

#endif  // GATHER_FOR_RANK1_TILING_H
