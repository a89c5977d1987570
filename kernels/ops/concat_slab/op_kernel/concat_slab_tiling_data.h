// Tiling struct of ConcatSlab.
#ifndef CONCAT_SLAB_TILING_DATA_H
#define CONCAT_SLAB_TILING_DATA_H

#include <cstdint>

// x is moved as `rows` rows of `width` contiguous elements; row r lands at
// y[yOffset + r * yRow]. cat_dim 0 is a single row (the slab is contiguous in y).
struct ConcatSlabTilingData {
    int64_t rows;
    int64_t width;
    int64_t yRow;           // elements between two rows of the slab in y
    int64_t yOffset;        // element offset of the slab's first element in y
    int64_t coreNum;        // core c moves elements SplitEven(rows * width, coreNum, c) of x
    uint32_t copyBufBytes;  // each of the two copy buffers
};

#endif  // CONCAT_SLAB_TILING_DATA_H
