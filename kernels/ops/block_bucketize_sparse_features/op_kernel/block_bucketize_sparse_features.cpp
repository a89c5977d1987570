// BlockBucketizeSparseFeatures: fbgemm's block bucketization of (lengths, indices[, weights]) into
// my_size buckets, bucket-major.
//
// Phases (see the tiling header): 0 length sums of each core's bags; 1 per-(bucket, bag) counts
// into new_lengths and per-bucket totals; 2 scatter of ids, weights and positions through
// per-bucket UB staging, and unbucketize_permute in input order. Every UB -> GM write of phases
// 1 and 2 goes out through Send: it waits (MTE3 -> S) only for the write before it, so the
// scalar unit keeps counting or staging, and the next ids keep arriving, while a write is in
// flight; a buffer is written again only after a later write has been sent (two tiles, the two
// halves of each bucket's staging ring, two permute buffers). The bucket of an id is integer
// division with per-table divisors (scalar work: ids are irregular and 64-bit integers have no
// vector divide on A2/A3). Ids are taken as unsigned of their width, as fbgemm does, so negative
// ids land in the "beyond the blocks" branch.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "block_bucketize_sparse_features_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSlot = 4;  // int64 per 32-byte slot
constexpr int64_t kNoEnd = 0x7fffffffffffffffLL;

template <typename T>
struct UnsignedOf;
template <>
struct UnsignedOf<int32_t> {
    using type = uint32_t;
};
template <>
struct UnsignedOf<int64_t> {
    using type = uint64_t;
};

template <typename TL, typename TI>
class BlockBucketize {
    using U = typename UnsignedOf<TI>::type;

public:
    __aicore__ inline void Init(GM_ADDR lengths, GM_ADDR indices, GM_ADDR blockSizes,
                                GM_ADDR weights, GM_ADDR batchSizes, GM_ADDR totalNumBlocks,
                                GM_ADDR newLengths, GM_ADDR newIndices, GM_ADDR newWeights,
                                GM_ADDR newPos, GM_ADDR unbucketize, GM_ADDR workspace,
                                const BlockBucketizeSparseFeaturesTilingData& td, TPipe* pipe) {
        td_ = td;
        me_ = GetBlockIdx();
        lenGm_.SetGlobalBuffer((__gm__ TL*)lengths, td.bags);
        idxGm_.SetGlobalBuffer((__gm__ TI*)indices, td.numIndices);
        blockGm_.SetGlobalBuffer((__gm__ TI*)blockSizes, td.tables);
        newLenGm_.SetGlobalBuffer((__gm__ TL*)newLengths, td.mySize * td.bags);
        newIdxGm_.SetGlobalBuffer((__gm__ TI*)newIndices, td.numIndices);
        GM_ADDR ws = GetUserWorkspace(workspace);
        wsLen_.SetGlobalBuffer((__gm__ int64_t*)ws, td.coreNum * kSlot);
        wsBucket_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsBucket), td.coreNum * td.bucketRow);
        lenWin_.Init(pipe, lenGm_, td.bags, td.lenWinBytes);
        blockWin_.Init(pipe, blockGm_, td.tables, td.windowBytes);
        if (td.vbe) {
            batchGm_.SetGlobalBuffer((__gm__ TL*)batchSizes, td.tables);
            batchWin_.Init(pipe, batchGm_, td.tables, td.windowBytes);
        }
        if (td.hasTnb) {
            tnbGm_.SetGlobalBuffer((__gm__ TI*)totalNumBlocks, td.tables);
            tnbWin_.Init(pipe, tnbGm_, td.tables, td.windowBytes);
        }
        pipe->InitBuffer(idxPiece_, td.streamBytes);
        if (td.hasWeights) {
            wGm_.SetGlobalBuffer((__gm__ float*)weights, td.numIndices);
            newWGm_.SetGlobalBuffer((__gm__ float*)newWeights, td.numIndices);
            pipe->InitBuffer(wPiece_, td.streamBytes);
        }
        if (td.bucketizePos)
            newPosGm_.SetGlobalBuffer((__gm__ TI*)newPos, td.numIndices);
        if (td.sequence) {
            permGm_.SetGlobalBuffer((__gm__ TI*)unbucketize, td.numIndices);
            pipe->InitBuffer(permPiece_, static_cast<uint32_t>(td.banks * td.streamBytes));
        }
        pipe->InitBuffer(totals_, td.totalsBytes);
        pipe->InitBuffer(slot_, static_cast<uint32_t>(mxrec::kBlockBytes));
        pipe->InitBuffer(arena_, td.arenaBytes);
    }

    __aicore__ inline void Process() {
        span_ = mxrec::SplitEven(td_.bags, td_.coreNum, me_);
        sent_ = static_cast<int32_t>(GetTPipePtr()->AllocEventID<HardEvent::MTE3_S>());
        if (td_.vbe)
            CheckBatchSizes();
        PublishLengthSum(SumLengths());
        SyncAll();
        FindIdStart();
        CountBuckets();
        SyncAll();
        SetCursors();
        Scatter();
        Drain();
        GetTPipePtr()->ReleaseEventID<HardEvent::MTE3_S>(static_cast<TEventID>(sent_));
    }

