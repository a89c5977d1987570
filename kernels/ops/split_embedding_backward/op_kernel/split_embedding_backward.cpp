// SplitEmbeddingBackward: the exact fused backward of a table-batched embedding. For every
// weight row touched by the forward, the gradient contributions of all its occurrences (within
// and across bags) are summed first, then the row is updated once in place (SGD, Adagrad,
// row-wise Adagrad, Adam, LARS-SGD, partial row-wise Adam, LAMB, partial row-wise LAMB, row-wise
// Adagrad with counter), or the
// sum is written out: to grad_weights at the row's place in dense mode, to the row's compact
// slot (run_slots) for optimizer NONE.
//
// sorted_positions lists the index positions with equal rows adjacent; a core walks the runs
// that start in its slice of it (see the tiling header: slices of equal cost when the adapter
// passes each entry's run rank, else of equal length). Per position: its bag, from sorted_bags
// when the adapter passes it (read, like sorted_positions, through a UB window) or else by a
// binary search of offsets (scalar: irregular, 64-bit); its row, from sorted_indices through a UB
// window when the adapter passes it, else from indices (a scalar gather: positions arrive
// permuted); its grad_output row by DMA into a two-deep queue, so that the next
// position's row is on its way while this one is clipped / scaled / added with vector ops. Per
// run: the weight (and momentum) row by DMA, the update with vector ops, and the row
// written back; the weight rows (and exact Adagrad's moment rows, row-wise Adagrad's moment)
// alternate between two buffer sets, fetched as soon as the run's head is found, so the next
// run's rows arrive while this one is updated and the previous one's leave (each set's own
// MTE2_V and MTE3_MTE2 flags order them). The per-table values (D_t, column, weights/momentum
// offsets) are kept in scalar registers while the table stays the same, which it does for long
// stretches (the sort puts table t's rows before table t + 1's). Sums follow the order of
// sorted_positions, which is fbgemm's (position order within a row) when the adapter's sort is
// stable.
//
// With variable batch per feature (VBE), a bag's feature comes from b_offsets (kept per table
// like the other per-table values, searched when the bag leaves it) and its gradient row from
// the forward's flat per-rank, per-feature layout; every core checks that metadata first.
//
// Adagrad's and Adam's steps are vector work (Sqrt, Adds, Div); row-wise Adagrad needs one
// square root per row, which runs on the scalar unit (ScalarSqrt below) rather than as a
// 1-element vector op. So do the row reductions that LARS-SGD, LAMB and the partial row-wise
// optimizers need (norms, mean squares): a vector square, then a scalar sum over the row, as
// for row-wise Adagrad. Row-wise Adagrad with counter adds per-row counters and exp / log of
// scalars, which run as one-element vector Exp / Ln (the scalar unit has neither).
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "tbe_vbe.h"
#include "split_embedding_backward_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSgd = 0;
constexpr int64_t kAdagrad = 1;
constexpr int64_t kRowwise = 2;
constexpr int64_t kDense = 3;
constexpr int64_t kAdam = 4;
constexpr int64_t kNoUpdate = 5;  // fbgemm's optimizer NONE
constexpr int64_t kLarsSgd = 6;
constexpr int64_t kPartialAdam = 7;
constexpr int64_t kLamb = 8;
constexpr int64_t kPartialLamb = 9;
constexpr int64_t kRowwiseCounter = 10;  // fbgemm's rowwise_adagrad_with_counter

// The modes that read momentum1 / momentum2 (with their per-table offsets).
__aicore__ inline bool UsesMomentum1(int64_t o) {
    return o == kAdagrad || o == kRowwise || o == kAdam || o >= kLarsSgd;
}
__aicore__ inline bool UsesMomentum2(int64_t o) {
    return o == kAdam || (o >= kPartialAdam && o <= kPartialLamb);
}
constexpr int64_t kMean = 1;
constexpr int64_t kNone = 2;

// sqrt on the scalar unit: a reciprocal-square-root estimate from the exponent bits, three
// Newton steps (to float precision), then one Heron step on the root so the result is within
// an ulp of the correctly rounded one (fbgemm's CPU path calls sqrt/sqrtf).
__aicore__ inline float ScalarSqrt(float x) {
    if (!(x > 0.0f))
        return x == 0.0f ? 0.0f : (x - x) / (x - x);  // 0, or NaN for x < 0 / NaN
    if (x > 3.0e38f)
        return x;  // inf (and the top of the range) as is
    union {
        float f;
        uint32_t u;
    } v;
    v.f = x;
    v.u = 0x5f3759dfu - (v.u >> 1);
    float y = v.f;
    for (int i = 0; i < 3; ++i)
        y = y * (1.5f - 0.5f * x * y * y);
    const float s = x * y;
    return 0.5f * (s + x / s);
}

// One index position, resolved: key = its weight row's address (-1: nothing to do).
struct Entry {
    int64_t key;
    int64_t at;  // its place in sorted_positions
    int64_t pos;
    int64_t bag;
    int64_t table;
    int64_t row;
    int64_t dim;
    int64_t col;          // table's first column in a grad_output row (pooled modes)
    int64_t gradAt;       // VBE: the bag's gradient row in grad_output
    int64_t momentumAt;   // momentum1_offsets[table]
    int64_t momentum2At;  // momentum2_offsets[table]
    int64_t prevIterAt;   // prev_iter_offsets[table]
    int64_t counterAt;    // row_counter_offsets[table]
    float scale;          // the gradient row's factor (indice weight or mean's 1 / L)
};

// The per-table values last read from global memory.
struct TableInfo {
    int64_t table = -1;
    int64_t dim = 0;
    int64_t col = 0;
    int64_t weightsAt = 0;
    int64_t momentumAt = 0;
    int64_t momentum2At = 0;
    int64_t prevIterAt = 0;
    int64_t counterAt = 0;
    int64_t bag0 = 0;  // VBE: the feature's bags are [bag0, bag1)
    int64_t bag1 = 0;
};

