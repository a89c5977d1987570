// JaggedToPaddedDense: out[b, j, :] = values[offsets[b] + j, :] for j < min(length_b, L), else the
// padding value.
//
// A pure data mover: each core owns an equal share of the B * L dense rows and, batch by batch,
// copies the valid rows of the batch as one segment (DataCopyPad in and out through a
// double-buffered queue, any alignment) and writes the padding rows from a UB buffer prefilled
// with the padding value (no per-element work). Offsets are read through a small UB window.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "jagged_to_padded_dense_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T, typename TOff>
class JaggedToPaddedDense {
public:
    __aicore__ inline void Init(GM_ADDR values, GM_ADDR offsets, GM_ADDR out, GM_ADDR /*workspace*/,
                                const JaggedToPaddedDenseTilingData& td, TPipe* pipe) {
        td_ = td;
        valuesGm_.SetGlobalBuffer((__gm__ T*)values, td.valueRows * td.inner);
        offsetsGm_.SetGlobalBuffer((__gm__ TOff*)offsets, td.batch + 1);
        outGm_.SetGlobalBuffer((__gm__ T*)out, td.batch * td.maxLength * td.inner);
        copier_.Init(pipe, td.copyBufBytes);
        filler_.Init(pipe, td.fillBufBytes, td.padBits);
        window_.Init(pipe, offsetsGm_, td.batch + 1, td.offsetBufBytes);
    }

    __aicore__ inline void Process() {
        const int64_t len = td_.maxLength;
        const int64_t d = td_.inner;
        const mxrec::Span rows = mxrec::SplitEven(td_.batch * len, td_.coreNum, GetBlockIdx());
        if (rows.begin >= rows.end || d == 0)
            return;
        for (int64_t b = rows.begin / len; b * len < rows.end; ++b) {
            const int64_t lo =
                mxrec::Max64(rows.begin, b * len) - b * len;  // this core's rows of batch b
            const int64_t hi = mxrec::Min64(rows.end, (b + 1) * len) - b * len;
            const int64_t start = mxrec::Clamp64(window_.Get(b), 0, td_.valueRows);
            const int64_t end = mxrec::Clamp64(window_.Get(b + 1), start, td_.valueRows);
            const int64_t valid = mxrec::Min64(end - start, len);
            const int64_t copyEnd = mxrec::Min64(hi, valid);
            if (copyEnd > lo) {
                copier_.Copy(outGm_[(b * len + lo) * d], valuesGm_[(start + lo) * d],
                             (copyEnd - lo) * d);
            }
            const int64_t padBegin = mxrec::Max64(lo, valid);
            if (hi > padBegin)
                filler_.Fill(outGm_[(b * len + padBegin) * d], (hi - padBegin) * d);
        }
    }

private:
    JaggedToPaddedDenseTilingData td_;
    GlobalTensor<T> valuesGm_;
    GlobalTensor<TOff> offsetsGm_;
    GlobalTensor<T> outGm_;
    mxrec::GmCopier<T> copier_;
    mxrec::GmFiller<T> filler_;
    mxrec::OffsetWindow<TOff> window_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "jagged_to_padded_dense_kernel_entry.h"
