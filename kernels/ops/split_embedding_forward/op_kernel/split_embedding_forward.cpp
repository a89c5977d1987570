// SplitEmbeddingForward: the forward of fbgemm's table-batched embedding. Pooled modes: output
// row b, columns d_offsets[t]:d_offsets[t + 1] = sum (mean: / bag length) of w_i * row(indices[i])
// over bag t * B + b; none mode: output row i = row(indices[i]). Index -1 adds nothing. With
// variable batch per feature (VBE), bag b_offsets[t] + b goes to fbgemm's flat per-rank,
// per-feature layout instead: a run of bags of one (rank, feature) pair is a [rows, D_t] block.
//
// A core takes its units (bags, or indices in none mode; see the tiling header) table by table
// and, per column chunk, in groups of output rows: zero the float32 accumulators (Duplicate),
// walk the group's indices with scalar code (offsets, indices and indice weights come through
// sequential UB windows; every index and bag is checked here because the row addresses come
// from them), DataCopyPad each row not yet in the batch into a batch slot (a UB hash table of
// the batch's row indices finds repeats: a hot row is fetched once a batch), note each
// occurrence, and per full batch: Cast 16-bit rows to float32 in one instruction, and per
// occurrence in index order Muls by the indice weight (into a copy) and Add into the unit's
// accumulator row. A row costs one DMA, whatever its size: fewer DMAs is what makes the forward
// faster.
// Mean scales each accumulator row by 1 / length (Muls), and one strided DataCopyPad writes the
// group's rows out. Bad contents trap, as bounds_check_indices' fatal mode does.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "tbe_vbe.h"
#include "split_embedding_forward_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSum = 0;
constexpr int64_t kMean = 1;
constexpr int64_t kPruned = -1;  // fbgemm's marker of a pruned row

// Sequential reads of float32 indice weights through a UB window (OffsetWindow is for integers).
class FloatWindow {
public:
    __aicore__ inline void Init(TPipe* pipe, const GlobalTensor<float>& gm, int64_t total,
                                uint32_t windowBytes) {
        gm_ = gm;
        total_ = total;
        pipe->InitBuffer(buf_, windowBytes);
        window_ = mxrec::ElemsPerBlocks(windowBytes, sizeof(float));
    }

    __aicore__ inline float Get(int64_t i) {
        if (i < start_ || i >= start_ + len_) {
            start_ = i;
            len_ = mxrec::Min64(window_, total_ - i);
            LocalTensor<float> win = buf_.Get<float>();
            mxrec::PipeSync<HardEvent::S_MTE2>();
            DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
            DataCopyPad(win, gm_[i],
                        DataCopyExtParams{1, static_cast<uint32_t>(len_ * sizeof(float)), 0, 0, 0},
                        pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
        }
        return buf_.Get<float>().GetValue(static_cast<uint32_t>(i - start_));
    }

private:
    GlobalTensor<float> gm_;
    TBuf<TPosition::VECCALC> buf_;
    int64_t total_ = 0;
    int64_t window_ = 0;
    int64_t start_ = 0;
    int64_t len_ = 0;
};

struct Table {
    int64_t id;    // -1: no table (none-mode positions outside every bag: zero rows)
    int64_t d;     // D_t
    int64_t col;   // d_offsets[t]
    int64_t base;  // weights_offsets[t]
    int64_t rows;  // valid row indices are [0, rows)
};

template <typename TW, typename TI>
class SplitEmbeddingForward {
public:
    static constexpr bool kFloatWeights = sizeof(TW) == 4;

