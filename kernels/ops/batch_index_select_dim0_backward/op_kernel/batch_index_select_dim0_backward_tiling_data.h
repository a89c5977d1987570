// Tiling struct of BatchIndexSelectDim0Backward (the rows of the forward, moved back).
#ifndef BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_DATA_H
#define BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_DATA_H

#include "batch_rows_data.h"

struct BatchIndexSelectDim0BackwardTilingData {
    mxrec::BatchRowsTiling walk;  // batch_rows_kernel.h
};

#endif  // BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_DATA_H
