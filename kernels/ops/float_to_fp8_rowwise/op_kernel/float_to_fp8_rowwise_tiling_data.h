// Tiling struct of FloatToFP8Rowwise.
#ifndef FLOAT_TO_FP8_ROWWISE_TILING_DATA_H
#define FLOAT_TO_FP8_ROWWISE_TILING_DATA_H

#include "codec_data.h"

struct FloatToFP8RowwiseTilingData {
    // Rows of D floats in, rows of ceil4(D) + 8 bytes out (inWidth = D).
    mxrec::CodecRows stream;
    mxrec::Hfp8Format format;  // Fp8RowwiseFormat(forward)
};

#endif  // FLOAT_TO_FP8_ROWWISE_TILING_DATA_H
