// DenseToJagged: values[offsets[b] + j, :] = dense[b, j, :] for j < L; rows past L within a batch
// and rows outside every batch are zero (fbgemm's semantics, including a total_L that differs
// from offsets[-1]).
//
// A data mover like JaggedToPaddedDense: each core owns an equal share of output rows, copies
// each batch's part as one segment (DataCopyPad through a double-buffered queue) and writes
// zero rows from a zeroed UB buffer.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "dense_to_jagged_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T, typename TOff>
class DenseToJagged {
public:
    __aicore__ inline void Init(GM_ADDR dense, GM_ADDR offsets, GM_ADDR values,
                                GM_ADDR /*workspace*/, const DenseToJaggedTilingData& td,
                                TPipe* pipe) {
        td_ = td;
        denseGm_.SetGlobalBuffer((__gm__ T*)dense, td.batch * td.maxLength * td.inner);
        offsetsGm_.SetGlobalBuffer((__gm__ TOff*)offsets, td.batch + 1);
        valuesGm_.SetGlobalBuffer((__gm__ T*)values, td.totalRows * td.inner);
        copier_.Init(pipe, td.copyBufBytes);
        filler_.Init(pipe, td.fillBufBytes, 0);
        window_.Init(pipe, offsetsGm_, td.batch + 1, td.offsetBufBytes);
    }

    __aicore__ inline void Process() {
        const mxrec::Span rows = mxrec::SplitEven(td_.totalRows, td_.coreNum, GetBlockIdx());
        if (rows.begin >= rows.end || td_.inner == 0)
            return;
        int64_t r = rows.begin;
        int64_t b = FirstBatchEndingAfter(r);
        while (r < rows.end) {
            if (b >= td_.batch) {
                Zero(r, rows.end);
                break;
            }
            const int64_t start = window_.Get(b);
            const int64_t end = window_.Get(b + 1);
            if (r < start) {  // rows before this batch belong to none
                const int64_t gapEnd = mxrec::Min64(start, rows.end);
                Zero(r, gapEnd);
                r = gapEnd;
                continue;
            }
            const int64_t segEnd = mxrec::Min64(end, rows.end);
            const int64_t copyEnd =
                mxrec::Min64(segEnd, start + td_.maxLength);  // rows past L are 0
            if (copyEnd > r) {
                const int64_t j = r - start;
                copier_.Copy(valuesGm_[r * td_.inner],
                             denseGm_[(b * td_.maxLength + j) * td_.inner],
                             (copyEnd - r) * td_.inner);
            }
            const int64_t zeroFrom = mxrec::Max64(r, copyEnd);
            if (segEnd > zeroFrom)
                Zero(zeroFrom, segEnd);
            r = mxrec::Max64(r, segEnd);
            ++b;
        }
    }

private:
    // The first batch b with offsets[b + 1] > row (batch if none): binary search with scalar
    // reads, so a core does not scan the offsets of the cores before it.
    __aicore__ inline int64_t FirstBatchEndingAfter(int64_t row) {
        int64_t lo = 0;
        int64_t hi = td_.batch;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (static_cast<int64_t>(offsetsGm_.GetValue(mid + 1)) > row) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    __aicore__ inline void Zero(int64_t from, int64_t to) {
        filler_.Fill(valuesGm_[from * td_.inner], (to - from) * td_.inner);
    }

    DenseToJaggedTilingData td_;
    GlobalTensor<T> denseGm_;
    GlobalTensor<TOff> offsetsGm_;
    GlobalTensor<T> valuesGm_;
    mxrec::GmCopier<T> copier_;
    mxrec::GmFiller<T> filler_;
    mxrec::OffsetWindow<TOff> window_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "dense_to_jagged_kernel_entry.h"