template <typename TI>
class SplitEmbeddingBackward {
public:
    __aicore__ inline void Init(GM_ADDR gradOutput, GM_ADDR weights, GM_ADDR momentum,
                                GM_ADDR momentumOffsets, GM_ADDR weightsOffsets, GM_ADDR dOffsets,
                                GM_ADDR indices, GM_ADDR offsets, GM_ADDR indiceWeights,
                                GM_ADDR sortedPositions, GM_ADDR gradWeights, GM_ADDR momentum2,
                                GM_ADDR momentum2Offsets, GM_ADDR sortedBags, GM_ADDR bOffsets,
                                GM_ADDR vbeOutputOffsets, GM_ADDR vbeBOffsetsRank, GM_ADDR runSlots,
                                GM_ADDR prevIter, GM_ADDR prevIterOffsets, GM_ADDR rowCounter,
                                GM_ADDR rowCounterOffsets, GM_ADDR sortedIndices,
                                GM_ADDR /*workspace*/, const SplitEmbeddingBackwardTilingData& td,
                                TPipe* pipe) {
        td_ = td;
        pipe_ = pipe;
        me_ = GetBlockIdx();
        totalB_ = td.bags;
        rowFloats_ = td.rowBytes / sizeof(float);
        gradGm_.SetGlobalBuffer((__gm__ float*)gradOutput, td.gradLen);
        if (td.vbe) {
            vbe_.Init(bOffsets, vbeOutputOffsets, vbeBOffsetsRank, td.tables, td.ranks);
        }
        woGm_.SetGlobalBuffer((__gm__ int64_t*)weightsOffsets, td.tables);
        dOffGm_.SetGlobalBuffer((__gm__ int32_t*)dOffsets, td.tables + 1);
        idxGm_.SetGlobalBuffer((__gm__ TI*)indices, td.numIndices);
        offGm_.SetGlobalBuffer((__gm__ TI*)offsets, totalB_ + 1);
        sortedGm_.SetGlobalBuffer((__gm__ int64_t*)sortedPositions, td.numIndices);
        if (td.hasIndiceWeights)
            iwGm_.SetGlobalBuffer((__gm__ float*)indiceWeights, td.numIndices);
        if (td.optimizer == kDense || td.optimizer == kNoUpdate) {
            outGm_.SetGlobalBuffer((__gm__ float*)gradWeights, td.numGradWeights);
        } else {
            outGm_.SetGlobalBuffer((__gm__ float*)weights, td.numWeights);
        }
        if (UsesMomentum1(td.optimizer)) {
            momGm_.SetGlobalBuffer((__gm__ float*)momentum, td.numMomentum);
            moOffGm_.SetGlobalBuffer((__gm__ int64_t*)momentumOffsets, td.tables);
        }
        if (td.optimizer == kNoUpdate || td.hasRunRanks)
            slotsGm_.SetGlobalBuffer((__gm__ int64_t*)runSlots, td.numIndices);
        if (UsesMomentum2(td.optimizer)) {
            mom2Gm_.SetGlobalBuffer((__gm__ float*)momentum2, td.numMomentum2);
            mo2OffGm_.SetGlobalBuffer((__gm__ int64_t*)momentum2Offsets, td.tables);
        }
        if (td.optimizer == kRowwiseCounter) {
            prevGm_.SetGlobalBuffer((__gm__ float*)prevIter, td.numPrevIter);
            prevOffGm_.SetGlobalBuffer((__gm__ int64_t*)prevIterOffsets, td.tables);
            counterGm_.SetGlobalBuffer((__gm__ float*)rowCounter, td.numRowCounter);
            counterOffGm_.SetGlobalBuffer((__gm__ int64_t*)rowCounterOffsets, td.tables);
        }
        sortedWin_.Init(pipe, sortedGm_, td.numIndices, td.windowBytes);
        if (td.hasSortedBags) {
            bagsGm_.SetGlobalBuffer((__gm__ int64_t*)sortedBags, td.numIndices);
            bagsWin_.Init(pipe, bagsGm_, td.numIndices, td.windowBytes);
        }
        if (td.hasSortedIndices) {
            sortedIdxGm_.SetGlobalBuffer((__gm__ TI*)sortedIndices, td.numIndices);
            idxWin_.Init(pipe, sortedIdxGm_, td.numIndices, td.windowBytes);
        }
        pipe->InitBuffer(accBuf_, td.rowBytes);
        pipe->InitBuffer(gradQue_, 2, td.rowBytes);
        if (td.optimizer != kDense && td.optimizer != kNoUpdate)
            pipe->InitBuffer(gBuf_, td.rowBytes);
        // The weight rows (and exact Adagrad's moment rows) are double-buffered: run i + 1's
        // arrive while run i is updated and run i - 1's leave.
        if (td.optimizer != kDense && td.optimizer != kNoUpdate)
            pipe->InitBuffer(wBuf_, 2 * td.rowBytes);
        // A first-moment row: every mode with per-element state (row-wise Adagrad keeps one
        // float per row, in the slot).
        if (UsesMomentum1(td.optimizer) && td.optimizer != kRowwise &&
            td.optimizer != kRowwiseCounter)
            pipe->InitBuffer(mBuf_, (td.optimizer == kAdagrad ? 2 : 1) * td.rowBytes);
        if (td.optimizer == kAdam || td.optimizer == kLamb)
            pipe->InitBuffer(m2Buf_, td.rowBytes);
        pipe->InitBuffer(slot_, static_cast<uint32_t>(mxrec::kBlockBytes));
        if (td.optimizer == kRowwise)  // its one-float moment, fetched with the weight row
            pipe->InitBuffer(rowMoment_, static_cast<uint32_t>(2 * mxrec::kBlockBytes));
        if (td.optimizer == kRowwiseCounter)
            pipe->InitBuffer(math_, static_cast<uint32_t>(mxrec::kBlockBytes));
    }

