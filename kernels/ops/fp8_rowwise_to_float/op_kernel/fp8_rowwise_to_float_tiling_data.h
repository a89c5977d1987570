// Tiling struct of FP8RowwiseToFloat.
#ifndef FP8_ROWWISE_TO_FLOAT_TILING_DATA_H
#define FP8_ROWWISE_TO_FLOAT_TILING_DATA_H

#include "codec_data.h"

struct FP8RowwiseToFloatTilingData {
    // Rows of W bytes in, rows of ceil4(W) - 8 floats out (outWidth, also the scale's offset).
    mxrec::CodecRows stream;
    mxrec::Hfp8Format format;  // Fp8RowwiseFormat(forward)
};

#endif  // FP8_ROWWISE_TO_FLOAT_TILING_DATA_H
