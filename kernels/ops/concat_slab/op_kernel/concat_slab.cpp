// ConcatSlab: x [R, C] written into its slab of y (rows or columns starting at `offset`).
//
// The tiling views x as `rows` rows of `width` elements (one row for a cat along dim 0, whose
// slab is contiguous in y). A core's range of x's elements is moved in pieces: whole rows that
// fit a buffer go as one strided DataCopyPad each way (one DMA block per row, y's other columns
// skipped), a row that does not is cut into buffer-sized runs, and a range that starts or ends
// inside a row moves that partial row on its own. A double-buffered queue lets the next piece
// load while one leaves.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "concat_slab_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kMaxDmaBlocks = 4095;  // DataCopyPad blockCount

template <typename T>
class ConcatSlab {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR /*workspace*/,
                                const ConcatSlabTilingData& td, TPipe* pipe) {
        td_ = td;
        xGm_.SetGlobalBuffer((__gm__ T*)x, td.rows * td.width);
        yGm_.SetGlobalBuffer((__gm__ T*)y, td.yOffset + (td.rows - 1) * td.yRow + td.width);
        pipe->InitBuffer(que_, 2, td.copyBufBytes);
        maxElems_ = mxrec::ElemsPerBlocks(td.copyBufBytes, sizeof(T));
    }

    __aicore__ inline void Process() {
        if (td_.rows == 0 || td_.width == 0)
            return;
        const mxrec::Span span = mxrec::SplitEven(td_.rows * td_.width, td_.coreNum, GetBlockIdx());
        const int64_t rowBlocks =
            mxrec::AlignUp(td_.width * static_cast<int64_t>(sizeof(T)), mxrec::kBlockBytes);
        const int64_t rowsPerBuf =
            mxrec::Min64(static_cast<int64_t>(td_.copyBufBytes) / rowBlocks, kMaxDmaBlocks);
        int64_t pos = span.begin;
        while (pos < span.end) {
            const int64_t row = pos / td_.width;
            const int64_t col = pos - row * td_.width;
            const int64_t whole = (span.end - pos) / td_.width;
            if (col == 0 && whole > 0 && rowsPerBuf > 0) {
                const int64_t n = mxrec::Min64(whole, rowsPerBuf);
                Move(row, 0, n, td_.width);
                pos += n * td_.width;
            } else {
                const int64_t n =
                    mxrec::Min64(mxrec::Min64(td_.width - col, span.end - pos), maxElems_);
                Move(row, col, 1, n);
                pos += n;
            }
        }
    }

private:
    // Rows [row, row + count) of x, columns [col, col + n) (n = width when count > 1).
    __aicore__ inline void Move(int64_t row, int64_t col, int64_t count, int64_t n) {
        const uint32_t bytes = static_cast<uint32_t>(n * sizeof(T));
        DataCopyExtParams in{static_cast<uint16_t>(count), bytes, 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        LocalTensor<T> buf = que_.AllocTensor<T>();
        DataCopyPad(buf, xGm_[row * td_.width + col], in, pad);
        que_.EnQue(buf);
        buf = que_.DeQue<T>();
        // A single row has no stride (y's row may be wider than the field holds).
        const int64_t gap = count > 1 ? (td_.yRow - n) * static_cast<int64_t>(sizeof(T)) : 0;
        DataCopyExtParams out{static_cast<uint16_t>(count), bytes, 0, static_cast<uint32_t>(gap),
                              0};
        DataCopyPad(yGm_[td_.yOffset + row * td_.yRow + col], buf, out);
        que_.FreeTensor(buf);
    }

    ConcatSlabTilingData td_;
    int64_t maxElems_ = 0;
    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "concat_slab_kernel_entry.h"
