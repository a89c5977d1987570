// FloatToHFP8: each float becomes one HFP8 byte (hfp8_encode.h: fbgemm's float_to_hfp8, in
// integer arithmetic on the scalar unit; the 910B has no fp8 arithmetic).
//
// A stream of rows of one element (codec_kernel.h): floats in through a queue, bytes out of a
// staging buffer in one DMA per chunk.
#include "kernel_operator.h"
#include "codec_kernel.h"
#include "hfp8_encode.h"
#include "float_to_hfp8_tiling_data.h"

using namespace AscendC;

namespace {

class FloatToHFP8 : public mxrec::CodecStream<FloatToHFP8, float, uint8_t> {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FloatToHFP8TilingData& td, TPipe* pipe) {
        fmt_ = td.format;
        InitStream(input, output, td.stream, pipe);
    }

    __aicore__ inline void CodeRow(const LocalTensor<float>& x, uint32_t src,
                                   LocalTensor<uint8_t>& out, uint32_t dst) {
        out.SetValue(dst,
                     mxrec_hfp8::EncodeHfp8(x.GetValue(src), fmt_.ebits, fmt_.bias, fmt_.maxPos));
    }

private:
    mxrec::Hfp8Format fmt_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "float_to_hfp8_kernel_entry.h"
