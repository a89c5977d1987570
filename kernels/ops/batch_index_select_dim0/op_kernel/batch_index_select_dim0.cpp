// BatchIndexSelectDim0: for every table t and k < num_t,
// output[out_t + k * stride_t + j] = inputs[in_t + indices[idx_t + k] * cols_t + j], j < cols_t.
//
// A core walks its slice of the concatenated index lists table by table. Per step it reads a
// block of indices into UB, checks them on the scalar unit (an index outside the table traps, as
// torch.index_select raises), gathers each selected row into its own 32-byte aligned UB slot and
// writes the block of rows with one strided DataCopyPad. Rows wider than a row buffer go in
// column pieces.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "batch_index_select_dim0_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kMaxBlocks = 4095;  // DataCopyPad's blockCount limit

template <typename T, typename TI>
class BatchIndexSelectDim0 {
public:
    __aicore__ inline void Init(GM_ADDR inputs, GM_ADDR indices, GM_ADDR tables, GM_ADDR output,
                                GM_ADDR /*workspace*/, const BatchIndexSelectDim0TilingData& td,
                                TPipe* pipe) {
        td_ = td;
        xGm_.SetGlobalBuffer((__gm__ T*)inputs, td.inputLen);
        idxGm_.SetGlobalBuffer((__gm__ TI*)indices, td.indexCount);
        tabGm_.SetGlobalBuffer((__gm__ int64_t*)tables, td.tableCount * 8);
        outGm_.SetGlobalBuffer((__gm__ T*)output, td.outputLen);
        pipe->InitBuffer(rowQue_, 2, td.rowBufBytes);
        pipe->InitBuffer(idxBuf_, td.idxBufBytes);
        tabWin_.Init(pipe, tabGm_, td.tableCount * 8, td.windowBytes);
    }

    __aicore__ inline void Process() {
        const mxrec::Span span = mxrec::SplitEven(td_.indexCount, td_.coreNum, GetBlockIdx());
        int64_t j = span.begin;
        for (int64_t t = 0; t < td_.tableCount && j < span.end; ++t) {
            const int64_t idxOff = tabWin_.Get(8 * t + 3);
            const int64_t num = tabWin_.Get(8 * t + 4);
            if (j >= idxOff + num)
                continue;
            const int64_t end = mxrec::Min64(span.end, idxOff + num);
            Table(t, j - idxOff, end - idxOff);
            j = end;
        }
    }

private:
    // Indices [k0, k1) of table t.
    __aicore__ inline void Table(int64_t t, int64_t k0, int64_t k1) {
        const int64_t inOff = tabWin_.Get(8 * t);
        const int64_t rows = tabWin_.Get(8 * t + 1);
        const int64_t cols = tabWin_.Get(8 * t + 2);
        const int64_t idxOff = tabWin_.Get(8 * t + 3);
        const int64_t outOff = tabWin_.Get(8 * t + 5);
        const int64_t stride = tabWin_.Get(8 * t + 6);
        if (cols <= 0)
            return;
        const int64_t piece = mxrec::Min64(cols, td_.rowElems);
        LocalTensor<TI> idx = idxBuf_.Get<TI>();
        for (int64_t c0 = 0; c0 < cols; c0 += piece) {
            const int64_t pc = mxrec::Min64(piece, cols - c0);
            const int64_t slot =
                mxrec::AlignUp(pc * static_cast<int64_t>(sizeof(T)), mxrec::kBlockBytes) /
                static_cast<int64_t>(sizeof(T));
            const int64_t step =
                mxrec::Min64(mxrec::Min64(td_.rowElems / slot, td_.idxChunk), kMaxBlocks);
            for (int64_t s = k0; s < k1; s += step) {
                const int64_t n = mxrec::Min64(step, k1 - s);
                mxrec::PipeSync<HardEvent::S_MTE2>();  // the previous block's indices were read
                DataCopyExtParams in{1, static_cast<uint32_t>(n * sizeof(TI)), 0, 0, 0};
                DataCopyPadExtParams<TI> ipad{false, 0, 0, static_cast<TI>(0)};
                DataCopyPad(idx, idxGm_[idxOff + s], in, ipad);
                mxrec::PipeSync<HardEvent::MTE2_S>();
                LocalTensor<T> buf = rowQue_.AllocTensor<T>();
                DataCopyExtParams row{1, static_cast<uint32_t>(pc * sizeof(T)), 0, 0, 0};
                DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
                for (int64_t r = 0; r < n; ++r) {
                    const int64_t v = static_cast<int64_t>(idx.GetValue(static_cast<uint32_t>(r)));
                    if (v < 0 || v >= rows)
                        Trap();  // index out of range for its table
                    DataCopyPad(buf[static_cast<uint32_t>(r * slot)], xGm_[inOff + v * cols + c0],
                                row, pad);
                }
                rowQue_.EnQue(buf);
                buf = rowQue_.DeQue<T>();
                const int64_t bytes = pc * static_cast<int64_t>(sizeof(T));
                DataCopyExtParams out{static_cast<uint16_t>(n), static_cast<uint32_t>(bytes), 0,
                                      static_cast<uint32_t>(stride * sizeof(T) - bytes), 0};
                DataCopyPad(outGm_[outOff + s * stride + c0], buf, out);
                rowQue_.FreeTensor(buf);
            }
        }
    }

    BatchIndexSelectDim0TilingData td_;
    GlobalTensor<T> xGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<int64_t> tabGm_;
    GlobalTensor<T> outGm_;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> rowQue_;
    TBuf<TPosition::VECCALC> idxBuf_;
    mxrec::OffsetWindow<int64_t> tabWin_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "batch_index_select_dim0_kernel_entry.h"
