// SegmentSumCsr: out[i] = sum of values[csr_seg[i] * bs : csr_seg[i + 1] * bs].
//
// The summed values [0, csr_seg[S] * bs) are split evenly over the cores; core c sums the
// segments that start in its share (binary search of csr_seg in global memory, a few scalar
// reads), so each segment is summed whole, in order, by one core. Values stream through a
// queue and are added on the scalar unit in fbgemm's order and precision (a
// running sum in the values' dtype: 16-bit floats rounded after each addition, integers
// wrapping), which makes the result equal fbgemm's bit for bit. csr_seg is read through a
// window; the sums are staged in UB and leave in pieces. A decreasing csr_seg, a negative
// first entry or a range past the end of values traps before its sum is written.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "segment_sum_csr_tiling_data.h"

using namespace AscendC;

namespace {

// The running sum of fbgemm's CPU loop (`scalar_t v = 0; v += x;`): floats in float, 16-bit
// ones rounded back after every addition; integers (below) in int64, which wraps to the same
// low bits as the CPU's running sum in int32.
template <typename T>
struct RunningSum {
    using Acc = float;
    __aicore__ static inline Acc Add(Acc acc, T x) {
        if constexpr (sizeof(T) == 4) {
            return acc + static_cast<float>(x);
        } else {
            return static_cast<float>(static_cast<T>(acc + static_cast<float>(x)));
        }
    }
};

template <typename I>
struct IntegerRunningSum {
    using Acc = int64_t;
    __aicore__ static inline Acc Add(Acc acc, I x) { return acc + static_cast<int64_t>(x); }
};

template <>
struct RunningSum<int32_t> : IntegerRunningSum<int32_t> {};
template <>
struct RunningSum<int64_t> : IntegerRunningSum<int64_t> {};

template <typename T>
class SegmentSumCsr {
public:
    __aicore__ inline void Init(GM_ADDR csrSeg, GM_ADDR values, GM_ADDR out, GM_ADDR /*workspace*/,
                                const SegmentSumCsrTilingData& td, TPipe* pipe) {
        td_ = td;
        csrGm_.SetGlobalBuffer((__gm__ int32_t*)csrSeg, td.segments + 1);
        valGm_.SetGlobalBuffer((__gm__ T*)values, td.valueCount);
        outGm_.SetGlobalBuffer((__gm__ T*)out, td.segments);
        pipe->InitBuffer(valQue_, 1, td.valueBufBytes);
        pipe->InitBuffer(outBuf_, td.outBufBytes);
        csrWin_.Init(pipe, csrGm_, td.segments + 1, td.windowBytes);
        chunk_ = mxrec::ElemsPerBlocks(td.valueBufBytes, sizeof(T));
        outChunk_ = mxrec::ElemsPerBlocks(td.outBufBytes, sizeof(T));
    }

    __aicore__ inline void Process() {
        const int64_t s = td_.segments;
        const int64_t idx = GetBlockIdx();
        if (s == 0)
            return;
        const int64_t total = Start(s);
        if (total > td_.valueCount)
            Trap();  // the last segment ends past values
        const mxrec::Span share = mxrec::SplitEven(total, td_.coreNum, idx);
        const int64_t first = idx == 0 ? 0 : FirstStartingAt(share.begin);
        const int64_t last = idx == td_.coreNum - 1 ? s : FirstStartingAt(share.end);
        if (idx == 0 && csrGm_.GetValue(0) < 0)
            Trap();
        CheckNonDecreasing();
        if (first < last)
            valuesEnd_ = mxrec::Min64(Start(last), td_.valueCount);  // no piece reads past it
        SumSegments(first, last);
    }

private:
    using Acc = typename RunningSum<T>::Acc;

    __aicore__ inline int64_t Start(int64_t i) {
        return static_cast<int64_t>(csrGm_.GetValue(i)) * td_.batchSize;
    }

