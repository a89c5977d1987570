// Tiling of DenseToJagged (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take equal shares of the total_L output rows. A core finds the batch holding its first
// row by binary search over offsets (a few scalar reads), then walks forward: rows of a batch
// below L are one contiguous segment of dense and are copied in one go; rows past L, and rows
// no batch covers, are written as zeros. Output written once, dense rows read at most once.
#ifndef DENSE_TO_JAGGED_TILING_H
#define DENSE_TO_JAGGED_TILING_H

#include "dense_to_jagged_op_args.h"
#include "dense_to_jagged_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<DenseToJaggedTilingData> DenseToJaggedTiling(const DenseToJaggedArgs& a,
                                                               const PlatformInfo& p) {
    const int64_t totalL = a.totalL;
    if (a.offsets.ndim != 1 || a.offsets.dims[0] != a.dense.dims[0] + 1) {
        return Reject("offsets must be [B + 1] = [" + std::to_string(a.dense.dims[0] + 1) +
                      "], got " + a.offsets.Shape());
    }
    const int64_t inner = a.dense.ndim == 3 ? a.dense.dims[2] : 1;
    const bool shape_ok = a.values.dtype == a.dense.dtype && a.values.ndim == a.dense.ndim - 1 &&
                          (a.dense.ndim == 2 || a.values.dims[1] == inner);
    if (!shape_ok) {
        return Reject("values must have the dtype of dense and shape [total_L" +
                      std::string(a.dense.ndim == 3 ? ", D]" : "]") + ", got " + a.values.Shape());
    }
    if (totalL >= 0 && a.values.dims[0] != totalL) {
        return Reject("values has " + std::to_string(a.values.dims[0]) + " rows but total_l is " +
                      std::to_string(totalL));
    }
    TilingPlan<DenseToJaggedTilingData> plan;
    DenseToJaggedTilingData& td = plan.data;
    td.batch = a.dense.dims[0];
    td.maxLength = a.dense.dims[1];
    td.inner = inner;
    td.totalRows = a.values.dims[0];
    SizeRowCopyBuffers(td, p);
    SetCoreNum(plan, CoresForBytes(p, td.totalRows * inner * DTypeSize(a.dense.dtype)));
    return plan;
}

}  // namespace mxrec

#endif  // DENSE_TO_JAGGED_TILING_H
