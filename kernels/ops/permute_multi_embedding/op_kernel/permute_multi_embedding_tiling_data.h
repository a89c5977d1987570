// Tiling struct of PermuteMultiEmbedding.
#ifndef PERMUTE_MULTI_EMBEDDING_TILING_DATA_H
#define PERMUTE_MULTI_EMBEDDING_TILING_DATA_H

#include <cstdint>

struct PermuteMultiEmbeddingTilingData {
    int64_t batch;           // B: rows of x and y
    int64_t inCols;          // Din
    int64_t outCols;         // Dout
    int64_t segCount;        // S
    int64_t coreNum;         // core c moves rows SplitEven(B, coreNum, c) of every segment
    int64_t copyElems;       // elements one copy buffer holds (rows padded to 32 bytes)
    int64_t addElems;        // elements the add path holds per step (tiling key ADD), else 0
    uint32_t copyBufBytes;   // each of the two copy buffers
    uint32_t addBufBytes;    // x and y pieces of the add path (each)
    uint32_t floatBufBytes;  // float32 copies of both pieces for 16-bit types (each)
    uint32_t windowBytes;    // UB window over the segment table
};

#define PME_KEY_COPY 1  // every segment copies
#define PME_KEY_ADD 2   // some segments add into y (reverse with repeated keys)

#endif  // PERMUTE_MULTI_EMBEDDING_TILING_DATA_H
