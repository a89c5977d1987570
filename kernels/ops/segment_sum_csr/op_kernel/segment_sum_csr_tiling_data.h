// Tiling struct of SegmentSumCsr.
#ifndef SEGMENT_SUM_CSR_TILING_DATA_H
#define SEGMENT_SUM_CSR_TILING_DATA_H

#include <cstdint>

struct SegmentSumCsrTilingData {
    int64_t segments;    // S = csr_seg.size(0) - 1
    int64_t valueCount;  // values.numel()
    int64_t batchSize;
    int64_t coreNum;         // core c sums the segments starting in SplitEven(csr_seg[S] * bs, ...)
    uint32_t valueBufBytes;  // the piece of values in UB
    uint32_t outBufBytes;    // sums staged before they leave
    uint32_t windowBytes;    // csr_seg window
};

#endif  // SEGMENT_SUM_CSR_TILING_DATA_H
