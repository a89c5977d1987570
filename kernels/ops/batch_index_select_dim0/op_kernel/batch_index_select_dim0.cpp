// BatchIndexSelectDim0: for every table t and k < num_t,
// output[out_t + k * stride_t + j] = inputs[in_t + indices[idx_t + k] * cols_t + j], j < cols_t.
//
// The walk of batch_rows_kernel.h: per step each selected table row is gathered into its own
// UB slot, and the block of rows leaves with one strided DataCopyPad.
#include "kernel_operator.h"
#include "batch_rows_kernel.h"
#include "batch_index_select_dim0_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T, typename TI>
class BatchIndexSelectDim0 : public mxrec::BatchRowsWalk<BatchIndexSelectDim0<T, TI>, T, TI> {
public:
    __aicore__ inline void Init(GM_ADDR inputs, GM_ADDR indices, GM_ADDR tables, GM_ADDR output,
                                GM_ADDR /*workspace*/, const BatchIndexSelectDim0TilingData& td,
                                TPipe* pipe) {
        this->InitWalk(inputs, indices, tables, output, td.walk, pipe);
    }

    __aicore__ inline void MoveRows(const LocalTensor<TI>& idx, const mxrec::BatchRowsStep& st) {
        LocalTensor<T> buf = this->rowQue_.template AllocTensor<T>();
        DataCopyExtParams row{1, static_cast<uint32_t>(st.pc * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        for (int64_t r = 0; r < st.n; ++r) {
            const int64_t v = static_cast<int64_t>(idx.GetValue(static_cast<uint32_t>(r)));
            if (v < 0 || v >= st.rows)
                Trap();  // index out of range for its table
            DataCopyPad(buf[static_cast<uint32_t>(r * st.slot)],
                        this->xGm_[st.inOff + v * st.cols + st.c0], row, pad);
        }
        this->rowQue_.EnQue(buf);
        buf = this->rowQue_.template DeQue<T>();
        DataCopyPad(this->outGm_[st.outOff + st.s * st.stride + st.c0], buf,
                    this->Selected(st, true));
        this->rowQue_.FreeTensor(buf);
    }
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "batch_index_select_dim0_kernel_entry.h"
