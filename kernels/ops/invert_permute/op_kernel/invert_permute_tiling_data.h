// Tiling struct of InvertPermute.
#ifndef INVERT_PERMUTE_TILING_DATA_H
#define INVERT_PERMUTE_TILING_DATA_H

#include <cstdint>

struct InvertPermuteTilingData {
    int64_t len;          // N
    int64_t coreNum;      // core c inverts permute[SplitEven(N, coreNum, c)]
    int64_t chunk;        // permute entries per step
    uint32_t inBufBytes;  // one of the two permute pieces in UB
    uint32_t stageBytes;  // written values, every run of consecutive targets 32-byte aligned
};

#endif  // INVERT_PERMUTE_TILING_DATA_H