    __aicore__ inline void Init(GM_ADDR weights, GM_ADDR weightsOffsets, GM_ADDR dOffsets,
                                GM_ADDR indices, GM_ADDR offsets, GM_ADDR indiceWeights,
                                GM_ADDR bOffsets, GM_ADDR vbeOutputOffsets, GM_ADDR vbeBOffsetsRank,
                                GM_ADDR out, GM_ADDR /*workspace*/,
                                const SplitEmbeddingForwardTilingData& td, TPipe* pipe) {
        td_ = td;
        me_ = GetBlockIdx();
        if (TILING_KEY_IS(SEF_KEY_POOLED)) {
            pooled_ = true;
        } else if (TILING_KEY_IS(SEF_KEY_NOBAG)) {
            pooled_ = false;
        } else if (TILING_KEY_IS(SEF_KEY_VBE)) {
            vbe_ = true;
        }
        wGm_.SetGlobalBuffer((__gm__ TW*)weights, td.weightsLen);
        woGm_.SetGlobalBuffer((__gm__ int64_t*)weightsOffsets, td.tables);
        doGm_.SetGlobalBuffer((__gm__ int32_t*)dOffsets, td.tables + 1);
        idxGm_.SetGlobalBuffer((__gm__ TI*)indices, td.numIndices);
        offGm_.SetGlobalBuffer((__gm__ TI*)offsets, td.bags + 1);
        outGm_.SetGlobalBuffer((__gm__ float*)out, td.outLen);
        if (vbe_) {
            vbeMeta_.Init(bOffsets, vbeOutputOffsets, vbeBOffsetsRank, td.tables, td.ranks);
        }
        offWin_.Init(pipe, offGm_, td.bags + 1, td.windowBytes);
        idxWin_.Init(pipe, idxGm_, td.numIndices, td.windowBytes);
        if (td.hasWeights) {
            iwGm_.SetGlobalBuffer((__gm__ float*)indiceWeights, td.numIndices);
            iwWin_.Init(pipe, iwGm_, td.numIndices, td.windowBytes);
        }
        pipe->InitBuffer(rowQue_, 2,
                         td.rowBufBytes);  // double buffered: fetch a batch while adding one
        if constexpr (!kFloatWeights)
            pipe->InitBuffer(castBuf_, td.castBufBytes);
        pipe->InitBuffer(accBuf_, td.accBufBytes);
        pipe->InitBuffer(occRow_, td.metaBytes);
        pipe->InitBuffer(occSlot_, td.metaBytes);
        pipe->InitBuffer(occWeight_, td.metaBytes);
        pipe->InitBuffer(slotPos_, td.metaBytes);
        pipe->InitBuffer(slotKey_, td.keyBytes);
        pipe->InitBuffer(hash_, td.hashBytes);
        if (td.hasWeights)
            pipe->InitBuffer(tmpBuf_, td.tmpBytes);
        LocalTensor<int32_t> hash = hash_.Get<int32_t>();
        for (uint32_t i = 0; i < (1u << td.hashBits); ++i)
            hash.SetValue(i, 0);  // empty; each batch empties the entries it used
    }

    __aicore__ inline void Process() {
        if (vbe_) {
            ProcessVbe();
        } else if (pooled_) {
            ProcessPooled();
        } else {
            ProcessNoBag();
        }
    }

private:
    // ---- work split ---------------------------------------------------------------------------
    __aicore__ inline void ProcessPooled() {
        // Every output column must be written exactly once: the column ranges rise from 0 to
        // total_d (checked per table in LoadTable).
        if (doGm_.GetValue(0) != 0 || doGm_.GetValue(td_.tables) != td_.totalD)
            Trap();
        const mxrec::Span span = BagSpan();
        for (int64_t k = span.begin; k < span.end;) {
            const int64_t t = k / td_.batch;
            const int64_t stop = mxrec::Min64(span.end, (t + 1) * td_.batch);
            const Table tb = LoadTable(t);
            Segment(tb, k, stop, (k - t * td_.batch) * td_.outWidth + tb.col, td_.outWidth);
            k = stop;
        }
    }