    // Core c checks the pairs (i, i + 1) of its even share of csr_seg, so that every pair is
    // checked once (the binary searches assume order; the walks cover only a core's segments).
    __aicore__ inline void CheckNonDecreasing() {
        const mxrec::Span pairs = mxrec::SplitEven(td_.segments, td_.coreNum, GetBlockIdx());
        for (int64_t i = pairs.begin; i < pairs.end; ++i) {
            if (csrWin_.Get(i + 1) < csrWin_.Get(i))
                Trap();  // csr_seg decreases
        }
    }

    // The first segment in [0, S] whose start is >= v (csr_seg is non-decreasing; a core whose
    // own segments are not traps when it walks them).
    __aicore__ inline int64_t FirstStartingAt(int64_t v) {
        int64_t lo = 0;
        int64_t hi = td_.segments;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (Start(mid) >= v) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    __aicore__ inline void SumSegments(int64_t first, int64_t last) {
        LocalTensor<T> sums = outBuf_.Get<T>();
        int64_t staged = 0;
        int64_t stagedFrom = first;
        for (int64_t i = first; i < last; ++i) {
            const int64_t begin = csrWin_.Get(i) * td_.batchSize;
            const int64_t end = csrWin_.Get(i + 1) * td_.batchSize;
            if (end < begin || end > valuesEnd_)
                Trap();  // csr_seg decreases, or the segment runs past values
            if (staged == 0)
                mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous piece of sums has left
            sums.SetValue(static_cast<uint32_t>(staged), static_cast<T>(Sum(begin, end)));
            ++staged;
            if (staged == outChunk_ || i + 1 == last) {
                mxrec::PipeSync<HardEvent::S_MTE3>();
                DataCopyExtParams copy{1, static_cast<uint32_t>(staged * sizeof(T)), 0, 0, 0};
                DataCopyPad(outGm_[stagedFrom], sums, copy);
                stagedFrom += staged;
                staged = 0;
            }
        }
        if (pieceLen_ > 0)
            valQue_.FreeTensor(piece_);  // the last piece goes back to the queue
        pieceLen_ = 0;
    }

    // Sum of values[begin, end), loading pieces of values as the walk reaches them; the piece
    // in UB stays loaded for the next segment, which starts where this one ends.
    __aicore__ inline Acc Sum(int64_t begin, int64_t end) {
        Acc acc = 0;
        for (int64_t j = begin; j < end;) {
            if (j < pieceStart_ || j >= pieceStart_ + pieceLen_)
                Load(j);
            const int64_t stop = mxrec::Min64(end, pieceStart_ + pieceLen_);
            for (; j < stop; ++j)
                acc = RunningSum<T>::Add(acc,
                                         piece_.GetValue(static_cast<uint32_t>(j - pieceStart_)));
        }
        return acc;
    }

    __aicore__ inline void Load(int64_t j) {
        if (pieceLen_ > 0)
            valQue_.FreeTensor(piece_);
        pieceStart_ = j;
        pieceLen_ = mxrec::Min64(chunk_, valuesEnd_ - j);
        LocalTensor<T> buf = valQue_.AllocTensor<T>();
        DataCopyExtParams copy{1, static_cast<uint32_t>(pieceLen_ * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(buf, valGm_[j], copy, pad);
        valQue_.EnQue(buf);
        piece_ = valQue_.DeQue<T>();
        mxrec::PipeSync<HardEvent::MTE2_S>();  // the queue orders MTE2 before V; this is scalar
    }

    SegmentSumCsrTilingData td_;
    int64_t chunk_ = 0;
    int64_t outChunk_ = 0;
    int64_t pieceStart_ = 0;
    int64_t pieceLen_ = 0;
    int64_t valuesEnd_ = 0;  // the end of this core's last segment
    LocalTensor<T> piece_;
    GlobalTensor<int32_t> csrGm_;
    GlobalTensor<T> valGm_;
    GlobalTensor<T> outGm_;
    TQue<TPosition::VECIN, 1> valQue_;
    TBuf<TPosition::VECCALC> outBuf_;
    mxrec::OffsetWindow<int32_t> csrWin_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "segment_sum_csr_kernel_entry.h"
