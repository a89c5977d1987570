// Tiling struct of InvertPermute.
#ifndef INVERT_PERMUTE_TILING_DATA_H
#define INVERT_PERMUTE_TILING_DATA_H

#include <cstdint>

struct InvertPermuteTilingData {
    int64_t len;           // N
    int64_t coreNum;       // cores of both passes (SplitEven of the pieces, then of the chunks)
    int64_t piece;         // E1: permute entries per piece (pass 1), a multiple of 8
    int64_t pieces;        // ceil(N / E1)
    int64_t chunk;         // E2: inv slots per chunk (pass 2), a multiple of 8
    int64_t chunks;        // ceil(N / E2): also the buckets of every piece
    int64_t rowStride;     // int32 entries per piece's row of bucket bounds (>= chunks + 2, 8k)
    int64_t tableOffset;   // bytes of the workspace before the bounds table (the pairs)
    int64_t window;        // pieces whose bounds one strided DMA fetches in pass 2
    int64_t pairCap;       // pairs one bucket read brings in (a bigger bucket takes several)
    uint32_t arenaBytes;   // the UB both passes carve (below)
    uint32_t rowOffset;    // pass 1: the row of bounds, after the piece (8 bytes an entry)
    uint32_t outOffset;    // pass 2: the chunk as T, after its int32 slots
    uint32_t pairOffset;   // pass 2: pairCap pairs, after the chunk
    uint32_t boundOffset;  // pass 2: window x 32 bytes of bounds, after the pairs
};

#endif  // INVERT_PERMUTE_TILING_DATA_H
