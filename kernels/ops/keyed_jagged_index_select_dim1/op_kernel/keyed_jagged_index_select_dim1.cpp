// KeyedJaggedIndexSelectDim1: output bag (t, j) is input bag (t, indices[j]) of every key t;
// output_lengths[t * I + j] = lengths[t * B + indices[j]], and the bag's values (and weights)
// move, in order, to the output.
//
// Phases (see the tiling header): A gathers the selected bags' lengths and starts, B turns the
// lengths into output offsets (after SyncAll, with the per-core totals), C copies the bags'
// segments split evenly over the output values (after SyncAll). Lengths and offsets are small
// integers read by the scalar unit from UB rows (int64 has no vector add or gather on A2/A3);
// the bulk data only moves through DMA.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "keyed_jagged_index_select_dim1_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSlot = 4;  // int64 elements per 32-byte slot

template <typename TV, typename TL, typename TW>
class KeyedJaggedIndexSelectDim1 {
public:
    __aicore__ inline void Init(GM_ADDR values, GM_ADDR lengths, GM_ADDR offsets, GM_ADDR indices,
                                GM_ADDR weights, GM_ADDR output, GM_ADDR outputLengths,
                                GM_ADDR outputWeights, GM_ADDR workspace,
                                const KeyedJaggedIndexSelectDim1TilingData& td, TPipe* pipe) {
        td_ = td;
        idx_ = GetBlockIdx();
        hasWeights_ = td.hasWeights != 0;
        valGm_.SetGlobalBuffer((__gm__ TV*)values, td.valueCount);
        lenGm_.SetGlobalBuffer((__gm__ TL*)lengths, td.keys * td.batchSize);
        offGm_.SetGlobalBuffer((__gm__ TL*)offsets, td.keys * td.batchSize + 1);
        idxGm_.SetGlobalBuffer((__gm__ TL*)indices, td.selected);
        outValGm_.SetGlobalBuffer((__gm__ TV*)output, td.outValues);
        outLenGm_.SetGlobalBuffer((__gm__ TL*)outputLengths, td.bags);
        GM_ADDR ws = GetUserWorkspace(workspace);
        wsStarts_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsStarts), td.bags);
        wsOut_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsOutOffsets), td.bags);
        wsTot_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsTotals), td.coreNum * kSlot);
        if (td.rowCached != 0) {
            pipe->InitBuffer(lenRow_, td.rowBufBytes);
            pipe->InitBuffer(offRow_, td.rowBufBytes);
        }
        pipe->InitBuffer(lenBlk_, td.blockBufBytes);
        pipe->InitBuffer(startBlk_, td.blockBufBytes);
        pipe->InitBuffer(sumBlk_, td.blockBufBytes);
        pipe->InitBuffer(totBuf_, static_cast<uint32_t>(td.coreNum * mxrec::kBlockBytes));
        idxWin_.Init(pipe, idxGm_, td.selected, td.windowBytes);
        outOffWin_.Init(pipe, wsOut_, td.bags, td.windowBytes);
        startWin_.Init(pipe, wsStarts_, td.bags, td.windowBytes);
        valCopier_.Init(pipe, td.copyBufBytes);
        valFill_.Init(pipe, td.fillBufBytes, 0);
        if (hasWeights_) {
            wGm_.SetGlobalBuffer((__gm__ TW*)weights, td.valueCount);
            outWGm_.SetGlobalBuffer((__gm__ TW*)outputWeights, td.outValues);
            wCopier_.Init(pipe, td.copyBufBytes);
            wFill_.Init(pipe, td.fillBufBytes, 0);
        }
    }

    __aicore__ inline void Process() {
        const int64_t total = SelectBags();
        Publish(total);
        SyncAll();
        ToOffsets();
        SyncAll();
        CopySegments();
    }

