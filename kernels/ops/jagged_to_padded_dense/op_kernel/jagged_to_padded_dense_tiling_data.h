// Tiling struct of JaggedToPaddedDense.
#ifndef JAGGED_TO_PADDED_DENSE_TILING_DATA_H
#define JAGGED_TO_PADDED_DENSE_TILING_DATA_H

#include <cstdint>

struct JaggedToPaddedDenseTilingData {
    int64_t batch;            // B
    int64_t maxLength;        // L
    int64_t inner;            // D (1 for 1-D values)
    int64_t valueRows;        // N: rows of values; offsets are clamped to [0, N]
    int64_t coreNum;          // cores; core c fills dense rows SplitEven(B * L, coreNum, c)
    uint64_t padBits;         // padding value as the element's bit pattern
    uint32_t copyBufBytes;    // each of the two copy buffers
    uint32_t fillBufBytes;    // the padding buffer
    uint32_t offsetBufBytes;  // the offsets window
    uint32_t reserved;
};

#endif  // JAGGED_TO_PADDED_DENSE_TILING_DATA_H
