// Permute2dSparseData: permuted_lengths[i] = lengths[permute[i]], and the values (and weights) of
// input row permute[i] move, in order, to output row i.
//
// Phases (see the tiling header): A input row sums, B gathered output lengths and their sums,
// C exclusive offsets of both (after SyncAll, with the per-core totals), D row-segment copies
// split evenly over the output values (after SyncAll). Row sums are scalar loops over UB blocks
// of many rows (lengths are small integers, int64 has no vector add on A2/A3); the bulk data
// only moves through DMA.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "permute2d_sparse_data_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSlot = 4;  // int64 elements per 32-byte slot

template <typename TP, typename TL, typename TV, typename TW>
class Permute2dSparseData {
public:
    __aicore__ inline void Init(GM_ADDR permute, GM_ADDR lengths, GM_ADDR values, GM_ADDR weights,
                                GM_ADDR permutedLengths, GM_ADDR permutedValues,
                                GM_ADDR permutedWeights, GM_ADDR workspace,
                                const Permute2dSparseDataTilingData& td, TPipe* pipe) {
        td_ = td;
        idx_ = GetBlockIdx();
        hasWeights_ = td.weightWidth > 0;
        permGm_.SetGlobalBuffer((__gm__ TP*)permute, td.outRows);
        lenGm_.SetGlobalBuffer((__gm__ TL*)lengths, td.rows * td.cols);
        valGm_.SetGlobalBuffer((__gm__ TV*)values, td.valueCount);
        outLenGm_.SetGlobalBuffer((__gm__ TL*)permutedLengths, td.outRows * td.cols);
        outValGm_.SetGlobalBuffer((__gm__ TV*)permutedValues, td.outValues);
        GM_ADDR ws = GetUserWorkspace(workspace);
        wsIn_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsInOffsets), td.rows);
        wsOut_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsOutOffsets), td.outRows);
        wsTot_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsTotals), 2 * td.coreNum * kSlot);
        pipe->InitBuffer(rowBuf_, td.rowBufBytes);
        pipe->InitBuffer(sumBuf_, static_cast<uint32_t>(td.sumBlock * sizeof(int64_t)));
        pipe->InitBuffer(totBuf_, static_cast<uint32_t>(2 * td.coreNum * mxrec::kBlockBytes));
        pipe->InitBuffer(pubBuf_, static_cast<uint32_t>(2 * mxrec::kBlockBytes));
        permWin_.Init(pipe, permGm_, td.outRows, td.windowBytes);
        outOffWin_.Init(pipe, wsOut_, td.outRows, td.windowBytes);
        valCopier_.Init(pipe, td.copyBufBytes);
        valFill_.Init(pipe, td.fillBufBytes, 0);
        if (hasWeights_) {
            wGm_.SetGlobalBuffer((__gm__ TW*)weights, td.valueCount * td.weightWidth);
            outWGm_.SetGlobalBuffer((__gm__ TW*)permutedWeights, td.outValues * td.weightWidth);
            wCopier_.Init(pipe, td.copyBufBytes);
            wFill_.Init(pipe, td.fillBufBytes, 0);
        }
        rowElems_ = mxrec::AlignUp(td.cols * static_cast<int64_t>(sizeof(TL)), mxrec::kBlockBytes) /
                    static_cast<int64_t>(sizeof(TL));
    }

    __aicore__ inline void Process() {
        const int64_t totIn = InputRowSums();
        const int64_t totOut = GatherLengths();
        Publish(totIn, totOut);
        SyncAll();
        int64_t totalIn = 0;
        ToOffsets(totalIn);
        if (totalIn > td_.valueCount)
            Trap();  // sum(lengths) exceeds values: no valid layout
        SyncAll();
        CopySegments();
    }

