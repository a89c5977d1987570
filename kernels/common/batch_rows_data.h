// Tiling struct part of the batched index-select pair (batch_index_select_dim0 and its backward,
// batch_rows_kernel.h): the same rows moved one way or the other. Host tiling
// (batch_rows_tiling.h) and kernel both read it, so it includes nothing else.
#ifndef MXREC_BATCH_ROWS_DATA_H
#define MXREC_BATCH_ROWS_DATA_H

#include <cstdint>

namespace mxrec {

struct BatchRowsTiling {
    int64_t tableCount;  // T
    int64_t indexCount;  // sum(num_t): core c takes indices SplitEven(indexCount, coreNum, c)
    int64_t inputLen;   // elements of the tables (the forward's inputs, the backward's grad_inputs)
    int64_t outputLen;  // elements of the selected rows (the forward's output, the backward's grad)
    int64_t coreNum;
    int64_t rowElems;      // elements one row buffer holds (rows padded to 32 bytes)
    int64_t idxChunk;      // indices read per step
    uint32_t rowBufBytes;  // each of the two row buffers
    uint32_t idxBufBytes;
    uint32_t windowBytes;  // UB window over the table descriptors
};

}  // namespace mxrec

#endif  // MXREC_BATCH_ROWS_DATA_H