private:
    // ---- UB -> GM writes of phases 1 and 2 ---------------------------------------------------
    // Before a write goes out, the one before it has finished (so has every earlier one: MTE3
    // runs in order); after it, its flag is set. What the scalar unit stages next must avoid
    // only the buffer of the write last sent.
    __aicore__ inline void Drain() {
        if (inFlight_) {
            WaitFlag<HardEvent::MTE3_S>(sent_);
            inFlight_ = false;
        }
    }

    template <typename T>
    __aicore__ inline void Send(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                const DataCopyExtParams& copy) {
        DataCopyPad(dst, src, copy);
    }

    __aicore__ inline void BeginSend() {
        mxrec::PipeSync<HardEvent::S_MTE3>();
        Drain();
    }

    // With one bank the buffer just sent is refilled next: wait for it at once.
    __aicore__ inline void EndSend() {
        SetFlag<HardEvent::MTE3_S>(sent_);
        inFlight_ = true;
        if (td_.banks == 1)
            Drain();
    }

    // Where bucket u's staging ring starts: its first position (two banks), or its oldest
    // staged position (one bank: the ring restarts after every flush).
    __aicore__ inline int64_t RingOrigin(uint32_t u) {
        LocalTensor<int64_t> cursor = arena_.Get<int64_t>();
        const uint32_t at =
            static_cast<uint32_t>((td_.banks == 2 ? td_.arenaStart : td_.arenaFlush) / 8);
        return cursor[at].GetValue(u);
    }

    __aicore__ inline LocalTensor<TI> PermBuffer() {
        return permPiece_.Get<TI>()[static_cast<uint32_t>(permBank_ * td_.piece)];
    }

    // ---- phase 0 ---------------------------------------------------------------------------
    // fbgemm walks sum(batch_size_per_feature) bags; more than lengths holds would read past it.
    __aicore__ inline void CheckBatchSizes() {
        int64_t sum = 0;
        for (int64_t t = 0; t < td_.tables; ++t) {
            const int64_t bs = batchWin_.Get(t);
            if (bs < 0)
                Trap();
            sum += bs;
        }
        if (sum > td_.bags)
            Trap();
    }

    __aicore__ inline int64_t SumLengths() {
        int64_t sum = 0;
        for (int64_t b = span_.begin; b < span_.end; ++b) {
            const int64_t len = lenWin_.Get(b);
            if (len < 0)
                Trap();  // fbgemm's offsets would run backwards
            sum += len;
        }
        return sum;
    }

    __aicore__ inline void PublishLengthSum(int64_t sum) {
        LocalTensor<int64_t> s = slot_.Get<int64_t>();
        s.SetValue(0, sum);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyPad(wsLen_[me_ * kSlot], s, DataCopyExtParams{1, sizeof(int64_t), 0, 0, 0});
    }

    __aicore__ inline void FindIdStart() {
        LocalTensor<int64_t> all = totals_.Get<int64_t>();
        DataCopyExtParams copy{static_cast<uint16_t>(td_.coreNum), sizeof(int64_t),
                               static_cast<uint32_t>(mxrec::kBlockBytes - sizeof(int64_t)), 0, 0};
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        DataCopyPad(all, wsLen_, copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        int64_t before = 0;
        int64_t total = 0;
        int64_t mine = 0;
        for (int64_t c = 0; c < td_.coreNum; ++c) {
            const int64_t v = all.GetValue(static_cast<uint32_t>(c * kSlot));
            if (c < me_)
                before += v;
            if (c == me_)
                mine = v;
            total += v;
        }
        if (total != td_.numIndices)
            Trap();  // lengths do not describe the indices
        idStart_ = before;
        idEnd_ = before + mine;
    }

    // ---- tables ----------------------------------------------------------------------------
    // Position the table walk at bag b0 (the first bag of this core).
    __aicore__ inline void StartTables(int64_t b0) {
        if (!td_.vbe) {
            table_ = td_.batch > 0 ? b0 / td_.batch : td_.tables;
            tableEnd_ = table_ < td_.tables ? (table_ + 1) * td_.batch : kNoEnd;
        } else {
            int64_t start = 0;
            table_ = 0;
            while (table_ < td_.tables) {
                const int64_t bs = batchWin_.Get(table_);
                if (start + bs > b0)
                    break;
                start += bs;
                ++table_;
            }
            tableEnd_ = table_ < td_.tables ? start + batchWin_.Get(table_) : kNoEnd;
        }
        if (table_ < td_.tables)
            LoadTable(table_);
    }

    // Move the table walk to bag b (bags are visited in order).
    __aicore__ inline void AdvanceTable(int64_t b) {
        if (b < tableEnd_)
            return;
        while (table_ < td_.tables && b >= tableEnd_) {
            ++table_;
            if (table_ < td_.tables) {
                tableEnd_ += td_.vbe ? batchWin_.Get(table_) : td_.batch;
            } else {
                tableEnd_ = kNoEnd;
            }
        }
        if (table_ < td_.tables)
            LoadTable(table_);
    }

    // The divisors of table t, in the index type's arithmetic exactly as fbgemm forms them
    // (products wrap in the index width).
    __aicore__ inline void LoadTable(int64_t t) {
        const TI blk = static_cast<TI>(blockWin_.Get(t));
        TI global = static_cast<TI>(td_.mySize);
        TI local = 1;
        if (td_.hasTnb) {
            const int64_t total = tnbWin_.Get(t);
            global = static_cast<TI>(total);
            local = static_cast<TI>(total / td_.mySize);
        }
        inBlocks_ = static_cast<U>(blk) * static_cast<U>(global);
        localSize_ = static_cast<U>(blk) * static_cast<U>(local);
        globalBlocks_ = static_cast<U>(global);
        localBlocks_ = static_cast<U>(local);
    }

    // Bucket of an id; newIdx gets the id it has in its bucket.
    __aicore__ inline int64_t Bucket(TI v, TI& newIdx) const {
        const U idx = static_cast<U>(v);
        U p;
        U q;
        if (idx < inBlocks_) {
            if (localSize_ == 0)
                Trap();  // total_num_blocks < my_size: fbgemm divides by zero
            p = idx / localSize_;
            q = idx % localSize_;
        } else {
            if (globalBlocks_ == 0 || localBlocks_ == 0)
                Trap();
            p = (idx % globalBlocks_) / localBlocks_;
            q = idx / globalBlocks_;
        }
        if (p >= static_cast<U>(td_.mySize))
            Trap();  // fbgemm would write past new_lengths
        newIdx = static_cast<TI>(td_.keepOrigIdx ? idx : q);
        return static_cast<int64_t>(p);
    }

    // ---- id stream -------------------------------------------------------------------------
    __aicore__ inline void ResetIds() {
        next_ = idStart_;
        pieceStart_ = idStart_;
        pieceLen_ = 0;
    }

    // The next id of this core's range; reloads the piece (and in phase 2 writes the permute
    // entries of the piece left behind).
    __aicore__ inline TI NextId(bool scatter) {
        if (next_ >= pieceStart_ + pieceLen_) {
            if (scatter && td_.sequence && pieceLen_ > 0)
                FlushPermute();
            pieceStart_ = next_;
            pieceLen_ = mxrec::Min64(td_.piece, idEnd_ - next_);
            if (pieceLen_ <= 0)
                Trap();  // cannot happen once the length sums matched
            LocalTensor<TI> ids = idxPiece_.Get<TI>();
            mxrec::PipeSync<HardEvent::S_MTE2>();
            DataCopyPadExtParams<TI> pad{false, 0, 0, static_cast<TI>(0)};
            DataCopyPad(
                ids, idxGm_[pieceStart_],
                DataCopyExtParams{1, static_cast<uint32_t>(pieceLen_ * sizeof(TI)), 0, 0, 0}, pad);
            if (scatter && td_.hasWeights) {
                LocalTensor<float> w = wPiece_.Get<float>();
                DataCopyPadExtParams<float> wpad{false, 0, 0, 0.0f};
                DataCopyPad(
                    w, wGm_[pieceStart_],
                    DataCopyExtParams{1, static_cast<uint32_t>(pieceLen_ * sizeof(float)), 0, 0, 0},
                    wpad);
            }
            mxrec::PipeSync<HardEvent::MTE2_S>();
        }
        return idxPiece_.Get<TI>().GetValue(static_cast<uint32_t>(next_++ - pieceStart_));
    }

    // ---- phase 1 ---------------------------------------------------------------------------
    __aicore__ inline void CountBuckets() {
        const int64_t m = td_.mySize;
        const int64_t row = td_.countRow;
        LocalTensor<int64_t> totals = arena_.Get<int64_t>();
        LocalTensor<TL> tiles = arena_.Get<TL>()[static_cast<uint32_t>(td_.arenaTile / sizeof(TL))];
        const int32_t tileWords =
            static_cast<int32_t>(m * row * static_cast<int64_t>(sizeof(TL)) / 4);
        Duplicate(arena_.Get<int32_t>(), static_cast<int32_t>(0),
                  static_cast<int32_t>(td_.bucketRow * 2));
        mxrec::PipeSync<HardEvent::V_S>();  // the totals may go out untouched (no bags here)
        StartTables(span_.begin);
        ResetIds();
        int64_t bank = 0;
        for (int64_t c0 = span_.begin; c0 < span_.end; c0 += row, bank = (bank + 1) % td_.banks) {
            const int64_t n = mxrec::Min64(row, span_.end - c0);
            // This tile's last write was sent two tiles ago, and the send of the previous tile
            // waited for it.
            LocalTensor<TL> tile = tiles[static_cast<uint32_t>(bank * m * row)];
            mxrec::PipeSync<HardEvent::S_V>();
            Duplicate(tile.template ReinterpretCast<int32_t>(), static_cast<int32_t>(0), tileWords);
            mxrec::PipeSync<HardEvent::V_S>();
            for (int64_t j = 0; j < n; ++j) {
                const int64_t b = c0 + j;
                const int64_t len = lenWin_.Get(b);
                AdvanceTable(b);
                if (len > 0 && table_ >= td_.tables)
                    Trap();  // ids past sum(batch_size_per_feature)
                for (int64_t k = 0; k < len; ++k) {
                    TI newIdx;
                    const int64_t p = Bucket(NextId(false), newIdx);
                    const uint32_t at = static_cast<uint32_t>(p * row + j);
                    tile.SetValue(at, static_cast<TL>(tile.GetValue(at) + 1));
                    totals.SetValue(static_cast<uint32_t>(p),
                                    totals.GetValue(static_cast<uint32_t>(p)) + 1);
                }
            }
            BeginSend();
            const int64_t bytes = n * static_cast<int64_t>(sizeof(TL));
            const int64_t rowBytes = row * static_cast<int64_t>(sizeof(TL));
            DataCopyExtParams out{
                static_cast<uint16_t>(m), static_cast<uint32_t>(bytes),
                static_cast<uint32_t>((rowBytes - mxrec::AlignUp(bytes, mxrec::kBlockBytes)) /
                                      mxrec::kBlockBytes),
                static_cast<uint32_t>((td_.bags - n) * static_cast<int64_t>(sizeof(TL))), 0};
            Send(newLenGm_[c0], tile, out);
            EndSend();
        }
        BeginSend();
        Send(wsBucket_[me_ * td_.bucketRow], totals,
             DataCopyExtParams{1, static_cast<uint32_t>(m * sizeof(int64_t)), 0, 0, 0});
        EndSend();
    }

    // ---- phase 2 ---------------------------------------------------------------------------
    // cursor[p]: where this core's next id of bucket p goes; flush[p]: the first of them still
    // staged. Start: all ids of buckets < p, plus bucket p's ids of the cores before this one.
    __aicore__ inline void SetCursors() {
        const int64_t m = td_.mySize;
        LocalTensor<int64_t> cursor = arena_.Get<int64_t>();
        LocalTensor<int64_t> flush = cursor[static_cast<uint32_t>(td_.arenaFlush / 8)];
        LocalTensor<int64_t> rowBuf = cursor[static_cast<uint32_t>(td_.arenaStageIdx / 8)];
        Drain();  // the tiles and the bucket totals left UB
        mxrec::PipeSync<HardEvent::S_V>();
        Duplicate(arena_.Get<int32_t>(), static_cast<int32_t>(0),
                  static_cast<int32_t>(td_.bucketRow * 4));
        mxrec::PipeSync<HardEvent::V_S>();
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        const DataCopyExtParams copy{1, static_cast<uint32_t>(m * sizeof(int64_t)), 0, 0, 0};
        for (int64_t c = 0; c < td_.coreNum; ++c) {
            mxrec::PipeSync<HardEvent::S_MTE2>();
            DataCopyPad(rowBuf, wsBucket_[c * td_.bucketRow], copy, pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t p = 0; p < m; ++p) {
                const uint32_t u = static_cast<uint32_t>(p);
                const int64_t v = rowBuf.GetValue(u);
                flush.SetValue(u, flush.GetValue(u) + v);  // column total for now
                if (c < me_)
                    cursor.SetValue(u, cursor.GetValue(u) + v);
            }
        }
        int64_t run = 0;
        for (int64_t p = 0; p < m; ++p) {
            const uint32_t u = static_cast<uint32_t>(p);
            const int64_t columnTotal = flush.GetValue(u);
            const int64_t first = cursor.GetValue(u) + run;
            cursor.SetValue(u, first);
            flush.SetValue(u, first);
            if (td_.banks == 2)
                cursor[static_cast<uint32_t>(td_.arenaStart / 8)].SetValue(u, first);
            run += columnTotal;
        }
    }

    __aicore__ inline void Scatter() {
        const int64_t kk = td_.stageK;
        LocalTensor<int64_t> cursor = arena_.Get<int64_t>();
        LocalTensor<TI> stageIdx =
            arena_.Get<TI>()[static_cast<uint32_t>(td_.arenaStageIdx / sizeof(TI))];
        LocalTensor<float> stageW =
            arena_.Get<float>()[static_cast<uint32_t>(td_.arenaStageW / sizeof(float))];
        LocalTensor<TI> stagePos =
            arena_.Get<TI>()[static_cast<uint32_t>(td_.arenaStagePos / sizeof(TI))];
        const int64_t part = kk / td_.banks;
        LocalTensor<float> w;
        if (td_.hasWeights)
            w = wPiece_.Get<float>();
        mxrec::PipeSync<HardEvent::MTE2_S>();  // the last bucket-total row read into staging is
                                               // done
        StartTables(span_.begin);
        ResetIds();
        for (int64_t b = span_.begin; b < span_.end; ++b) {
            const int64_t len = lenWin_.Get(b);
            AdvanceTable(b);
            for (int64_t k = 0; k < len; ++k) {
                TI newIdx;
                const int64_t p = Bucket(NextId(true), newIdx);
                const uint32_t j = static_cast<uint32_t>(next_ - 1 - pieceStart_);
                const uint32_t u = static_cast<uint32_t>(p);
                const int64_t at = cursor.GetValue(u);
                const int64_t fill = at - RingOrigin(u);
                const uint32_t s = static_cast<uint32_t>(p * kk + fill % kk);
                stageIdx.SetValue(s, newIdx);
                if (td_.hasWeights)
                    stageW.SetValue(s, w.GetValue(j));
                if (td_.bucketizePos)
                    stagePos.SetValue(s, static_cast<TI>(k));
                if (td_.sequence)
                    PermBuffer().SetValue(j, static_cast<TI>(at));
                cursor.SetValue(u, at + 1);
                if ((fill + 1) % part == 0)
                    FlushBucket(p);
            }
        }
        if (td_.sequence && pieceLen_ > 0)
            FlushPermute();
        for (int64_t p = 0; p < td_.mySize; ++p)
            FlushBucket(p);
    }

    __aicore__ inline void FlushBucket(int64_t p) {
        LocalTensor<int64_t> cursor = arena_.Get<int64_t>();
        LocalTensor<int64_t> flush = cursor[static_cast<uint32_t>(td_.arenaFlush / 8)];
        const uint32_t u = static_cast<uint32_t>(p);
        const int64_t from = flush.GetValue(u);
        const int64_t to = cursor.GetValue(u);
        if (to == from)
            return;
        // [from, to) lies in one part of the ring, from the part's start.
        const uint32_t s =
            static_cast<uint32_t>(p * td_.stageK + (from - RingOrigin(u)) % td_.stageK);
        const uint32_t n = static_cast<uint32_t>(to - from);
        BeginSend();
        const DataCopyExtParams idxCopy{1, static_cast<uint32_t>(n * sizeof(TI)), 0, 0, 0};
        LocalTensor<TI> stageIdx =
            arena_.Get<TI>()[static_cast<uint32_t>(td_.arenaStageIdx / sizeof(TI))];
        Send(newIdxGm_[from], stageIdx[s], idxCopy);
        if (td_.hasWeights) {
            LocalTensor<float> stageW =
                arena_.Get<float>()[static_cast<uint32_t>(td_.arenaStageW / sizeof(float))];
            Send(newWGm_[from], stageW[s],
                 DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0});
        }
        if (td_.bucketizePos) {
            LocalTensor<TI> stagePos =
                arena_.Get<TI>()[static_cast<uint32_t>(td_.arenaStagePos / sizeof(TI))];
            Send(newPosGm_[from], stagePos[s], idxCopy);
        }
        EndSend();
        flush.SetValue(u, to);
    }

    __aicore__ inline void FlushPermute() {
        BeginSend();
        Send(permGm_[pieceStart_], PermBuffer(),
             DataCopyExtParams{1, static_cast<uint32_t>(pieceLen_ * sizeof(TI)), 0, 0, 0});
        EndSend();
        permBank_ = (permBank_ + 1) % td_.banks;
    }

    BlockBucketizeSparseFeaturesTilingData td_;
    int64_t me_ = 0;
    mxrec::Span span_{0, 0};
    int64_t idStart_ = 0;
    int64_t idEnd_ = 0;
    int64_t next_ = 0;
    int64_t pieceStart_ = 0;
    int64_t pieceLen_ = 0;
    int64_t table_ = 0;
    int64_t tableEnd_ = 0;
    int64_t permBank_ = 0;  // the permute buffer being filled
    int32_t sent_ = 0;      // MTE3 -> S event of the write last sent
    bool inFlight_ = false;
    U inBlocks_ = 0;      // ids below this fall in the table's blocks
    U localSize_ = 1;     // ids per bucket inside the blocks
    U globalBlocks_ = 1;  // blocks of the table
    U localBlocks_ = 1;   // blocks per bucket
    GlobalTensor<TL> lenGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<TI> blockGm_;
    GlobalTensor<TL> batchGm_;
    GlobalTensor<TI> tnbGm_;
    GlobalTensor<float> wGm_;
    GlobalTensor<TL> newLenGm_;
    GlobalTensor<TI> newIdxGm_;
    GlobalTensor<float> newWGm_;
    GlobalTensor<TI> newPosGm_;
    GlobalTensor<TI> permGm_;
    GlobalTensor<int64_t> wsLen_;
    GlobalTensor<int64_t> wsBucket_;
    mxrec::OffsetWindow<TL> lenWin_;
    mxrec::OffsetWindow<TI> blockWin_;
    mxrec::OffsetWindow<TL> batchWin_;
    mxrec::OffsetWindow<TI> tnbWin_;
    TBuf<TPosition::VECCALC> idxPiece_;
    TBuf<TPosition::VECCALC> wPiece_;
    TBuf<TPosition::VECCALC> permPiece_;
    TBuf<TPosition::VECCALC> totals_;
    TBuf<TPosition::VECCALC> slot_;
    TBuf<TPosition::VECCALC> arena_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "block_bucketize_sparse_features_kernel_entry.h"
