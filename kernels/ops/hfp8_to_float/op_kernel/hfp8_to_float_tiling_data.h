// Tiling struct of HFP8ToFloat.
#ifndef HFP8_TO_FLOAT_TILING_DATA_H
#define HFP8_TO_FLOAT_TILING_DATA_H

#include "codec_data.h"

struct HFP8ToFloatTilingData {
    mxrec::CodecRows stream;   // rows of one element, packed: input.numel() of them
    mxrec::Hfp8Format format;  // the attributes
};

#endif  // HFP8_TO_FLOAT_TILING_DATA_H