    __aicore__ inline void ProcessNoBag() {
        const mxrec::Span span = mxrec::SplitEven(td_.units, td_.coreNum, me_);
        const int64_t n = td_.numIndices;
        const int64_t first = Bound(0);
        const int64_t last = Bound(td_.tables);
        if (first < 0 || last < first || last > n)
            Trap();
        if (me_ == 0) {  // one core checks the whole chain; the others rely on the tables they use
            for (int64_t t = 0; t < td_.tables; ++t) {
                if (Bound(t + 1) < Bound(t))
                    Trap();
            }
        }
        const Table none{-1, td_.maxD, 0, 0, 0};
        for (int64_t i = span.begin; i < span.end;) {
            if (i < first || i >= last) {  // positions outside every bag: zero rows
                const int64_t stop = i < first ? mxrec::Min64(span.end, first) : span.end;
                Segment(none, i, stop, i * td_.outWidth, td_.outWidth);
                i = stop;
                continue;
            }
            const int64_t lo = mxrec::LastAtMost(offGm_, td_.batch, td_.tables, i);
            const int64_t end = Bound(lo + 1);
            if (Bound(lo) > i || end <= i || end > n)
                Trap();  // table boundaries out of order
            const int64_t stop = mxrec::Min64(span.end, end);
            Segment(LoadTable(lo), i, stop, i * td_.outWidth, td_.outWidth);
            i = stop;
        }
    }

    // Variable batch per feature. Every core first checks the metadata whole (tbe_vbe.h), so
    // that each output element belongs to exactly one (rank, feature, row) and the walk below
    // needs no checks of its own.
    __aicore__ inline void ProcessVbe() {
        const int64_t tables = td_.tables;
        if (doGm_.GetValue(0) != 0 || doGm_.GetValue(tables) != td_.totalD)
            Trap();
        if (!vbeMeta_.Tiles(doGm_, td_.bags, td_.outLen))
            Trap();  // the VBE metadata does not tile out
        const mxrec::Span span = BagSpan();
        int64_t t = span.begin < span.end ? vbeMeta_.FeatureOf(span.begin) : 0;
        for (int64_t k = span.begin; k < span.end;) {
            while (vbeMeta_.BOff(t + 1) <= k)
                ++t;  // empty features in between
            const Table tb = LoadTable(t);
            const int64_t b = k - vbeMeta_.BOff(t);
            const int64_t r = vbeMeta_.RankOf(t, b);
            const int64_t first = vbeMeta_.RankOff(t, r);
            const int64_t stop =
                mxrec::Min64(span.end, vbeMeta_.BOff(t) + vbeMeta_.RankOff(t, r + 1));
            Segment(tb, k, stop, vbeMeta_.OutputAt(r, t) + (b - first) * tb.d, tb.d);
            k = stop;
        }
    }

    // This core's bags, split by cost (the tiling header; mxrec::SplitByCost): the bags before
    // k cost Cost(k) - Cost(0). The spans tile the bags when the offsets rise; offsets out of
    // order may break that (caught here), and every bag's own offsets are checked where it is
    // pooled.
    __aicore__ inline mxrec::Span BagSpan() {
        if (td_.coreNum <= 1 || td_.idCost <= 0)
            return mxrec::SplitEven(td_.units, td_.coreNum, me_);
        BagCost cost{this};
        const mxrec::Span span = mxrec::SplitByCost(cost, td_.units, td_.coreNum, me_);
        if (span.end < span.begin)
            Trap();  // offsets out of order
        return span;
    }

    // Offsets are clamped into [0, N] so that bad ones cannot overflow; the bags holding them
    // trap anyway.
    __aicore__ inline int64_t Cost(int64_t k) {
        const int64_t o = static_cast<int64_t>(offGm_.GetValue(k));
        const int64_t at = o < 0 ? 0 : mxrec::Min64(o, td_.numIndices);
        return td_.idCost * at + td_.bagCost * k;
    }

    struct BagCost {
        SplitEmbeddingForward* op;
        __aicore__ inline int64_t operator()(int64_t k) { return op->Cost(k); }
    };

