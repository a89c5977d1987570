// Tiling of IndexSelectForRank1Backward (pure; shared by the CANN op_host and the sim launcher).
//
// The float32 target (out itself, or a workspace for 16-bit outputs) is zeroed by all cores
// (SyncAll). When N float32s fit in UB, each core sums its share of the gradients into a UB
// accumulator and adds it to the target with one atomic DMA; the core count is capped so those
// N-sized adds stay under a quarter of the unavoidable traffic. Otherwise every gradient is
// added to its target element with an atomic DMA of one element. 16-bit outputs are then cast
// from the workspace (SyncAll).
#ifndef INDEX_SELECT_FOR_RANK1_BACKWARD_TILING_H
#define INDEX_SELECT_FOR_RANK1_BACKWARD_TILING_H

#include "index_select_for_rank1_backward_op_args.h"
#include "index_select_for_rank1_backward_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<IndexSelectForRank1BackwardTilingData> IndexSelectForRank1BackwardTiling(
    const IndexSelectForRank1BackwardArgs& a, const PlatformInfo& p) {
    if (a.index.dims[0] != a.grad.dims[0])
        return Reject("index and grad must have the same length");
    if (a.out.dtype != a.grad.dtype || a.out.ndim != 1 || a.out.dims[0] != a.x.dims[0]) {
        return Reject("out must be [N] = [" + std::to_string(a.x.dims[0]) +
                      "] with the dtype of grad, got " + a.out.Shape());
    }
    const int64_t gElem = DTypeSize(a.grad.dtype);
    const int64_t iElem = DTypeSize(a.index.dtype);
    const int64_t ub = UbBytes(p);
    TilingPlan<IndexSelectForRank1BackwardTilingData> plan;
    IndexSelectForRank1BackwardTilingData& td = plan.data;
    td.outLen = a.out.dims[0];
    td.gradLen = a.grad.dims[0];
    td.fillBufBytes = static_cast<uint32_t>(UbShare(p, 16));
    const int64_t accBytes = AlignUp(Max64(td.outLen * 4, 1), kBlockBytes);
    const bool resident = accBytes <= ub / 2;
    plan.tiling_key = resident ? ISB_KEY_UB : ISB_KEY_ATOMIC;
    td.accBufBytes = resident ? static_cast<uint32_t>(accBytes) : 0;
    const int64_t rest = ub - static_cast<int64_t>(td.accBufBytes) -
                         static_cast<int64_t>(td.fillBufBytes) - 8 * kBlockBytes;
    // Two thirds of the rest for gradient chunks: value and index (double buffered) and (key
    // ATOMIC) a 32-byte staging slot per element; one third for the double-buffered cast of
    // 16-bit outputs (float32 in, 16-bit out).
    const int64_t perElem = 2 * (gElem + iElem) + (resident ? 0 : kBlockBytes);
    td.chunk = Min64(StepElems(rest * 2 / 3, perElem), 4095);
    td.gradBufBytes = static_cast<uint32_t>(AlignedBytes(td.chunk, gElem));
    td.idxBufBytes = static_cast<uint32_t>(AlignedBytes(td.chunk, iElem));
    td.stageBufBytes = static_cast<uint32_t>(resident ? kBlockBytes : td.chunk * kBlockBytes);
    td.castChunk = static_cast<uint32_t>(StepElems(rest / 3, 12, 16));
    const int64_t work = td.gradLen * (gElem + iElem);
    // Zeroing (and casting) the output is work too, even with few gradients.
    const int64_t cores = CoresForBytes(p, Max64(work, td.outLen * gElem));
    SetCoreNum(plan, resident ? CapForCopies(cores, work, td.outLen * 4) : cores);
    if (a.grad.dtype != DType::kFloat32)
        plan.workspace_bytes = static_cast<uint64_t>(AlignedBytes(td.outLen, 4));
    return plan;
}

}  // namespace mxrec

#endif  // INDEX_SELECT_FOR_RANK1_BACKWARD_TILING_H
