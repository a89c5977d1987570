// KeyedJaggedIndexSelectDim1: output bag (t, j) is input bag (t, indices[j]) of every key t;
// output_lengths[t * I + j] = lengths[t * B + indices[j]], and the bag's values (and weights)
// move, in order, to the output.
//
// Phases (see the tiling header): A gathers the selected bags' lengths and starts, B turns the
// lengths into output offsets (after SyncAll, with the per-core totals), C moves the bags'
// values split evenly over the output values (after SyncAll), gathered in UB from staged
// windows of the source. Lengths and offsets are small integers read by the scalar unit from
// UB rows (int64 has no vector add or gather on A2/A3).
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "keyed_jagged_index_select_dim1_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSlot = 4;  // int64 elements per 32-byte slot

// The type Gather moves an element of `bytes` as (16 or 32 bits; 8-byte values as two words).
template <int bytes>
struct GatherWord {
    using Type = uint32_t;
};
template <>
struct GatherWord<2> {
    using Type = uint16_t;
};

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
        pipe->InitBuffer(arena_, td.arenaBytes);
        pipe->InitBuffer(lenBlk_, td.blockBufBytes);
        pipe->InitBuffer(startBlk_, td.blockBufBytes);
        pipe->InitBuffer(sumBlk_, td.blockBufBytes);
        pipe->InitBuffer(totBuf_, static_cast<uint32_t>(td.coreNum * mxrec::kBlockBytes));
        idxWin_.Init(pipe, idxGm_, td.selected, td.windowBytes);
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
                    len = static_cast<int64_t>(LenRow().GetValue(static_cast<uint32_t>(col)));
                    start = static_cast<int64_t>(OffRow().GetValue(static_cast<uint32_t>(col)));
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
        DataCopyPad(LenRow(), lenGm_[key * td_.batchSize], copy, pad);
        DataCopyPad(OffRow(), offGm_[key * td_.batchSize], copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
    }

    __aicore__ inline LocalTensor<TL> LenRow() {
        return arena_.GetWithOffset<TL>(td_.rowBufBytes / sizeof(TL), 0);
    }
    __aicore__ inline LocalTensor<TL> OffRow() {
        return arena_.GetWithOffset<TL>(td_.rowBufBytes / sizeof(TL), td_.rowBufBytes);
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
    // Bags average a few values: a DMA per bag would move 32 bytes for each and pay a DMA's
    // fixed cost per bag. Instead a window of the source (typically all of a key's values) is
    // staged in UB with one DMA and the chunk's elements are picked out of it by the vector
    // Gather, then leave as one block. Bags outside the window start a new window where a
    // look-ahead over the next bags says that reads fewer bytes than per-bag copies cost; long
    // bags, and bags where staging does not pay (few columns selected of a long key), are
    // copied by DMA, runs of bags adjacent in values merged.
    __aicore__ inline void CopySegments() {
        mxrec::PipeSync<HardEvent::MTE3_MTE2>();  // this core's offsets are in GM
        mxrec::PipeSync<HardEvent::MTE3_S>();
        mxrec::PipeSync<HardEvent::S_MTE2>();  // the key rows in the arena are read
        const mxrec::Span span = mxrec::SplitEven(td_.outValues, td_.coreNum, idx_);
        const int64_t limit = mxrec::Min64(span.end, totalOut_);
        if (span.begin < limit) {
            int64_t lo = 0;  // first bag ending after span.begin
            int64_t hi = td_.bags;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                const int64_t end = mid + 1 < td_.bags ? wsOut_.GetValue(mid + 1) : totalOut_;
                if (end > span.begin) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            CopyColumn<TV>(outValGm_, valGm_, valCopier_, lo, span.begin, limit);
            if (hasWeights_)
                CopyColumn<TW>(outWGm_, wGm_, wCopier_, lo, span.begin, limit);
        }
        const int64_t zeroFrom = mxrec::Max64(span.begin, totalOut_);
        if (span.end > zeroFrom) {  // selected_lengths_sum larger than the selected total
            valFill_.Fill(outValGm_[zeroFrom], span.end - zeroFrom);
            if (hasWeights_)
                wFill_.Fill(outWGm_[zeroFrom], span.end - zeroFrom);
        }
    }

    // Output elements [begin, limit) of one column (values or weights), from bag `first` on.
    template <typename T>
    __aicore__ inline void CopyColumn(const GlobalTensor<T>& dst, const GlobalTensor<T>& src,
                                      mxrec::GmCopier<T>& copier, int64_t first, int64_t begin,
                                      int64_t limit) {
        Walk<T> w;
        w.dst = dst;
        w.src = src;
        w.copier = &copier;
        w.stageElems = td_.stageBytes / sizeof(T);
        w.winLo = 0;
        w.winHi = 0;
        w.directUntil = -1;
        w.chunkDst = begin;
        w.chunkCount = 0;
        w.runLen = 0;
        LocalTensor<int64_t> metaOut = MetaOut();
        LocalTensor<int64_t> metaStart = MetaStart();
        int64_t pos = begin;
        for (int64_t i0 = first; pos < limit && i0 < td_.bags; i0 += td_.metaBags) {
            const int64_t nb = mxrec::Min64(td_.metaBags, td_.bags - i0);
            LoadMeta(i0, nb);
            for (int64_t r = 0; r < nb && pos < limit; ++r) {
                const int64_t bagStart = metaOut.GetValue(static_cast<uint32_t>(r));
                const int64_t end =
                    mxrec::Min64(metaOut.GetValue(static_cast<uint32_t>(r + 1)), limit);
                if (end <= pos)
                    continue;
                const int64_t from =
                    metaStart.GetValue(static_cast<uint32_t>(r)) + (pos - bagStart);
                const int64_t len = end - pos;
                if (len <= td_.longBag && from >= w.winLo && from + len <= w.winHi) {
                    Append(w, pos, from, len);
                } else if (len > td_.longBag || i0 + r <= w.directUntil) {
                    Direct(w, pos, from, len);
                } else if (PlanWindow(w, i0 + r, pos, from, len, limit)) {
                    Append(w, pos, from, len);
                } else {
                    Direct(w, pos, from, len);
                }
                pos = end;
            }
        }
        FlushChunk(w);
        FlushRun(w);
    }

    template <typename T>
    struct Walk {
        GlobalTensor<T> dst;
        GlobalTensor<T> src;
        mxrec::GmCopier<T>* copier;
        int64_t stageElems;
        int64_t winLo;  // values [winLo, winHi) are staged
        int64_t winHi;
        int64_t directUntil;  // bags up to this one are copied by DMA
        int64_t chunkDst;     // output position of the chunk's first element
        int64_t chunkCount;
        int64_t runSrc;  // a run of bags adjacent in values and in the output, copied by DMA
        int64_t runDst;
        int64_t runLen;
    };

    // Bags [i0, i0 + nb): their starts in values and output offsets (one more) from workspace.
    __aicore__ inline void LoadMeta(int64_t i0, int64_t nb) {
        LocalTensor<int64_t> metaOut = MetaOut();
        LocalTensor<int64_t> metaStart = MetaStart();
        mxrec::PipeSync<HardEvent::S_MTE2>();  // the previous block is read
        const int64_t outs = i0 + nb < td_.bags ? nb + 1 : nb;
        DataCopyExtParams outCopy{1, static_cast<uint32_t>(outs * sizeof(int64_t)), 0, 0, 0};
        DataCopyExtParams startCopy{1, static_cast<uint32_t>(nb * sizeof(int64_t)), 0, 0, 0};
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        DataCopyPad(metaOut, wsOut_[i0], outCopy, pad);
        DataCopyPad(metaStart, wsStarts_[i0], startCopy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        if (outs == nb)
            metaOut.SetValue(static_cast<uint32_t>(nb), totalOut_);
    }

    // A bag outside the staged window. The window to stage holds this bag and as much of its
    // key's values [offsets[t * B], offsets[(t + 1) * B]) as fit: the key's other selected bags
    // lie there (offsets that are not a cumsum of lengths only make the window less useful).
    // It is staged if reading it costs less than copying the key's rest of this core's output,
    // in the share the window holds, one DMA a bag; otherwise those bags are copied by DMA.
    template <typename T>
    __aicore__ inline bool PlanWindow(Walk<T>& w, int64_t bag, int64_t pos, int64_t from,
                                      int64_t len, int64_t limit) {
        const int64_t key = bag / td_.selected;
        const int64_t first = key * td_.batchSize;
        const int64_t keyLo = first == 0 ? 0 : static_cast<int64_t>(offGm_.GetValue(first));
        const int64_t keyHi = static_cast<int64_t>(offGm_.GetValue(first + td_.batchSize));
        const int64_t lo = mxrec::Min64(from, mxrec::Max64(keyLo, from + len - w.stageElems));
        const int64_t hi = mxrec::Max64(
            from + len, mxrec::Min64(mxrec::Min64(keyHi, lo + w.stageElems), td_.valueCount));
        const int64_t keyBagsEnd = (key + 1) * td_.selected;
        const int64_t outEnd =
            mxrec::Min64(limit, keyBagsEnd < td_.bags ? wsOut_.GetValue(keyBagsEnd) : totalOut_);
        const int64_t lastBag = keyBagsEnd - 1;
        // The share of the key's values the window holds (all of them when the key fits).
        const int64_t keySpan = mxrec::Max64(keyHi - keyLo, hi - lo);
        const int64_t useful = (outEnd - pos) * (hi - lo) / keySpan;
        const int64_t bags = (lastBag - bag + 1) * (hi - lo) / keySpan + 1;
        if ((hi - lo - useful) * static_cast<int64_t>(sizeof(T)) > bags * td_.dmaWorthBytes) {
            w.directUntil = lastBag;
            return false;
        }
        FlushChunk(w);
        mxrec::PipeSync<HardEvent::V_MTE2>();  // the last Gather has read the window
        LocalTensor<T> stage =
            arena_.GetWithOffset<T>(static_cast<uint32_t>(w.stageElems), td_.stageOffset);
        DataCopyExtParams copy{1, static_cast<uint32_t>((hi - lo) * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(stage, w.src[lo], copy, pad);
        w.winLo = lo;
        w.winHi = hi;
        return true;
    }

    // Output [pos, pos + len) = values [from, from + len), from the staged window: the elements'
    // byte offsets in the window go to the gather offsets (two 32-bit words for 8-byte values).
    template <typename T>
    __aicore__ inline void Append(Walk<T>& w, int64_t pos, int64_t from, int64_t len) {
        if (w.chunkCount > 0 &&
            (w.chunkCount + len > td_.chunkElems || pos != w.chunkDst + w.chunkCount))
            FlushChunk(w);
        if (w.chunkCount == 0)
            w.chunkDst = pos;
        LocalTensor<uint32_t> offsets = GatherOffsets();
        const uint32_t base = static_cast<uint32_t>((from - w.winLo) * sizeof(T));
        for (int64_t k = 0; k < len; ++k) {
            const uint32_t at = static_cast<uint32_t>(w.chunkCount + k);
            const uint32_t b = base + static_cast<uint32_t>(k * sizeof(T));
            if constexpr (sizeof(T) == 8) {
                offsets.SetValue(2 * at, b);
                offsets.SetValue(2 * at + 1, b + 4);
            } else {
                offsets.SetValue(at, b);
            }
        }
        w.chunkCount += len;
    }

    template <typename T>
    __aicore__ inline void FlushChunk(Walk<T>& w) {
        if (w.chunkCount == 0)
            return;
        using G = typename GatherWord<sizeof(T)>::Type;
        constexpr int64_t kWords = sizeof(T) == 8 ? 2 : 1;
        const uint32_t words = static_cast<uint32_t>(w.chunkCount * kWords);
        LocalTensor<G> stage = arena_.GetWithOffset<G>(
            static_cast<uint32_t>(td_.stageBytes / sizeof(G)), td_.stageOffset);
        LocalTensor<G> chunk = arena_.GetWithOffset<G>(words, td_.chunkOffset);
        mxrec::PipeSync<HardEvent::MTE2_V>();  // the window has arrived
        mxrec::PipeSync<HardEvent::MTE3_V>();  // the last chunk has left
        Gather(chunk, stage, GatherOffsets(), 0, words);
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyExtParams copy{1, static_cast<uint32_t>(w.chunkCount * sizeof(T)), 0, 0, 0};
        DataCopyPad(w.dst[w.chunkDst], chunk.template ReinterpretCast<T>(), copy);
        w.chunkCount = 0;
    }

    template <typename T>
    __aicore__ inline void Direct(Walk<T>& w, int64_t pos, int64_t from, int64_t len) {
        if (w.runLen > 0 && (from != w.runSrc + w.runLen || pos != w.runDst + w.runLen))
            FlushRun(w);
        if (w.runLen == 0) {
            w.runSrc = from;
            w.runDst = pos;
        }
        w.runLen += len;
    }

    template <typename T>
    __aicore__ inline void FlushRun(Walk<T>& w) {
        if (w.runLen == 0)
            return;
        w.copier->Copy(w.dst[w.runDst], w.src[w.runSrc], w.runLen);
        w.runLen = 0;
    }

    __aicore__ inline LocalTensor<uint32_t> GatherOffsets() {
        return arena_.GetWithOffset<uint32_t>(static_cast<uint32_t>(2 * td_.chunkElems),
                                              td_.gatherOffset);
    }
    __aicore__ inline LocalTensor<int64_t> MetaOut() {
        return arena_.GetWithOffset<int64_t>(
            static_cast<uint32_t>(mxrec::AlignUp(td_.metaBags + 1, kSlot)), td_.metaOffset);
    }
    __aicore__ inline LocalTensor<int64_t> MetaStart() {
        const uint32_t at =
            td_.metaOffset + static_cast<uint32_t>(mxrec::AlignUp((td_.metaBags + 1) * 8, 32));
        return arena_.GetWithOffset<int64_t>(static_cast<uint32_t>(td_.metaBags), at);
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
    TBuf<TPosition::VECCALC> arena_;
    TBuf<TPosition::VECCALC> lenBlk_;
    TBuf<TPosition::VECCALC> startBlk_;
    TBuf<TPosition::VECCALC> sumBlk_;
    TBuf<TPosition::VECCALC> totBuf_;
    mxrec::OffsetWindow<TL> idxWin_;
    mxrec::GmCopier<TV> valCopier_;
    mxrec::GmCopier<TW> wCopier_;
    mxrec::GmFiller<TV> valFill_;
    mxrec::GmFiller<TW> wFill_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "keyed_jagged_index_select_dim1_kernel_entry.h"
