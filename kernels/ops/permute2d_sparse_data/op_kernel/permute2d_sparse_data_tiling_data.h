// Tiling struct of Permute2dSparseData.
#ifndef PERMUTE2D_SPARSE_DATA_TILING_DATA_H
#define PERMUTE2D_SPARSE_DATA_TILING_DATA_H

#include <cstdint>

struct Permute2dSparseDataTilingData {
    int64_t rows;         // T
    int64_t cols;         // B (1 for 1-D lengths)
    int64_t outRows;      // T'
    int64_t valueCount;   // N
    int64_t outValues;    // N' = permuted_values.size(0)
    int64_t weightWidth;  // W (1 for 1-D weights, 0 without weights)
    int64_t coreNum;
    int64_t rowBlock;      // lengths rows per UB block (0: rows longer than the buffer, chunked)
    int64_t rowChunk;      // lengths elements per chunk of a long row
    int64_t sumBlock;      // int64 row sums / offsets per UB block
    int64_t wsInOffsets;   // workspace byte offsets: T int64 row sums, then exclusive offsets
    int64_t wsOutOffsets;  // T' int64
    int64_t wsTotals;      // 2 x coreNum 32-byte slots: per-core totals of the two scans
    uint32_t copyBufBytes;
    uint32_t rowBufBytes;
    uint32_t fillBufBytes;
    uint32_t windowBytes;
};

#endif  // PERMUTE2D_SPARSE_DATA_TILING_DATA_H
