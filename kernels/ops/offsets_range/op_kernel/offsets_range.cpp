// OffsetsRange: range[j] = j - offsets[i] for j in segment i = [offsets[i], offsets[i + 1])
// (the last segment ends at range_size).
//
// Cores split the output evenly. A core finds the segment its share starts in by binary
// search of offsets (scalar reads of global memory), then walks the segments through an
// offsets window, writing each position's index within its segment into UB staging on the
// scalar unit; a full staging buffer leaves with one DataCopyPad while the other fills. An
// offsets tensor that does not start at 0, decreases, or ends past range_size traps (fbgemm's
// CPU op would leave positions uninitialised or write outside its output): every core checks
// an even share of the adjacent pairs before it writes.
#include "kernel_operator.h"
#include "segment_walk.h"
#include "offsets_range_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class OffsetsRange {
public:
    __aicore__ inline void Init(GM_ADDR offsets, GM_ADDR range, GM_ADDR /*workspace*/,
                                const OffsetsRangeTilingData& td, TPipe* pipe) {
        td_ = td;
        offGm_.SetGlobalBuffer((__gm__ T*)offsets, td.count);
        outGm_.SetGlobalBuffer((__gm__ T*)range, td.rangeSize);
        stage_.Init(pipe, outGm_, td.stageBytes);
        offWin_.Init(pipe, offGm_, td.count, td.windowBytes);
    }

    __aicore__ inline void Process() {
        if (td_.rangeSize == 0)
            return;  // nothing to write, and fbgemm's op reads nothing either
        if (td_.count == 0 || Offset(0) != 0 || Offset(td_.count - 1) > td_.rangeSize)
            Trap();  // positions no segment covers, or a segment past the output
        mxrec::CheckNonDecreasing(offWin_, td_.count - 1, td_.coreNum);
        const mxrec::Span span = mxrec::SplitEven(td_.rangeSize, td_.coreNum, GetBlockIdx());
        if (span.end <= span.begin)
            return;
        // From the last segment starting at or before span.begin (offsets[0] = 0 is one).
        Enter(mxrec::SegmentAt(offGm_, td_.count - 1, span.begin));
        stage_.Write(span.begin, span.end, *this);
    }

    // range[j], j at or past the previous one's.
    __aicore__ inline int64_t Next(int64_t j) {
        while (j >= at_.end) {
            if (SegmentEnd(at_.seg + 1) < at_.end)
                Trap();  // offsets decrease
            Enter(at_.seg + 1);
        }
        return j - at_.start;
    }

private:
    __aicore__ inline void Enter(int64_t s) {
        at_ = mxrec::SegmentCursor{s, offWin_.Get(s), SegmentEnd(s)};
    }

    __aicore__ inline int64_t Offset(int64_t i) { return static_cast<int64_t>(offGm_.GetValue(i)); }

    __aicore__ inline int64_t SegmentEnd(int64_t i) {
        return i + 1 < td_.count ? offWin_.Get(i + 1) : td_.rangeSize;
    }

    OffsetsRangeTilingData td_;
    mxrec::SegmentCursor at_;  // the last position written's
    GlobalTensor<T> offGm_;
    GlobalTensor<T> outGm_;
    mxrec::StagedOutput<T> stage_;
    mxrec::OffsetWindow<T> offWin_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "offsets_range_kernel_entry.h"
