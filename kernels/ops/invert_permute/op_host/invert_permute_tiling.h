// Tiling of InvertPermute (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take even slices of permute. The writes inv[permute[i]] = i scatter over all of inv, so
// they leave UB as one DataCopyPad per run of consecutive targets (a whole piece for the
// identity, one element at worst). A DMA source must be 32-byte aligned in UB, so each run's
// values are staged from a block boundary: the staging area needs up to one block per entry.
#ifndef INVERT_PERMUTE_TILING_H
#define INVERT_PERMUTE_TILING_H

#include "invert_permute_op_args.h"
#include "invert_permute_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<InvertPermuteTilingData> InvertPermuteTiling(const InvertPermuteArgs& a,
                                                               const PlatformInfo& p) {
    if (a.inv.dtype != a.permute.dtype || a.inv.ndim != 1 || a.inv.dims[0] != a.permute.dims[0]) {
        return Reject("inv must be [N] = [" + std::to_string(a.permute.dims[0]) +
                      "] with the dtype of permute, got " + a.inv.Shape() + " " +
                      DTypeName(a.inv.dtype));
    }
    const int64_t elem = DTypeSize(a.permute.dtype);
    if (elem == 4 && a.permute.dims[0] > 2147483647LL) {
        return Reject("permute: an int32 permutation cannot have " +
                      std::to_string(a.permute.dims[0]) + " entries (its values would not fit)");
    }
    TilingPlan<InvertPermuteTilingData> plan;
    InvertPermuteTilingData& td = plan.data;
    td.len = a.permute.dims[0];
    // Per entry: two permute pieces (double buffered input) and a staging block.
    const int64_t perEntry = 2 * elem + kBlockBytes;
    td.chunk = StepElems(UbBytes(p) - 4 * kBlockBytes, perEntry);
    td.inBufBytes = static_cast<uint32_t>(AlignedBytes(td.chunk, elem));
    td.stageBytes = static_cast<uint32_t>(td.chunk * kBlockBytes);
    SetCoreNum(plan, CoresForBytes(p, 2 * td.len * elem));
    return plan;
}

}  // namespace mxrec

#endif  // INVERT_PERMUTE_TILING_H
