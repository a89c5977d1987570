// Tiling struct of DenseToJagged.
#ifndef DENSE_TO_JAGGED_TILING_DATA_H
#define DENSE_TO_JAGGED_TILING_DATA_H

#include <cstdint>

struct DenseToJaggedTilingData {
    int64_t batch;      // B
    int64_t maxLength;  // L: rows per batch in dense
    int64_t inner;      // D (1 for 2-D dense)
    int64_t totalRows;  // total_L: rows of the output
    int64_t coreNum;    // core c writes output rows SplitEven(total_L, coreNum, c)
    uint32_t copyBufBytes;
    uint32_t fillBufBytes;
    uint32_t offsetBufBytes;
    uint32_t reserved;
};

#endif  // DENSE_TO_JAGGED_TILING_DATA_H
