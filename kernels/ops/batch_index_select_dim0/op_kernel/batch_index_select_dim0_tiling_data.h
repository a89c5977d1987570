// Tiling struct of BatchIndexSelectDim0.
#ifndef BATCH_INDEX_SELECT_DIM0_TILING_DATA_H
#define BATCH_INDEX_SELECT_DIM0_TILING_DATA_H

#include "batch_rows_data.h"

struct BatchIndexSelectDim0TilingData {
    mxrec::BatchRowsTiling walk;  // batch_rows_kernel.h
};

#endif  // BATCH_INDEX_SELECT_DIM0_TILING_DATA_H
