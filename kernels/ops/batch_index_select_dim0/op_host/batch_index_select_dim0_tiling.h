// Tiling of BatchIndexSelectDim0 (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take even slices of the concatenated index lists (a slice may span tables). A step
// reads a block of indices, gathers their rows into UB (one DMA per row: rows are scattered)
// and writes them with one strided DataCopyPad, since consecutive indices of a table have
// consecutive output rows. The unified buffer holds an index block (1/16) and two row buffers
// (double buffering: the next gather overlaps the previous write).
#ifndef BATCH_INDEX_SELECT_DIM0_TILING_H
#define BATCH_INDEX_SELECT_DIM0_TILING_H

#include "batch_index_select_dim0_op_args.h"
#include "batch_index_select_dim0_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<BatchIndexSelectDim0TilingData> BatchIndexSelectDim0Tiling(
    const BatchIndexSelectDim0Args& a, const PlatformInfo& p) {
    if (a.tables.dims[1] != 8) {
        return Reject("tables must be [T, 8] descriptors, got " + a.tables.Shape());
    }
    if (a.output.dtype != a.inputs.dtype) {
        return Reject("output must have the dtype of inputs, got " +
                      std::string(DTypeName(a.output.dtype)));
    }
    if (a.outputLen >= 0 && a.outputLen != a.output.dims[0]) {
        return Reject("output has " + std::to_string(a.output.dims[0]) +
                      " elements but output_len is " + std::to_string(a.outputLen));
    }
    const int64_t elem = DTypeSize(a.inputs.dtype);
    const int64_t idxElem = DTypeSize(a.indices.dtype);
    TilingPlan<BatchIndexSelectDim0TilingData> plan;
    BatchIndexSelectDim0TilingData& td = plan.data;
    td.tableCount = a.tables.dims[0];
    td.indexCount = a.indices.dims[0];
    td.inputLen = a.inputs.dims[0];
    td.outputLen = a.output.dims[0];
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

#endif  // BATCH_INDEX_SELECT_DIM0_TILING_H
