// Tiling struct of InvertPermute.
#ifndef INVERT_PERMUTE_TILING_DATA_H
#define INVERT_PERMUTE_TILING_DATA_H

#include <cstdint>

struct InvertPermuteTilingData {
    int64_t len;             // N
    int64_t coreNum;         // cores of both passes (SplitEven of the pieces, then of the chunks)
    int64_t piece;           // E: permute entries per piece (pass 1) = inv slots per chunk (pass 2)
    int64_t pieces;          // ceil(N / E): pieces of permute, and chunks of inv
    int64_t rowStride;       // int32 entries per piece's row of bucket bounds (>= pieces + 1, 8k)
    int64_t tableOffset;     // bytes of the workspace before the bounds table (the pairs)
    int64_t window;          // pieces whose bounds one strided DMA fetches in pass 2
    uint32_t elemBufBytes;   // a permute piece (pass 1) or an inv chunk (pass 2)
    uint32_t pairBufBytes;   // E packed pairs
    uint32_t rowBufBytes;    // one row of bounds
    uint32_t boundBufBytes;  // window x 32 bytes: the bounds of one chunk in `window` pieces
};

#endif  // INVERT_PERMUTE_TILING_DATA_H
