// Tiling struct of BoundsCheckIndices.
#ifndef BOUNDS_CHECK_INDICES_TILING_DATA_H
#define BOUNDS_CHECK_INDICES_TILING_DATA_H

#include <cstdint>

struct BoundsCheckIndicesTilingData {
    int64_t tables;      // T
    int64_t totalB;      // total_B = offsets.size(0) - 1
    int64_t batch;       // B = total_B / T (without VBE)
    int64_t numIndices;  // N
    int64_t mode;        // 0 fatal, 1 warning, 2 ignore
    int64_t vbe;         // b_offsets given
    int64_t
        writeOffsets;  // correct offsets in place (warning/ignore, offsets dtype == indices dtype)
    int64_t coreNum;
    int64_t chunk;    // elements of offsets or indices per UB piece
    int64_t wsMax;    // workspace byte offsets: per-core running-max slots,
    int64_t wsCount;  //   per-core violation counts,
    int64_t wsTable;  //   corrected offsets at table boundaries (T + 1 int64)
    uint32_t pieceBytes;
    uint32_t reserved;
};

#define BCI_KEY_CHECK 1
#define BCI_KEY_NONE 2  // mode 3 (none): nothing to do

#endif  // BOUNDS_CHECK_INDICES_TILING_DATA_H
