// JaggedUniqueIndices: fbgemm's dedup of a KJT's ids (EmbeddingCollection dedup, managed
// collision). Each id becomes hash_size_cumsum[t] + id for its feature t = bag / B; the unique
// linearized ids in ascending order give unique_indices (the original id), the reverse index of
// every id, and per feature group the unique count spread over the group's bags.
//
// Linearized ids span up to 64 bits (managed collision gives each table 2^63 / tables ids), so
// no presence array fits; the ids are sorted instead, by a multi-core LSD radix sort of
// (key - smallest key) that stops at the highest significant byte. Phases, all cores meeting in
// SyncAll between them, each taking an even share of its items:
//   0. linearize ids into the workspace (keys and their positions), check offsets, publish the
//      share's smallest and largest key;
//   1. per 8-bit digit: a histogram of the share's digits, then a stable scatter of keys and
//      positions from the bases every core derives from all histograms (cub's radix sort pairs):
//      the share is counting-sorted by digit in UB and each digit's run leaves with one DMA;
//   2. count the heads of equal runs of the sorted share; 3. from the heads before the share,
//      write unique_indices (staged; the ids are their keys less their feature's cumsum) and
//      (position, rank) pairs in order, which the passes of 1 sort by position into
//      reverse_index (with a unified buffer too small for the scatter's chunks, the scatters and
//      reverse_index are scalar writes and the unique ids scalar reads of indices);
//   4. per feature group: the reverse indices' max - min + 1 over its ids (fbgemm 1.1.0's count)
//      spread over its bags; 5. output_offsets from the groups' totals before each core's groups.
// Published values go through the data cache, which is cleaned around every meeting.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "jagged_unique_indices_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kSlot = 4;  // int64 per 32-byte per-core slot: min, max, heads
constexpr int64_t kMaxKey = 0x7fffffffffffffffLL;
constexpr int64_t kMinKey = -kMaxKey - 1;

