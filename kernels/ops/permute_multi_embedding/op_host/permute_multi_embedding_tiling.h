// Tiling of PermuteMultiEmbedding (pure; shared by the CANN op_host and the sim launcher).
//
// Every segment is a column range of all B rows, so cores take even slices of the rows and each
// moves its slice of every segment: equal traffic per core whatever the segment widths. A step
// moves many rows of one segment with a single strided DataCopyPad each way (a row piece lands
// 32-byte aligned in UB), so the transfers are as large as the buffers allow, and x's columns
// outside the segments are never read. Copy-only launches give the unified buffer to a
// double-buffered copy queue; launches with adding segments split it between that queue and
// the read-add-write buffers (x and y pieces, and float32 copies of them for 16-bit types, whose
// sum fbgemm rounds once from float).
#ifndef PERMUTE_MULTI_EMBEDDING_TILING_H
#define PERMUTE_MULTI_EMBEDDING_TILING_H

#include "permute_multi_embedding_op_args.h"
#include "permute_multi_embedding_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<PermuteMultiEmbeddingTilingData> PermuteMultiEmbeddingTiling(
    const PermuteMultiEmbeddingArgs& a, const PlatformInfo& p) {
    if (a.y.dtype != a.x.dtype || a.y.dims[0] != a.x.dims[0]) {
        return Reject("y must be [B, Dout] with B = " + std::to_string(a.x.dims[0]) +
                      " and the dtype of x, got " + a.y.Shape() + " " + DTypeName(a.y.dtype));
    }
    if (a.segments.dims[1] != 4) {
        return Reject("segments must be [S, 4] (in_offset, out_offset, length, accumulate), got " +
                      a.segments.Shape());
    }
    const int64_t elem = DTypeSize(a.x.dtype);
    TilingPlan<PermuteMultiEmbeddingTilingData> plan;
    PermuteMultiEmbeddingTilingData& td = plan.data;
    td.batch = a.x.dims[0];
    td.inCols = a.x.dims[1];
    td.outCols = a.y.dims[1];
    td.segCount = a.segments.dims[0];
    // A window of 64 segments: the table is read once per core, a few blocks at a time.
    td.windowBytes = static_cast<uint32_t>(AlignedBytes(64 * 4, 4));
    const int64_t avail = UbBytes(p) - td.windowBytes - 2 * kBlockBytes;
    if (a.accumulate) {
        plan.tiling_key = PME_KEY_ADD;
        const int64_t parts = elem == 4 ? 4 : 8;  // 16-bit: x, y (1 each), float copies (2 each)
        td.addBufBytes = static_cast<uint32_t>(AlignDown(avail / parts, kBlockBytes));
        td.floatBufBytes = elem == 4 ? 0 : 2 * td.addBufBytes;
        td.copyBufBytes = td.addBufBytes;
        td.addElems = td.addBufBytes / elem;
    } else {
        plan.tiling_key = PME_KEY_COPY;
        td.copyBufBytes = static_cast<uint32_t>(AlignDown(avail / 2, kBlockBytes));
        td.addBufBytes = 0;
        td.floatBufBytes = 0;
        td.addElems = 0;
    }
    td.copyElems = td.copyBufBytes / elem;
    // The rows a launch moves (each segment's columns read once and written once; the estimate
    // takes every output column once, the common case).
    const int64_t work = td.batch * td.outCols * elem * 2;
    SetCoreNum(plan, Min64(CoresForBytes(p, work), Max64(td.batch, 1)));
    return plan;
}

}  // namespace mxrec

#endif  // PERMUTE_MULTI_EMBEDDING_TILING_H
