// Tiling struct of BatchIndexSelectDim0Backward (the rows of the forward, moved back).
#ifndef BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_DATA_H
#define BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_DATA_H

#include <cstdint>

struct BatchIndexSelectDim0BackwardTilingData {
    int64_t tableCount;  // T
    int64_t indexCount;  // sum(num_t): core c takes indices SplitEven(indexCount, coreNum, c)
    int64_t inputLen;    // elements of grad_inputs
    int64_t outputLen;   // elements of grad
    int64_t coreNum;
    int64_t rowElems;      // elements one row buffer holds (rows padded to 32 bytes)
    int64_t idxChunk;      // indices read per step
    uint32_t rowBufBytes;  // each of the two row buffers
    uint32_t idxBufBytes;
    uint32_t windowBytes;  // UB window over the table descriptors
};

#endif  // BATCH_INDEX_SELECT_DIM0_BACKWARD_TILING_DATA_H