// A read window that can be pointed at another buffer: the phases read what earlier phases
// wrote, so a window forgets what it holds when it is bound again.
template <typename T>
class Window {
public:
    __aicore__ inline void Init(TPipe* pipe, uint32_t bytes) {
        pipe->InitBuffer(buf_, bytes);
        cap_ = mxrec::ElemsPerBlocks(bytes, sizeof(T));
    }
    __aicore__ inline void Bind(const GlobalTensor<T>& gm, int64_t total) {
        gm_ = gm;
        total_ = total;
        start_ = 0;
        len_ = 0;
    }
    __aicore__ inline T Get(int64_t i) {
        if (i < start_ || i >= start_ + len_)
            Load(i);
        return buf_.template Get<T>().GetValue(static_cast<uint32_t>(i - start_));
    }

private:
    __aicore__ inline void Load(int64_t i) {
        start_ = i;
        len_ = mxrec::Min64(cap_, total_ - i);
        LocalTensor<T> win = buf_.template Get<T>();
        mxrec::PipeSync<HardEvent::S_MTE2>();  // the scalar reads of the last load are done
        DataCopyExtParams params{1, static_cast<uint32_t>(len_ * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(win, gm_[i], params, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
    }

    GlobalTensor<T> gm_;
    TBuf<TPosition::VECCALC> buf_;
    int64_t cap_ = 0;
    int64_t total_ = 0;
    int64_t start_ = 0;
    int64_t len_ = 0;
};

// Values written in order to consecutive places of global memory, staged in UB and sent in
// pieces.
template <typename T>
class Stager {
public:
    __aicore__ inline void Init(TPipe* pipe, uint32_t bytes) {
        pipe->InitBuffer(buf_, bytes);
        cap_ = mxrec::ElemsPerBlocks(bytes, sizeof(T));
    }
    __aicore__ inline void Begin(const GlobalTensor<T>& gm, int64_t at) {
        Flush();
        gm_ = gm;
        at_ = at;
    }
    __aicore__ inline void Put(T v) {
        if (count_ == 0)
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the previous piece has left
        buf_.template Get<T>().SetValue(static_cast<uint32_t>(count_), v);
        if (++count_ == cap_)
            Flush();
    }
    __aicore__ inline void Flush() {
        if (count_ == 0)
            return;
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams params{1, static_cast<uint32_t>(count_ * sizeof(T)), 0, 0, 0};
        DataCopyPad(gm_[at_], buf_.template Get<T>(), params);
        at_ += count_;
        count_ = 0;
    }

private:
    GlobalTensor<T> gm_;
    TBuf<TPosition::VECCALC> buf_;
    int64_t cap_ = 0;
    int64_t at_ = 0;
    int64_t count_ = 0;
};

// I is int64_t, the only dtype fbgemm 1.1.0's op runs with (op.toml).
template <typename I>
class JaggedUniqueIndices {
    static_assert(sizeof(I) == sizeof(int64_t), "ids, offsets and lengths are int64");

public:
    __aicore__ inline void Init(GM_ADDR cumsum, GM_ADDR groupOffsets, GM_ADDR offsets,
                                GM_ADDR indices, GM_ADDR lengths, GM_ADDR outOffsets,
                                GM_ADDR unique, GM_ADDR reverse, GM_ADDR numUnique,
                                GM_ADDR workspace, const JaggedUniqueIndicesTilingData& td,
                                TPipe* pipe) {
        td_ = td;
        me_ = GetBlockIdx();
        n_ = td.numIndices;
        cumGm_.SetGlobalBuffer((__gm__ int64_t*)cumsum, td.features + 1);
        grpGm_.SetGlobalBuffer((__gm__ int64_t*)groupOffsets, td.groups);
        bagGm_.SetGlobalBuffer((__gm__ int64_t*)offsets, td.bags + 1);
        idxGm_.SetGlobalBuffer((__gm__ int64_t*)indices, n_);
        lenGm_.SetGlobalBuffer((__gm__ int64_t*)lengths, td.bags);
        outOffGm_.SetGlobalBuffer((__gm__ int64_t*)outOffsets, td.bags + 1);
        uniqGm_.SetGlobalBuffer((__gm__ int64_t*)unique, n_);
        revGm_.SetGlobalBuffer((__gm__ int64_t*)reverse, n_);
        numGm_.SetGlobalBuffer((__gm__ int64_t*)numUnique, 1);
        GM_ADDR ws = GetUserWorkspace(workspace);
        keysGm_[0].SetGlobalBuffer((__gm__ int64_t*)ws, n_);
        keysGm_[1].SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsKeysB), n_);
        posGm_[0].SetGlobalBuffer((__gm__ int32_t*)(ws + td.wsPosA), n_);
        posGm_[1].SetGlobalBuffer((__gm__ int32_t*)(ws + td.wsPosB), n_);
        histGm_.SetGlobalBuffer((__gm__ int32_t*)(ws + td.wsHist), td.coreNum * JUI_RADIX);
        slotGm_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsSlots), td.coreNum * kSlot);
        totGm_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsGroups), td.features);
        keyWin_.Init(pipe, td.windowBytes);
        posWin_.Init(pipe, td.windowBytes);
        idxWin_.Init(pipe, td.windowBytes);
        bagWin_.Init(pipe, td.windowBytes);
        histWin_.Init(pipe, td.windowBytes);
        keyOut_.Init(pipe, td.windowBytes / 2);
        posOut_.Init(pipe, td.windowBytes / 2);
        revKeyOut_.Init(pipe, td.windowBytes / 2);
        pipe->InitBuffer(digits_, 3 * JUI_RADIX * sizeof(int32_t));
        pipe->InitBuffer(sortBuf_, td.sortBytes);
    }

    __aicore__ inline void Process() {
        Linearize();
        Meet();
        int64_t lo = kMaxKey;
        int64_t hi = kMinKey;
        for (int64_t c = 0; c < td_.coreNum; ++c) {
            lo = mxrec::Min64(lo, slotGm_.GetValue(c * kSlot));
            hi = mxrec::Max64(hi, slotGm_.GetValue(c * kSlot + 1));
        }
        minKey_ = lo;
        int src = 0;
        if (n_ > 0) {
            // Only the bytes in which keys differ from the smallest one are sorted.
            for (uint64_t spread = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo), shift = 0;
                 spread > 0; spread >>= JUI_RADIX_BITS, shift += JUI_RADIX_BITS) {
                Histogram(src, shift);
                Meet();
                Scatter(src, shift);
                Meet();
                src ^= 1;
            }
        }
        CountHeads(src);
        Meet();
        WriteUnique(src);
        Meet();
        if (td_.sortChunk > 0 && n_ > 0) {
            // reverse_index[pos] = rank: the (pos, rank) pairs WriteUnique left sorted by pos
            // with the same radix passes (positions are 0..N-1), then widened in order.
            minKey_ = 0;
            int s = src ^ 1;
            for (uint64_t spread = static_cast<uint64_t>(n_ - 1), shift = 0; spread > 0;
                 spread >>= JUI_RADIX_BITS, shift += JUI_RADIX_BITS) {
                Histogram(s, shift);
                Meet();
                Scatter(s, shift);
                Meet();
                s ^= 1;
            }
            WidenReverse(s);
            Meet();
        }
        Lengths();
        Meet();
        Offsets();
    }

