// FloatToFP8Rowwise: each row of D floats becomes D HFP8 bytes, zeros to a multiple of 4, its
// fp32 scale and 4 zero bytes.
//
// fbgemm's arithmetic, step for step: the row's largest magnitude m, starting at 1e-20 and
// passing over NaN (std::max's comparison), scale = max_pos / (1e-20 + m) and each byte
// float_to_hfp8(x * scale) (hfp8_encode.h), every step rounded to fp32. The 910B has no fp8
// arithmetic: the scalar unit does all of it, the encoding in integer arithmetic.
//
// Cores take even shares of the rows and move them through UB in chunks of whole rows, each
// row at a 32-byte-aligned stride; the rows leave in one DMA per chunk.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "hfp8_encode.h"
#include "float_to_fp8_rowwise_tiling_data.h"

using namespace AscendC;

namespace {

constexpr float kEpsilon = 1e-20f;  // fbgemm's: a zero row divides by it, not by 0

class FloatToFP8Rowwise {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FloatToFP8RowwiseTilingData& td, TPipe* pipe) {
        td_ = td;
        inGm_.SetGlobalBuffer((__gm__ float*)input, td.rows * td.dim);
        outGm_.SetGlobalBuffer((__gm__ uint8_t*)output, td.rows * td.outWidth);
        if (td.rowElems > 0)
            pipe->InitBuffer(inQue_, 1, static_cast<uint32_t>(td.chunkRows * td.rowElems * 4));
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
            for (int64_t r = 0; r < n; ++r)
                QuantizeRow(x, r, out);
            inQue_.FreeTensor(x);
        } else {
            for (int64_t r = 0; r < n; ++r)
                PutTail(out, r, 0.0f);  // fbgemm returns zeros for D = 0
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams copy{static_cast<uint16_t>(n), static_cast<uint32_t>(td_.outWidth), 0, 0,
                               0};
        DataCopyPad(outGm_[row0 * td_.outWidth], out, copy);
    }

    __aicore__ inline void QuantizeRow(const LocalTensor<float>& x, int64_t r,
                                       LocalTensor<uint8_t>& out) {
        const uint32_t src = static_cast<uint32_t>(r * td_.rowElems);
        const uint32_t dst = static_cast<uint32_t>(r * td_.outRowBytes);
        const uint32_t d = static_cast<uint32_t>(td_.dim);
        float m = kEpsilon;
        for (uint32_t j = 0; j < d; ++j) {
            const float v = x.GetValue(src + j);
            const float a = v < 0.0f ? -v : v;
            m = m < a ? a : m;  // std::max(m, |x|): a NaN never replaces m
        }
        const float scale = td_.maxPos / (kEpsilon + m);
        for (uint32_t j = 0; j < d; ++j) {
            out.SetValue(dst + j, mxrec_hfp8::EncodeHfp8(x.GetValue(src + j) * scale, td_.ebits,
                                                         td_.bias, td_.maxPos));
        }
        PutTail(out, r, scale);
    }

    // Zeros up to the 4-byte-aligned scale, the scale's bytes, 4 zero bytes.
    __aicore__ inline void PutTail(LocalTensor<uint8_t>& out, int64_t r, float scale) {
        mxrec_hfp8::Bits32 s;
        s.f = scale;
        const uint32_t row = static_cast<uint32_t>(r * td_.outRowBytes);
        const uint32_t at = static_cast<uint32_t>(td_.outWidth - 8);
        for (uint32_t j = static_cast<uint32_t>(td_.dim); j < at; ++j)
            out.SetValue(row + j, static_cast<uint8_t>(0));
        for (uint32_t k = 0; k < 4; ++k) {
            out.SetValue(row + at + k, static_cast<uint8_t>(s.u >> (8 * k)));
            out.SetValue(row + at + 4 + k, static_cast<uint8_t>(0));
        }
    }

    FloatToFP8RowwiseTilingData td_;
    bool first_ = true;
    GlobalTensor<float> inGm_;
    GlobalTensor<uint8_t> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> outBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "float_to_fp8_rowwise_kernel_entry.h"
