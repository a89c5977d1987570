// Tiling struct of GatherForRank1.
#ifndef GATHER_FOR_RANK1_TILING_DATA_H
#define GATHER_FOR_RANK1_TILING_DATA_H

#include <cstdint>

struct GatherForRank1TilingData {
    int64_t xLen;        // N
    int64_t indexLen;    // M
    int64_t coreNum;     // core c gathers out[SplitEven(M, coreNum, c)]
    int64_t chunk;       // indices per step
    uint32_t xBufBytes;  // x resident in UB (tiling key UB)
    uint32_t idxBufBytes;
    uint32_t outBufBytes;
    uint32_t offBufBytes;  // int32 byte offsets for the vector Gather
};

#define GATHER_KEY_UB 1  // x fits in UB: loaded once per core, gathered in UB
#define GATHER_KEY_GM 2  // x too large: scalar reads of x in global memory

#endif  // GATHER_FOR_RANK1_TILING_DATA_H
