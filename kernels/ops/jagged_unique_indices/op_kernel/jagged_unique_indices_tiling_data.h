// Tiling struct of JaggedUniqueIndices.
#ifndef JAGGED_UNIQUE_INDICES_TILING_DATA_H
#define JAGGED_UNIQUE_INDICES_TILING_DATA_H

#include <cstdint>

// The radix sort takes 8 bits of the key per pass.
#define JUI_RADIX_BITS 8
#define JUI_RADIX 256

struct JaggedUniqueIndicesTilingData {
    int64_t features;    // T = hash_size_cumsum.size(0) - 1
    int64_t groups;      // hash_size_offsets entries read: T + 1
    int64_t batchSize;   // B = (offsets.size(0) - 1) / T
    int64_t bags;        // T * B
    int64_t numIndices;  // N
    int64_t coreNum;
    // Workspace regions (byte offsets): two key/position buffers the passes swap, the per-core
    // digit histograms, one 32-byte slot per core for the published min/max/count, group totals.
    int64_t wsKeysB;
    int64_t wsPosA;
    int64_t wsPosB;
    int64_t wsHist;
    int64_t wsSlots;
    int64_t wsGroups;
    uint32_t windowBytes;  // each of the sequential read windows
    // The scatter's UB: a chunk of sortChunk keys and positions in, the same counting-sorted by
    // digit out with every digit's run starting on a 32-byte boundary (sortBytes in all).
    uint32_t sortBytes;
    int64_t sortChunk;
};

#endif  // JAGGED_UNIQUE_INDICES_TILING_DATA_H
