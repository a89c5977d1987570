// BatchIndexSelectDim0Backward: grad_inputs (zeros on entry) gets, for every table t and
// k < num_t, grad[out_t + k * stride_t + j] added into
// grad_inputs[in_t + indices[idx_t + k] * cols_t + j], j < cols_t.
//
// The forward's walk in reverse (batch_rows_kernel.h): a step reads the block's gradient rows
// with one strided DataCopyPad, then adds each row into its table row with an atomic DMA, so
// repeats add up whichever core holds them.
#include "kernel_operator.h"
#include "batch_rows_kernel.h"
#include "batch_index_select_dim0_backward_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T, typename TI>
class BatchIndexSelectDim0Backward
    : public mxrec::BatchRowsWalk<BatchIndexSelectDim0Backward<T, TI>, T, TI> {
public:
    __aicore__ inline void Init(GM_ADDR grad, GM_ADDR indices, GM_ADDR tables, GM_ADDR gradInputs,
                                GM_ADDR /*workspace*/,
                                const BatchIndexSelectDim0BackwardTilingData& td, TPipe* pipe) {
        this->InitWalk(gradInputs, indices, tables, grad, td.walk, pipe);
    }

    __aicore__ inline void MoveRows(const LocalTensor<TI>& idx, const mxrec::BatchRowsStep& st) {
        LocalTensor<T> buf = this->rowQue_.template AllocTensor<T>();
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(buf, this->outGm_[st.outOff + st.s * st.stride + st.c0],
                    this->Selected(st, false), pad);
        this->rowQue_.EnQue(buf);
        buf = this->rowQue_.template DeQue<T>();
        DataCopyExtParams row{1, static_cast<uint32_t>(st.pc * sizeof(T)), 0, 0, 0};
        SetAtomicAdd<T>();
        for (int64_t r = 0; r < st.n; ++r) {
            const int64_t v = static_cast<int64_t>(idx.GetValue(static_cast<uint32_t>(r)));
            if (v < 0 || v >= st.rows) {
                SetAtomicNone();
                Trap();  // index out of range for its table
            }
            DataCopyPad(this->xGm_[st.inOff + v * st.cols + st.c0],
                        buf[static_cast<uint32_t>(r * st.slot)], row);
        }
        SetAtomicNone();
        this->rowQue_.FreeTensor(buf);
    }
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "batch_index_select_dim0_backward_kernel_entry.h"