    __aicore__ inline void Process() {
        const mxrec::Span span = td_.hasRunRanks && td_.coreNum > 1
                                     ? CostSpan()
                                     : mxrec::SplitEven(td_.numIndices, td_.coreNum, me_);
        if (span.begin >= span.end)
            return;
        if (td_.vbe && !vbe_.Tiles(dOffGm_, totalB_, td_.gradLen))
            Trap();  // the VBE metadata does not tile grad_output
        int64_t j = span.begin;
        Entry cur;
        Locate(j, cur);
        if (j > 0) {  // a run continued from the previous slice belongs to the previous core
            Entry prev;
            Locate(j - 1, prev);
            while (cur.key == prev.key) {
                if (++j >= span.end)
                    return;
                Locate(j, cur);
            }
        }
        // The walk: every live entry's gradient row is fetched one entry ahead of its use (the
        // next run's head too, when this core owns it), so its DMA overlaps the current row's
        // vector work and, at a run's end, the row update. A run's weight (and state) rows are
        // fetched when its head is found, into the buffer set its predecessor does not use.
        if (Updates()) {
            for (int k = 0; k < 2; ++k) {
                loaded_[k] = static_cast<int32_t>(pipe_->AllocEventID<HardEvent::MTE2_V>());
                stored_[k] = static_cast<int32_t>(pipe_->AllocEventID<HardEvent::MTE3_MTE2>());
                storing_[k] = false;
            }
        }
        int32_t set = 0;  // the buffer set of head's rows
        Entry head = cur;
        if (cur.key >= 0) {
            Fetch(cur);
            LoadState(cur, set);
            StartRun(head);
        }
        Entry next;
        while (true) {
            const int64_t nj = j + 1;
            const bool more = nj < td_.numIndices;
            if (more)
                Locate(nj, next);
            const bool sameRun = more && next.key == head.key;
            const bool nextOurs = more && !sameRun && nj < span.end;
            if ((sameRun || nextOurs) && next.key >= 0)
                Fetch(next);
            if (nextOurs && next.key >= 0)
                LoadState(next, 1 - set);
            if (cur.key >= 0)
                Consume(cur, head.dim);
            if (!sameRun) {
                if (head.key >= 0)
                    FinishRun(head, set);
                if (!nextOurs)
                    break;
                head = next;
                set = 1 - set;
                if (head.key >= 0)
                    StartRun(head);
            }
            cur = next;
            j = nj;
        }
        if (Updates()) {
            for (int k = 0; k < 2; ++k) {
                if (storing_[k])
                    WaitFlag<HardEvent::MTE3_MTE2>(stored_[k]);
                pipe_->ReleaseEventID<HardEvent::MTE2_V>(static_cast<TEventID>(loaded_[k]));
                pipe_->ReleaseEventID<HardEvent::MTE3_MTE2>(static_cast<TEventID>(stored_[k]));
            }
        }
    }

private:
    // ---- the split over cores ----------------------------------------------------------------
    // Slices of equal cost (the tiling header; mxrec::SplitByCost): entries before j cost
    // posCost each, runs before j's runCost each, and the run rank of entry j (run_slots) counts
    // the runs before it. The slices tile the entries when the ranks rise (the adapter's do;
    // others trap here).
    __aicore__ inline mxrec::Span CostSpan() {
        EntryCost cost{this};
        const mxrec::Span span = mxrec::SplitByCost(cost, td_.numIndices, td_.coreNum, me_);
        if (span.end < span.begin)
            Trap();  // run_slots out of order
        return span;
    }

    // The cost of entries [0, j); every run past rank 0 starts after them. Ranks are clamped
    // into [0, N] so that bad ones cannot overflow.
    __aicore__ inline int64_t Cost(int64_t j) {
        if (j <= 0)
            return 0;
        const int64_t n = td_.numIndices;
        const int64_t rank = j < n ? slotsGm_.GetValue(j) : slotsGm_.GetValue(n - 1) + 1;
        const int64_t runs = rank < 0 ? 0 : mxrec::Min64(rank, n);
        return td_.posCost * j + td_.runCost * runs;
    }

    struct EntryCost {
        SplitEmbeddingBackward* op;
        __aicore__ inline int64_t operator()(int64_t j) { return op->Cost(j); }
    };

    // ---- variable batch per feature --------------------------------------------------------
    // The feature holding bag k: the current table's while k stays in it, else searched.
    __aicore__ inline int64_t FeatureOf(int64_t k) {
        if (table_.table >= 0 && k >= table_.bag0 && k < table_.bag1)
            return table_.table;
        return vbe_.FeatureOf(k);
    }

    // Bag k of the current table: its gradient row, in the block of the rank holding it.
    __aicore__ inline int64_t VbeGradAt(int64_t k) {
        return vbe_.RowAt(table_.table, k - table_.bag0, table_.dim);
    }

    // ---- positions --------------------------------------------------------------------------
    __aicore__ inline int64_t Offset(int64_t k) { return static_cast<int64_t>(offGm_.GetValue(k)); }

    // The bag holding position p (offsets[k] <= p < offsets[k + 1]), or -1 outside every bag.
    __aicore__ inline int64_t BagOf(int64_t p) {
        int64_t lo = 0;  // first k in [0, totalB] with offsets[k] > p
        int64_t hi = totalB_ + 1;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (Offset(mid) > p) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        const int64_t bag = lo - 1;
        return bag >= 0 && bag < totalB_ ? bag : -1;
    }

    // Entry j of sorted_positions (and of sorted_bags: both are read sequentially, so through
    // UB windows rather than element by element from global memory).
    __aicore__ inline void Locate(int64_t j, Entry& e) {
        e.key = -1;
        e.at = j;
        e.pos = sortedWin_.Get(j);
        if (e.pos < 0 || e.pos >= td_.numIndices)
            Trap();  // not a permutation of 0..N-1
        if (td_.hasSortedBags) {
            e.bag = bagsWin_.Get(j);
            if (e.bag == -1)
                return;  // outside every bag, as the search says
            if (e.bag < 0 || e.bag >= totalB_)
                Trap();  // not a bag of offsets
        } else {
            e.bag = BagOf(e.pos);
            if (e.bag < 0)
                return;
        }
        e.row =
            td_.hasSortedIndices ? idxWin_.Get(j) : static_cast<int64_t>(idxGm_.GetValue(e.pos));
        if (e.row == -1)
            return;  // a pruned row
        if (e.row < 0)
            Trap();
        e.table = td_.vbe ? FeatureOf(e.bag) : e.bag / td_.batch;
        if (e.table != table_.table)
            LoadTable(e.table);
        if (td_.vbe)
            e.gradAt = VbeGradAt(e.bag);
        e.dim = table_.dim;
        e.col = table_.col;
        e.momentumAt = table_.momentumAt;
        e.momentum2At = table_.momentum2At;
        e.prevIterAt = table_.prevIterAt;
        e.counterAt = table_.counterAt;
        if (e.dim == 0)
            return;
        e.key = table_.weightsAt + e.row * e.dim;
        if (e.key < 0 || e.key + e.dim > td_.numWeights)
            Trap();  // row outside weights
    }