private:
    // ---- phase A ---------------------------------------------------------------------------
    __aicore__ inline int64_t SelectBags() {
        const mxrec::Span span = mxrec::SplitEven(td_.bags, td_.coreNum, idx_);
        LocalTensor<TL> lens = lenBlk_.Get<TL>();
        LocalTensor<int64_t> starts = startBlk_.Get<int64_t>();
        LocalTensor<int64_t> sums = sumBlk_.Get<int64_t>();
        int64_t total = 0;
        int64_t cachedKey = -1;
        for (int64_t k0 = span.begin; k0 < span.end; k0 += td_.bagBlock) {
            const int64_t n = mxrec::Min64(td_.bagBlock, span.end - k0);
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous block left UB
            for (int64_t r = 0; r < n; ++r) {
                const int64_t k = k0 + r;
                const int64_t key = k / td_.selected;
                const int64_t col = idxWin_.Get(k - key * td_.selected);
                if (col < 0 || col >= td_.batchSize)
                    Trap();  // indices names a batch column that does not exist
                if (td_.rowCached != 0 && key != cachedKey) {
                    LoadKeyRows(key);
                    cachedKey = key;
                }
                const int64_t bag = key * td_.batchSize + col;
                int64_t len = 0;
                int64_t start = 0;
                if (td_.rowCached != 0) {
                    len = static_cast<int64_t>(
                        lenRow_.Get<TL>().GetValue(static_cast<uint32_t>(col)));
                    start = static_cast<int64_t>(
                        offRow_.Get<TL>().GetValue(static_cast<uint32_t>(col)));
                } else {  // a key longer than the row buffers: scalar reads
                    len = static_cast<int64_t>(lenGm_.GetValue(bag));
                    start = static_cast<int64_t>(offGm_.GetValue(bag));
                }
                if (bag == 0)
                    start = 0;  // fbgemm's kernel never reads offsets[0]
                if (len < 0 || start < 0 || start > td_.valueCount - len)
                    Trap();  // the bag reaches outside values
                lens.SetValue(static_cast<uint32_t>(r), static_cast<TL>(len));
                starts.SetValue(static_cast<uint32_t>(r), start);
                sums.SetValue(static_cast<uint32_t>(r), len);
                total += len;
            }
            mxrec::PipeSync<HardEvent::S_MTE3>();
            DataCopyExtParams lenCopy{1, static_cast<uint32_t>(n * sizeof(TL)), 0, 0, 0};
            DataCopyPad(outLenGm_[k0], lens, lenCopy);
            StoreInt64(wsStarts_[k0], starts, n);
            StoreInt64(wsOut_[k0], sums, n);
        }
        return total;
    }

    // Row `key` of lengths and of offsets (B entries each) into UB.
    __aicore__ inline void LoadKeyRows(int64_t key) {
        mxrec::PipeSync<HardEvent::S_MTE2>();  // scalar reads of the previous rows are done
        DataCopyExtParams copy{1, static_cast<uint32_t>(td_.batchSize * sizeof(TL)), 0, 0, 0};
        DataCopyPadExtParams<TL> pad{false, 0, 0, static_cast<TL>(0)};
        DataCopyPad(lenRow_.Get<TL>(), lenGm_[key * td_.batchSize], copy, pad);
        DataCopyPad(offRow_.Get<TL>(), offGm_[key * td_.batchSize], copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
    }

    // ---- phase B ---------------------------------------------------------------------------
    __aicore__ inline void Publish(int64_t total) {
        LocalTensor<int64_t> pub = sumBlk_.Get<int64_t>();
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the last block of sums left UB
        pub.SetValue(0, total);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        StoreInt64(wsTot_[idx_ * kSlot], pub, 1);
    }

    __aicore__ inline void ToOffsets() {
        LocalTensor<int64_t> tot = totBuf_.Get<int64_t>();
        DataCopyExtParams copy{static_cast<uint16_t>(td_.coreNum), sizeof(int64_t),
                               static_cast<uint32_t>(mxrec::kBlockBytes - sizeof(int64_t)), 0, 0};
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        DataCopyPad(tot, wsTot_[0], copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        int64_t carry = 0;
        totalOut_ = 0;
        for (int64_t j = 0; j < td_.coreNum; ++j) {
            const int64_t v = tot.GetValue(static_cast<uint32_t>(j * kSlot));
            if (j < idx_)
                carry += v;
            totalOut_ += v;
        }
        LocalTensor<int64_t> buf = sumBlk_.Get<int64_t>();
        const mxrec::Span span = mxrec::SplitEven(td_.bags, td_.coreNum, idx_);
        for (int64_t i0 = span.begin; i0 < span.end; i0 += td_.sumBlock) {
            const int64_t k = mxrec::Min64(td_.sumBlock, span.end - i0);
            mxrec::PipeSync<HardEvent::MTE3_MTE2>();  // the previous block (or sums) left UB
            DataCopyExtParams io{1, static_cast<uint32_t>(k * sizeof(int64_t)), 0, 0, 0};
            DataCopyPad(buf, wsOut_[i0], io, pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t r = 0; r < k; ++r) {
                const int64_t v = buf.GetValue(static_cast<uint32_t>(r));
                buf.SetValue(static_cast<uint32_t>(r), carry);
                carry += v;
            }
            mxrec::PipeSync<HardEvent::S_MTE3>();
            DataCopyPad(wsOut_[i0], buf, io);
        }
    }

    // ---- phase C ---------------------------------------------------------------------------
    __aicore__ inline int64_t BagEnd(int64_t i) {
        return i + 1 < td_.bags ? outOffWin_.Get(i + 1) : totalOut_;
    }

    __aicore__ inline void CopySegments() {
        mxrec::PipeSync<HardEvent::MTE3_MTE2>();  // this core's offsets are in GM
        mxrec::PipeSync<HardEvent::MTE3_S>();
        const mxrec::Span span = mxrec::SplitEven(td_.outValues, td_.coreNum, idx_);
        const int64_t limit = mxrec::Min64(span.end, totalOut_);
        int64_t pos = span.begin;
        if (pos < limit) {
            int64_t lo = 0;  // first bag ending after pos
            int64_t hi = td_.bags;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                const int64_t end = mid + 1 < td_.bags ? wsOut_.GetValue(mid + 1) : totalOut_;
                if (end > pos) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            // Bags adjacent in values and in the output (consecutive columns selected) merge
            // into one copy.
            int64_t runSrc = 0;
            int64_t runDst = pos;
            int64_t runLen = 0;
            for (int64_t i = lo; pos < limit && i < td_.bags; ++i) {
                const int64_t bagStart = outOffWin_.Get(i);
                const int64_t segEnd = mxrec::Min64(BagEnd(i), limit);
                if (segEnd <= pos)
                    continue;
                const int64_t src = startWin_.Get(i) + (pos - bagStart);
                if (runLen > 0 && src != runSrc + runLen) {
                    CopyRun(runDst, runSrc, runLen);
                    runLen = 0;
                }
                if (runLen == 0) {
                    runSrc = src;
                    runDst = pos;
                }
                runLen += segEnd - pos;
                pos = segEnd;
            }
            if (runLen > 0)
                CopyRun(runDst, runSrc, runLen);
        }
        const int64_t zeroFrom = mxrec::Max64(span.begin, totalOut_);
        if (span.end > zeroFrom) {  // selected_lengths_sum larger than the selected total
            valFill_.Fill(outValGm_[zeroFrom], span.end - zeroFrom);
            if (hasWeights_)
                wFill_.Fill(outWGm_[zeroFrom], span.end - zeroFrom);
        }
    }

    __aicore__ inline void CopyRun(int64_t dst, int64_t src, int64_t n) {
        valCopier_.Copy(outValGm_[dst], valGm_[src], n);
        if (hasWeights_)
            wCopier_.Copy(outWGm_[dst], wGm_[src], n);
    }

    __aicore__ inline void StoreInt64(const GlobalTensor<int64_t>& dst,
                                      const LocalTensor<int64_t>& src, int64_t n) {
        DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(int64_t)), 0, 0, 0};
        DataCopyPad(dst, src, copy);
    }

    KeyedJaggedIndexSelectDim1TilingData td_;
    int64_t idx_ = 0;
    int64_t totalOut_ = 0;
    bool hasWeights_ = false;
    GlobalTensor<TV> valGm_;
    GlobalTensor<TV> outValGm_;
    GlobalTensor<TL> lenGm_;
    GlobalTensor<TL> offGm_;
    GlobalTensor<TL> idxGm_;
    GlobalTensor<TL> outLenGm_;
    GlobalTensor<TW> wGm_;
    GlobalTensor<TW> outWGm_;
    GlobalTensor<int64_t> wsStarts_;
    GlobalTensor<int64_t> wsOut_;
    GlobalTensor<int64_t> wsTot_;
    TBuf<TPosition::VECCALC> lenRow_;
    TBuf<TPosition::VECCALC> offRow_;
    TBuf<TPosition::VECCALC> lenBlk_;
    TBuf<TPosition::VECCALC> startBlk_;
    TBuf<TPosition::VECCALC> sumBlk_;
    TBuf<TPosition::VECCALC> totBuf_;
    mxrec::OffsetWindow<TL> idxWin_;
    mxrec::OffsetWindow<int64_t> outOffWin_;
    mxrec::OffsetWindow<int64_t> startWin_;
    mxrec::GmCopier<TV> valCopier_;
    mxrec::GmCopier<TW> wCopier_;
    mxrec::GmFiller<TV> valFill_;
    mxrec::GmFiller<TW> wFill_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "keyed_jagged_index_select_dim1_kernel_entry.h"
