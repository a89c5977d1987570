// Tiling of BatchIndexSelectDim0Backward (pure; shared by the CANN op_host and the sim launcher).
//
// The forward's layout read the other way: cores take even slices of the index lists, a step
// reads a block of gradient rows with one strided DataCopyPad and adds each row into its table
// row with an atomic DMA (repeated indices, on one core or several, add up). The unified buffer
// holds an index block (1/16) and two row buffers.
#ifndef BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_H
#define BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_H

#include "batch_index_select_dim0_backward_op_args.h"
#include "batch_index_select_dim0_backward_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<BatchIndexSelectDim0BackwardTilingData> BatchIndexSelectDim0BackwardTiling(
    const BatchIndexSelectDim0BackwardArgs& a, const PlatformInfo& p) {
    if (a.tables.dims[1] != 8) {
        return Reject("tables must be [T, 8] descriptors, got " + a.tables.Shape());
    }
    const int64_t elem = DTypeSize(a.grad.dtype);
    const int64_t idxElem = DTypeSize(a.indices.dtype);
    TilingPlan<BatchIndexSelectDim0BackwardTilingData> plan;
    BatchIndexSelectDim0BackwardTilingData& td = plan.data;
    td.tableCount = a.tables.dims[0];
    td.indexCount = a.indices.dims[0];
    td.inputLen = a.gradInputs.dims[0];
    td.outputLen = a.grad.dims[0];
    td.windowBytes = static_cast<uint32_t>(AlignedBytes(8 * 8, 8));
    const int64_t avail = UbBytes(p) - td.windowBytes - 2 * kBlockBytes;
    td.idxBufBytes = static_cast<uint32_t>(AlignDown(avail / 16, kBlockBytes));
    td.idxChunk = td.idxBufBytes / idxElem;
    td.rowBufBytes = static_cast<uint32_t>(AlignDown((avail - td.idxBufBytes) / 2, kBlockBytes));
    td.rowElems = td.rowBufBytes / elem;
    const int64_t work = td.indexCount * idxElem + 2 * td.outputLen * elem;
    SetCoreNum(plan, Min64(CoresForBytes(p, work), Max64(td.indexCount, 1)));
    return plan;
}

}  // namespace mxrec

#endif  // BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_H
