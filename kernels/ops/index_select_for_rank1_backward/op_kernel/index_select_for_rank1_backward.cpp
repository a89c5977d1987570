// IndexSelectForRank1Backward: out = zeros([N]); out[index[i]] += grad[i].
//
// All cores zero a float32 target (out, or the workspace for 16-bit outputs) and meet in SyncAll.
// With N small enough for UB, a core accumulates its gradients in a float32 UB accumulator
// (scalar read-modify-write: indices are arbitrary) and adds the whole accumulator to the target
// with one atomic DMA (SetAtomicAdd<float>), so duplicates across cores add up exactly as
// atomics do on the device. Otherwise each gradient goes to its element with a one-element atomic
// DMA. 16-bit outputs are cast from the float32 workspace after a second SyncAll.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "index_select_for_rank1_backward_tiling_data.h"

using namespace AscendC;

namespace {

template <typename TG, typename TI>
class IndexSelectForRank1Backward {
public:
    static constexpr bool kFloatOut = sizeof(TG) == 4;
    static constexpr int64_t kSlot = mxrec::kBlockBytes / 4;  // floats per 32-byte staging slot

    __aicore__ inline void Init(GM_ADDR grad, GM_ADDR /*x*/, GM_ADDR index, GM_ADDR out,
                                GM_ADDR workspace, const IndexSelectForRank1BackwardTilingData& td,
                                TPipe* pipe) {
        td_ = td;
        if (TILING_KEY_IS(ISB_KEY_UB)) {
            resident_ = true;
        } else if (TILING_KEY_IS(ISB_KEY_ATOMIC)) {
            resident_ = false;
        }
        gradGm_.SetGlobalBuffer((__gm__ TG*)grad, td.gradLen);
        idxGm_.SetGlobalBuffer((__gm__ TI*)index, td.gradLen);
        outGm_.SetGlobalBuffer((__gm__ TG*)out, td.outLen);
        if constexpr (kFloatOut) {
            targetGm_.SetGlobalBuffer((__gm__ float*)out, td.outLen);
        } else {
            targetGm_.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), td.outLen);
        }
        pipe->InitBuffer(gradQue_, 2, td.gradBufBytes);  // double buffered
        pipe->InitBuffer(idxQue_, 2, td.idxBufBytes);
        pipe->InitBuffer(stageBuf_, td.stageBufBytes);
        zero_.Init(pipe, td.fillBufBytes, 0);
        if (resident_)
            pipe->InitBuffer(accBuf_, td.accBufBytes);
        if constexpr (!kFloatOut) {
            pipe->InitBuffer(castIn_, 2, static_cast<uint32_t>(td.castChunk * sizeof(float)));
            pipe->InitBuffer(castOut_, 2, static_cast<uint32_t>(td.castChunk * sizeof(TG)));
        }
    }

    __aicore__ inline void Process() {
        const int64_t me = GetBlockIdx();
        const mxrec::Span zero = mxrec::SplitEven(td_.outLen, td_.coreNum, me);
        if (zero.end > zero.begin)
            zero_.Fill(targetGm_[zero.begin], zero.end - zero.begin);
        LocalTensor<float> acc;
        if (resident_) {
            acc = accBuf_.Get<float>();
            if (td_.outLen > 0)
                Duplicate(acc, 0.0f, static_cast<int32_t>(td_.outLen));
            mxrec::PipeSync<HardEvent::V_S>();
        }
        SyncAll();  // every element of the target is zero before any core adds to it
        const mxrec::Span mine = mxrec::SplitEven(td_.gradLen, td_.coreNum, me);
        for (int64_t i0 = mine.begin; i0 < mine.end; i0 += td_.chunk) {
            const int64_t n = mxrec::Min64(td_.chunk, mine.end - i0);
            LocalTensor<TG> g = gradQue_.AllocTensor<TG>();
            LocalTensor<TI> idx = idxQue_.AllocTensor<TI>();
            DataCopyPadExtParams<TG> gpad{false, 0, 0, static_cast<TG>(0)};
            DataCopyPadExtParams<TI> ipad{false, 0, 0, static_cast<TI>(0)};
            DataCopyPad(g, gradGm_[i0],
                        DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(TG)), 0, 0, 0}, gpad);
            DataCopyPad(idx, idxGm_[i0],
                        DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(TI)), 0, 0, 0}, ipad);
            gradQue_.EnQue(g);
            idxQue_.EnQue(idx);
            g = gradQue_.DeQue<TG>();
            idx = idxQue_.DeQue<TI>();
            if (resident_) {
                Accumulate(acc, g, idx, n);
            } else {
                AddEach(g, idx, n);
            }
            gradQue_.FreeTensor(g);
            idxQue_.FreeTensor(idx);
        }
        if (resident_ && mine.end > mine.begin && td_.outLen > 0) {
            mxrec::PipeSync<HardEvent::S_MTE3>();
            SetAtomicAdd<float>();
            DataCopyPad(
                targetGm_, acc,
                DataCopyExtParams{1, static_cast<uint32_t>(td_.outLen * sizeof(float)), 0, 0, 0});
            SetAtomicNone();
        }
        if constexpr (!kFloatOut) {
            SyncAll();  // all atomic adds landed
            CastOut(zero);
        }
    }

