// Tiling struct of FP8RowwiseToFloat.
#ifndef FP8_ROWWISE_TO_FLOAT_TILING_DATA_H
#define FP8_ROWWISE_TO_FLOAT_TILING_DATA_H

#include <cstdint>

struct FP8RowwiseToFloatTilingData {
    int64_t rows;        // the leading dims' product
    int64_t width;       // W, an input row's bytes
    int64_t dim;         // ceil4(W) - 8: outputs per row, and the scale's byte offset
    int64_t coreNum;     // core c dequantises the rows SplitEven(rows, coreNum, c)
    int64_t chunkRows;   // rows per pass through UB
    int64_t inRowBytes;  // W rounded up to whole 32-byte blocks (an input row's UB stride)
    int64_t rowElems;    // dim rounded up to whole blocks of floats (an output row's UB stride)
    int32_t ebits;       // 4 forward, 5 backward
    int32_t bias;        // 15 forward, 31 backward
};

#endif  // FP8_ROWWISE_TO_FLOAT_TILING_DATA_H
