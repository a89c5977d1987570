// The walk of the batched index-select pair (AscendC, device code): batch_index_select_dim0
// gathers table rows into the selected rows, its backward adds the selected rows' gradients
// back into the table rows; both move the same rows the same way.
//
// Per table t (descriptor row t of `tables`: input offset, rows, cols, index offset, num, output
// offset, output stride), index k < num_t selects table row indices[idx_t + k], which is selected
// row k at out_t + k * stride_t. A core walks its slice of the concatenated index lists table by
// table. Per step it reads a block of indices into UB (the scalar unit checks each: an index
// outside its table traps, as torch.index_select raises) and the derived class (CRTP) moves the
// block's rows with
//     MoveRows(const LocalTensor<TI>& idx, const BatchRowsStep& step)
// through rowQue_: one DMA per table row (they are scattered) and one strided DataCopyPad for
// the selected rows (consecutive indices of a table have consecutive selected rows), each row in
// its own 32-byte aligned UB slot. Rows wider than a row buffer go in column pieces.
#ifndef MXREC_BATCH_ROWS_KERNEL_H
#define MXREC_BATCH_ROWS_KERNEL_H

#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "batch_rows_data.h"

namespace mxrec {

// One step: selected rows [s, s + n) of a table, columns [c0, c0 + pc).
struct BatchRowsStep {
    int64_t s;
    int64_t n;
    int64_t c0;
    int64_t pc;
    int64_t slot;    // a row's UB stride, in elements
    int64_t rows;    // the table's rows (an index must be below)
    int64_t cols;    // the table's row width
    int64_t inOff;   // the table's first element
    int64_t outOff;  // the first selected row's first element
    int64_t stride;  // elements from one selected row to the next
};

template <typename Derived, typename T, typename TI>
class BatchRowsWalk {
public:
    __aicore__ inline void Process() {
        const Span span = SplitEven(walk_.indexCount, walk_.coreNum, AscendC::GetBlockIdx());
        int64_t j = span.begin;
        for (int64_t t = 0; t < walk_.tableCount && j < span.end; ++t) {
            const int64_t idxOff = tabWin_.Get(8 * t + 3);
            const int64_t num = tabWin_.Get(8 * t + 4);
            if (j >= idxOff + num)
                continue;
            const int64_t end = Min64(span.end, idxOff + num);
            Table(t, j - idxOff, end - idxOff);
            j = end;
        }
    }

protected:
    // tableRows: the tables' elements; selected: the selected rows'.
    __aicore__ inline void InitWalk(GM_ADDR tableRows, GM_ADDR indices, GM_ADDR tables,
                                    GM_ADDR selected, const BatchRowsTiling& walk,
                                    AscendC::TPipe* pipe) {
        walk_ = walk;
        xGm_.SetGlobalBuffer((__gm__ T*)tableRows, walk.inputLen);
        idxGm_.SetGlobalBuffer((__gm__ TI*)indices, walk.indexCount);
        tabGm_.SetGlobalBuffer((__gm__ int64_t*)tables, walk.tableCount * 8);
        outGm_.SetGlobalBuffer((__gm__ T*)selected, walk.outputLen);
        pipe->InitBuffer(rowQue_, 2, walk.rowBufBytes);
        pipe->InitBuffer(idxBuf_, walk.idxBufBytes);
        tabWin_.Init(pipe, tabGm_, walk.tableCount * 8, walk.windowBytes);
    }

    // The selected rows' DMA parameters: n rows of pc elements, `stride` apart in global memory
    // (its side of the DMA: the destination when intoGm), one slot apart in UB.
    __aicore__ inline AscendC::DataCopyExtParams Selected(const BatchRowsStep& st,
                                                          bool intoGm) const {
        const int64_t bytes = st.pc * static_cast<int64_t>(sizeof(T));
        const uint32_t gap = static_cast<uint32_t>(st.stride * sizeof(T) - bytes);
        return AscendC::DataCopyExtParams{static_cast<uint16_t>(st.n), static_cast<uint32_t>(bytes),
                                          intoGm ? 0u : gap, intoGm ? gap : 0u, 0};
    }

    BatchRowsTiling walk_;
    AscendC::GlobalTensor<T> xGm_;
    AscendC::GlobalTensor<T> outGm_;
    AscendC::TQueBind<AscendC::TPosition::VECIN, AscendC::TPosition::VECOUT, 1> rowQue_;

private:
    static constexpr int64_t kMaxBlocks = 4095;  // DataCopyPad's blockCount limit

    // Indices [k0, k1) of table t.
    __aicore__ inline void Table(int64_t t, int64_t k0, int64_t k1) {
        BatchRowsStep st;
        st.inOff = tabWin_.Get(8 * t);
        st.rows = tabWin_.Get(8 * t + 1);
        st.cols = tabWin_.Get(8 * t + 2);
        const int64_t idxOff = tabWin_.Get(8 * t + 3);
        st.outOff = tabWin_.Get(8 * t + 5);
        st.stride = tabWin_.Get(8 * t + 6);
        if (st.cols <= 0)
            return;
        const int64_t piece = Min64(st.cols, walk_.rowElems);
        AscendC::LocalTensor<TI> idx = idxBuf_.template Get<TI>();
        for (st.c0 = 0; st.c0 < st.cols; st.c0 += piece) {
            st.pc = Min64(piece, st.cols - st.c0);
            st.slot = AlignUp(st.pc * static_cast<int64_t>(sizeof(T)), kBlockBytes) /
                      static_cast<int64_t>(sizeof(T));
            const int64_t step = Min64(Min64(walk_.rowElems / st.slot, walk_.idxChunk), kMaxBlocks);
            for (st.s = k0; st.s < k1; st.s += step) {
                st.n = Min64(step, k1 - st.s);
                PipeSync<AscendC::HardEvent::S_MTE2>();  // the previous block's indices were read
                AscendC::DataCopyExtParams in{1, static_cast<uint32_t>(st.n * sizeof(TI)), 0, 0, 0};
                AscendC::DataCopyPadExtParams<TI> ipad{false, 0, 0, static_cast<TI>(0)};
                AscendC::DataCopyPad(idx, idxGm_[idxOff + st.s], in, ipad);
                PipeSync<AscendC::HardEvent::MTE2_S>();
                static_cast<Derived*>(this)->MoveRows(idx, st);
            }
        }
    }

    AscendC::GlobalTensor<TI> idxGm_;
    AscendC::GlobalTensor<int64_t> tabGm_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> idxBuf_;
    OffsetWindow<int64_t> tabWin_;
};

}  // namespace mxrec

#endif  // MXREC_BATCH_ROWS_KERNEL_H
