// Tiling struct of FloatToHFP8.
#ifndef FLOAT_TO_HFP8_TILING_DATA_H
#define FLOAT_TO_HFP8_TILING_DATA_H

#include <cstdint>

struct FloatToHFP8TilingData {
    int64_t count;       // input.numel()
    int64_t coreNum;     // core c encodes the elements SplitEven(count, coreNum, c)
    int64_t chunkElems;  // elements per pass through UB, a multiple of 32
    int32_t ebits;       // exponent bits, 1..7
    int32_t bias;        // exponent bias, 1..127
    float maxPos;        // the clamp, positive and below 2^100
    uint32_t pad;
};

#endif  // FLOAT_TO_HFP8_TILING_DATA_H
