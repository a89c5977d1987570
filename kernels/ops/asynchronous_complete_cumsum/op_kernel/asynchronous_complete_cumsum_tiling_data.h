// Tiling struct of AsynchronousCompleteCumsum (standard C++ POD, registered in the kernel with
// REGISTER_TILING_DEFAULT; CANN keeps it under op_kernel so that it ships with the kernel sources).
#ifndef ASYNCHRONOUS_COMPLETE_CUMSUM_TILING_DATA_H
#define ASYNCHRONOUS_COMPLETE_CUMSUM_TILING_DATA_H

#include <cstdint>

struct AsynchronousCompleteCumsumTilingData {
    int64_t rows;     // R (1 for a 1-D input)
    int64_t cols;     // N
    int64_t chunk;    // elements a core scans per step (fits its unified buffer)
    int64_t coreNum;  // cores taking part (== blockDim)
};

// Tiling keys.
#define CUMSUM_KEY_SCAN 1  // every core scans a slice of each row; SyncAll per step
#define CUMSUM_KEY_ROWS 2  // rows are split over cores; each core scans whole rows

#endif  // ASYNCHRONOUS_COMPLETE_CUMSUM_TILING_DATA_H