    // offsets[t * B]: none mode's table boundaries.
    __aicore__ inline int64_t Bound(int64_t t) {
        return static_cast<int64_t>(offGm_.GetValue(t * td_.batch));
    }

    __aicore__ inline Table LoadTable(int64_t t) {
        const int64_t c0 = doGm_.GetValue(t);
        const int64_t c1 = doGm_.GetValue(t + 1);
        if (pooled_ && (c0 < 0 || c1 < c0 || c1 > td_.totalD))
            Trap();  // column ranges out of order
        if (!pooled_ && c1 - c0 != td_.maxD)
            Trap();  // none mode needs one D
        Table tb{t, c1 - c0, c0, woGm_.GetValue(t), 0};
        const int64_t end = TableEnd(tb.base);
        if (tb.d > 0 && tb.base >= 0 && tb.base <= end && end <= td_.weightsLen)
            tb.rows = (end - tb.base) / tb.d;
        return tb;
    }

    // Where the table starting at `base` ends: at the next table's start above it, else W.
    // Features may share a table (fbgemm repeats the table's offset for every feature mapped to
    // it) and tables need not follow feature order, so the next feature's offset is not it.
    __aicore__ inline int64_t TableEnd(int64_t base) {
        int64_t end = td_.weightsLen;
        for (int64_t u = 0; u < td_.tables; ++u) {
            const int64_t o = woGm_.GetValue(u);
            if (o > base && o < end)
                end = o;
        }
        return end;
    }

    // Units [u0, u1) of one table (or none): unit u0's D_t columns go to out[at...], each further
    // unit's `stride` elements later.
    __aicore__ inline void Segment(const Table& tb, int64_t u0, int64_t u1, int64_t at,
                                   int64_t stride) {
        for (int64_t c0 = 0; c0 < tb.d; c0 += td_.slot) {
            const int64_t dc = mxrec::Min64(td_.slot, tb.d - c0);
            for (int64_t g0 = u0; g0 < u1; g0 += td_.groupRows) {
                const int64_t ng = mxrec::Min64(td_.groupRows, u1 - g0);
                Group(tb, g0, ng, c0, dc);
                WriteGroup(at + (g0 - u0) * stride + c0, stride, ng, dc);
            }
        }
    }

