// Tiling of ConcatSlab (pure; shared by the CANN op_host and the sim launcher).
//
// The work is x's elements, read once and written once: cores take even ranges of them in x's
// order, whatever the shape (a few wide rows, many narrow ones, or the single contiguous run of
// a cat along dim 0), so every core moves the same number of bytes. A core moves whole rows as
// one strided DMA each way when they fit a buffer, and cuts a row that does not into pieces.
#ifndef CONCAT_SLAB_TILING_H
#define CONCAT_SLAB_TILING_H

#include "concat_slab_op_args.h"
#include "concat_slab_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<ConcatSlabTilingData> ConcatSlabTiling(const ConcatSlabArgs& a,
                                                         const PlatformInfo& p) {
    const TensorDesc& x = a.x;
    const TensorDesc& y = a.y;
    if (a.catDim != 0 && a.catDim != 1)
        return Reject("cat_dim must be 0 or 1, got " + std::to_string(a.catDim));
    const int64_t keep = 1 - a.catDim;  // the dim x and y share
    if (y.dtype != x.dtype || y.dims[keep] != x.dims[keep]) {
        return Reject("y must have the dtype of x and its size " + std::to_string(x.dims[keep]) +
                      " in dim " + std::to_string(keep) + ", got " + y.Shape() + " " +
                      DTypeName(y.dtype));
    }
    if (a.offset < 0 || a.offset + x.dims[a.catDim] > y.dims[a.catDim]) {
        return Reject("x's slab [" + std::to_string(a.offset) + ", " +
                      std::to_string(a.offset + x.dims[a.catDim]) + ") along dim " +
                      std::to_string(a.catDim) + " does not fit y " + y.Shape());
    }
    TilingPlan<ConcatSlabTilingData> plan;
    ConcatSlabTilingData& td = plan.data;
    if (a.catDim == 0) {
        td.rows = 1;
        td.width = x.dims[0] * x.dims[1];
        td.yRow = y.dims[0] * y.dims[1];
        td.yOffset = a.offset * y.dims[1];
    } else {
        td.rows = x.dims[0];
        td.width = x.dims[1];
        td.yRow = y.dims[1];
        td.yOffset = a.offset;
    }
    td.copyBufBytes = static_cast<uint32_t>(UbShare(p, 2));
    const int64_t elems = td.rows * td.width;
    const int64_t bytes = 2 * elems * DTypeSize(x.dtype);
    SetCoreNum(plan, Min64(CoresForBytes(p, bytes), Max64(elems, 1)));
    return plan;
}

}  // namespace mxrec

#endif  // CONCAT_SLAB_TILING_H
