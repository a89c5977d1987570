// Tiling struct of FloatToFused8BitRowwise.
#ifndef FLOAT_TO_FUSED8BIT_ROWWISE_TILING_DATA_H
#define FLOAT_TO_FUSED8BIT_ROWWISE_TILING_DATA_H

#include "codec_data.h"

struct FloatToFused8BitRowwiseTilingData {
    // Rows of D floats in, rows of D + 8 bytes out (inWidth = D).
    mxrec::CodecRows stream;
};

#endif  // FLOAT_TO_FUSED8BIT_ROWWISE_TILING_DATA_H