private:
    // ---- phase A ---------------------------------------------------------------------------
    __aicore__ inline int64_t InputRowSums() {
        const mxrec::Span span = mxrec::SplitEven(td_.rows, td_.coreNum, idx_);
        LocalTensor<TL> rows = rowBuf_.Get<TL>();
        LocalTensor<int64_t> sums = sumBuf_.Get<int64_t>();
        int64_t total = 0;
        const int64_t block = td_.rowBlock > 0 ? td_.rowBlock : 1;
        for (int64_t t0 = span.begin; t0 < span.end; t0 += block) {
            const int64_t k = mxrec::Min64(block, span.end - t0);
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous block's sums left UB
            for (int64_t r = 0; r < k; ++r) {
                int64_t s = 0;
                if (td_.rowBlock > 0) {
                    if (r == 0)
                        LoadRows(rows, t0, k);
                    for (int64_t j = 0; j < td_.cols; ++j) {
                        s += static_cast<int64_t>(
                            rows.GetValue(static_cast<uint32_t>(r * rowElems_ + j)));
                    }
                } else {
                    s = SumLongRow(t0 + r, -1);
                }
                sums.SetValue(static_cast<uint32_t>(r), s);
                total += s;
            }
            mxrec::PipeSync<HardEvent::S_MTE3>();
            StoreInt64(wsIn_[t0], sums, k);
        }
        return total;
    }

    // k whole rows of lengths, each at a 32-byte aligned UB row of rowElems_.
    __aicore__ inline void LoadRows(LocalTensor<TL>& rows, int64_t t0, int64_t k) {
        mxrec::PipeSync<HardEvent::S_MTE2>();
        DataCopyExtParams copy{static_cast<uint16_t>(k),
                               static_cast<uint32_t>(td_.cols * sizeof(TL)), 0, 0, 0};
        DataCopyPadExtParams<TL> pad{false, 0, 0, static_cast<TL>(0)};
        DataCopyPad(rows, lenGm_[t0 * td_.cols], copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
    }

    // Sum of a row longer than the UB row buffer, chunk by chunk; with outRow >= 0 the chunks are
    // also written to permuted_lengths[outRow].
    __aicore__ inline int64_t SumLongRow(int64_t t, int64_t outRow) {
        LocalTensor<TL> rows = rowBuf_.Get<TL>();
        int64_t s = 0;
        for (int64_t j0 = 0; j0 < td_.cols; j0 += td_.rowChunk) {
            const int64_t n = mxrec::Min64(td_.rowChunk, td_.cols - j0);
            mxrec::PipeSync<HardEvent::MTE3_MTE2>();
            mxrec::PipeSync<HardEvent::S_MTE2>();
            DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(TL)), 0, 0, 0};
            DataCopyPadExtParams<TL> pad{false, 0, 0, static_cast<TL>(0)};
            DataCopyPad(rows, lenGm_[t * td_.cols + j0], copy, pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t j = 0; j < n; ++j)
                s += static_cast<int64_t>(rows.GetValue(static_cast<uint32_t>(j)));
            if (outRow >= 0) {
                mxrec::PipeSync<HardEvent::MTE2_MTE3>();
                DataCopyPad(outLenGm_[outRow * td_.cols + j0], rows, copy);
            }
        }
        return s;
    }

    // ---- phase B ---------------------------------------------------------------------------
    __aicore__ inline int64_t GatherLengths() {
        const mxrec::Span span = mxrec::SplitEven(td_.outRows, td_.coreNum, idx_);
        LocalTensor<TL> rows = rowBuf_.Get<TL>();
        LocalTensor<int64_t> sums = sumBuf_.Get<int64_t>();
        const int64_t rowBytes = td_.cols * static_cast<int64_t>(sizeof(TL));
        const int64_t block = td_.rowBlock > 0 ? td_.rowBlock : 1;
        int64_t total = 0;
        for (int64_t i0 = span.begin; i0 < span.end; i0 += block) {
            const int64_t k = mxrec::Min64(block, span.end - i0);
            mxrec::PipeSync<HardEvent::MTE3_S>();
            if (td_.rowBlock > 0) {
                mxrec::PipeSync<HardEvent::MTE3_MTE2>();  // the previous block left UB
                for (int64_t r = 0; r < k; ++r) {
                    const int64_t t = InputRow(i0 + r);
                    if (rowBytes >= mxrec::kBlockBytes) {
                        DataCopyExtParams copy{1, static_cast<uint32_t>(rowBytes), 0, 0, 0};
                        DataCopyPadExtParams<TL> pad{false, 0, 0, static_cast<TL>(0)};
                        DataCopyPad(rows[static_cast<uint32_t>(r * rowElems_)],
                                    lenGm_[t * td_.cols], copy, pad);
                    } else {  // a few elements: scalar reads beat a DMA each
                        for (int64_t j = 0; j < td_.cols; ++j) {
                            rows.SetValue(static_cast<uint32_t>(r * rowElems_ + j),
                                          lenGm_.GetValue(t * td_.cols + j));
                        }
                    }
                }
                mxrec::PipeSync<HardEvent::MTE2_S>();
                for (int64_t r = 0; r < k; ++r) {
                    int64_t s = 0;
                    for (int64_t j = 0; j < td_.cols; ++j) {
                        s += static_cast<int64_t>(
                            rows.GetValue(static_cast<uint32_t>(r * rowElems_ + j)));
                    }
                    sums.SetValue(static_cast<uint32_t>(r), s);
                    total += s;
                }
                mxrec::PipeSync<HardEvent::S_MTE3>();
                DataCopyExtParams out{static_cast<uint16_t>(k), static_cast<uint32_t>(rowBytes), 0,
                                      0, 0};
                DataCopyPad(outLenGm_[i0 * td_.cols], rows, out);
            } else {
                const int64_t s = SumLongRow(InputRow(i0), i0);
                sums.SetValue(0, s);
                total += s;
                mxrec::PipeSync<HardEvent::S_MTE3>();
            }
            StoreInt64(wsOut_[i0], sums, k);
        }
        return total;
    }

    __aicore__ inline int64_t InputRow(int64_t i) {
        const int64_t t = permWin_.Get(i);
        if (t < 0 || t >= td_.rows)
            Trap();  // permute names a row that does not exist
        return t;
    }

    // ---- phase C ---------------------------------------------------------------------------
    __aicore__ inline void Publish(int64_t totIn, int64_t totOut) {
        LocalTensor<int64_t> pub = pubBuf_.Get<int64_t>();
        pub.SetValue(0, totIn);
        pub.SetValue(kSlot, totOut);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        StoreInt64(wsTot_[idx_ * kSlot], pub, 1);
        StoreInt64(wsTot_[(td_.coreNum + idx_) * kSlot], pub[kSlot], 1);
    }

    __aicore__ inline void ToOffsets(int64_t& totalIn) {
        LocalTensor<int64_t> tot = totBuf_.Get<int64_t>();
        DataCopyExtParams copy{static_cast<uint16_t>(2 * td_.coreNum), sizeof(int64_t),
                               static_cast<uint32_t>(mxrec::kBlockBytes - sizeof(int64_t)), 0, 0};
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        DataCopyPad(tot, wsTot_[0], copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        int64_t carryIn = 0;
        int64_t carryOut = 0;
        totalIn = 0;
        totalOut_ = 0;
        for (int64_t j = 0; j < td_.coreNum; ++j) {
            const int64_t in = tot.GetValue(static_cast<uint32_t>(j * kSlot));
            const int64_t out = tot.GetValue(static_cast<uint32_t>((td_.coreNum + j) * kSlot));
            if (j < idx_) {
                carryIn += in;
                carryOut += out;
            }
            totalIn += in;
            totalOut_ += out;
        }
        ExclusiveScan(wsIn_, mxrec::SplitEven(td_.rows, td_.coreNum, idx_), carryIn);
        ExclusiveScan(wsOut_, mxrec::SplitEven(td_.outRows, td_.coreNum, idx_), carryOut);
    }

    __aicore__ inline void ExclusiveScan(GlobalTensor<int64_t>& gm, mxrec::Span span,
                                         int64_t carry) {
        LocalTensor<int64_t> buf = sumBuf_.Get<int64_t>();
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.sumBlock) {
            const int64_t k = mxrec::Min64(td_.sumBlock, span.end - i0);
            mxrec::PipeSync<HardEvent::MTE3_MTE2>();
            DataCopyExtParams copy{1, static_cast<uint32_t>(k * sizeof(int64_t)), 0, 0, 0};
            DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
            DataCopyPad(buf, gm[i0], copy, pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t r = 0; r < k; ++r) {
                const int64_t v = buf.GetValue(static_cast<uint32_t>(r));
                buf.SetValue(static_cast<uint32_t>(r), carry);
                carry += v;
            }
            mxrec::PipeSync<HardEvent::S_MTE3>();
            DataCopyPad(gm[i0], buf, copy);
        }
    }

    // ---- phase D ---------------------------------------------------------------------------
    __aicore__ inline int64_t OutEnd(int64_t i) {
        return i + 1 < td_.outRows ? outOffWin_.Get(i + 1) : totalOut_;
    }

    __aicore__ inline void CopySegments() {
        mxrec::PipeSync<HardEvent::MTE3_S>();
        const mxrec::Span span = mxrec::SplitEven(td_.outValues, td_.coreNum, idx_);
        const int64_t limit = mxrec::Min64(span.end, totalOut_);
        int64_t pos = span.begin;
        if (pos < limit) {
            int64_t lo = 0;  // first output row ending after pos
            int64_t hi = td_.outRows;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                const int64_t end = mid + 1 < td_.outRows ? wsOut_.GetValue(mid + 1) : totalOut_;
                if (end > pos) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            for (int64_t i = lo; pos < limit && i < td_.outRows; ++i) {
                const int64_t rowStart = outOffWin_.Get(i);
                const int64_t segEnd = mxrec::Min64(OutEnd(i), limit);
                if (segEnd <= pos)
                    continue;
                const int64_t src = wsIn_.GetValue(InputRow(i)) + (pos - rowStart);
                const int64_t n = segEnd - pos;
                valCopier_.Copy(outValGm_[pos], valGm_[src], n);
                if (hasWeights_) {
                    const int64_t w = td_.weightWidth;
                    wCopier_.Copy(outWGm_[pos * w], wGm_[src * w], n * w);
                }
                pos = segEnd;
            }
        }
        const int64_t zeroFrom = mxrec::Max64(span.begin, totalOut_);
        if (span.end > zeroFrom) {  // permuted_lengths_sum larger than the permuted total
            valFill_.Fill(outValGm_[zeroFrom], span.end - zeroFrom);
            if (hasWeights_)
                wFill_.Fill(outWGm_[zeroFrom * td_.weightWidth],
                            (span.end - zeroFrom) * td_.weightWidth);
        }
    }

    __aicore__ inline void StoreInt64(const GlobalTensor<int64_t>& dst,
                                      const LocalTensor<int64_t>& src, int64_t n) {
        DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(int64_t)), 0, 0, 0};
        DataCopyPad(dst, src, copy);
    }

    Permute2dSparseDataTilingData td_;
    int64_t idx_ = 0;
    int64_t rowElems_ = 0;
    int64_t totalOut_ = 0;
    bool hasWeights_ = false;
    GlobalTensor<TP> permGm_;
    GlobalTensor<TL> lenGm_;
    GlobalTensor<TL> outLenGm_;
    GlobalTensor<TV> valGm_;
    GlobalTensor<TV> outValGm_;
    GlobalTensor<TW> wGm_;
    GlobalTensor<TW> outWGm_;
    GlobalTensor<int64_t> wsIn_;
    GlobalTensor<int64_t> wsOut_;
    GlobalTensor<int64_t> wsTot_;
    TBuf<TPosition::VECCALC> rowBuf_;
    TBuf<TPosition::VECCALC> sumBuf_;
    TBuf<TPosition::VECCALC> totBuf_;
    TBuf<TPosition::VECCALC> pubBuf_;
    mxrec::OffsetWindow<TP> permWin_;
    mxrec::OffsetWindow<int64_t> outOffWin_;
    mxrec::GmCopier<TV> valCopier_;
    mxrec::GmCopier<TW> wCopier_;
    mxrec::GmFiller<TV> valFill_;
    mxrec::GmFiller<TW> wFill_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "permute2d_sparse_data_kernel_entry.h"
