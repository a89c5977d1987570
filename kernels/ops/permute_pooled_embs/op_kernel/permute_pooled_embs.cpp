// PermutePooledEmbs: output column block i of every row is input column block permute_list[i].
//
// Blocks follow fbgemm's CPU op (tensor_split at offset_dim_list[1..T-1], then cat in
// permute_list's order): block k spans [b_k, b_{k+1}) with b_0 = 0, b_T = D and the inner
// boundaries clamped to [0, D]; a block whose end precedes its start is empty.
//
// Each core loads both lists once, checks them on the scalar unit (an entry of permute_list
// outside [0, T), a negative offset, or widths not summing to the output's dim 1 trap before
// anything is written), then moves its rows block by block: a rectangle of rows x block width
// is one strided DataCopyPad in (one DMA block per row, the rest of the row skipped) and one
// out, through a double-buffered queue so that the next rectangle loads while one leaves.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "permute_pooled_embs_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kMaxDmaBlocks = 4095;  // DataCopyPad blockCount

template <typename T>
class PermutePooledEmbs {
public:
    __aicore__ inline void Init(GM_ADDR pooledEmbs, GM_ADDR offsetDimList, GM_ADDR permuteList,
                                GM_ADDR permuted, GM_ADDR /*workspace*/,
                                const PermutePooledEmbsTilingData& td, TPipe* pipe) {
        td_ = td;
        inRow_ = td.inCols * td.inner;
        outRow_ = td.outCols * td.inner;
        inGm_.SetGlobalBuffer((__gm__ T*)pooledEmbs, td.rows * inRow_);
        outGm_.SetGlobalBuffer((__gm__ T*)permuted, td.rows * outRow_);
        offGm_.SetGlobalBuffer((__gm__ int64_t*)offsetDimList, td.blocks);
        permGm_.SetGlobalBuffer((__gm__ int64_t*)permuteList, td.blocks);
        pipe->InitBuffer(offBuf_, td.listBytes);
        pipe->InitBuffer(permBuf_, td.listBytes);
        pipe->InitBuffer(que_, 2, td.copyBufBytes);
        maxElems_ = mxrec::ElemsPerBlocks(td.copyBufBytes, sizeof(T));
    }

    __aicore__ inline void Process() {
        const mxrec::Span span = mxrec::SplitEven(td_.rows, td_.coreNum, GetBlockIdx());
        if (span.end <= span.begin || td_.blocks == 0)
            return;
        LoadLists();
        CheckLists();
        int64_t outStart = 0;
        for (int64_t i = 0; i < td_.blocks; ++i) {
            int64_t start = 0;
            int64_t width = 0;
            Block(permBuf_.Get<int64_t>().GetValue(static_cast<uint32_t>(i)), start, width);
            MoveBlock(span, start * td_.inner, outStart * td_.inner, width * td_.inner);
            outStart += width;
        }
    }

private:
    __aicore__ inline void LoadLists() {
        DataCopyExtParams copy{1, static_cast<uint32_t>(td_.blocks * sizeof(int64_t)), 0, 0, 0};
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        DataCopyPad(offBuf_.Get<int64_t>(), offGm_, copy, pad);
        DataCopyPad(permBuf_.Get<int64_t>(), permGm_, copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
    }

    // Input block k: [b_k, b_{k+1}) clamped as tensor_split slices, width >= 0.
    __aicore__ inline void Block(int64_t k, int64_t& start, int64_t& width) {
        LocalTensor<int64_t> off = offBuf_.Get<int64_t>();
        start = k == 0 ? 0 : mxrec::Min64(off.GetValue(static_cast<uint32_t>(k)), td_.inCols);
        const int64_t end =
            k + 1 == td_.blocks
                ? td_.inCols
                : mxrec::Min64(off.GetValue(static_cast<uint32_t>(k + 1)), td_.inCols);
        width = mxrec::Max64(end - start, 0);
    }

    // Everything that could send a DMA out of bounds is refused before the first one.
    __aicore__ inline void CheckLists() {
        LocalTensor<int64_t> off = offBuf_.Get<int64_t>();
        LocalTensor<int64_t> perm = permBuf_.Get<int64_t>();
        for (int64_t k = 1; k < td_.blocks; ++k) {
            if (off.GetValue(static_cast<uint32_t>(k)) < 0)
                Trap();  // fbgemm's tensor_split would count it from the end
        }
        int64_t total = 0;
        for (int64_t i = 0; i < td_.blocks; ++i) {
            const int64_t k = perm.GetValue(static_cast<uint32_t>(i));
            if (k < 0 || k >= td_.blocks)
                Trap();  // no such input block
            int64_t start = 0;
            int64_t width = 0;
            Block(k, start, width);
            total += width;
        }
        if (total != td_.outCols)
            Trap();  // the output was sized for other lists
    }

    // Columns [src, src + n) of the span's input rows -> columns [dst, dst + n) of its output rows
    // (element units). A piece is as wide as a buffer's row allows and as tall as the buffer
    // holds (one DMA block per row, each row 32-byte aligned in UB).
    __aicore__ inline void MoveBlock(const mxrec::Span& span, int64_t src, int64_t dst, int64_t n) {
        for (int64_t c0 = 0; c0 < n; c0 += maxElems_) {
            const int64_t cols = mxrec::Min64(maxElems_, n - c0);
            const int64_t rowBytes = cols * static_cast<int64_t>(sizeof(T));
            const int64_t perBuf = static_cast<int64_t>(td_.copyBufBytes) /
                                   mxrec::AlignUp(rowBytes, mxrec::kBlockBytes);
            const int64_t step = mxrec::Min64(perBuf, kMaxDmaBlocks);
            for (int64_t r0 = span.begin; r0 < span.end; r0 += step) {
                const int64_t rows = mxrec::Min64(step, span.end - r0);
                DataCopyExtParams in{static_cast<uint16_t>(rows), static_cast<uint32_t>(rowBytes),
                                     static_cast<uint32_t>((inRow_ - cols) * sizeof(T)), 0, 0};
                DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
                LocalTensor<T> buf = que_.AllocTensor<T>();
                DataCopyPad(buf, inGm_[r0 * inRow_ + src + c0], in, pad);
                que_.EnQue(buf);
                buf = que_.DeQue<T>();
                DataCopyExtParams out{static_cast<uint16_t>(rows), static_cast<uint32_t>(rowBytes),
                                      0, static_cast<uint32_t>((outRow_ - cols) * sizeof(T)), 0};
                DataCopyPad(outGm_[r0 * outRow_ + dst + c0], buf, out);
                que_.FreeTensor(buf);
            }
        }
    }

    PermutePooledEmbsTilingData td_;
    int64_t inRow_ = 0;
    int64_t outRow_ = 0;
    int64_t maxElems_ = 0;
    GlobalTensor<T> inGm_;
    GlobalTensor<T> outGm_;
    GlobalTensor<int64_t> offGm_;
    GlobalTensor<int64_t> permGm_;
    TBuf<TPosition::VECCALC> offBuf_;
    TBuf<TPosition::VECCALC> permBuf_;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "permute_pooled_embs_kernel_entry.h"
