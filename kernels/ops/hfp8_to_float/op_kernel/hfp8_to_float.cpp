// HFP8ToFloat: each HFP8 byte becomes its float (hfp8_decode.h: fbgemm's hfp8_to_float).
//
// A byte has 256 values: each core decodes them all once into a UB table on the scalar unit,
// then the vector unit does the rest per chunk: bytes -> half -> int32 (exact), times 4 (the
// table's byte offsets), and a Gather of the floats. Cores take even shares of the elements;
// bytes come in through a queue, floats leave in one DMA per chunk.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "hfp8_decode.h"
#include "hfp8_to_float_tiling_data.h"

using namespace AscendC;

namespace {

class HFP8ToFloat {
public:
    __aicore__ inline void Init(GM_ADDR input, GM_ADDR output, GM_ADDR /*workspace*/,
                                const HFP8ToFloatTilingData& td, TPipe* pipe) {
        td_ = td;
        inGm_.SetGlobalBuffer((__gm__ uint8_t*)input, td.count);
        outGm_.SetGlobalBuffer((__gm__ float*)output, td.count);
        const uint32_t n = static_cast<uint32_t>(td.chunkElems);
        pipe->InitBuffer(inQue_, 1, n);
        pipe->InitBuffer(halfBuf_, n * 2);
        pipe->InitBuffer(offBuf_, n * 4);
        pipe->InitBuffer(outBuf_, n * 4);
        pipe->InitBuffer(tableBuf_, 256 * 4);
    }

    __aicore__ inline void Process() {
        const mxrec::Span share = mxrec::SplitEven(td_.count, td_.coreNum, GetBlockIdx());
        if (share.begin == share.end)
            return;
        LocalTensor<float> table = tableBuf_.Get<float>();
        for (uint32_t code = 0; code < 256; ++code)
            table.SetValue(code, mxrec_hfp8::DecodeHfp8(code, td_.ebits, td_.bias));
        for (int64_t i = share.begin; i < share.end; i += td_.chunkElems)
            Chunk(i, mxrec::Min64(td_.chunkElems, share.end - i));
    }

private:
    __aicore__ inline void Chunk(int64_t at, int64_t n) {
        const uint32_t count = static_cast<uint32_t>(n);
        LocalTensor<uint8_t> in = inQue_.AllocTensor<uint8_t>();
        DataCopyExtParams load{1, count, 0, 0, 0};
        DataCopyPadExtParams<uint8_t> pad{false, 0, 0, 0};
        DataCopyPad(in, inGm_[at], load, pad);
        inQue_.EnQue(in);
        in = inQue_.DeQue<uint8_t>();
        LocalTensor<half> h = halfBuf_.Get<half>();
        LocalTensor<int32_t> off = offBuf_.Get<int32_t>();
        Cast(h, in, RoundMode::CAST_NONE, count);  // 0..255 are exact in half
        inQue_.FreeTensor(in);
        Cast(off, h, RoundMode::CAST_RINT, count);
        Muls(off, off, static_cast<int32_t>(sizeof(float)), static_cast<int32_t>(count));
        LocalTensor<float> out = outBuf_.Get<float>();
        if (!first_)
            mxrec::PipeSync<HardEvent::MTE3_V>();  // the previous chunk's floats have left
        first_ = false;
        Gather(out, tableBuf_.Get<float>(), off.ReinterpretCast<uint32_t>(), 0u, count);
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyExtParams store{1, count * 4, 0, 0, 0};
        DataCopyPad(outGm_[at], out, store);
    }

    HFP8ToFloatTilingData td_;
    bool first_ = true;
    GlobalTensor<uint8_t> inGm_;
    GlobalTensor<float> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> halfBuf_;
    TBuf<TPosition::VECCALC> offBuf_;
    TBuf<TPosition::VECCALC> outBuf_;
    TBuf<TPosition::VECCALC> tableBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "hfp8_to_float_kernel_entry.h"