    __aicore__ inline void LoadTable(int64_t t) {
        table_.table = t;
        table_.col = static_cast<int64_t>(dOffGm_.GetValue(t));
        table_.dim = static_cast<int64_t>(dOffGm_.GetValue(t + 1)) - table_.col;
        if (table_.dim < 0 || table_.dim > td_.maxD)
            Trap();  // d_offsets decreasing or max_d too small
        table_.weightsAt = woGm_.GetValue(t);
        if (UsesMomentum1(td_.optimizer))
            table_.momentumAt = moOffGm_.GetValue(t);
        if (UsesMomentum2(td_.optimizer))
            table_.momentum2At = mo2OffGm_.GetValue(t);
        if (td_.optimizer == kRowwiseCounter) {
            table_.prevIterAt = prevOffGm_.GetValue(t);
            table_.counterAt = counterOffGm_.GetValue(t);
        }
        if (td_.vbe) {
            table_.bag0 = vbe_.BOff(t);
            table_.bag1 = vbe_.BOff(t + 1);
        }
    }

    // Mean pooling's 1 / L of a bag; a run's positions often share bags, so the last is kept.
    __aicore__ inline float MeanScale(int64_t bag) {
        if (bag != meanBag_) {
            meanBag_ = bag;
            meanScale_ = 1.0f / static_cast<float>(Offset(bag + 1) - Offset(bag));
        }
        return meanScale_;
    }

    // ---- gradient sum -----------------------------------------------------------------------
    __aicore__ inline void StartRun(const Entry& head) {
        LocalTensor<float> acc = accBuf_.Get<float>();
        if (!Updates())
            mxrec::PipeSync<HardEvent::MTE3_V>();  // the previous run's sum left UB
        Duplicate(acc, 0.0f, static_cast<int32_t>(head.dim));
    }

    // The optimizer modes update weight rows in place (dense and NONE write the sum out).
    __aicore__ inline bool Updates() const {
        return td_.optimizer != kDense && td_.optimizer != kNoUpdate;
    }

    __aicore__ inline LocalTensor<float> WeightRow(int32_t set) {
        return wBuf_.Get<float>()[static_cast<uint32_t>(set * rowFloats_)];
    }

    __aicore__ inline LocalTensor<float> RowMoment(int32_t set) {
        return rowMoment_.Get<float>()[static_cast<uint32_t>(set * 8)];
    }

    // The run's weight row (and exact Adagrad's moment row) into buffer set `set`, once the
    // rows the set held two runs ago have been stored.
    __aicore__ inline void LoadState(const Entry& head, int32_t set) {
        if (!Updates())
            return;
        const int64_t dim = head.dim;
        const DataCopyExtParams rowCopy{1, static_cast<uint32_t>(dim * 4), 0, 0, 0};
        const DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
        if (storing_[set]) {
            WaitFlag<HardEvent::MTE3_MTE2>(stored_[set]);
            storing_[set] = false;
        }
        LocalTensor<float> w = WeightRow(set);
        DataCopyPad(w, outGm_[head.key], rowCopy, pad);
        if (td_.optimizer == kAdagrad) {
            const int64_t mAt = head.momentumAt + head.row * dim;
            if (mAt < 0 || mAt + dim > td_.numMomentum)
                Trap();
            LocalTensor<float> m = mBuf_.Get<float>()[static_cast<uint32_t>(set * rowFloats_)];
            DataCopyPad(m, momGm_[mAt], rowCopy, pad);
        } else if (td_.optimizer == kRowwise) {
            const int64_t mAt = head.momentumAt + head.row;
            if (mAt < 0 || mAt >= td_.numMomentum)
                Trap();
            DataCopyPad(RowMoment(set), momGm_[mAt], DataCopyExtParams{1, 4, 0, 0, 0}, pad);
        }
        SetFlag<HardEvent::MTE2_V>(loaded_[set]);
    }