private:
    // Scalar writes to global memory go through the data cache: clean it before the others
    // read, and drop stale lines before reading theirs.
    __aicore__ inline void Meet() {
        DataCacheCleanAndInvalid<int64_t, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>(
            slotGm_);
        SyncAll();
        DataCacheCleanAndInvalid<int64_t, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>(
            slotGm_);
    }

    __aicore__ inline mxrec::Span Share(int64_t total) const {
        return mxrec::SplitEven(total, td_.coreNum, me_);
    }

    // The bag holding id i: the last b with offsets[b] <= i (offsets checked by every core).
    __aicore__ inline int64_t BagOf(int64_t i) {
        int64_t lo = 0;
        int64_t hi = td_.bags;  // offsets[bags] = N > i
        while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (bagGm_.GetValue(mid) <= i) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    __aicore__ inline void Linearize() {
        // Every pair of offsets is checked by one core; fbgemm reads ids outside
        // [offsets[0], offsets[-1]) as uninitialised keys, so those offsets trap. Every core
        // checks the two ends itself: its walk over the bags below stays inside offsets only
        // because offsets[bags] = N, and another core's trap may come after it has walked.
        const mxrec::Span pairs = Share(td_.bags);
        bagWin_.Bind(bagGm_, td_.bags + 1);
        if (bagWin_.Get(0) != 0 || bagWin_.Get(td_.bags) != n_)
            Trap();
        for (int64_t b = pairs.begin; b < pairs.end; ++b) {
            if (bagWin_.Get(b + 1) < bagWin_.Get(b))
                Trap();
        }
        const mxrec::Span share = Share(n_);
        int64_t lo = kMaxKey;
        int64_t hi = kMinKey;
        if (share.begin < share.end) {
            idxWin_.Bind(idxGm_, n_);
            bagWin_.Bind(bagGm_, td_.bags + 1);
            keyOut_.Begin(keysGm_[0], share.begin);
            posOut_.Begin(posGm_[0], share.begin);
            int64_t b = BagOf(share.begin);
            int64_t bagEnd = bagWin_.Get(b + 1);
            int64_t feature = b / td_.batchSize;
            int64_t base = cumGm_.GetValue(feature);
            for (int64_t i = share.begin; i < share.end; ++i) {
                while (i >= bagEnd) {
                    ++b;
                    bagEnd = bagWin_.Get(b + 1);
                }
                if (b / td_.batchSize != feature) {  // read once per feature, not per bag
                    feature = b / td_.batchSize;
                    base = cumGm_.GetValue(feature);
                }
                const int64_t key = base + idxWin_.Get(i);
                lo = mxrec::Min64(lo, key);
                hi = mxrec::Max64(hi, key);
                keyOut_.Put(key);
                posOut_.Put(static_cast<int32_t>(i));
            }
            keyOut_.Flush();
            posOut_.Flush();
        }
        slotGm_.SetValue(me_ * kSlot, lo);
        slotGm_.SetValue(me_ * kSlot + 1, hi);
    }

    __aicore__ inline uint32_t Digit(int64_t key, uint64_t shift) const {
        return static_cast<uint32_t>(
            ((static_cast<uint64_t>(key) - static_cast<uint64_t>(minKey_)) >> shift) &
            (JUI_RADIX - 1));
    }

    __aicore__ inline void Histogram(int src, uint64_t shift) {
        LocalTensor<int32_t> counts = digits_.Get<int32_t>();
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the last histogram has left
        for (uint32_t d = 0; d < JUI_RADIX; ++d)
            counts.SetValue(d, 0);
        const mxrec::Span share = Share(n_);
        keyWin_.Bind(keysGm_[src], n_);
        for (int64_t i = share.begin; i < share.end; ++i) {
            const uint32_t d = Digit(keyWin_.Get(i), shift);
            counts.SetValue(d, counts.GetValue(d) + 1);
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams params{1, JUI_RADIX * sizeof(int32_t), 0, 0, 0};
        DataCopyPad(histGm_[me_ * JUI_RADIX], counts, params);
    }

    // Stable: a core's ids of digit d go after those of smaller digits everywhere and of digit
    // d on the cores before it, in their order within the share.
    __aicore__ inline void Scatter(int src, uint64_t shift) {
        LocalTensor<int32_t> sums = digits_.Get<int32_t>();  // [0, R) all cores, [R, 2R) before me
        mxrec::PipeSync<HardEvent::MTE3_S>();                // the histogram has left
        for (uint32_t d = 0; d < 2 * JUI_RADIX; ++d)
            sums.SetValue(d, 0);
        histWin_.Bind(histGm_, td_.coreNum * JUI_RADIX);
        for (int64_t c = 0; c < td_.coreNum; ++c) {
            for (uint32_t d = 0; d < JUI_RADIX; ++d) {
                const int32_t v = histWin_.Get(c * JUI_RADIX + d);
                sums.SetValue(d, sums.GetValue(d) + v);
                if (c < me_)
                    sums.SetValue(JUI_RADIX + d, sums.GetValue(JUI_RADIX + d) + v);
            }
        }
        int32_t running = 0;
        for (uint32_t d = 0; d < JUI_RADIX; ++d) {
            const int32_t all = sums.GetValue(d);
            sums.SetValue(d, running + sums.GetValue(JUI_RADIX + d));  // my next place of d
            running += all;
        }
        const mxrec::Span share = Share(n_);
        if (td_.sortChunk > 0) {
            for (int64_t c0 = share.begin; c0 < share.end; c0 += td_.sortChunk)
                ScatterChunk(src, shift, c0, mxrec::Min64(td_.sortChunk, share.end - c0));
            return;
        }
        // A unified buffer too small for the chunks' padding: a scalar write per id.
        keyWin_.Bind(keysGm_[src], n_);
        posWin_.Bind(posGm_[src], n_);
        for (int64_t i = share.begin; i < share.end; ++i) {
            const int64_t key = keyWin_.Get(i);
            const uint32_t d = Digit(key, shift);
            const int32_t at = sums.GetValue(d);
            sums.SetValue(d, at + 1);
            keysGm_[src ^ 1].SetValue(at, key);
            posGm_[src ^ 1].SetValue(at, posWin_.Get(i));
        }
    }

    // One chunk of the share: its keys and positions come in with one DMA each, are counting-
    // sorted by digit in UB (each digit's run starting on a 32-byte boundary of both, as DMAs
    // from UB must), and every digit's run leaves with one DMA for keys and one for positions
    // to its place in the destination (sums[d], advanced), instead of a scalar write per id.
    __aicore__ inline void ScatterChunk(int src, uint64_t shift, int64_t c0, int64_t n) {
        LocalTensor<int32_t> sums = digits_.Get<int32_t>();  // [0, R) my next place of d
        LocalTensor<int32_t> counts = sums[JUI_RADIX];       // [R, 2R) the chunk's counts
        LocalTensor<int32_t> fill = sums[2 * JUI_RADIX];     // [2R, 3R) next local slot of d
        const uint32_t chunk = static_cast<uint32_t>(td_.sortChunk);
        const uint32_t outElems = chunk + JUI_RADIX * 8;  // up to 7 slots of padding a digit
        const uint32_t keyOutAt = chunk * 8;
        const uint32_t posInAt = keyOutAt + outElems * 8;
        const uint32_t posOutAt = posInAt + chunk * 4;
        LocalTensor<int64_t> keysIn = sortBuf_.GetWithOffset<int64_t>(chunk, 0);
        LocalTensor<int64_t> keysOut = sortBuf_.GetWithOffset<int64_t>(outElems, keyOutAt);
        LocalTensor<int32_t> posIn = sortBuf_.GetWithOffset<int32_t>(chunk, posInAt);
        LocalTensor<int32_t> posOut = sortBuf_.GetWithOffset<int32_t>(outElems, posOutAt);
        mxrec::PipeSync<HardEvent::MTE3_MTE2>();  // the last chunk's runs have left
        mxrec::PipeSync<HardEvent::S_MTE2>();
        DataCopyPadExtParams<int64_t> padK{false, 0, 0, 0};
        DataCopyPadExtParams<int32_t> padP{false, 0, 0, 0};
        DataCopyPad(keysIn, keysGm_[src][c0],
                    DataCopyExtParams{1, static_cast<uint32_t>(n * 8), 0, 0, 0}, padK);
        DataCopyPad(posIn, posGm_[src][c0],
                    DataCopyExtParams{1, static_cast<uint32_t>(n * 4), 0, 0, 0}, padP);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the last chunk's runs have left keysOut/posOut
        for (uint32_t d = 0; d < JUI_RADIX; ++d)
            counts.SetValue(d, 0);
        for (int64_t i = 0; i < n; ++i) {
            const uint32_t d = Digit(keysIn.GetValue(static_cast<uint32_t>(i)), shift);
            counts.SetValue(d, counts.GetValue(d) + 1);
        }
        int32_t slot = 0;
        for (uint32_t d = 0; d < JUI_RADIX; ++d) {
            fill.SetValue(d, slot);
            slot = static_cast<int32_t>(mxrec::AlignUp(slot + counts.GetValue(d), 8));
        }
        for (int64_t i = 0; i < n; ++i) {
            const int64_t key = keysIn.GetValue(static_cast<uint32_t>(i));
            const uint32_t d = Digit(key, shift);
            const uint32_t at = static_cast<uint32_t>(fill.GetValue(d));
            fill.SetValue(d, static_cast<int32_t>(at + 1));
            keysOut.SetValue(at, key);
            posOut.SetValue(at, posIn.GetValue(static_cast<uint32_t>(i)));
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        for (uint32_t d = 0; d < JUI_RADIX; ++d) {
            const int32_t cnt = counts.GetValue(d);
            if (cnt == 0)
                continue;
            const uint32_t from = static_cast<uint32_t>(fill.GetValue(d) - cnt);
            const int32_t at = sums.GetValue(d);
            sums.SetValue(d, at + cnt);
            DataCopyPad(keysGm_[src ^ 1][at], keysOut[from],
                        DataCopyExtParams{1, static_cast<uint32_t>(cnt * 8), 0, 0, 0});
            DataCopyPad(posGm_[src ^ 1][at], posOut[from],
                        DataCopyExtParams{1, static_cast<uint32_t>(cnt * 4), 0, 0, 0});
        }
    }

    __aicore__ inline void CountHeads(int src) {
        const mxrec::Span share = Share(n_);
        int64_t heads = 0;
        if (share.begin < share.end) {
            keyWin_.Bind(keysGm_[src], n_);
            int64_t prev = share.begin == 0 ? 0 : keyWin_.Get(share.begin - 1);
            for (int64_t j = share.begin; j < share.end; ++j) {
                const int64_t key = keyWin_.Get(j);
                if (j == 0 || key != prev)
                    ++heads;
                prev = key;
            }
        }
        slotGm_.SetValue(me_ * kSlot + 2, heads);
    }

    __aicore__ inline void WriteUnique(int src) {
        int64_t before = 0;
        int64_t total = 0;
        for (int64_t c = 0; c < td_.coreNum; ++c) {
            const int64_t h = slotGm_.GetValue(c * kSlot + 2);
            total += h;
            if (c < me_)
                before += h;
        }
        if (me_ == 0)
            numGm_.SetValue(0, total);
        const mxrec::Span share = Share(n_);
        if (share.begin == share.end)
            return;
        keyWin_.Bind(keysGm_[src], n_);
        posWin_.Bind(posGm_[src], n_);
        keyOut_.Begin(uniqGm_, before);
        // With the scatter's UB, reverse_index is sorted into place (Process) from (pos, rank)
        // pairs written in order here; without it, a scalar write per id.
        const bool sortReverse = td_.sortChunk > 0;
        // The unique ids come back from their keys, key - hash_size_cumsum[t] for the feature t
        // of their position (found among the features' first positions, offsets[t * B], staged
        // in the scatter's UB with hash_size_cumsum), not by a scalar read of indices each.
        const int64_t tables = td_.features + 1;
        const int64_t half = mxrec::AlignDown(td_.sortBytes / 2, mxrec::kBlockBytes);
        const bool fromKeys = sortReverse && tables * 8 <= half;
        const uint32_t tableElems = fromKeys ? static_cast<uint32_t>(half / 8) : 1;
        const uint32_t baseAt = fromKeys ? static_cast<uint32_t>(half) : 0;
        LocalTensor<int64_t> featStart = sortBuf_.GetWithOffset<int64_t>(tableElems, 0);
        LocalTensor<int64_t> featBase = sortBuf_.GetWithOffset<int64_t>(tableElems, baseAt);
        if (fromKeys) {
            mxrec::PipeSync<HardEvent::MTE3_S>();  // the scatter's runs have left the buffer
            for (int64_t t = 0; t < tables; ++t) {
                featStart.SetValue(static_cast<uint32_t>(t), bagGm_.GetValue(t * td_.batchSize));
                featBase.SetValue(static_cast<uint32_t>(t), cumGm_.GetValue(t));
            }
        }
        if (sortReverse) {
            revKeyOut_.Begin(keysGm_[src ^ 1], share.begin);
            posOut_.Begin(posGm_[src ^ 1], share.begin);
        }
        int64_t cur = before - 1;
        int64_t prev = share.begin == 0 ? 0 : keyWin_.Get(share.begin - 1);
        for (int64_t j = share.begin; j < share.end; ++j) {
            const int64_t key = keyWin_.Get(j);
            const int64_t pos = posWin_.Get(j);
            if (j == 0 || key != prev) {
                ++cur;
                if (fromKeys) {
                    int64_t lo = 0;  // the last feature whose first position is <= pos
                    int64_t hi = td_.features - 1;
                    while (lo < hi) {
                        const int64_t mid = lo + (hi - lo + 1) / 2;
                        if (featStart.GetValue(static_cast<uint32_t>(mid)) <= pos) {
                            lo = mid;
                        } else {
                            hi = mid - 1;
                        }
                    }
                    const uint64_t base =
                        static_cast<uint64_t>(featBase.GetValue(static_cast<uint32_t>(lo)));
                    keyOut_.Put(static_cast<int64_t>(static_cast<uint64_t>(key) - base));
                } else {
                    keyOut_.Put(idxGm_.GetValue(pos));
                }
            }
            prev = key;
            if (sortReverse) {
                revKeyOut_.Put(pos);
                posOut_.Put(static_cast<int32_t>(cur));
            } else {
                revGm_.SetValue(pos, cur);
            }
        }
        keyOut_.Flush();
        revKeyOut_.Flush();
        posOut_.Flush();
    }

    // reverse_index from the ranks sorted by position (int32 in the workspace), widened.
    __aicore__ inline void WidenReverse(int s) {
        const mxrec::Span share = Share(n_);
        if (share.begin == share.end)
            return;
        posWin_.Bind(posGm_[s], n_);
        keyOut_.Begin(revGm_, share.begin);
        for (int64_t i = share.begin; i < share.end; ++i)
            keyOut_.Put(static_cast<int64_t>(posWin_.Get(i)));
        keyOut_.Flush();
    }

    // fbgemm 1.1.0: a group with ids counts max - min + 1 of their reverse indices; the count
    // is spread over the group's bags, the first (count % bags) of them one more.
    __aicore__ inline void Lengths() {
        const mxrec::Span groups = Share(td_.features);
        const int64_t bsz = td_.batchSize;
        Stager<int64_t>& out = keyOut_;
        if (me_ == 0) {
            out.Begin(lenGm_, 0);
            for (int64_t k = 0; k < grpGm_.GetValue(0) * bsz; ++k)
                out.Put(0);
        }
        for (int64_t g = groups.begin; g < groups.end; ++g) {
            const int64_t lo = grpGm_.GetValue(g);
            const int64_t hi = grpGm_.GetValue(g + 1);
            if (lo < 0 || hi < lo || hi > td_.features)
                Trap();  // fbgemm would read offsets outside the bags
            const int64_t rb = bagGm_.GetValue(lo * bsz);
            const int64_t re = bagGm_.GetValue(hi * bsz);
            int64_t count = 0;
            if (rb < re) {
                keyWin_.Bind(revGm_, n_);
                int64_t mn = kMaxKey;
                int64_t mx = kMinKey;
                for (int64_t i = rb; i < re; ++i) {
                    const int64_t r = keyWin_.Get(i);
                    mn = mxrec::Min64(mn, r);
                    mx = mxrec::Max64(mx, r);
                }
                count = mx - mn + 1;
            }
            totGm_.SetValue(g, count);
            const int64_t slots = (hi - lo) * bsz;
            out.Begin(lenGm_, lo * bsz);
            for (int64_t k = 0; k < slots; ++k)
                out.Put(Spread(count, slots, k));
        }
        if (me_ == td_.coreNum - 1) {
            const int64_t last = grpGm_.GetValue(td_.features);
            out.Begin(lenGm_, last * bsz);
            for (int64_t k = last * bsz; k < td_.bags; ++k)
                out.Put(0);
        }
        out.Flush();
    }

    __aicore__ static inline int64_t Spread(int64_t count, int64_t slots, int64_t k) {
        return count / slots + (k < count % slots ? 1 : 0);
    }

    // output_offsets[k + 1] = lengths[0] + ... + lengths[k], from the totals of the groups before.
    __aicore__ inline void Offsets() {
        const mxrec::Span groups = Share(td_.features);
        const int64_t bsz = td_.batchSize;
        int64_t base = 0;
        for (int64_t g = 0; g < groups.begin; ++g)
            base += totGm_.GetValue(g);
        Stager<int64_t>& out = keyOut_;
        if (me_ == 0) {
            out.Begin(outOffGm_, 0);
            const int64_t first = grpGm_.GetValue(0);
            for (int64_t k = 0; k <= first * bsz; ++k)
                out.Put(0);
        }
        for (int64_t g = groups.begin; g < groups.end; ++g) {
            const int64_t lo = grpGm_.GetValue(g);
            const int64_t hi = grpGm_.GetValue(g + 1);
            const int64_t count = totGm_.GetValue(g);
            const int64_t slots = (hi - lo) * bsz;
            const int64_t div = slots > 0 ? count / slots : 0;
            const int64_t rem = slots > 0 ? count % slots : 0;
            out.Begin(outOffGm_, lo * bsz + 1);
            for (int64_t k = 0; k < slots; ++k)
                out.Put(base + (k + 1) * div + mxrec::Min64(k + 1, rem));
            base += count;
        }
        if (me_ == td_.coreNum - 1) {
            const int64_t last = grpGm_.GetValue(td_.features);
            out.Begin(outOffGm_, last * bsz + 1);
            for (int64_t k = last * bsz; k < td_.bags; ++k)
                out.Put(base);
        }
        out.Flush();
    }

    JaggedUniqueIndicesTilingData td_;
    int64_t me_ = 0;
    int64_t n_ = 0;
    int64_t minKey_ = 0;
    GlobalTensor<int64_t> cumGm_;
    GlobalTensor<int64_t> grpGm_;
    GlobalTensor<int64_t> bagGm_;
    GlobalTensor<int64_t> idxGm_;
    GlobalTensor<int64_t> lenGm_;
    GlobalTensor<int64_t> outOffGm_;
    GlobalTensor<int64_t> uniqGm_;
    GlobalTensor<int64_t> revGm_;
    GlobalTensor<int64_t> numGm_;
    GlobalTensor<int64_t> keysGm_[2];
    GlobalTensor<int32_t> posGm_[2];
    GlobalTensor<int32_t> histGm_;
    GlobalTensor<int64_t> slotGm_;
    GlobalTensor<int64_t> totGm_;
    Window<int64_t> keyWin_;
    Window<int32_t> posWin_;
    Window<int64_t> idxWin_;
    Window<int64_t> bagWin_;
    Window<int32_t> histWin_;
    Stager<int64_t> keyOut_;
    Stager<int32_t> posOut_;
    Stager<int64_t> revKeyOut_;
    TBuf<TPosition::VECCALC> digits_;
    TBuf<TPosition::VECCALC> sortBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "jagged_unique_indices_kernel_entry.h"
