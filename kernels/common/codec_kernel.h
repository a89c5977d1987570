// The kernel side of the codecs (AscendC, device code): CodecStream streams a codec's rows
// (codec_data.h) from the input through UB into the output, and the derived operator codes each
// chunk of rows.
//
// Cores take even shares of the rows (SplitEven) and move them through UB in chunks of whole
// rows, each row at its UB stride: rows in through a queue, in one DMA per chunk (a block per row
// when the rows are padded to whole blocks), coded into a staging buffer, and out in one DMA.
// The derived class (CRTP) codes a chunk of n rows with
//     CodeRows(const LocalTensor<InT>& in, LocalTensor<OutT>& out, int64_t n)
// or, by default, each row on its own with
//     CodeRow(const LocalTensor<InT>& in, uint32_t src, LocalTensor<OutT>& out, uint32_t dst)
// (the row's UB offsets); it may provide Prepare() (once per core with rows, before the first
// chunk) and CodeEmptyRows(out, n) (rows whose input is empty: a quantiser's D = 0 still writes a
// scale). kVector says which unit reads the input and writes the output, the scalar unit
// (GetValue/SetValue) or the vector unit: the syncs of the staging buffer, which sits outside a
// queue, are that unit's.
//
// Also the bytes of an fp32 scale in a row of bytes, at any offset (the rows need not be whole
// words), which the row-wise codecs write and read.
#ifndef MXREC_CODEC_KERNEL_H
#define MXREC_CODEC_KERNEL_H

#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "codec_data.h"

namespace mxrec {

union CodecWord {
    float f;
    uint32_t u;
};

// The little-endian bytes of `v` at out[at, at + 4).
__aicore__ inline void PutFloatBytes(AscendC::LocalTensor<uint8_t>& out, uint32_t at, float v) {
    CodecWord w;
    w.f = v;
    for (uint32_t k = 0; k < 4; ++k)
        out.SetValue(at + k, static_cast<uint8_t>(w.u >> (8 * k)));
}

// The float whose little-endian bytes are in[at, at + 4).
__aicore__ inline float GetFloatBytes(const AscendC::LocalTensor<uint8_t>& in, uint32_t at) {
    CodecWord w;
    w.u = 0;
    for (uint32_t k = 0; k < 4; ++k)
        w.u |= static_cast<uint32_t>(in.GetValue(at + k)) << (8 * k);
    return w.f;
}

// Zero bytes at out[begin, end).
__aicore__ inline void PutZeroBytes(AscendC::LocalTensor<uint8_t>& out, uint32_t begin,
                                    uint32_t end) {
    for (uint32_t j = begin; j < end; ++j)
        out.SetValue(j, static_cast<uint8_t>(0));
}

template <typename Derived, typename InT, typename OutT, bool kVector = false>
class CodecStream {
public:
    __aicore__ inline void Process() {
        if (rows_.outWidth == 0)
            return;  // nothing to write
        const Span share = SplitEven(rows_.rows, rows_.coreNum, AscendC::GetBlockIdx());
        if (share.begin == share.end)
            return;
        Self().Prepare();
        for (int64_t r = share.begin; r < share.end; r += rows_.chunkRows)
            Chunk(r, Min64(rows_.chunkRows, share.end - r));
    }

protected:
    __aicore__ inline Derived& Self() { return *static_cast<Derived*>(this); }

    __aicore__ inline void InitStream(GM_ADDR input, GM_ADDR output, const CodecRows& rows,
                                      AscendC::TPipe* pipe) {
        rows_ = rows;
        inGm_.SetGlobalBuffer((__gm__ InT*)input, rows.rows * rows.inWidth);
        outGm_.SetGlobalBuffer((__gm__ OutT*)output, rows.rows * rows.outWidth);
        if (rows.inStride > 0) {
            pipe->InitBuffer(inQue_, 1,
                             static_cast<uint32_t>(ChunkElems(rows.inStride) * sizeof(InT)));
        }
        if (rows.outStride > 0) {
            pipe->InitBuffer(outBuf_,
                             static_cast<uint32_t>(ChunkElems(rows.outStride) * sizeof(OutT)));
        }
    }

    // Elements of a chunk's buffer for rows of stride `stride`.
    __aicore__ inline int64_t ChunkElems(int64_t stride) const { return rows_.chunkRows * stride; }

    __aicore__ inline void CodeRows(const AscendC::LocalTensor<InT>& in,
                                    AscendC::LocalTensor<OutT>& out, int64_t n) {
        for (int64_t r = 0; r < n; ++r) {
            Self().CodeRow(in, static_cast<uint32_t>(r * rows_.inStride), out,
                           static_cast<uint32_t>(r * rows_.outStride));
        }
    }
    __aicore__ inline void Prepare() {}
    __aicore__ inline void CodeEmptyRows(AscendC::LocalTensor<OutT>& /*out*/, int64_t /*n*/) {}

    CodecRows rows_;

private:
    static constexpr AscendC::HardEvent kOutFree =
        kVector ? AscendC::HardEvent::MTE3_V : AscendC::HardEvent::MTE3_S;
    static constexpr AscendC::HardEvent kOutReady =
        kVector ? AscendC::HardEvent::V_MTE3 : AscendC::HardEvent::S_MTE3;

    __aicore__ inline void Chunk(int64_t row0, int64_t n) {
        AscendC::LocalTensor<OutT> out = outBuf_.template Get<OutT>();
        if (rows_.inWidth > 0) {
            AscendC::LocalTensor<InT> in = inQue_.template AllocTensor<InT>();
            AscendC::DataCopyPadExtParams<InT> pad{false, 0, 0, static_cast<InT>(0)};
            AscendC::DataCopyPad(in, inGm_[row0 * rows_.inWidth],
                                 Rows(n, rows_.inWidth, rows_.inStride, sizeof(InT)), pad);
            inQue_.EnQue(in);
            in = inQue_.template DeQue<InT>();
            if constexpr (!kVector)
                PipeSync<AscendC::HardEvent::MTE2_S>();  // the queue orders MTE2 before V only
            WaitOutFree();
            Self().CodeRows(in, out, n);
            inQue_.FreeTensor(in);
        } else {
            WaitOutFree();
            Self().CodeEmptyRows(out, n);
        }
        PipeSync<kOutReady>();
        AscendC::DataCopyPad(outGm_[row0 * rows_.outWidth], out,
                             Rows(n, rows_.outWidth, rows_.outStride, sizeof(OutT)));
    }

    // The previous chunk's output has left the staging buffer.
    __aicore__ inline void WaitOutFree() {
        if (!first_)
            PipeSync<kOutFree>();
        first_ = false;
    }

    // n rows of `width` elements: one block each at their padded strides, or one block of all
    // of them when the rows are packed.
    __aicore__ inline AscendC::DataCopyExtParams Rows(int64_t n, int64_t width, int64_t stride,
                                                      uint32_t elemBytes) const {
        if (stride == width) {
            return AscendC::DataCopyExtParams{1, static_cast<uint32_t>(n * width * elemBytes), 0, 0,
                                              0};
        }
        return AscendC::DataCopyExtParams{static_cast<uint16_t>(n),
                                          static_cast<uint32_t>(width * elemBytes), 0, 0, 0};
    }

    bool first_ = true;
    AscendC::GlobalTensor<InT> inGm_;
    AscendC::GlobalTensor<OutT> outGm_;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQue_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> outBuf_;
};

}  // namespace mxrec

#endif  // MXREC_CODEC_KERNEL_H
