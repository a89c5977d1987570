// Tiling struct of FloatToFused8BitRowwise.
#ifndef FLOAT_TO_FUSED8BIT_ROWWISE_TILING_DATA_H
#define FLOAT_TO_FUSED8BIT_ROWWISE_TILING_DATA_H

#include <cstdint>

struct FloatToFused8BitRowwiseTilingData {
    int64_t rows;         // input.numel() / D
    int64_t dim;          // D
    int64_t coreNum;      // core c quantises the rows SplitEven(rows, coreNum, c)
    int64_t chunkRows;    // rows per pass through UB
    int64_t rowElems;     // D rounded up to whole 32-byte blocks of floats (a row's UB stride)
    int64_t outRowBytes;  // D + 8 rounded up to whole blocks (an output row's UB stride)
};

#endif  // FLOAT_TO_FUSED8BIT_ROWWISE_TILING_DATA_H
