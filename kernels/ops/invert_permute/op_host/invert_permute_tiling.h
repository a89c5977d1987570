// Tiling of InvertPermute (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take even slices of permute. The writes inv[permute[i]] = i scatter over all of inv, so
// they leave UB as one DataCopyPad per run of consecutive targets (a whole piece for the
// identity, one element at worst). A DMA source must be 32-byte aligned in UB, so each run's
// values are staged from a block boundary: the staging area needs up to one block per entry.
#ifndef INVERT_PERMUTE_TILING_H
#define INVERT_PERMUTE_TILING_H

#include "invert_permute_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<InvertPermuteTilingData> InvertPermuteTiling(const OpArgs& a,
                                                               const PlatformInfo& p) {
    using TD = InvertPermuteTilingData;
    const TensorDesc& permute = a.inputs[0];
    const TensorDesc& inv = a.outputs[0];
    if (inv.dtype != permute.dtype || inv.ndim != 1 || inv.dims[0] != permute.dims[0]) {
        return Reject<TD>("inv must be [N] = [" + std::to_string(permute.dims[0]) +
                          "] with the dtype of permute, got " + inv.Shape() + " " +
                          DTypeName(inv.dtype));
    }
    const int64_t elem = DTypeSize(permute.dtype);
    if (elem == 4 && permute.dims[0] > 2147483647LL) {
        return Reject<TD>("permute: an int32 permutation cannot have " +
                          std::to_string(permute.dims[0]) + " entries (its values would not fit)");
    }
    TilingPlan<TD> plan;
    TD& td = plan.data;
    td.len = permute.dims[0];
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
