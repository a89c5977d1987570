// PermuteMultiEmbedding: for each segment (in_offset, out_offset, length, accumulate), in order,
// y[b, out_offset + j] = x[b, in_offset + j] (or += with accumulate) for every row b and j <
// length.
//
// Each core owns a slice of the rows and walks the segment table (read through a small UB
// window). A step moves up to 4095 rows of one segment's columns with one strided DataCopyPad in
// and one out, through a double-buffered queue. Adding segments (the backward of a key that
// appears in several outputs) read y's piece too, add in the vector unit (16-bit types in
// float32, rounded once as fbgemm's CPU kernel rounds) and write it back; they wait for the
// core's earlier writes to y to land first, since an earlier segment may have written those
// columns of the same rows.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "permute_multi_embedding_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kMaxBlocks = 4095;  // DataCopyPad's blockCount limit

template <typename T>
class PermuteMultiEmbedding {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR segments, GM_ADDR y, GM_ADDR /*workspace*/,
                                const PermuteMultiEmbeddingTilingData& td, TPipe* pipe) {
        td_ = td;
        xGm_.SetGlobalBuffer((__gm__ T*)x, td.batch * td.inCols);
        yGm_.SetGlobalBuffer((__gm__ T*)y, td.batch * td.outCols);
        segGm_.SetGlobalBuffer((__gm__ int32_t*)segments, td.segCount * 4);
        pipe->InitBuffer(copyQue_, 2, td.copyBufBytes);
        segWin_.Init(pipe, segGm_, td.segCount * 4, td.windowBytes);
        if (TILING_KEY_IS(PME_KEY_ADD)) {
            adds_ = true;
        } else if (TILING_KEY_IS(PME_KEY_COPY)) {
            adds_ = false;
        }
        if (adds_) {
            pipe->InitBuffer(xBuf_, td.addBufBytes);
            pipe->InitBuffer(yBuf_, td.addBufBytes);
            if constexpr (sizeof(T) == 2) {
                pipe->InitBuffer(fxBuf_, td.floatBufBytes);
                pipe->InitBuffer(fyBuf_, td.floatBufBytes);
            }
        }
    }

    __aicore__ inline void Process() {
        const mxrec::Span span = mxrec::SplitEven(td_.batch, td_.coreNum, GetBlockIdx());
        if (span.end <= span.begin)
            return;
        for (int64_t s = 0; s < td_.segCount; ++s) {
            const int64_t inOff = segWin_.Get(4 * s);
            const int64_t outOff = segWin_.Get(4 * s + 1);
            const int64_t len = segWin_.Get(4 * s + 2);
            const bool add = segWin_.Get(4 * s + 3) != 0;
            if (len <= 0)
                continue;
            if (add && adds_) {
                AddSegment(span, inOff, outOff, len);
            } else if (add) {
                Trap();  // an adding segment in a launch tiled for copies only
            } else {
                CopySegment(span, inOff, outOff, len);
            }
        }
    }