private:
    __aicore__ inline int64_t CheckedIndex(LocalTensor<TI>& idx, int64_t k) {
        const int64_t i = static_cast<int64_t>(idx.GetValue(static_cast<uint32_t>(k)));
        if (i < 0 || i >= td_.outLen)
            Trap();  // index out of range
        return i;
    }

    __aicore__ inline void Accumulate(LocalTensor<float>& acc, LocalTensor<TG>& g,
                                      LocalTensor<TI>& idx, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
            const uint32_t i = static_cast<uint32_t>(CheckedIndex(idx, k));
            acc.SetValue(
                i, acc.GetValue(i) + static_cast<float>(g.GetValue(static_cast<uint32_t>(k))));
        }
    }

    __aicore__ inline void AddEach(LocalTensor<TG>& g, LocalTensor<TI>& idx, int64_t n) {
        LocalTensor<float> stage = stageBuf_.Get<float>();
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous chunk's adds have read the stage
        for (int64_t k = 0; k < n; ++k) {
            CheckedIndex(idx, k);
            stage.SetValue(static_cast<uint32_t>(k * kSlot),
                           static_cast<float>(g.GetValue(static_cast<uint32_t>(k))));
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        SetAtomicAdd<float>();
        const DataCopyExtParams one{1, sizeof(float), 0, 0, 0};
        for (int64_t k = 0; k < n; ++k) {
            const int64_t i = static_cast<int64_t>(idx.GetValue(static_cast<uint32_t>(k)));
            DataCopyPad(targetGm_[i], stage[static_cast<uint32_t>(k * kSlot)], one);
        }
        SetAtomicNone();
    }

    __aicore__ inline void CastOut(mxrec::Span span) {
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.castChunk) {
            const int64_t n = mxrec::Min64(td_.castChunk, span.end - i0);
            LocalTensor<float> in = castIn_.AllocTensor<float>();
            DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
            DataCopyPad(in, targetGm_[i0],
                        DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0},
                        pad);
            castIn_.EnQue(in);
            in = castIn_.DeQue<float>();
            LocalTensor<TG> out = castOut_.AllocTensor<TG>();
            Cast(out, in, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
            castIn_.FreeTensor(in);
            castOut_.EnQue(out);
            out = castOut_.DeQue<TG>();
            DataCopyPad(outGm_[i0], out,
                        DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(TG)), 0, 0, 0});
            castOut_.FreeTensor(out);
        }
    }

    IndexSelectForRank1BackwardTilingData td_;
    bool resident_ = false;
    GlobalTensor<TG> gradGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<TG> outGm_;
    GlobalTensor<float> targetGm_;
    TQue<TPosition::VECIN, 1> gradQue_;
    TQue<TPosition::VECIN, 1> idxQue_;
    TQue<TPosition::VECIN, 1> castIn_;
    TQue<TPosition::VECOUT, 1> castOut_;
    TBuf<TPosition::VECCALC> stageBuf_;
    TBuf<TPosition::VECCALC> accBuf_;
    mxrec::GmFiller<float> zero_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "index_select_for_rank1_backward_kernel_entry.h"
