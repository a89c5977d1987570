// Tiling struct of SumStacked.
#ifndef SUM_STACKED_TILING_DATA_H
#define SUM_STACKED_TILING_DATA_H

#include <cstdint>

struct SumStackedTilingData {
    int64_t count;        // K: tensors stacked in x
    int64_t numel;        // elements of one tensor (of y)
    int64_t coreNum;      // core c sums units SplitEven(CeilDiv(numel, unit), coreNum, c)
    int64_t unit;         // elements of the split's unit: 64 bytes of float32, 32 of 16-bit
    int64_t stepElems;    // elements a step sums (a multiple of 16)
    uint32_t inBufBytes;  // each of the two input buffers (a step of one tensor)
    uint32_t accBytes;    // the float32 accumulator
    uint32_t castBytes;   // 16-bit types: the float32 copy of an input, and the rounded sum
};

#endif  // SUM_STACKED_TILING_DATA_H
