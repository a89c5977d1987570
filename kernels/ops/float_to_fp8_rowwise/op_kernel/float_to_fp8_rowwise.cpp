// FloatToFP8Rowwise: each row of D floats becomes D HFP8 bytes, zeros to a multiple of 4, its
// fp32 scale and 4 zero bytes.
//
// fbgemm's arithmetic, step for step: the row's largest magnitude m, starting at 1e-20 and
// passing over NaN (std::max's comparison), scale = max_pos / (1e-20 + m) and each byte
// float_to_hfp8(x * scale) (hfp8_encode.h), every step rounded to fp32. The 910B has no fp8
// arithmetic: the scalar unit does all of it, the encoding in integer arithmetic.
//
// A stream of rows (codec_kernel.h), coded on the scalar unit.
#include "kernel_operator.h"
#include "codec_kernel.h"
#include "hfp8_encode.h"
#include "float_to_fp8_rowwise_tiling_data.h"

using namespace AscendC;

namespace {

constexpr float kEpsilon = 1e-20f;  // fbgemm's: a zero row divides by it, not by 0

class FloatToFP8Rowwise : public mxrec::CodecStream<FloatToFP8Rowwise, float, uint8_t> {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FloatToFP8RowwiseTilingData& td, TPipe* pipe) {
        fmt_ = td.format;
        InitStream(input, output, td.stream, pipe);
    }

    __aicore__ inline void CodeRow(const LocalTensor<float>& x, uint32_t src,
                                   LocalTensor<uint8_t>& out, uint32_t dst) {
        const uint32_t d = static_cast<uint32_t>(rows_.inWidth);
        float m = kEpsilon;
        for (uint32_t j = 0; j < d; ++j) {
            const float v = x.GetValue(src + j);
            const float a = v < 0.0f ? -v : v;
            m = m < a ? a : m;  // std::max(m, |x|): a NaN never replaces m
        }
        const float scale = fmt_.maxPos / (kEpsilon + m);
        for (uint32_t j = 0; j < d; ++j) {
            out.SetValue(dst + j, mxrec_hfp8::EncodeHfp8(x.GetValue(src + j) * scale, fmt_.ebits,
                                                         fmt_.bias, fmt_.maxPos));
        }
        PutTail(out, dst, scale);
    }

    __aicore__ inline void CodeEmptyRows(LocalTensor<uint8_t>& out, int64_t n) {
        for (int64_t r = 0; r < n; ++r)
            PutTail(out, static_cast<uint32_t>(r * rows_.outStride), 0.0f);  // fbgemm: zeros
    }

private:
    // Zeros up to the 4-byte-aligned scale, the scale's bytes, 4 zero bytes.
    __aicore__ inline void PutTail(LocalTensor<uint8_t>& out, uint32_t row, float scale) {
        const uint32_t at = row + static_cast<uint32_t>(rows_.outWidth - 8);
        mxrec::PutZeroBytes(out, row + static_cast<uint32_t>(rows_.inWidth), at);
        mxrec::PutFloatBytes(out, at, scale);
        mxrec::PutZeroBytes(out, at + 4, at + 8);
    }

    mxrec::Hfp8Format fmt_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "float_to_fp8_rowwise_kernel_entry.h"
