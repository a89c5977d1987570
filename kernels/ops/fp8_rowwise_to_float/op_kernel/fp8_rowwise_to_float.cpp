// FP8RowwiseToFloat: each row of HFP8 bytes and its fp32 scale becomes floats
// hfp8_to_float(code) / scale.
//
// Each core decodes the 256 codes once into a UB table (hfp8_decode.h, exact); per element the
// scalar unit looks the code up and divides by the row's scale, one fp32 rounding as fbgemm's
// division (the 910B has no fp8 arithmetic, and a vector reciprocal would round twice).
//
// Cores take even shares of the rows and move them through UB in chunks of whole rows, each
// row at a 32-byte-aligned stride; the floats leave in one DMA per chunk.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "hfp8_decode.h"
#include "fp8_rowwise_to_float_tiling_data.h"

using namespace AscendC;

namespace {

class FP8RowwiseToFloat {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FP8RowwiseToFloatTilingData& td, TPipe* pipe) {
        td_ = td;
        inGm_.SetGlobalBuffer((__gm__ uint8_t*)input, td.rows * td.width);
        outGm_.SetGlobalBuffer((__gm__ float*)output, td.rows * td.dim);
        pipe->InitBuffer(inQue_, 1, static_cast<uint32_t>(td.chunkRows * td.inRowBytes));
        if (td.rowElems > 0)
            pipe->InitBuffer(outBuf_, static_cast<uint32_t>(td.chunkRows * td.rowElems * 4));
        pipe->InitBuffer(tableBuf_, 256 * 4);
    }

    __aicore__ inline void Process() {
        if (td_.dim == 0)
            return;  // nothing to write
        const mxrec::Span share = mxrec::SplitEven(td_.rows, td_.coreNum, GetBlockIdx());
        if (share.begin == share.end)
            return;
        table_ = tableBuf_.Get<float>();
        for (uint32_t code = 0; code < 256; ++code)
            table_.SetValue(code, mxrec_hfp8::DecodeHfp8(code, td_.ebits, td_.bias));
        for (int64_t r = share.begin; r < share.end; r += td_.chunkRows)
            Chunk(r, mxrec::Min64(td_.chunkRows, share.end - r));
    }

private:
    __aicore__ inline void Chunk(int64_t row0, int64_t n) {
        const int64_t w = td_.width;
        const uint32_t d = static_cast<uint32_t>(td_.dim);
        LocalTensor<uint8_t> in = inQue_.AllocTensor<uint8_t>();
        DataCopyExtParams load{static_cast<uint16_t>(n), static_cast<uint32_t>(w), 0, 0, 0};
        DataCopyPadExtParams<uint8_t> pad{false, 0, 0, 0};
        DataCopyPad(in, inGm_[row0 * w], load, pad);
        inQue_.EnQue(in);
        in = inQue_.DeQue<uint8_t>();
        mxrec::PipeSync<HardEvent::MTE2_S>();  // the queue orders MTE2 before V only
        LocalTensor<float> out = outBuf_.Get<float>();
        if (!first_)
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous chunk's floats have left
        first_ = false;
        for (int64_t r = 0; r < n; ++r) {
            const uint32_t src = static_cast<uint32_t>(r * td_.inRowBytes);
            const uint32_t dst = static_cast<uint32_t>(r * td_.rowElems);
            const float scale = ReadFloat(in, src + d);
            for (uint32_t j = 0; j < d; ++j)
                out.SetValue(dst + j, table_.GetValue(in.GetValue(src + j)) / scale);
        }
        inQue_.FreeTensor(in);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams store{static_cast<uint16_t>(n), d * 4, 0, 0, 0};
        DataCopyPad(outGm_[row0 * td_.dim], out, store);
    }

    // The fp32 scale, assembled byte by byte (W need not be a multiple of 4).
    __aicore__ inline float ReadFloat(const LocalTensor<uint8_t>& in, uint32_t at) {
        mxrec_hfp8::DecodedBits v;
        v.u = 0;
        for (uint32_t k = 0; k < 4; ++k)
            v.u |= static_cast<uint32_t>(in.GetValue(at + k)) << (8 * k);
        return v.f;
    }

    FP8RowwiseToFloatTilingData td_;
    bool first_ = true;
    GlobalTensor<uint8_t> inGm_;
    GlobalTensor<float> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> outBuf_;
    TBuf<TPosition::VECCALC> tableBuf_;
    LocalTensor<float> table_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "fp8_rowwise_to_float_kernel_entry.h"
