// The parts of a codec's tiling struct that the codec kernels (codec_kernel.h) read.
//
// CodecRows: the rows a codec streams from one tensor into another, each core's share and the UB
// layout of a chunk. The row-wise codecs (float_to_fused8bit_rowwise, fused8bit_rowwise_to_float,
// float_to_fp8_rowwise, fp8_rowwise_to_float) turn a row of the input's last dim into a row of
// the output's; the element-wise ones (float_to_hfp8, hfp8_to_float) are the same stream of
// rows of one element, packed in UB. Hfp8Format: the FP8 and HFP8 codecs' byte format.
// Host tiling (codec_tiling.h) and kernel both read them, so this includes nothing else.
#ifndef MXREC_CODEC_DATA_H
#define MXREC_CODEC_DATA_H

#include <cstdint>

namespace mxrec {

struct CodecRows {
    int64_t rows;       // the input's leading dims' product (element-wise: its elements)
    int64_t coreNum;    // core c codes the rows SplitEven(rows, coreNum, c)
    int64_t chunkRows;  // rows per pass through UB
    int64_t inWidth;    // elements of an input row in global memory
    int64_t outWidth;   // elements of an output row in global memory
    // A row's UB stride, in elements: its width rounded up to whole 32-byte blocks, or the width
    // itself when the rows are packed (one DMA then moves the whole chunk).
    int64_t inStride;
    int64_t outStride;
};

// A byte of sign, ebits exponent bits (bias `bias`) and 7 - ebits mantissa bits (hfp8_encode.h,
// hfp8_decode.h); maxPos, the encoders' clamp, is 0 for a decoder.
struct Hfp8Format {
    int32_t ebits;  // 1..7
    int32_t bias;   // 1..127
    float maxPos;   // positive and below 2^100
    uint32_t pad;
};

}  // namespace mxrec

#endif  // MXREC_CODEC_DATA_H
