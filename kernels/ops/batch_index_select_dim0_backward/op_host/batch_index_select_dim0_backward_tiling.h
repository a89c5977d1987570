// Tiling of BatchIndexSelectDim0Backward (pure; shared by the CANN op_host and the sim launcher).
//
// The forward's walk read the other way (batch_rows_tiling.h): a step reads a block of gradient
// rows with one strided DataCopyPad and adds each row into its table row with an atomic DMA
// (repeated indices, on one core or several, add up).
#ifndef BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_H
#define BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_H

#include "batch_index_select_dim0_backward_op_args.h"
#include "batch_index_select_dim0_backward_tiling_data.h"
#include "batch_rows_tiling.h"
#include "tiling_common.h"

namespace mxrec {

inline TilingPlan<BatchIndexSelectDim0BackwardTilingData> BatchIndexSelectDim0BackwardTiling(
    const BatchIndexSelectDim0BackwardArgs& a, const PlatformInfo& p) {
    return PlanBatchRows<BatchIndexSelectDim0BackwardTilingData>(a.tables, a.indices, a.gradInputs,
                                                                 a.grad, p);
}

}  // namespace mxrec

#endif  // BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_H
