// Tiling struct of FloatToHFP8.
#ifndef FLOAT_TO_HFP8_TILING_DATA_H
#define FLOAT_TO_HFP8_TILING_DATA_H

#include "codec_data.h"

struct FloatToHFP8TilingData {
    mxrec::CodecRows stream;   // rows of one element, packed: input.numel() of them
    mxrec::Hfp8Format format;  // the attributes
};

#endif  // FLOAT_TO_HFP8_TILING_DATA_H
