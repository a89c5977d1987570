// Tiling of DenseToJagged (pure; shared by the CANN op_host and the sim launcher).
//
// Cores take equal shares of the total_L output rows. A core finds the batch holding its first
// row by binary search over offsets (a few scalar reads), then walks forward: rows of a batch
// below L are one contiguous segment of dense and are copied in one go; rows past L, and rows
// no batch covers, are written as zeros. Output written once, dense rows read at most once.
#ifndef DENSE_TO_JAGGED_TILING_H
#define DENSE_TO_JAGGED_TILING_H

#include "dense_to_jagged_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<DenseToJaggedTilingData> DenseToJaggedTiling(const OpArgs& a,
                                                               const PlatformInfo& p) {
    using TD = DenseToJaggedTilingData;
    const TensorDesc& dense = a.inputs[0];
    const TensorDesc& offsets = a.inputs[1];
    const TensorDesc& values = a.outputs[0];
    const int64_t totalL = a.attrs[0].i;
    if (offsets.ndim != 1 || offsets.dims[0] != dense.dims[0] + 1) {
        return Reject<TD>("offsets must be [B + 1] = [" + std::to_string(dense.dims[0] + 1) +
                          "], got " + offsets.Shape());
    }
    const int64_t inner = dense.ndim == 3 ? dense.dims[2] : 1;
    const bool shape_ok = values.dtype == dense.dtype && values.ndim == dense.ndim - 1 &&
                          (dense.ndim == 2 || values.dims[1] == inner);
    if (!shape_ok) {
        return Reject<TD>("values must have the dtype of dense and shape [total_L" +
                          std::string(dense.ndim == 3 ? ", D]" : "]") + ", got " + values.Shape());
    }
    if (totalL >= 0 && values.dims[0] != totalL) {
        return Reject<TD>("values has " + std::to_string(values.dims[0]) + " rows but total_l is " +
                          std::to_string(totalL));
    }
    TilingPlan<TD> plan;
    TD& td = plan.data;
    td.batch = dense.dims[0];
    td.maxLength = dense.dims[1];
    td.inner = inner;
    td.totalRows = values.dims[0];
    SizeRowCopyBuffers(td, p);
    SetCoreNum(plan, CoresForBytes(p, td.totalRows * inner * DTypeSize(dense.dtype)));
    return plan;
}

}  // namespace mxrec

#endif  // DENSE_TO_JAGGED_TILING_H
