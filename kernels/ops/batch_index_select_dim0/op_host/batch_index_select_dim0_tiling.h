// Tiling of BatchIndexSelectDim0 (pure; shared by the CANN op_host and the sim launcher).
//
// The walk of batch_rows_tiling.h: a step reads a block of indices, gathers their rows into UB
// (one DMA per row: rows are scattered) and writes them with one strided DataCopyPad, since
// consecutive indices of a table have consecutive output rows.
#ifndef BATCH_INDEX_SELECT_DIM0_TILING_H
#define BATCH_INDEX_SELECT_DIM0_TILING_H

#include <string>

#include "batch_index_select_dim0_op_args.h"
#include "batch_index_select_dim0_tiling_data.h"
#include "batch_rows_tiling.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<BatchIndexSelectDim0TilingData> BatchIndexSelectDim0Tiling(
    const BatchIndexSelectDim0Args& a, const PlatformInfo& p) {
    TilingPlan<BatchIndexSelectDim0TilingData> plan =
        PlanBatchRows<BatchIndexSelectDim0TilingData>(a.tables, a.indices, a.inputs, a.output, p);
    if (!plan.ok())
        return plan;
    if (a.output.dtype != a.inputs.dtype) {
        return Reject("output must have the dtype of inputs, got " +
                      std::string(DTypeName(a.output.dtype)));
    }
    if (a.outputLen >= 0 && a.outputLen != a.output.dims[0]) {
        return Reject("output has " + std::to_string(a.output.dims[0]) +
                      " elements but output_len is " + std::to_string(a.outputLen));
    }
    return plan;
}

}  // namespace mxrec

#endif  // BATCH_INDEX_SELECT_DIM0_TILING_H
