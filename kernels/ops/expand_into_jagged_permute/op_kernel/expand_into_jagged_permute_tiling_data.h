// Tiling struct of ExpandIntoJaggedPermute.
#ifndef EXPAND_INTO_JAGGED_PERMUTE_TILING_DATA_H
#define EXPAND_INTO_JAGGED_PERMUTE_TILING_DATA_H

#include <cstdint>

struct ExpandIntoJaggedPermuteTilingData {
    int64_t segments;      // T = permute.size(0)
    int64_t outputSize;    // output_permute.size(0)
    int64_t coreNum;       // core c writes output_permute[SplitEven(outputSize, coreNum, c)]
    uint32_t stageBytes;   // one of the two staging buffers of output values
    uint32_t windowBytes;  // one window (output_offset, permute)
};

#endif  // EXPAND_INTO_JAGGED_PERMUTE_TILING_DATA_H
