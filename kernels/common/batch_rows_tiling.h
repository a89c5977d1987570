// Host tiling of the batched index-select pair (batch_rows_kernel.h). Cores take even slices of
// the concatenated index lists (a slice may span tables). The unified buffer holds an index block
// (1/16) and two row buffers (double buffering: a step's gather or scatter overlaps the previous
// step's other DMA).
#ifndef MXREC_BATCH_ROWS_TILING_H
#define MXREC_BATCH_ROWS_TILING_H

#include <string>

#include "batch_rows_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

// The plan of an operator whose tiling struct TD holds its BatchRowsTiling as `walk`: rows of
// `values` (the elements' dtype) selected by `indices` per the [T, 8] descriptors `tables` into
// `selected`, or the refusal of malformed descriptors.
template <typename TD>
inline TilingPlan<TD> PlanBatchRows(const TensorDesc& tables, const TensorDesc& indices,
                                    const TensorDesc& values, const TensorDesc& selected,
                                    const PlatformInfo& p) {
    if (tables.dims[1] != 8)
        return Reject("tables must be [T, 8] descriptors, got " + tables.Shape());
    const int64_t elem = DTypeSize(values.dtype);
    const int64_t idxElem = DTypeSize(indices.dtype);
    TilingPlan<TD> plan;
    BatchRowsTiling& td = plan.data.walk;
    td.tableCount = tables.dims[0];
    td.indexCount = indices.dims[0];
    td.inputLen = values.dims[0];
    td.outputLen = selected.dims[0];
    td.windowBytes = static_cast<uint32_t>(AlignedBytes(8 * 8, 8));
    const int64_t avail = UbBytes(p) - td.windowBytes - 2 * kBlockBytes;
    td.idxBufBytes = static_cast<uint32_t>(AlignDown(avail / 16, kBlockBytes));
    td.idxChunk = td.idxBufBytes / idxElem;
    td.rowBufBytes = static_cast<uint32_t>(AlignDown((avail - td.idxBufBytes) / 2, kBlockBytes));
    td.rowElems = td.rowBufBytes / elem;
    const int64_t work = td.indexCount * idxElem + 2 * td.outputLen * elem;
    td.coreNum = Min64(CoresForBytes(p, work), Max64(td.indexCount, 1));
    plan.block_dim = static_cast<uint32_t>(td.coreNum);  // the kernels split over coreNum
    return plan;
}

}  // namespace mxrec

#endif  // MXREC_BATCH_ROWS_TILING_H