    // ---- one group of output rows ---------------------------------------------------------------
    __aicore__ inline void Group(const Table& tb, int64_t g0, int64_t ng, int64_t c0, int64_t dc) {
        LocalTensor<float> acc = accBuf_.Get<float>();
        mxrec::PipeSync<HardEvent::MTE3_V>();  // the previous group's rows have left UB
        Duplicate(acc, 0.0f, static_cast<int32_t>(ng * td_.slot));
        if (tb.id < 0)
            return;
        const int64_t n = td_.numIndices;
        int64_t distinct = 0;  // rows fetched into the batch (its slots)
        int64_t occ = 0;       // their occurrences to add
        LocalTensor<TW> batch;
        LocalTensor<int32_t> hash = hash_.Get<int32_t>();
        LocalTensor<int64_t> slotKey = slotKey_.Get<int64_t>();
        LocalTensor<int32_t> slotPos = slotPos_.Get<int32_t>();
        for (int64_t j = 0; j < ng; ++j) {
            int64_t start = g0 + j;
            int64_t end = start + 1;
            if (pooled_) {
                start = offWin_.Get(g0 + j);
                end = offWin_.Get(g0 + j + 1);
                if (start < 0 || start > end || end > n)
                    Trap();  // bag outside the indices
            }
            for (int64_t p = start; p < end; ++p) {
                const int64_t idx = idxWin_.Get(p);
                if (idx == kPruned)
                    continue;
                if (idx < 0 || idx >= tb.rows)
                    Trap();  // fbgemm: index out of bounds
                if (occ == td_.occRows) {
                    AddBatch(batch, distinct, occ, dc);
                    distinct = occ = 0;
                }
                uint32_t at = Home(idx);
                int32_t slot = Find(idx, at);
                if (slot < 0) {  // not in the batch yet: fetch it into the next slot
                    if (distinct == td_.batchRows) {
                        AddBatch(batch, distinct, occ, dc);
                        distinct = occ = 0;
                        at = Home(idx);  // the table is empty again
                    }
                    if (distinct == 0)
                        batch = rowQue_.AllocTensor<TW>();
                    slot = static_cast<int32_t>(distinct++);
                    hash.SetValue(at, slot + 1);
                    slotKey.SetValue(static_cast<uint32_t>(slot), idx);
                    slotPos.SetValue(static_cast<uint32_t>(slot), static_cast<int32_t>(at));
                    DataCopyPadExtParams<TW> pad{false, 0, 0, static_cast<TW>(0)};
                    DataCopyPad(
                        batch[static_cast<uint32_t>(slot * td_.slot)],
                        wGm_[tb.base + idx * tb.d + c0],
                        DataCopyExtParams{1, static_cast<uint32_t>(dc * sizeof(TW)), 0, 0, 0}, pad);
                }
                const uint32_t o = static_cast<uint32_t>(occ++);
                occRow_.Get<int32_t>().SetValue(o, static_cast<int32_t>(j));
                occSlot_.Get<int32_t>().SetValue(o, slot);
                occWeight_.Get<float>().SetValue(o, td_.hasWeights ? iwWin_.Get(p) : 1.0f);
            }
        }
        if (occ > 0)
            AddBatch(batch, distinct, occ, dc);
        if (td_.mode == kMean) {
            for (int64_t j = 0; j < ng; ++j) {
                const int64_t len = offWin_.Get(g0 + j + 1) - offWin_.Get(g0 + j);
                if (len > 1) {
                    LocalTensor<float> row = acc[static_cast<uint32_t>(j * td_.slot)];
                    Muls(row, row, 1.0f / static_cast<float>(len), static_cast<int32_t>(dc));
                }
            }
        }
    }

    // The hash table's first probe for row idx (Fibonacci hashing: the top hashBits bits of
    // idx times 2^64 / golden ratio).
    __aicore__ inline uint32_t Home(int64_t idx) {
        return static_cast<uint32_t>((static_cast<uint64_t>(idx) * 0x9E3779B97F4A7C15ull) >>
                                     (64 - td_.hashBits));
    }

    // The batch slot holding row idx, or -1; `at` ends where idx is, or at the free entry it
    // would take (linear probing; the table is at most half full).
    __aicore__ inline int32_t Find(int64_t idx, uint32_t& at) {
        LocalTensor<int32_t> hash = hash_.Get<int32_t>();
        LocalTensor<int64_t> slotKey = slotKey_.Get<int64_t>();
        const uint32_t mask = (1u << td_.hashBits) - 1;
        for (;;) {
            const int32_t v = hash.GetValue(at);
            if (v == 0)
                return -1;
            if (slotKey.GetValue(static_cast<uint32_t>(v - 1)) == idx)
                return v - 1;
            at = (at + 1) & mask;
        }
    }

