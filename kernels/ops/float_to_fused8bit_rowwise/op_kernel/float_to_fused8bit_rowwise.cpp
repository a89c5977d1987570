// FloatToFused8BitRowwise: each row of D floats becomes D bytes, its fp32 scale and fp32 bias.
//
// fbgemm's arithmetic, step for step, so that the bytes equal its CPU op's: min and max of the
// row, range = max - min, scale = range / 255, bias = min, and each byte
// round_half_even((x - min) * (255 / (range + 1e-8))) saturated to [0, 255], every step
// rounded to fp32 (no fused multiply-add). An empty row gets min = FLT_MAX and max = -FLT_MAX,
// fbgemm's starting values, hence scale -inf and bias FLT_MAX.
//
// A stream of rows (codec_kernel.h). Per chunk the scalar unit finds each row's min and max;
// the vector unit shifts and scales the row in place and rounds the chunk to int32 (CAST_RINT);
// the scalar unit saturates the values to bytes and appends the scale and bias bytes (the output
// row is D + 8 bytes, so they sit at any byte offset).
#include "kernel_operator.h"
#include "codec_kernel.h"
#include "float_to_fused8bit_rowwise_tiling_data.h"

using namespace AscendC;

namespace {

constexpr float kFloatMax = 3.40282347e+38f;
constexpr float kEpsilon = 1e-8f;  // fbgemm's QEPSILON: a constant row divides by it, not by 0

class FloatToFused8BitRowwise : public mxrec::CodecStream<FloatToFused8BitRowwise, float, uint8_t> {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FloatToFused8BitRowwiseTilingData& td, TPipe* pipe) {
        InitStream(input, output, td.stream, pipe);
        if (td.stream.inStride > 0)
            pipe->InitBuffer(qBuf_, static_cast<uint32_t>(ChunkElems(td.stream.inStride) * 4));
    }

    __aicore__ inline void CodeRows(const LocalTensor<float>& x, LocalTensor<uint8_t>& out,
                                    int64_t n) {
        const int64_t d = rows_.inWidth;
        LocalTensor<int32_t> q = qBuf_.Get<int32_t>();
        for (int64_t r = 0; r < n; ++r)
            QuantizeRow(x[r * rows_.inStride], out, r);
        Cast(q, x, RoundMode::CAST_RINT, static_cast<uint32_t>(n * rows_.inStride));
        for (int64_t r = 0; r < n; ++r) {
            const int64_t src = r * rows_.inStride;
            const int64_t dst = r * rows_.outStride;
            for (int64_t j = 0; j < d; ++j) {
                // _mm256_packus_epi16's saturation: NaN rounds to INT_MIN, hence 0.
                const int32_t v = q.GetValue(static_cast<uint32_t>(src + j));
                const int32_t b = v < 0 ? 0 : (v > 255 ? 255 : v);
                out.SetValue(static_cast<uint32_t>(dst + j), static_cast<uint8_t>(b));
            }
        }
    }

    __aicore__ inline void CodeEmptyRows(LocalTensor<uint8_t>& out, int64_t n) {
        for (int64_t r = 0; r < n; ++r)
            PutScaleBias(out, r, -kFloatMax - kFloatMax, kFloatMax);  // range -inf
    }

private:
    // The row's min and max on the scalar unit; its bytes' scale and bias; the row shifted
    // and scaled in place on the vector unit, ready for the rounding cast.
    __aicore__ inline void QuantizeRow(const LocalTensor<float>& row, LocalTensor<uint8_t>& out,
                                       int64_t r) {
        float lo = kFloatMax;
        float hi = -kFloatMax;
        for (int64_t j = 0; j < rows_.inWidth; ++j) {
            const float v = row.GetValue(static_cast<uint32_t>(j));
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        const float range = hi - lo;
        PutScaleBias(out, r, range, lo);
        const float inverse = 255.0f / (range + kEpsilon);
        const int32_t count = static_cast<int32_t>(rows_.inWidth);
        Adds(row, row, -lo, count);  // x + (-min) is x - min exactly
        Muls(row, row, inverse, count);
    }

    __aicore__ inline void PutScaleBias(LocalTensor<uint8_t>& out, int64_t r, float range,
                                        float bias) {
        const uint32_t at = static_cast<uint32_t>(r * rows_.outStride + rows_.inWidth);
        mxrec::PutFloatBytes(out, at, range / 255.0f);
        mxrec::PutFloatBytes(out, at + 4, bias);
    }

    TBuf<TPosition::VECCALC> qBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "float_to_fused8bit_rowwise_kernel_entry.h"