    // Entry e's gradient row into the queue (and its factor into e.scale).
    __aicore__ inline void Fetch(Entry& e) {
        const int64_t dim = e.dim;
        int64_t src = 0;
        if (td_.vbe) {
            src = e.gradAt;  // inside grad_output: vbe_.Tiles
        } else if (td_.pooling == kNone) {
            if (dim > td_.gradStride)
                Trap();
            src = e.pos * td_.gradStride;
        } else {
            if (e.col < 0 || e.col + dim > td_.gradStride)
                Trap();  // d_offsets beyond grad_output's columns
            src = (e.bag % td_.batch) * td_.gradStride + e.col;
        }
        // fbgemm: indice weights replace the mean's 1/L (mean pooling ignores them otherwise).
        e.scale = 1.0f;
        if (td_.hasIndiceWeights) {
            e.scale = iwGm_.GetValue(e.pos);
        } else if (td_.pooling == kMean) {
            e.scale = MeanScale(e.bag);
        }
        LocalTensor<float> g = gradQue_.AllocTensor<float>();
        DataCopyPad(g, gradGm_[src], DataCopyExtParams{1, static_cast<uint32_t>(dim * 4), 0, 0, 0},
                    DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        gradQue_.EnQue(g);
    }

    // The oldest fetched row, clipped and scaled, added to the run's sum.
    __aicore__ inline void Consume(const Entry& e, int64_t dim) {
        LocalTensor<float> acc = accBuf_.Get<float>();
        LocalTensor<float> g = gradQue_.DeQue<float>();
        const int32_t n = static_cast<int32_t>(dim);
        if (td_.clip) {  // fbgemm clamps grad_output itself, before any scaling
            Maxs(g, g, -td_.maxGradient, n);
            Mins(g, g, td_.maxGradient, n);
        }
        if (e.scale != 1.0f)
            Muls(g, g, e.scale, n);
        Add(acc, acc, g, n);
        gradQue_.FreeTensor(g);
    }

    // ---- row update -------------------------------------------------------------------------
    __aicore__ inline void FinishRun(const Entry& head, int32_t set) {
        const int64_t dim = head.dim;
        const int32_t n = static_cast<int32_t>(dim);
        const uint32_t bytes = static_cast<uint32_t>(dim * 4);
        const DataCopyExtParams rowCopy{1, bytes, 0, 0, 0};
        LocalTensor<float> acc = accBuf_.Get<float>();
        if (td_.optimizer == kDense) {
            mxrec::PipeSync<HardEvent::V_MTE3>();
            DataCopyPad(outGm_[head.key], acc, rowCopy);
            return;
        }
        if (td_.optimizer == kNoUpdate) {
            // fbgemm's NONE: the run's gradient goes to its unique row's compact slot
            // (grad_weights is [U, max_d]); the adapter makes the sparse tensor of them.
            const int64_t slot = slotsGm_.GetValue(head.at);
            const int64_t at = slot * td_.maxD;
            if (slot < 0 || at + dim > td_.numGradWeights)
                Trap();  // run_slots outside grad_weights
            mxrec::PipeSync<HardEvent::V_MTE3>();
            DataCopyPad(outGm_[at], acc, rowCopy);
            return;
        }
        LocalTensor<float> g = gBuf_.Get<float>();
        LocalTensor<float> w = WeightRow(set);
        const float lr = td_.learningRate;
        if (td_.optimizer != kSgd && td_.optimizer != kAdagrad && td_.optimizer != kRowwise &&
            td_.optimizer != kRowwiseCounter) {
            // These load their single-buffered state rows below: the previous run's left UB.
            mxrec::PipeSync<HardEvent::MTE3_MTE2>();
        }
        WaitFlag<HardEvent::MTE2_V>(loaded_[set]);  // this run's rows arrived
        if (td_.optimizer == kSgd) {
            Muls(g, acc, lr, n);
            Sub(w, w, g, n);
        } else if (td_.optimizer == kAdagrad) {
            LocalTensor<float> m = mBuf_.Get<float>()[static_cast<uint32_t>(set * rowFloats_)];
            const int64_t mAt = head.momentumAt + head.row * dim;
            Mul(g, acc, acc, n);
            Add(m, m, g, n);
            // step = (lr * g) / (sqrt(m) + eps), in fbgemm's order of rounding; acc is not
            // needed after this row's update.
            Sqrt(g, m, n);
            Adds(g, g, td_.eps, n);
            Muls(acc, acc, lr, n);
            Div(g, acc, g, n);
            Sub(w, w, g, n);
            mxrec::PipeSync<HardEvent::V_MTE3>();
            DataCopyPad(momGm_[mAt], m, rowCopy);
        } else if (td_.optimizer == kAdam) {
            Adam(head, acc, g, w);
        } else if (td_.optimizer == kLarsSgd) {
            LarsSgd(head, acc, g, w);
        } else if (td_.optimizer == kPartialAdam) {
            PartialRowwiseAdam(head, acc, g, w);
        } else if (td_.optimizer == kLamb) {
            Lamb(head, acc, g, w);
        } else if (td_.optimizer == kPartialLamb) {
            PartialRowwiseLamb(head, acc, g, w);
        } else if (td_.optimizer == kRowwiseCounter) {
            RowwiseCounter(head, acc, g, w);
        } else {
            RowwiseAdagrad(head, acc, g, w, RowMoment(set));
        }
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyPad(outGm_[head.key], w, rowCopy);
        SetFlag<HardEvent::MTE3_MTE2>(stored_[set]);  // the set may take run i + 2's rows
        storing_[set] = true;
    }

    // The row's moment s arrived with its weight row (LoadState), in the set's own slot: the
    // scalar unit knows it arrived through the vector unit (V_S below after FinishRun's wait for
    // the set), and the set's next load waits for this run's stores, so no DMA round trip
    // stalls the scalar unit here.
    __aicore__ inline void RowwiseAdagrad(const Entry& head, LocalTensor<float>& acc,
                                          LocalTensor<float>& g, LocalTensor<float>& w,
                                          LocalTensor<float> s) {
        const int64_t dim = head.dim;
        const int32_t n = static_cast<int32_t>(dim);
        const int64_t mAt = head.momentumAt + head.row;
        const bool l2 = td_.weightDecayMode == 1;
        if (l2) {  // L2: the decay enters the statistics (and the correction), not the step
            Muls(g, w, td_.weightDecay, n);
            Add(g, g, acc, n);
            Mul(g, g, g, n);
        } else {
            Mul(g, acc, acc, n);
        }
        mxrec::PipeSync<HardEvent::V_S>();
        float sumSq = 0.0f;
        for (int64_t d = 0; d < dim; ++d)
            sumSq += g.GetValue(static_cast<uint32_t>(d));
        const float moment = s.GetValue(0) + sumSq / static_cast<float>(dim);
        const float lr = td_.learningRate;
        const float multiplier = lr / (ScalarSqrt(moment) + td_.eps);
        float correction = 1.0f;
        if (l2) {
            correction = 1.0f - multiplier * td_.weightDecay;
        } else if (td_.weightDecayMode == 2 || td_.weightDecayMode == 5) {  // decoupled
            correction = 1.0f - lr * td_.weightDecay;
        }
        s.SetValue(0, moment);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyPad(momGm_[mAt], s, DataCopyExtParams{1, 4, 0, 0, 0});
        mxrec::PipeSync<HardEvent::S_V>();
        if (correction != 1.0f)
            Muls(w, w, correction, n);
        Muls(g, acc, multiplier, n);
        Sub(w, w, g, n);
    }

    // fbgemm's row-wise Adagrad with counter (optimizers.py rowwise_adagrad_with_counter(), its
    // GPU kernel: GPU-only in 1.1.0). Per row, all scalar: the counter (decayed by the
    // half-life since the row's previous update, reset, or counted), then Adagrad's multiplier
    // from the mean square gradient (with L2 decay inside it for weight_decay_mode 1), adjusted
    // by the counter (regularization_mode 3: tail ids' learning rate) or clipped (4: CowClip),
    // and the weight decay as a factor on the weight:
    //   w = correction * w - adjusted_multiplier * g
    __aicore__ inline void RowwiseCounter(const Entry& head, LocalTensor<float>& acc,
                                          LocalTensor<float>& g, LocalTensor<float>& w) {
        const int64_t dim = head.dim;
        const int32_t n = static_cast<int32_t>(dim);
        const int64_t mAt = head.momentumAt + head.row;
        const int64_t cAt = head.counterAt + head.row;
        const int64_t pAt = head.prevIterAt + head.row;
        if (mAt < 0 || mAt >= td_.numMomentum || cAt < 0 || cAt >= td_.numRowCounter)
            Trap();
        const bool decays = td_.counterHalflife > 0;
        if (decays && (pAt < 0 || pAt >= td_.numPrevIter))
            Trap();
        float counter = ReadRowState(counterGm_, cAt);
        if (decays) {
            const float prev = ReadRowState(prevGm_, pAt);
            // A row seen for the first time counts as one iteration ago.
            const float delta = prev == 0.0f ? 1.0f : td_.iterValue - prev;
            WriteRowState(prevGm_, pAt, td_.iterValue);
            counter = 1.0f + ScalarExp(-delta * td_.counterLogRho) * counter;
        } else if (td_.counterHalflife == 0) {
            counter = 1.0f;
        } else {
            counter += 1.0f;
        }
        WriteRowState(counterGm_, cAt, counter);
        const float freq = static_cast<float>(td_.counterHalflife) / counter;
        const float moment = ReadRowState(momGm_, mAt);
        mxrec::PipeSync<HardEvent::MTE2_V>();  // the weight row is in UB
        const float wd = td_.weightDecay;
        float gSumSq = 0.0f;
        if (td_.weightDecayMode == 1) {  // L2: the decay enters the statistics only
            Muls(g, w, wd, n);
            Add(g, g, acc, n);
            gSumSq = SumSquares(g, g, n);
        } else {
            gSumSq = SumSquares(acc, g, n);
        }
        const float newMoment = moment + gSumSq / static_cast<float>(dim);
        WriteRowState(momGm_, mAt, newMoment);
        const float lr = td_.learningRate;
        const float multiplier = lr / (ScalarSqrt(newMoment) + td_.eps);
        const bool adjust = td_.adjustmentEnabled != 0;
        float adjusted = 0.0f;  // fbgemm's value for any other regularization mode
        float correction = 1.0f;
        if (td_.regularizationMode == 3) {
            adjusted = multiplier;
            if (td_.learningRateMode >= 0 && adjust && counter > td_.tailIdThreshold) {
                const float ub = td_.adjustmentUb;
                if (td_.learningRateMode == 0) {
                    const float p = ScalarPow(td_.maxCounter / (counter + 1.0f), ub);
                    adjusted = multiplier * Max(Min(p, 10.0f), 1.0f);
                } else if (td_.learningRateMode == 1) {
                    const float p = ScalarPow((counter + 1.0f) / td_.maxCounter, ub);
                    adjusted = multiplier * Min(Max(p, 0.1f), 1.0f);
                } else if (td_.learningRateMode == 2) {
                    adjusted = lr / (ScalarSqrt(ub * counter) + td_.eps);
                }
            }
            if (adjust && td_.weightDecayMode == 2) {
                correction = 1.0f - freq * wd * lr;
            } else if (adjust && td_.weightDecayMode == 1) {
                correction = 1.0f - freq * wd * multiplier;
            }
        } else if (td_.regularizationMode == 4) {
            const float wNorm = ScalarSqrt(SumSquares(w, g, n));
            const float clip = counter * Max(td_.weightNormCoefficient * wNorm, td_.lowerBound);
            adjusted = Min(1.0f, clip / ScalarSqrt(gSumSq)) * multiplier;
            if (td_.weightDecayMode == 2) {
                correction = 1.0f - wd * lr;
            } else if (td_.weightDecayMode == 1) {
                correction = 1.0f - wd * adjusted;
            }
        }
        if (correction != 1.0f)
            Muls(w, w, correction, n);
        Muls(g, acc, adjusted, n);
        Sub(w, w, g, n);
    }

    // exp and log of a scalar, as one-element vector instructions on the math slot.
    __aicore__ inline float ScalarExp(float x) { return ScalarUnary(x, false); }
    __aicore__ inline float ScalarPow(float base, float exponent) {
        return ScalarUnary(exponent * ScalarUnary(base, true), false);
    }
    __aicore__ inline float ScalarUnary(float x, bool log) {
        LocalTensor<float> t = math_.Get<float>();
        t.SetValue(0, x);
        mxrec::PipeSync<HardEvent::S_V>();
        if (log) {
            Ln(t, t, 1);
        } else {
            Exp(t, t, 1);
        }
        mxrec::PipeSync<HardEvent::V_S>();
        return t.GetValue(0);
    }
    // fmin / fmax, as fbgemm's CUDA min / max: a NaN operand yields the other one.
    __aicore__ static inline float Min(float a, float b) { return b != b || a < b ? a : b; }
    __aicore__ static inline float Max(float a, float b) { return b != b || a > b ? a : b; }

    // ---- row reductions and one-float-per-row state ---------------------------------------
    // The sum of src's squares (n floats), tmp as scratch; the vector unit squares, the scalar
    // unit adds in column order.
    __aicore__ inline float SumSquares(const LocalTensor<float>& src, LocalTensor<float>& tmp,
                                       int32_t n) {
        Mul(tmp, src, src, n);
        mxrec::PipeSync<HardEvent::V_S>();
        float sum = 0.0f;
        for (int32_t d = 0; d < n; ++d)
            sum += tmp.GetValue(static_cast<uint32_t>(d));
        mxrec::PipeSync<HardEvent::S_V>();  // tmp may be overwritten by vector work again
        return sum;
    }

    __aicore__ inline float ReadRowState(GlobalTensor<float>& gm, int64_t at) {
        LocalTensor<float> s = slot_.Get<float>();
        mxrec::PipeSync<HardEvent::S_MTE2>();
        DataCopyPad(s, gm[at], DataCopyExtParams{1, 4, 0, 0, 0},
                    DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        mxrec::PipeSync<HardEvent::MTE2_S>();
        return s.GetValue(0);
    }

    __aicore__ inline void WriteRowState(GlobalTensor<float>& gm, int64_t at, float value) {
        LocalTensor<float> s = slot_.Get<float>();
        s.SetValue(0, value);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyPad(gm[at], s, DataCopyExtParams{1, 4, 0, 0, 0});
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the slot may be rewritten for the next row
    }

    // The first-moment row (laid out like the weights) of the run's row, loaded into m.
    __aicore__ inline int64_t LoadMomentumRow(const Entry& head, LocalTensor<float>& m) {
        const int64_t dim = head.dim;
        const int64_t mAt = head.momentumAt + head.row * dim;
        if (mAt < 0 || mAt + dim > td_.numMomentum)
            Trap();
        DataCopyPad(m, momGm_[mAt], DataCopyExtParams{1, static_cast<uint32_t>(dim * 4), 0, 0, 0},
                    DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        return mAt;
    }

    __aicore__ inline void StoreRow(GlobalTensor<float>& gm, int64_t at, LocalTensor<float>& row,
                                    int64_t dim) {
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyPad(gm[at], row, DataCopyExtParams{1, static_cast<uint32_t>(dim * 4), 0, 0, 0});
    }

    // m = beta1 m + (1 - beta1) g, in place; g is the row's summed gradient (acc), tmp scratch.
    __aicore__ inline void FirstMoment(LocalTensor<float>& m, LocalTensor<float>& acc,
                                       LocalTensor<float>& tmp, int32_t n) {
        Muls(tmp, acc, td_.oneMinusBeta1, n);
        Muls(m, m, td_.beta1, n);
        Add(m, m, tmp, n);
    }

    // fbgemm's (experimental, GPU-only in 1.1.0) Adam with iter-based bias correction:
    //   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2,
    //   w -= lr * (m / (1 - beta1^iter) / (sqrt(v / (1 - beta2^iter)) + eps) + weight_decay * w)
    // with g the row's summed gradient and w the weight before this step. The bias corrections
    // arrive as factors from the tiling. The weights were read into w by the caller.
    __aicore__ inline void Adam(const Entry& head, LocalTensor<float>& acc, LocalTensor<float>& g,
                                LocalTensor<float>& w) {
        const int32_t n = static_cast<int32_t>(head.dim);
        AdamStep(head, acc, g, w);
        Muls(g, g, td_.learningRate, n);
        Sub(w, w, g, n);
    }

    // Adam's moments of the run's row, stored back, and its step before the learning rate,
    //   r = m / (1 - beta1^iter) / (sqrt(v / (1 - beta2^iter)) + eps) + weight_decay * w,
    // left in g (LAMB scales it by its trust ratio instead). acc is free afterwards.
    __aicore__ inline void AdamStep(const Entry& head, LocalTensor<float>& acc,
                                    LocalTensor<float>& g, LocalTensor<float>& w) {
        const int64_t dim = head.dim;
        const int32_t n = static_cast<int32_t>(dim);
        const DataCopyExtParams rowCopy{1, static_cast<uint32_t>(dim * 4), 0, 0, 0};
        const DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
        LocalTensor<float> m = mBuf_.Get<float>();
        LocalTensor<float> v = m2Buf_.Get<float>();
        const int64_t mAt = head.momentumAt + head.row * dim;
        const int64_t vAt = head.momentum2At + head.row * dim;
        if (mAt < 0 || mAt + dim > td_.numMomentum)
            Trap();
        if (vAt < 0 || vAt + dim > td_.numMomentum2)
            Trap();
        DataCopyPad(m, momGm_[mAt], rowCopy, pad);
        DataCopyPad(v, mom2Gm_[vAt], rowCopy, pad);
        // The gradient terms need only acc, so they overlap the moment loads; acc is free after.
        Muls(g, acc, td_.oneMinusBeta1, n);
        Mul(acc, acc, acc, n);
        Muls(acc, acc, td_.oneMinusBeta2, n);
        mxrec::PipeSync<HardEvent::MTE2_V>();
        Muls(m, m, td_.beta1, n);
        Add(m, m, g, n);
        Muls(v, v, td_.beta2, n);
        Add(v, v, acc, n);
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyPad(momGm_[mAt], m, rowCopy);
        DataCopyPad(mom2Gm_[vAt], v, rowCopy);
        // The moments are only read from here on, so the step may run while they are stored.
        Muls(acc, v, td_.biasScale2, n);
        Sqrt(acc, acc, n);
        Adds(acc, acc, td_.eps, n);
        Muls(g, m, td_.biasScale1, n);
        Div(g, g, acc, n);
        if (td_.weightDecay != 0.0f) {
            Muls(acc, w, td_.weightDecay, n);
            Add(g, g, acc, n);
        }
    }

    // fbgemm's LAMB (optimizers.py lamb(), GPU-only in 1.1.0): Adam's step r, then
    //   w -= lr * (|w| / |r|) * r
    // with both norms over the row and w the weight before the step.
    __aicore__ inline void Lamb(const Entry& head, LocalTensor<float>& acc, LocalTensor<float>& g,
                                LocalTensor<float>& w) {
        AdamStep(head, acc, g, w);
        TrustStep(acc, g, w, static_cast<int32_t>(head.dim));
    }

    // LAMB's step: w -= lr * (|w| / |r|) * r, with r in g; acc as scratch.
    __aicore__ inline void TrustStep(LocalTensor<float>& acc, LocalTensor<float>& g,
                                     LocalTensor<float>& w, int32_t n) {
        const float weightNorm = ScalarSqrt(SumSquares(w, acc, n));
        const float stepNorm = ScalarSqrt(SumSquares(g, acc, n));
        const float ratio = weightNorm / stepNorm;
        Muls(g, g, td_.learningRate * ratio, n);
        Sub(w, w, g, n);
    }

    // The row-wise second moment of the partial row-wise optimizers, updated and stored:
    // v = beta2 v + (1 - beta2) * mean(g^2); returns sqrt(v / (1 - beta2^iter)).
    __aicore__ inline float PartialSecondMoment(const Entry& head, LocalTensor<float>& acc,
                                                LocalTensor<float>& tmp) {
        const int64_t vAt = head.momentum2At + head.row;
        if (vAt < 0 || vAt >= td_.numMomentum2)
            Trap();
        const float old = ReadRowState(mom2Gm_, vAt);
        const float meanSq =
            SumSquares(acc, tmp, static_cast<int32_t>(head.dim)) / static_cast<float>(head.dim);
        const float v = old * td_.beta2 + meanSq * td_.oneMinusBeta2;
        WriteRowState(mom2Gm_, vAt, v);
        return ScalarSqrt(v * td_.biasScale2);
    }

    // The first moment and the step before the learning rate of the partial row-wise
    // optimizers, left in g:
    //   m = beta1 m + (1 - beta1) g  (stored back),
    //   r = m / (1 - beta1^iter) / (sqrt(v / (1 - beta2^iter)) + eps) + weight_decay * w
    __aicore__ inline void PartialStep(const Entry& head, LocalTensor<float>& acc,
                                       LocalTensor<float>& g, LocalTensor<float>& w) {
        const int32_t n = static_cast<int32_t>(head.dim);
        LocalTensor<float> m = mBuf_.Get<float>();
        const int64_t mAt = LoadMomentumRow(head, m);
        const float root = PartialSecondMoment(head, acc, g);
        mxrec::PipeSync<HardEvent::MTE2_V>();
        FirstMoment(m, acc, g, n);
        StoreRow(momGm_, mAt, m, head.dim);
        Muls(g, m, td_.biasScale1, n);
        Muls(g, g, 1.0f / (root + td_.eps), n);
        if (td_.weightDecay != 0.0f) {
            Muls(acc, w, td_.weightDecay, n);
            Add(g, g, acc, n);
        }
    }

    // fbgemm's partial row-wise Adam (optimizers.py partial_rowwise_adam()): Adam whose second
    // moment is one float per row, of the row's mean square gradient; w -= lr * r.
    __aicore__ inline void PartialRowwiseAdam(const Entry& head, LocalTensor<float>& acc,
                                              LocalTensor<float>& g, LocalTensor<float>& w) {
        const int32_t n = static_cast<int32_t>(head.dim);
        PartialStep(head, acc, g, w);
        Muls(g, g, td_.learningRate, n);
        Sub(w, w, g, n);
    }

    // fbgemm's partial row-wise LAMB (optimizers.py partial_rowwise_lamb()): the partial
    // row-wise step r, then LAMB's trust-ratio step.
    __aicore__ inline void PartialRowwiseLamb(const Entry& head, LocalTensor<float>& acc,
                                              LocalTensor<float>& g, LocalTensor<float>& w) {
        PartialStep(head, acc, g, w);
        TrustStep(acc, g, w, static_cast<int32_t>(head.dim));
    }

    // fbgemm's LARS-SGD (optimizers.py lars_sgd(), GPU-only in 1.1.0), with norms over the row
    // of the weight before the step and of the summed gradient:
    //   lr' = lr * eta * |w| / (|g| + weight_decay * |w|)
    //   m = momentum * m + lr' * (g + weight_decay * w),  w -= m
    __aicore__ inline void LarsSgd(const Entry& head, LocalTensor<float>& acc,
                                   LocalTensor<float>& g, LocalTensor<float>& w) {
        const int32_t n = static_cast<int32_t>(head.dim);
        LocalTensor<float> m = mBuf_.Get<float>();
        const int64_t mAt = LoadMomentumRow(head, m);
        mxrec::PipeSync<HardEvent::MTE2_V>();
        const float weightNorm = ScalarSqrt(SumSquares(w, g, n));
        const float gradNorm = ScalarSqrt(SumSquares(acc, g, n));
        const float wd = td_.weightDecay;
        const float lr = td_.learningRate * td_.eta * weightNorm / (gradNorm + wd * weightNorm);
        Muls(g, w, wd, n);
        Add(g, acc, g, n);
        Muls(g, g, lr, n);
        Muls(m, m, td_.momentum, n);
        Add(m, m, g, n);
        Sub(w, w, m, n);
        StoreRow(momGm_, mAt, m, head.dim);
    }

    SplitEmbeddingBackwardTilingData td_;
    TPipe* pipe_ = nullptr;
    int64_t me_ = 0;
    int64_t rowFloats_ = 0;   // a row buffer's floats
    int32_t loaded_[2] = {};  // MTE2_V: buffer set k's rows arrived
    int32_t stored_[2] = {};  // MTE3_MTE2: buffer set k's rows left
    bool storing_[2] = {};    // stored_[k] is set and not yet waited for
    int64_t totalB_ = 0;
    TableInfo table_;
    int64_t meanBag_ = -1;
    float meanScale_ = 1.0f;
    GlobalTensor<float> gradGm_;
    mxrec::VbeMetadata vbe_;
    GlobalTensor<float> outGm_;  // weights, or grad_weights in dense mode
    GlobalTensor<float> momGm_;
    GlobalTensor<float> mom2Gm_;
    GlobalTensor<float> iwGm_;
    GlobalTensor<int64_t> moOffGm_;
    GlobalTensor<int64_t> mo2OffGm_;
    GlobalTensor<int64_t> woGm_;
    GlobalTensor<int32_t> dOffGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<TI> offGm_;
    GlobalTensor<int64_t> sortedGm_;
    GlobalTensor<int64_t> slotsGm_;
    mxrec::OffsetWindow<int64_t> sortedWin_;
    GlobalTensor<int64_t> bagsGm_;
    mxrec::OffsetWindow<int64_t> bagsWin_;
    GlobalTensor<TI> sortedIdxGm_;
    mxrec::OffsetWindow<TI> idxWin_;
    TBuf<TPosition::VECCALC> accBuf_;
    TBuf<TPosition::VECCALC> gBuf_;      // scratch row of the updates
    TQue<TPosition::VECIN, 2> gradQue_;  // grad_output rows, one fetched ahead
    TBuf<TPosition::VECCALC> wBuf_;
    TBuf<TPosition::VECCALC> mBuf_;
    TBuf<TPosition::VECCALC> m2Buf_;
    TBuf<TPosition::VECCALC> slot_;
    TBuf<TPosition::VECCALC> rowMoment_;  // row-wise Adagrad: each buffer set's moment
    TBuf<TPosition::VECCALC> math_;       // scalar exp / log (row-wise Adagrad with counter)
    GlobalTensor<float> prevGm_;
    GlobalTensor<int64_t> prevOffGm_;
    GlobalTensor<float> counterGm_;
    GlobalTensor<int64_t> counterOffGm_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "split_embedding_backward_kernel_entry.h"
