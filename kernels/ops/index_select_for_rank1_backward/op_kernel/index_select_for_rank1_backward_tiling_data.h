// Tiling struct of IndexSelectForRank1Backward.
#ifndef INDEX_SELECT_FOR_RANK1_BACKWARD_TILING_DATA_H
#define INDEX_SELECT_FOR_RANK1_BACKWARD_TILING_DATA_H

#include <cstdint>

struct IndexSelectForRank1BackwardTilingData {
    int64_t outLen;   // N
    int64_t gradLen;  // M
    int64_t coreNum;
    int64_t chunk;         // gradient elements per step
    uint32_t accBufBytes;  // float32 accumulator of all N outputs (tiling key UB)
    uint32_t gradBufBytes;
    uint32_t idxBufBytes;
    uint32_t stageBufBytes;  // float32 values staged one per 32 bytes (key ATOMIC), or cast chunk
    uint32_t fillBufBytes;
    uint32_t castChunk;  // float32 elements per cast step (16-bit outputs)
};

#define ISB_KEY_UB 1      // accumulate in UB per core, then one atomic add per core
#define ISB_KEY_ATOMIC 2  // N too large for UB: one atomic add per gradient element

#endif  // INDEX_SELECT_FOR_RANK1_BACKWARD_TILING_DATA_H
