// Tiling struct of Fused8BitRowwiseToFloat.
#ifndef FUSED8BIT_ROWWISE_TO_FLOAT_TILING_DATA_H
#define FUSED8BIT_ROWWISE_TO_FLOAT_TILING_DATA_H

#include "codec_data.h"

struct Fused8BitRowwiseToFloatTilingData {
    // Rows of D + 8 bytes in, rows of D floats out (outWidth = D).
    mxrec::CodecRows stream;
};

#endif  // FUSED8BIT_ROWWISE_TO_FLOAT_TILING_DATA_H
