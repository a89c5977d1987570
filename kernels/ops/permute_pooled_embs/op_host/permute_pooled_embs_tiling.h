// Tiling of PermutePooledEmbs (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take even slices of the B rows. Every core keeps the two lists (T int64 each) in UB
// and moves, block by block, the columns of its rows: a rectangle of rows x block width goes
// GM -> UB -> GM as two strided DMAs (one row per DMA block), so each element is read and
// written once and the DMA count is per block and row group, not per element.
#ifndef PERMUTE_POOLED_EMBS_TILING_H
#define PERMUTE_POOLED_EMBS_TILING_H

#include "permute_pooled_embs_op_args.h"
#include "permute_pooled_embs_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<PermutePooledEmbsTilingData> PermutePooledEmbsTiling(
    const PermutePooledEmbsArgs& a, const PlatformInfo& p) {
    const TensorDesc& in = a.pooledEmbs;
    const TensorDesc& out = a.permutedPooledEmbs;
    const int64_t blocks = a.permuteList.dims[0];
    const int64_t outCols = a.permutedDim >= 0 ? a.permutedDim : in.dims[1];
    bool sameShape = out.dtype == in.dtype && out.ndim == in.ndim && out.dims[0] == in.dims[0] &&
                     out.dims[1] == outCols;
    for (int32_t d = 2; d < in.ndim && sameShape; ++d)
        sameShape = out.dims[d] == in.dims[d];
    if (!sameShape) {
        return Reject(
            "permuted_pooled_embs must have the dtype of pooled_embs and its shape with "
            "dim 1 = " +
            std::to_string(outCols) + ", got " + out.Shape());
    }
    if (blocks > 0 && a.offsetDimList.dims[0] < blocks) {
        return Reject("offset_dim_list has " + std::to_string(a.offsetDimList.dims[0]) +
                      " entries, fewer than permute_list's " + std::to_string(blocks));
    }
    TilingPlan<PermutePooledEmbsTilingData> plan;
    PermutePooledEmbsTilingData& td = plan.data;
    td.rows = in.dims[0];
    td.inCols = in.dims[1];
    td.outCols = outCols;
    td.inner = 1;
    for (int32_t d = 2; d < in.ndim; ++d)
        td.inner *= in.dims[d];
    td.blocks = blocks;
    // UB: the two lists, then two copy buffers in what is left, at least 1/8 each.
    const int64_t listBytes = AlignedBytes(Max64(blocks, 1), 8);
    if (4 * listBytes > UbBytes(p)) {
        return Reject("permute_list has " + std::to_string(blocks) + " blocks; at most " +
                      std::to_string(UbBytes(p) / 32) + " fit the unified buffer");
    }
    td.listBytes = static_cast<uint32_t>(listBytes);
    td.copyBufBytes =
        static_cast<uint32_t>(AlignDown((UbBytes(p) - 2 * listBytes) / 2, kBlockBytes));
    const int64_t elem = DTypeSize(in.dtype);
    const int64_t bytes = td.rows * (td.inCols + td.outCols) * td.inner * elem;
    SetCoreNum(plan, Min64(CoresForBytes(p, bytes), Max64(td.rows, 1)));
    return plan;
}

}  // namespace mxrec

#endif  // PERMUTE_POOLED_EMBS_TILING_H
