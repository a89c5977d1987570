// Tiling of SumStacked (pure; shared by the CANN op_host and the sim launcher).
//
// Every element of y is the sum of K elements at the same place of x's K rows: cores take even
// ranges of y (in units of 16 elements, so no two cores write into one 32-byte block of y),
// and a step loads its range of each row in turn, K reads and one write per element, the
// minimum traffic. UB: two input buffers (the next row loads while one is added), the float32
// accumulator, and for 16-bit types a float32 copy of the input and the 16-bit rounded sum.
#ifndef SUM_STACKED_TILING_H
#define SUM_STACKED_TILING_H

#include "sum_stacked_op_args.h"
#include "sum_stacked_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<SumStackedTilingData> SumStackedTiling(const SumStackedArgs& a,
                                                         const PlatformInfo& p) {
    const TensorDesc& x = a.x;
    const TensorDesc& y = a.y;
    bool sameShape = y.dtype == x.dtype && y.ndim == x.ndim - 1;
    for (int32_t d = 1; d < x.ndim && sameShape; ++d)
        sameShape = y.dims[d - 1] == x.dims[d];
    if (!sameShape) {
        return Reject("y must have the dtype of x and its shape without dim 0, got " + y.Shape() +
                      " " + DTypeName(y.dtype));
    }
    const int64_t elem = DTypeSize(x.dtype);
    TilingPlan<SumStackedTilingData> plan;
    SumStackedTilingData& td = plan.data;
    td.count = x.dims[0];
    td.numel = 1;
    for (int32_t d = 1; d < x.ndim; ++d)
        td.numel *= x.dims[d];
    td.unit = 16;
    // Per element of a step: two input copies, the float accumulator, and for 16-bit types
    // the float copy of the input and the rounded sum.
    const int64_t perElem = 2 * elem + 4 + (elem == 4 ? 0 : 4 + elem);
    td.stepElems = StepElems(UbBytes(p), perElem, 16);
    td.inBufBytes = static_cast<uint32_t>(AlignedBytes(td.stepElems, elem));
    td.accBytes = static_cast<uint32_t>(AlignedBytes(td.stepElems, 4));
    td.castBytes = elem == 4 ? 0u : static_cast<uint32_t>(AlignedBytes(td.stepElems, 4));
    if (2 * td.inBufBytes + td.accBytes + td.castBytes +
            (elem == 4 ? 0 : AlignedBytes(td.stepElems, elem)) >
        UbBytes(p)) {
        return Reject("the unified buffer of " + std::to_string(UbBytes(p)) +
                      " bytes holds no step of 16 elements");
    }
    const int64_t units = CeilDiv(td.numel, td.unit);
    const int64_t bytes = (td.count + 1) * td.numel * elem;
    SetCoreNum(plan, Min64(CoresForBytes(p, bytes), Max64(units, 1)));
    return plan;
}

}  // namespace mxrec

#endif  // SUM_STACKED_TILING_H