    // Adds the batch's occurrences in the order of the indices (a bag's sum is the same as with
    // one fetch per index), then frees the batch and empties its hash entries.
    __aicore__ inline void AddBatch(LocalTensor<TW>& batch, int64_t distinct, int64_t occ,
                                    int64_t dc) {
        rowQue_.EnQue(batch);
        batch = rowQue_.DeQue<TW>();
        LocalTensor<float> rows;
        if constexpr (kFloatWeights) {
            rows = batch.template ReinterpretCast<float>();
        } else {
            rows = castBuf_.Get<float>();
            // One Cast for the whole batch: slot padding is converted too and never used.
            Cast(rows, batch, RoundMode::CAST_NONE, static_cast<uint32_t>(distinct * td_.slot));
        }
        LocalTensor<float> acc = accBuf_.Get<float>();
        LocalTensor<int32_t> occRow = occRow_.Get<int32_t>();
        LocalTensor<int32_t> occSlot = occSlot_.Get<int32_t>();
        LocalTensor<float> occWeight = occWeight_.Get<float>();
        for (int64_t s = 0; s < occ; ++s) {
            const uint32_t o = static_cast<uint32_t>(s);
            LocalTensor<float> row = rows[static_cast<uint32_t>(occSlot.GetValue(o) * td_.slot)];
            LocalTensor<float> dst = acc[static_cast<uint32_t>(occRow.GetValue(o) * td_.slot)];
            if (td_.hasWeights) {
                // A row may serve several occurrences: scale a copy, not the row.
                LocalTensor<float> tmp = tmpBuf_.Get<float>();
                Muls(tmp, row, occWeight.GetValue(o), static_cast<int32_t>(dc));
                Add(dst, dst, tmp, static_cast<int32_t>(dc));
            } else {
                Add(dst, dst, row, static_cast<int32_t>(dc));
            }
        }
        rowQue_.FreeTensor(batch);
        LocalTensor<int32_t> hash = hash_.Get<int32_t>();
        LocalTensor<int32_t> slotPos = slotPos_.Get<int32_t>();
        for (int64_t s = 0; s < distinct; ++s)
            hash.SetValue(static_cast<uint32_t>(slotPos.GetValue(static_cast<uint32_t>(s))), 0);
    }

    // ng accumulator rows (dc columns each, slot apart in UB) to out[at], stride elements apart.
    __aicore__ inline void WriteGroup(int64_t at, int64_t stride, int64_t ng, int64_t dc) {
        mxrec::PipeSync<HardEvent::V_MTE3>();
        const uint32_t rowBytes = static_cast<uint32_t>(dc * sizeof(float));
        const uint32_t gapBlocks =
            static_cast<uint32_t>((td_.slot * static_cast<int64_t>(sizeof(float)) -
                                   mxrec::AlignUp(rowBytes, mxrec::kBlockBytes)) /
                                  mxrec::kBlockBytes);
        const uint32_t gmGap =
            static_cast<uint32_t>((stride - dc) * static_cast<int64_t>(sizeof(float)));
        DataCopyPad(outGm_[at], accBuf_.Get<float>(),
                    DataCopyExtParams{static_cast<uint16_t>(ng), rowBytes, gapBlocks, gmGap, 0});
    }

    SplitEmbeddingForwardTilingData td_;
    int64_t me_ = 0;
    bool pooled_ = true;
    bool vbe_ = false;
    GlobalTensor<TW> wGm_;
    GlobalTensor<int64_t> woGm_;
    GlobalTensor<int32_t> doGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<TI> offGm_;
    GlobalTensor<float> iwGm_;
    GlobalTensor<float> outGm_;
    mxrec::VbeMetadata vbeMeta_;
    mxrec::OffsetWindow<TI> offWin_;
    mxrec::OffsetWindow<TI> idxWin_;
    FloatWindow iwWin_;
    TQue<TPosition::VECIN, 1> rowQue_;
    TBuf<TPosition::VECCALC> castBuf_;
    TBuf<TPosition::VECCALC> accBuf_;
    TBuf<TPosition::VECCALC> occRow_;     // per occurrence: its accumulator row,
    TBuf<TPosition::VECCALC> occSlot_;    // its batch slot
    TBuf<TPosition::VECCALC> occWeight_;  // and its indice weight
    TBuf<TPosition::VECCALC> slotPos_;    // per slot: its hash entry
    TBuf<TPosition::VECCALC> slotKey_;    // and its row index
    TBuf<TPosition::VECCALC> hash_;       // row index -> slot + 1 (0: empty)
    TBuf<TPosition::VECCALC> tmpBuf_;     // a weighted copy of a row
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "split_embedding_forward_kernel_entry.h"
