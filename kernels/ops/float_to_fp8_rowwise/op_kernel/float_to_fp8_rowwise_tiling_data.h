// Tiling struct of FloatToFP8Rowwise.
#ifndef FLOAT_TO_FP8_ROWWISE_TILING_DATA_H
#define FLOAT_TO_FP8_ROWWISE_TILING_DATA_H

#include <cstdint>

struct FloatToFP8RowwiseTilingData {
    int64_t rows;         // input.numel() / D
    int64_t dim;          // D
    int64_t coreNum;      // core c quantises the rows SplitEven(rows, coreNum, c)
    int64_t chunkRows;    // rows per pass through UB
    int64_t rowElems;     // D rounded up to whole 32-byte blocks of floats (a row's UB stride)
    int64_t outWidth;     // ceil4(D) + 8, an output row's bytes
    int64_t outRowBytes;  // outWidth rounded up to whole blocks (an output row's UB stride)
    int32_t ebits;        // 4 forward, 5 backward
    int32_t bias;         // 15 forward, 31 backward
    float maxPos;         // 0.9375 forward, 0.875 backward
    uint32_t pad;
};

#endif  // FLOAT_TO_FP8_ROWWISE_TILING_DATA_H
