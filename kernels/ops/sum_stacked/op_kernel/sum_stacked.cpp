// SumStacked: y = sum over k of x[k], added in k order, as fbgemm's CPU sum_reduce_to_one does
// (a zero tensor, then add_ of each input).
//
// A core sums its range of y a step at a time: the accumulator starts at zero, and the step's
// slice of each of the K rows of x is loaded through a double-buffered queue (the next row
// loads while one is added) and added in. 16-bit inputs are widened to float32, added, and the
// sum rounded back to the input type after every addition: the CPU op rounds each add_ to the
// tensor's type, so a sum kept in float32 to the end would differ in the last bit.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "sum_stacked_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class SumStacked {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR /*workspace*/,
                                const SumStackedTilingData& td, TPipe* pipe) {
        td_ = td;
        xGm_.SetGlobalBuffer((__gm__ T*)x, td.count * td.numel);
        yGm_.SetGlobalBuffer((__gm__ T*)y, td.numel);
        pipe->InitBuffer(inQue_, 2, td.inBufBytes);
        pipe->InitBuffer(accBuf_, td.accBytes);
        if constexpr (sizeof(T) != sizeof(float)) {
            pipe->InitBuffer(castBuf_, td.castBytes);
            pipe->InitBuffer(sumBuf_, td.inBufBytes);
        }
    }

    __aicore__ inline void Process() {
        const int64_t units = mxrec::CeilDiv(td_.numel, td_.unit);
        const mxrec::Span span = mxrec::SplitEven(units, td_.coreNum, GetBlockIdx());
        const int64_t end = mxrec::Min64(span.end * td_.unit, td_.numel);
        for (int64_t start = span.begin * td_.unit; start < end; start += td_.stepElems)
            Step(start, mxrec::Min64(td_.stepElems, end - start));
    }

private:
    __aicore__ inline void Step(int64_t start, int64_t n) {
        const int32_t count = static_cast<int32_t>(n);
        const uint32_t bytes = static_cast<uint32_t>(n * sizeof(T));
        LocalTensor<float> acc = accBuf_.Get<float>();
        // The previous step's copy-out still reads the sum: the vector unit waits for it.
        mxrec::PipeSync<HardEvent::MTE3_V>();
        Duplicate(acc, 0.0f, count);
        for (int64_t k = 0; k < td_.count; ++k) {
            LocalTensor<T> in = inQue_.AllocTensor<T>();
            DataCopyExtParams load{1, bytes, 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
            DataCopyPad(in, xGm_[k * td_.numel + start], load, pad);
            inQue_.EnQue(in);
            in = inQue_.DeQue<T>();
            if constexpr (sizeof(T) == sizeof(float)) {
                Add(acc, acc, in, count);
            } else {
                LocalTensor<float> wide = castBuf_.Get<float>();
                LocalTensor<T> sum = sumBuf_.Get<T>();
                Cast(wide, in, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
                Add(acc, acc, wide, count);
                Cast(sum, acc, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
                Cast(acc, sum, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
            }
            inQue_.FreeTensor(in);
        }
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyExtParams store{1, bytes, 0, 0, 0};
        if constexpr (sizeof(T) == sizeof(float)) {
            DataCopyPad(yGm_[start], acc, store);
        } else {
            DataCopyPad(yGm_[start], sumBuf_.Get<T>(), store);
        }
    }

    SumStackedTilingData td_;
    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
    TQue<TPosition::VECIN, 2> inQue_;
    TBuf<TPosition::VECCALC> accBuf_;
    TBuf<TPosition::VECCALC> castBuf_;
    TBuf<TPosition::VECCALC> sumBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "sum_stacked_kernel_entry.h"
