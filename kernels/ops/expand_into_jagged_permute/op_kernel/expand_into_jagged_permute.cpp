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
#include "segment_walk.h"
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
        stage_.Init(pipe, outGm_, td.stageBytes);
        outOffWin_.Init(pipe, outOffGm_, td.segments + 1, td.windowBytes);
        permWin_.Init(pipe, permGm_, td.segments, td.windowBytes);
    }

    __aicore__ inline void Process() {
        const int64_t t = td_.segments;
        if (OutOffset(0) != 0 || OutOffset(t) != td_.outputSize)
            Trap();  // positions no segment covers, or segments past the output
        mxrec::CheckNonDecreasing(outOffWin_, t, td_.coreNum);
        const mxrec::Span span = mxrec::SplitEven(td_.outputSize, td_.coreNum, GetBlockIdx());
        if (span.end <= span.begin)
            return;
        // From the last segment starting at or before span.begin (output_offset[0] = 0 is one).
        Enter(mxrec::SegmentAt(outOffGm_, t - 1, span.begin));
        stage_.Write(span.begin, span.end, *this);
    }

    // output_permute[j], j at or past the previous one's.
    __aicore__ inline int64_t Next(int64_t j) {
        if (j >= at_.end) {
            int64_t s = at_.seg + 1;
            while (outOffWin_.Get(s + 1) <= j)
                ++s;  // empty segments are skipped unread
            Enter(s);
        }
        return base_ + (j - at_.start);
    }

private:
    // Segment s, and the start of its input segment.
    __aicore__ inline void Enter(int64_t s) {
        at_ = mxrec::SegmentCursor{s, outOffWin_.Get(s), outOffWin_.Get(s + 1)};
        base_ = InputStart(s);
    }

    __aicore__ inline int64_t OutOffset(int64_t i) {
        return static_cast<int64_t>(outOffGm_.GetValue(i));
    }

    // Where input segment permute[t] starts.
    __aicore__ inline int64_t InputStart(int64_t t) {
        const int64_t src = permWin_.Get(t);
        if (src < 0 || src >= td_.segments)
            Trap();  // no such input segment
        return static_cast<int64_t>(inOffGm_.GetValue(src));
    }

    ExpandIntoJaggedPermuteTilingData td_;
    mxrec::SegmentCursor at_;  // the last position written's
    int64_t base_ = 0;         // where its input segment starts
    GlobalTensor<T> permGm_;
    GlobalTensor<T> inOffGm_;
    GlobalTensor<T> outOffGm_;
    GlobalTensor<T> outGm_;
    mxrec::StagedOutput<T> stage_;
    mxrec::OffsetWindow<T> outOffWin_;
    mxrec::OffsetWindow<T> permWin_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "expand_into_jagged_permute_kernel_entry.h"
