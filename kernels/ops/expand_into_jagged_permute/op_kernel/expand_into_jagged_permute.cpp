// ExpandIntoJaggedPermute: out[output_offset[t] + k] = input_offset[permute[t]] + k for k in
// [0, output_offset[t + 1] - output_offset[t]).
//
// Cores split the output evenly. A core finds the segment its share starts in by binary search
// of output_offset (scalar reads of global memory) and walks the segments through windows of
// output_offset and permute, reading each segment's input start once (a scalar read: permute
// scatters them); the positions are written into UB staging on the scalar unit and leave in
// whole pieces, one buffer filling while the other leaves. Every core first checks an even
// share of output_offset's adjacent pairs, so a decreasing output_offset traps wherever it
// is; so do output_offset[0] != 0, output_offset[T] != output_size and an entry of permute
// outside [0, T) that a walk meets (fbgemm's CPU op would write or read out of bounds).
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "expand_into_jagged_permute_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class ExpandIntoJaggedPermute {
public:
    __aicore__ inline void Init(GM_ADDR permute, GM_ADDR inputOffset, GM_ADDR outputOffset,
                                GM_ADDR outputPermute, GM_ADDR /*workspace*/,
                                const ExpandIntoJaggedPermuteTilingData& td, TPipe* pipe) {
        td_ = td;
        permGm_.SetGlobalBuffer((__gm__ T*)permute, td.segments);
        inOffGm_.SetGlobalBuffer((__gm__ T*)inputOffset, td.segments + 1);
        outOffGm_.SetGlobalBuffer((__gm__ T*)outputOffset, td.segments + 1);
        outGm_.SetGlobalBuffer((__gm__ T*)outputPermute, td.outputSize);
        pipe->InitBuffer(stageQue_, 2, td.stageBytes);
        outOffWin_.Init(pipe, outOffGm_, td.segments + 1, td.windowBytes);
        permWin_.Init(pipe, permGm_, td.segments, td.windowBytes);
        stage_ = mxrec::ElemsPerBlocks(td.stageBytes, sizeof(T));
    }

    __aicore__ inline void Process() {
        const int64_t t = td_.segments;
        if (OutOffset(0) != 0 || OutOffset(t) != td_.outputSize)
            Trap();  // positions no segment covers, or segments past the output
        CheckNonDecreasing();
        const mxrec::Span span = mxrec::SplitEven(td_.outputSize, td_.coreNum, GetBlockIdx());
        if (span.end <= span.begin)
            return;
        // The last segment starting at or before span.begin (output_offset[0] = 0 is one).
        int64_t lo = 0;
        int64_t hi = t - 1;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2;
            if (OutOffset(mid) <= span.begin) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Fill(span, lo);
    }

private:
    __aicore__ inline int64_t OutOffset(int64_t i) {
        return static_cast<int64_t>(outOffGm_.GetValue(i));
    }

    // Core c checks the pairs (i, i + 1) of its even share of output_offset, so that every pair
    // is checked once (the binary searches assume order; the walks cover only a core's share).
    __aicore__ inline void CheckNonDecreasing() {
        const mxrec::Span pairs = mxrec::SplitEven(td_.segments, td_.coreNum, GetBlockIdx());
        for (int64_t i = pairs.begin; i < pairs.end; ++i) {
            if (outOffWin_.Get(i + 1) < outOffWin_.Get(i))
                Trap();  // output_offset decreases
        }
    }

    // Where input segment permute[t] starts.
    __aicore__ inline int64_t InputStart(int64_t t) {
        const int64_t src = permWin_.Get(t);
        if (src < 0 || src >= td_.segments)
            Trap();  // no such input segment
        return static_cast<int64_t>(inOffGm_.GetValue(src));
    }

    __aicore__ inline void Fill(const mxrec::Span& span, int64_t seg) {
        int64_t start = outOffWin_.Get(seg);
        int64_t end = outOffWin_.Get(seg + 1);
        int64_t base = InputStart(seg);
        for (int64_t j0 = span.begin; j0 < span.end; j0 += stage_) {
            const int64_t n = mxrec::Min64(stage_, span.end - j0);
            LocalTensor<T> st = stageQue_.AllocTensor<T>();
            mxrec::PipeSync<HardEvent::MTE3_S>();  // this buffer's previous piece has left
            for (int64_t k = 0; k < n; ++k) {
                const int64_t j = j0 + k;
                if (j >= end) {
                    while (j >= end) {  // empty segments are skipped unread
                        ++seg;
                        start = end;
                        end = outOffWin_.Get(seg + 1);
                    }
                    base = InputStart(seg);
                }
                st.SetValue(static_cast<uint32_t>(k), static_cast<T>(base + (j - start)));
            }
            stageQue_.EnQue(st);
            st = stageQue_.DeQue<T>();
            mxrec::PipeSync<HardEvent::S_MTE3>();
            DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPad(outGm_[j0], st, copy);
            stageQue_.FreeTensor(st);
        }
    }

    ExpandIntoJaggedPermuteTilingData td_;
    int64_t stage_ = 0;
    GlobalTensor<T> permGm_;
    GlobalTensor<T> inOffGm_;
    GlobalTensor<T> outOffGm_;
    GlobalTensor<T> outGm_;
    TQue<TPosition::VECOUT, 1> stageQue_;
    mxrec::OffsetWindow<T> outOffWin_;
    mxrec::OffsetWindow<T> permWin_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "expand_into_jagged_permute_kernel_entry.h"
