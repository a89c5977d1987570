// Tiling struct of Fused8BitRowwiseToFloat.
#ifndef FUSED8BIT_ROWWISE_TO_FLOAT_TILING_DATA_H
#define FUSED8BIT_ROWWISE_TO_FLOAT_TILING_DATA_H

#include <cstdint>

struct Fused8BitRowwiseToFloatTilingData {
    int64_t rows;        // the leading dims' product
    int64_t dim;         // D = input's last dim - 8
    int64_t coreNum;     // core c dequantises the rows SplitEven(rows, coreNum, c)
    int64_t chunkRows;   // rows per pass through UB
    int64_t inRowBytes;  // D + 8 rounded up to whole 32-byte blocks (an input row's UB stride)
    int64_t rowElems;    // D rounded up to whole blocks of floats (an output row's UB stride)
};

#endif  // FUSED8BIT_ROWWISE_TO_FLOAT_TILING_DATA_H
