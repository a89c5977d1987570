// Tiling struct of OffsetsRange.
#ifndef OFFSETS_RANGE_TILING_DATA_H
#define OFFSETS_RANGE_TILING_DATA_H

#include <cstdint>

struct OffsetsRangeTilingData {
    int64_t count;         // N = offsets.size(0)
    int64_t rangeSize;     // R
    int64_t coreNum;       // core c writes range[SplitEven(R, coreNum, c)]
    uint32_t stageBytes;   // one of the two staging buffers of output values
    uint32_t windowBytes;  // offsets window
};

#endif  // OFFSETS_RANGE_TILING_DATA_H
