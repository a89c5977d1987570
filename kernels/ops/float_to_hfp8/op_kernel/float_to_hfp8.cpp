// FloatToHFP8: each float becomes one HFP8 byte (hfp8_encode.h: fbgemm's float_to_hfp8, in
// integer arithmetic on the scalar unit; the 910B has no fp8 arithmetic).
//
// Cores take even shares of the elements and move them through UB in chunks: floats in
// through a queue, bytes out of a staging buffer in one DMA per chunk.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "hfp8_encode.h"
#include "float_to_hfp8_tiling_data.h"

using namespace AscendC;

namespace {

class FloatToHFP8 {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const FloatToHFP8TilingData& td, TPipe* pipe) {
        td_ = td;
        inGm_.SetGlobalBuffer((__gm__ float*)input, td.count);
        outGm_.SetGlobalBuffer((__gm__ uint8_t*)output, td.count);
        pipe->InitBuffer(inQue_, 1, static_cast<uint32_t>(td.chunkElems * 4));
        pipe->InitBuffer(outBuf_, static_cast<uint32_t>(td.chunkElems));
    }

    __aicore__ inline void Process() {
        const mxrec::Span share = mxrec::SplitEven(td_.count, td_.coreNum, GetBlockIdx());
        for (int64_t i = share.begin; i < share.end; i += td_.chunkElems)
            Chunk(i, mxrec::Min64(td_.chunkElems, share.end - i));
    }

private:
    __aicore__ inline void Chunk(int64_t at, int64_t n) {
        LocalTensor<float> x = inQue_.AllocTensor<float>();
        DataCopyExtParams in{1, static_cast<uint32_t>(n * 4), 0, 0, 0};
        DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
        DataCopyPad(x, inGm_[at], in, pad);
        inQue_.EnQue(x);
        x = inQue_.DeQue<float>();
        mxrec::PipeSync<HardEvent::MTE2_S>();  // the queue orders MTE2 before V only
        LocalTensor<uint8_t> out = outBuf_.Get<uint8_t>();
        if (!first_)
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous chunk's bytes have left
        first_ = false;
        for (uint32_t j = 0; j < static_cast<uint32_t>(n); ++j)
            out.SetValue(j, mxrec_hfp8::EncodeHfp8(x.GetValue(j), td_.ebits, td_.bias, td_.maxPos));
        inQue_.FreeTensor(x);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams copy{1, static_cast<uint32_t>(n), 0, 0, 0};
        DataCopyPad(outGm_[at], out, copy);
    }

    FloatToHFP8TilingData td_;
    bool first_ = true;
    GlobalTensor<float> inGm_;
    GlobalTensor<uint8_t> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> outBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "float_to_hfp8_kernel_entry.h"
