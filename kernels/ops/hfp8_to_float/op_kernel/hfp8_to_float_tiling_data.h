// Tiling struct of HFP8ToFloat.
#ifndef HFP8_TO_FLOAT_TILING_DATA_H
#define HFP8_TO_FLOAT_TILING_DATA_H

#include <cstdint>

struct HFP8ToFloatTilingData {
    int64_t count;       // input.numel()
    int64_t coreNum;     // core c decodes the elements SplitEven(count, coreNum, c)
    int64_t chunkElems;  // elements per pass through UB, a multiple of 32
    int32_t ebits;       // exponent bits, 1..7
    int32_t bias;        // exponent bias, 1..127
};

#endif  // HFP8_TO_FLOAT_TILING_DATA_H
