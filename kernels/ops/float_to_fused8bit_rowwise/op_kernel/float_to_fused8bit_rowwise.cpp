// FloatToFused8BitRowwise: each row of D floats becomes D bytes, its fp32 scale and fp32 bias.
//
// fbgemm's arithmetic, step for step, so that the bytes equal its CPU op's: min and max of the
// row, range = max - min, scale = range / 255, bias = min, and each byte
// round_half_even((x - min) * (255 / (range + 1e-8))) saturated to [0, 255], every step
// rounded to fp32 (no fused multiply-add). An empty row gets min = FLT_MAX and max = -FLT_MAX,
// fbgemm's starting values, hence scale -inf and bias FLT_MAX.
//
// Cores take even shares of the rows and move them through UB in chunks of whole rows, each
// row at a 32-byte-aligned stride. The scalar unit finds a row's min and max; the vector unit
// shifts and scales it in place and rounds it to int32 (CAST_RINT); the scalar unit saturates
// the values to bytes and appends the scale and bias bytes (the output row is D + 8 bytes, so
// they sit at any byte offset), and the rows leave in one DMA.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "float_to_fused8bit_rowwise_tiling_data.h"

using namespace AscendC;

namespace {

constexpr float kFloatMax = 3.40282347e+38f;
constexpr float kEpsilon = 1e-8f;  // fbgemm's QEPSILON: a constant row divides by it, not by 0

union FloatBits {
    float f;
    uint32_t u;
};

class FloatToFused8BitRowwise {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FloatToFused8BitRowwiseTilingData& td, TPipe* pipe) {
        td_ = td;
        inGm_.SetGlobalBuffer((__gm__ float*)input, td.rows * td.dim);
        outGm_.SetGlobalBuffer((__gm__ uint8_t*)output, td.rows * (td.dim + 8));
        const uint32_t rowsBytes = static_cast<uint32_t>(td.chunkRows * td.rowElems * 4);
        if (rowsBytes > 0) {
            pipe->InitBuffer(inQue_, 1, rowsBytes);
            pipe->InitBuffer(qBuf_, rowsBytes);
        }
        pipe->InitBuffer(outBuf_, static_cast<uint32_t>(td.chunkRows * td.outRowBytes));
    }

    __aicore__ inline void Process() {
        const mxrec::Span share = mxrec::SplitEven(td_.rows, td_.coreNum, GetBlockIdx());
        for (int64_t r = share.begin; r < share.end; r += td_.chunkRows)
            Chunk(r, mxrec::Min64(td_.chunkRows, share.end - r));
    }

private:
    __aicore__ inline void Chunk(int64_t row0, int64_t n) {
        const int64_t d = td_.dim;
        LocalTensor<uint8_t> out = outBuf_.Get<uint8_t>();
        if (!first_)
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous chunk's bytes have left
        first_ = false;
        if (d > 0) {
            LocalTensor<float> x = inQue_.AllocTensor<float>();
            DataCopyExtParams in{static_cast<uint16_t>(n), static_cast<uint32_t>(d * 4), 0, 0, 0};
            DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
            DataCopyPad(x, inGm_[row0 * d], in, pad);
            inQue_.EnQue(x);
            x = inQue_.DeQue<float>();
            mxrec::PipeSync<HardEvent::MTE2_S>();  // the queue orders MTE2 before V only
            LocalTensor<int32_t> q = qBuf_.Get<int32_t>();
            for (int64_t r = 0; r < n; ++r)
                QuantizeRow(x[r * td_.rowElems], out, r);
            Cast(q, x, RoundMode::CAST_RINT, static_cast<uint32_t>(n * td_.rowElems));
            inQue_.FreeTensor(x);
            for (int64_t r = 0; r < n; ++r) {
                const int64_t src = r * td_.rowElems;
                const int64_t dst = r * td_.outRowBytes;
                for (int64_t j = 0; j < d; ++j) {
                    // _mm256_packus_epi16's saturation: NaN rounds to INT_MIN, hence 0.
                    const int32_t v = q.GetValue(static_cast<uint32_t>(src + j));
                    const int32_t b = v < 0 ? 0 : (v > 255 ? 255 : v);
                    out.SetValue(static_cast<uint32_t>(dst + j), static_cast<uint8_t>(b));
                }
            }
        } else {
            for (int64_t r = 0; r < n; ++r)
                PutScaleBias(out, r, -kFloatMax - kFloatMax, kFloatMax);  // range -inf
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams copy{static_cast<uint16_t>(n), static_cast<uint32_t>(d + 8), 0, 0, 0};
        DataCopyPad(outGm_[row0 * (d + 8)], out, copy);
    }

    // The row's min and max on the scalar unit; its bytes' scale and bias; the row shifted
    // and scaled in place on the vector unit, ready for the rounding cast.
    __aicore__ inline void QuantizeRow(const LocalTensor<float>& row, LocalTensor<uint8_t>& out,
                                       int64_t r) {
        float lo = kFloatMax;
        float hi = -kFloatMax;
        for (int64_t j = 0; j < td_.dim; ++j) {
            const float v = row.GetValue(static_cast<uint32_t>(j));
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        const float range = hi - lo;
        PutScaleBias(out, r, range, lo);
        const float inverse = 255.0f / (range + kEpsilon);
        const int32_t count = static_cast<int32_t>(td_.dim);
        Adds(row, row, -lo, count);  // x + (-min) is x - min exactly
        Muls(row, row, inverse, count);
    }

    __aicore__ inline void PutScaleBias(LocalTensor<uint8_t>& out, int64_t r, float range,
                                        float bias) {
        FloatBits scale;
        scale.f = range / 255.0f;
        FloatBits b;
        b.f = bias;
        const uint32_t at = static_cast<uint32_t>(r * td_.outRowBytes + td_.dim);
        for (uint32_t k = 0; k < 4; ++k) {
            out.SetValue(at + k, static_cast<uint8_t>(scale.u >> (8 * k)));
            out.SetValue(at + 4 + k, static_cast<uint8_t>(b.u >> (8 * k)));
        }
    }

    FloatToFused8BitRowwiseTilingData td_;
    bool first_ = true;
    GlobalTensor<float> inGm_;
    GlobalTensor<uint8_t> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> qBuf_;
    TBuf<TPosition::VECCALC> outBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "float_to_fused8bit_rowwise_kernel_entry.h"
