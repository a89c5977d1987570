// InvertPermute: inv[permute[i]] = i.
//
// Each core streams its slice of permute through a queue (DataCopyPad in). A whole piece is
// range-checked on the scalar unit before any of it is written, so an entry outside [0, N)
// traps (device-side assert) with nothing written out of bounds. The writes scatter, so they
// go out per run of consecutive targets (permute[k + 1] == permute[k] + 1): the run's values
// are staged from a 32-byte boundary in UB and leave with one DataCopyPad. Staging is filled
// for the whole piece before the first DMA, so scalar and MTE3 synchronise once per piece,
// not once per run.
//
// Not a permutation: an entry outside [0, N) traps before the scatter. A repeated entry leaves
// some slot of inv unwritten (N entries, N slots), so every core first fills its slice of inv
// with -1, all cores meet (SyncAll), scatter, meet again, and each reads its slice back: a -1
// left means a value is missing (and another repeated), and the kernel traps. This costs one
// contiguous write and one contiguous read of inv, and no scattered reads.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "invert_permute_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class InvertPermute {
public:
    __aicore__ inline void Init(GM_ADDR permute, GM_ADDR inv, GM_ADDR /*workspace*/,
                                const InvertPermuteTilingData& td, TPipe* pipe) {
        td_ = td;
        permGm_.SetGlobalBuffer((__gm__ T*)permute, td.len);
        invGm_.SetGlobalBuffer((__gm__ T*)inv, td.len);
        pipe->InitBuffer(inQue_, 2,
                         td.inBufBytes);  // double buffered: the next piece loads meanwhile
        pipe->InitBuffer(stage_, td.stageBytes);
    }

    __aicore__ inline void Process() {
        const mxrec::Span span = mxrec::SplitEven(td_.len, td_.coreNum, GetBlockIdx());
        MarkUnwritten(span);
        PipeBarrier<PIPE_ALL>();  // the -1 fill has left before other cores scatter over it
        SyncAll();
        Scatter(span);
        PipeBarrier<PIPE_ALL>();
        SyncAll();
        CheckAllWritten(span);
    }

private:
    static constexpr int64_t kPerBlock = mxrec::kBlockBytes / static_cast<int64_t>(sizeof(T));

    __aicore__ inline void MarkUnwritten(const mxrec::Span& span) {
        if (span.end <= span.begin)
            return;
        LocalTensor<T> st = stage_.Get<T>();
        const int64_t fill = mxrec::Min64(td_.chunk, span.end - span.begin);
        for (int64_t k = 0; k < fill; ++k)
            st.SetValue(static_cast<uint32_t>(k), static_cast<T>(-1));
        mxrec::PipeSync<HardEvent::S_MTE3>();
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.chunk) {
            const int64_t n = mxrec::Min64(td_.chunk, span.end - i0);
            DataCopyExtParams out{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPad(invGm_[i0], st, out);
        }
        mxrec::PipeSync<HardEvent::MTE3_S>();  // staging is rewritten by the scatter's scalar unit
    }

    __aicore__ inline void CheckAllWritten(const mxrec::Span& span) {
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.chunk) {
            const int64_t n = mxrec::Min64(td_.chunk, span.end - i0);
            LocalTensor<T> piece = inQue_.AllocTensor<T>();
            DataCopyExtParams in{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
            DataCopyPad(piece, invGm_[i0], in, pad);
            inQue_.EnQue(piece);
            piece = inQue_.DeQue<T>();
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t k = 0; k < n; ++k) {
                if (piece.GetValue(static_cast<uint32_t>(k)) < 0)
                    Trap();  // no entry maps here
            }
            inQue_.FreeTensor(piece);
        }
    }

    __aicore__ inline void Scatter(const mxrec::Span& span) {
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.chunk) {
            const int64_t n = mxrec::Min64(td_.chunk, span.end - i0);
            LocalTensor<T> piece = inQue_.AllocTensor<T>();
            DataCopyExtParams in{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
            DataCopyPad(piece, permGm_[i0], in, pad);
            inQue_.EnQue(piece);
            piece = inQue_.DeQue<T>();
            mxrec::PipeSync<HardEvent::MTE2_S>();  // the queue orders MTE2 before V; this is scalar
                                                   // work
            for (int64_t k = 0; k < n; ++k) {
                const int64_t v = static_cast<int64_t>(piece.GetValue(static_cast<uint32_t>(k)));
                if (v < 0 || v >= td_.len)
                    Trap();  // not an entry of a permutation of 0..N-1
            }
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous piece's runs have left staging
            Stage(piece, i0, n);
            mxrec::PipeSync<HardEvent::S_MTE3>();
            WriteRuns(piece, n);
            inQue_.FreeTensor(piece);
        }
    }

    // Length of the run of consecutive targets starting at piece[k].
    __aicore__ inline int64_t RunLength(const LocalTensor<T>& piece, int64_t k, int64_t n) {
        int64_t len = 1;
        T prev = piece.GetValue(static_cast<uint32_t>(k));
        while (k + len < n) {
            const T next = piece.GetValue(static_cast<uint32_t>(k + len));
            if (next != prev + 1)
                break;
            prev = next;
            ++len;
        }
        return len;
    }

    __aicore__ inline void Stage(const LocalTensor<T>& piece, int64_t i0, int64_t n) {
        LocalTensor<T> st = stage_.Get<T>();
        int64_t slot = 0;
        for (int64_t k = 0; k < n;) {
            const int64_t len = RunLength(piece, k, n);
            for (int64_t j = 0; j < len; ++j) {
                st.SetValue(static_cast<uint32_t>(slot + j), static_cast<T>(i0 + k + j));
            }
            slot += mxrec::AlignUp(len, kPerBlock);
            k += len;
        }
    }

    // Same run boundaries as Stage: recomputing them is cheaper than a per-run sync.
    __aicore__ inline void WriteRuns(const LocalTensor<T>& piece, int64_t n) {
        LocalTensor<T> st = stage_.Get<T>();
        int64_t slot = 0;
        for (int64_t k = 0; k < n;) {
            const int64_t len = RunLength(piece, k, n);
            const int64_t target = static_cast<int64_t>(piece.GetValue(static_cast<uint32_t>(k)));
            DataCopyExtParams out{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
            DataCopyPad(invGm_[target], st[static_cast<uint32_t>(slot)], out);
            slot += mxrec::AlignUp(len, kPerBlock);
            k += len;
        }
    }

    InvertPermuteTilingData td_;
    GlobalTensor<T> permGm_;
    GlobalTensor<T> invGm_;
    TQue<TPosition::VECIN, 1> inQue_;
    TBuf<TPosition::VECCALC> stage_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "invert_permute_kernel_entry.h"
