// GatherForRank1: out[i] = x[index[i]].
//
// Indices stream through a queue (DataCopyPad in), are checked on the scalar unit (an index
// outside [0, N) traps, as torch raises), turned into byte offsets with vector Cast/Muls and
// gathered from x resident in UB with the vector Gather (16/32-bit types); the results stream out
// through a second queue. 64-bit values, or an x too large for UB, are gathered with scalar
// reads.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "gather_for_rank1_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T, typename TI>
class GatherForRank1 {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR index, GM_ADDR out, GM_ADDR /*workspace*/,
                                const GatherForRank1TilingData& td, TPipe* pipe) {
        td_ = td;
        xGm_.SetGlobalBuffer((__gm__ T*)x, td.xLen);
        idxGm_.SetGlobalBuffer((__gm__ TI*)index, td.indexLen);
        outGm_.SetGlobalBuffer((__gm__ T*)out, td.indexLen);
        pipe->InitBuffer(inQue_, 2, td.idxBufBytes);  // double buffered: DMA overlaps the gather
        pipe->InitBuffer(outQue_, 2, td.outBufBytes);
        pipe->InitBuffer(offBuf_, td.offBufBytes);
        if (TILING_KEY_IS(GATHER_KEY_UB)) {
            resident_ = true;
        } else if (TILING_KEY_IS(GATHER_KEY_GM)) {
            resident_ = false;
        }
        if (resident_) {
            pipe->InitBuffer(xBuf_, td.xBufBytes);
            LocalTensor<T> xs = xBuf_.Get<T>();
            DataCopyExtParams copy{1, static_cast<uint32_t>(td.xLen * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
            DataCopyPad(xs, xGm_, copy, pad);
            mxrec::PipeSync<HardEvent::MTE2_V>();
            mxrec::PipeSync<HardEvent::MTE2_S>();
        }
    }

    __aicore__ inline void Process() {
        const mxrec::Span span = mxrec::SplitEven(td_.indexLen, td_.coreNum, GetBlockIdx());
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.chunk) {
            const int64_t n = mxrec::Min64(td_.chunk, span.end - i0);
            LocalTensor<TI> idx = inQue_.AllocTensor<TI>();
            DataCopyExtParams in{1, static_cast<uint32_t>(n * sizeof(TI)), 0, 0, 0};
            DataCopyPadExtParams<TI> pad{false, 0, 0, static_cast<TI>(0)};
            DataCopyPad(idx, idxGm_[i0], in, pad);
            inQue_.EnQue(idx);
            idx = inQue_.DeQue<TI>();
            LocalTensor<T> vals = outQue_.AllocTensor<T>();
            GatherChunk(vals, idx, n);
            inQue_.FreeTensor(idx);
            outQue_.EnQue(vals);
            vals = outQue_.DeQue<T>();
            DataCopyExtParams out{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPad(outGm_[i0], vals, out);
            outQue_.FreeTensor(vals);
        }
    }

private:
    __aicore__ inline void GatherChunk(LocalTensor<T>& vals, LocalTensor<TI>& idx, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
            const int64_t v = static_cast<int64_t>(idx.GetValue(static_cast<uint32_t>(k)));
            if (v < 0 || v >= td_.xLen)
                Trap();  // index out of range
        }
        if (!resident_) {
            for (int64_t k = 0; k < n; ++k) {
                vals.SetValue(static_cast<uint32_t>(k),
                              xGm_.GetValue(static_cast<int64_t>(idx.GetValue(k))));
            }
            return;
        }
        LocalTensor<T> xs = xBuf_.Get<T>();
        if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
            LocalTensor<int32_t> off = offBuf_.Get<int32_t>();
            if constexpr (sizeof(TI) == 8) {
                Cast(off, idx, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
                Muls(off, off, static_cast<int32_t>(sizeof(T)), static_cast<int32_t>(n));
            } else {
                Muls(off, idx, static_cast<int32_t>(sizeof(T)), static_cast<int32_t>(n));
            }
            Gather(vals, xs, off.ReinterpretCast<uint32_t>(), 0, static_cast<uint32_t>(n));
        } else {  // no 64-bit Gather on A2/A3
            for (int64_t k = 0; k < n; ++k) {
                vals.SetValue(static_cast<uint32_t>(k),
                              xs.GetValue(static_cast<uint32_t>(idx.GetValue(k))));
            }
        }
    }

    GatherForRank1TilingData td_;
    bool resident_ = false;
    GlobalTensor<T> xGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<T> outGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TQue<TPosition::VECOUT, 1> outQue_;
    TBuf<TPosition::VECCALC> offBuf_;
    TBuf<TPosition::VECCALC> xBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "gather_for_rank1_kernel_entry.h"