private:
    // Elements a row piece of `cols` occupies in UB (DataCopyPad lands each block aligned).
    __aicore__ inline static int64_t RowElems(int64_t cols) {
        return mxrec::AlignUp(cols * static_cast<int64_t>(sizeof(T)), mxrec::kBlockBytes) /
               static_cast<int64_t>(sizeof(T));
    }

    __aicore__ inline DataCopyExtParams InParams(int64_t rows, int64_t cols, int64_t rowLen) {
        const int64_t bytes = cols * static_cast<int64_t>(sizeof(T));
        return DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(bytes),
                                 static_cast<uint32_t>(rowLen * sizeof(T) - bytes), 0, 0};
    }

    __aicore__ inline DataCopyExtParams OutParams(int64_t rows, int64_t cols, int64_t rowLen) {
        const int64_t bytes = cols * static_cast<int64_t>(sizeof(T));
        return DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(bytes), 0,
                                 static_cast<uint32_t>(rowLen * sizeof(T) - bytes), 0};
    }

    __aicore__ inline void CopySegment(const mxrec::Span& span, int64_t inOff, int64_t outOff,
                                       int64_t len) {
        const int64_t piece = mxrec::Min64(len, td_.copyElems);
        for (int64_t c0 = 0; c0 < len; c0 += piece) {
            const int64_t cols = mxrec::Min64(piece, len - c0);
            const int64_t step = mxrec::Min64(td_.copyElems / RowElems(cols), kMaxBlocks);
            for (int64_t r0 = span.begin; r0 < span.end; r0 += step) {
                const int64_t n = mxrec::Min64(step, span.end - r0);
                LocalTensor<T> buf = copyQue_.AllocTensor<T>();
                DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
                DataCopyPad(buf, xGm_[r0 * td_.inCols + inOff + c0], InParams(n, cols, td_.inCols),
                            pad);
                copyQue_.EnQue(buf);
                buf = copyQue_.DeQue<T>();
                DataCopyPad(yGm_[r0 * td_.outCols + outOff + c0], buf,
                            OutParams(n, cols, td_.outCols));
                copyQue_.FreeTensor(buf);
            }
        }
    }

    __aicore__ inline void AddSegment(const mxrec::Span& span, int64_t inOff, int64_t outOff,
                                      int64_t len) {
        const int64_t piece = mxrec::Min64(len, td_.addElems);
        LocalTensor<T> xs = xBuf_.Get<T>();
        LocalTensor<T> ys = yBuf_.Get<T>();
        for (int64_t c0 = 0; c0 < len; c0 += piece) {
            const int64_t cols = mxrec::Min64(piece, len - c0);
            const int64_t rowElems = RowElems(cols);
            const int64_t step = mxrec::Min64(td_.addElems / rowElems, kMaxBlocks);
            for (int64_t r0 = span.begin; r0 < span.end; r0 += step) {
                const int64_t n = mxrec::Min64(step, span.end - r0);
                // y's piece may have just been written by this core (an earlier segment or
                // step) and the buffers are read by the previous step's vector and MTE3 work.
                mxrec::PipeSync<HardEvent::MTE3_MTE2>();
                mxrec::PipeSync<HardEvent::V_MTE2>();
                DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
                DataCopyPad(xs, xGm_[r0 * td_.inCols + inOff + c0], InParams(n, cols, td_.inCols),
                            pad);
                DataCopyPad(ys, yGm_[r0 * td_.outCols + outOff + c0],
                            InParams(n, cols, td_.outCols), pad);
                mxrec::PipeSync<HardEvent::MTE2_V>();
                const int32_t count = static_cast<int32_t>(n * rowElems);
                if constexpr (sizeof(T) == 2) {
                    LocalTensor<float> fx = fxBuf_.Get<float>();
                    LocalTensor<float> fy = fyBuf_.Get<float>();
                    Cast(fx, xs, RoundMode::CAST_NONE, static_cast<uint32_t>(count));
                    Cast(fy, ys, RoundMode::CAST_NONE, static_cast<uint32_t>(count));
                    Add(fy, fy, fx, count);
                    Cast(ys, fy, RoundMode::CAST_RINT, static_cast<uint32_t>(count));
                } else {
                    Add(ys, ys, xs, count);
                }
                mxrec::PipeSync<HardEvent::V_MTE3>();
                DataCopyPad(yGm_[r0 * td_.outCols + outOff + c0], ys,
                            OutParams(n, cols, td_.outCols));
            }
        }
    }

    PermuteMultiEmbeddingTilingData td_;
    bool adds_ = false;
    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
    GlobalTensor<int32_t> segGm_;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> copyQue_;
    TBuf<TPosition::VECCALC> xBuf_;
    TBuf<TPosition::VECCALC> yBuf_;
    TBuf<TPosition::VECCALC> fxBuf_;
    TBuf<TPosition::VECCALC> fyBuf_;
    mxrec::OffsetWindow<int32_t> segWin_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "permute_multi_embedding_kernel_entry.h"
