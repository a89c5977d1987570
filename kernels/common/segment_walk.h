// Kernel helpers of the operators that fill an output split into segments by an offsets tensor
// (offsets_range, expand_into_jagged_permute; AscendC, device code): a core finds the segment
// its share of the output starts in, every core checks its share of the offsets' order, and
// positions computed on the scalar unit leave UB in whole pieces.
#ifndef MXREC_SEGMENT_WALK_H
#define MXREC_SEGMENT_WALK_H

#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"

namespace mxrec {

// The last segment i in [0, last] that starts at or before pos (offsets[0] <= pos and offsets
// in order): a binary search by scalar reads of global memory.
template <typename T>
__aicore__ inline int64_t SegmentAt(const AscendC::GlobalTensor<T>& offsets, int64_t last,
                                    int64_t pos) {
    int64_t lo = 0;
    int64_t hi = last;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (static_cast<int64_t>(offsets.GetValue(mid)) <= pos) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// Core c checks the adjacent pairs (i, i + 1) of its even share of `pairs`, so that every pair
// is checked once (binary searches assume order; a core's walk covers only its own share), and
// traps at a decrease.
template <typename T>
__aicore__ inline void CheckNonDecreasing(OffsetWindow<T>& offsets, int64_t pairs,
                                          int64_t coreNum) {
    const Span share = SplitEven(pairs, coreNum, AscendC::GetBlockIdx());
    for (int64_t i = share.begin; i < share.end; ++i) {
        if (offsets.Get(i + 1) < offsets.Get(i))
            AscendC::Trap();  // offsets decrease
    }
}

// Where a walk is: segment seg, its output positions [start, end).
struct SegmentCursor {
    int64_t seg;
    int64_t start;
    int64_t end;
};

// Output values computed on the scalar unit, written into UB staging and copied out in pieces:
// one buffer fills while the other leaves.
template <typename T>
class StagedOutput {
public:
    __aicore__ inline void Init(AscendC::TPipe* pipe, const AscendC::GlobalTensor<T>& out,
                                uint32_t stageBytes) {
        out_ = out;
        pipe->InitBuffer(que_, 2, stageBytes);
        elems_ = ElemsPerBlocks(stageBytes, sizeof(T));
    }

    // out[begin, end) = values.Next(j) for j in order (Next walks the segments forward).
    template <typename Values>
    __aicore__ inline void Write(int64_t begin, int64_t end, Values& values) {
        for (int64_t j0 = begin; j0 < end; j0 += elems_) {
            const int64_t n = Min64(elems_, end - j0);
            AscendC::LocalTensor<T> st = Take();
            for (int64_t k = 0; k < n; ++k)
                st.SetValue(static_cast<uint32_t>(k), static_cast<T>(values.Next(j0 + k)));
            Put(st, j0, n);
        }
    }

private:
    // A buffer for the next piece.
    __aicore__ inline AscendC::LocalTensor<T> Take() {
        AscendC::LocalTensor<T> st = que_.template AllocTensor<T>();
        PipeSync<AscendC::HardEvent::MTE3_S>();  // this buffer's previous piece has left
        return st;
    }

    // The piece's n values leave for out[at, at + n).
    __aicore__ inline void Put(AscendC::LocalTensor<T>& st, int64_t at, int64_t n) {
        que_.EnQue(st);
        st = que_.template DeQue<T>();
        PipeSync<AscendC::HardEvent::S_MTE3>();
        AscendC::DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPad(out_[at], st, copy);
        que_.FreeTensor(st);
    }

    AscendC::GlobalTensor<T> out_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> que_;
    int64_t elems_ = 0;
};

}  // namespace mxrec

#endif  // MXREC_SEGMENT_WALK_H
