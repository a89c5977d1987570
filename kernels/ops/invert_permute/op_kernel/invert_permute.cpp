// InvertPermute: inv[permute[i]] = i.
//
// Scattering straight to global memory costs a DMA (or a scalar write) per entry; here the
// scatter happens in UB (op_host/invert_permute_tiling.h has the sizes).
// Pass 1: each core takes whole pieces of E1 entries of permute. A piece comes in with one DMA;
// the scalar unit range-checks it (an entry outside [0, N) traps before anything is written),
// narrows it in place to int32 values, counting-sorts it by destination chunk (value / E2) into
// packed pairs (value % E2 << 16 | offset in the piece) in the half the narrowing freed, and the
// pairs and the row of bucket bounds ([0, end of bucket 0, ..., end of bucket C - 1]) leave for
// the workspace. All cores meet (SyncAll). Pass 2: each core takes whole chunks of E2 slots of
// inv: the chunk's int32 slots are set to -1, its bounds in every piece arrive with strided DMAs
// (two bounds a piece), each piece's bucket with one DMA, and the scalar unit writes the indices
// into the slots. A slot written twice means a repeated entry and traps; since every entry is in
// range and there are N of them, no repeat also means no slot is missing. The slots are then
// converted to T in a second buffer, which leaves with one DMA while the next chunk's buckets
// arrive (the MTE3 -> V flag is only waited for before the next conversion).
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "invert_permute_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class InvertPermute {
public:
    __aicore__ inline void Init(GM_ADDR permute, GM_ADDR inv, GM_ADDR workspace,
                                const InvertPermuteTilingData& td, TPipe* pipe) {
        td_ = td;
        pipe_ = pipe;
        permGm_.SetGlobalBuffer((__gm__ T*)permute, td.len);
        invGm_.SetGlobalBuffer((__gm__ T*)inv, td.len);
        if (workspace != nullptr) {
            GM_ADDR ws = GetUserWorkspace(workspace);
            pairGm_.SetGlobalBuffer((__gm__ uint32_t*)ws, td.pieces * td.piece);
            boundGm_.SetGlobalBuffer((__gm__ int32_t*)(ws + td.tableOffset),
                                     td.pieces * td.rowStride);
        }
        pipe->InitBuffer(arena_, td.arenaBytes);
    }

    __aicore__ inline void Process() {
        if (td_.len == 0)
            return;
        const mxrec::Span pieces = mxrec::SplitEven(td_.pieces, td_.coreNum, GetBlockIdx());
        for (int64_t p = pieces.begin; p < pieces.end; ++p)
            SortPiece(p);
        PipeBarrier<PIPE_ALL>();  // the pairs and bounds have left before other cores read them
        SyncAll();
        const mxrec::Span chunks = mxrec::SplitEven(td_.chunks, td_.coreNum, GetBlockIdx());
        outEvent_ = static_cast<int32_t>(pipe_->AllocEventID<HardEvent::MTE3_V>());
        outPending_ = false;
        for (int64_t c = chunks.begin; c < chunks.end; ++c)
            FillChunk(c);
        if (outPending_)
            WaitFlag<HardEvent::MTE3_V>(outEvent_);
        pipe_->ReleaseEventID<HardEvent::MTE3_V>(static_cast<TEventID>(outEvent_));
    }

private:
    __aicore__ inline void SortPiece(int64_t p) {
        const int64_t i0 = p * td_.piece;
        const int64_t n = mxrec::Min64(td_.piece, td_.len - i0);
        LocalTensor<T> raw = arena_.Get<T>();
        LocalTensor<int32_t> vals = arena_.Get<int32_t>();  // the same bytes, narrowed
        LocalTensor<uint32_t> pairs = arena_.Get<uint32_t>()[td_.piece];
        LocalTensor<int32_t> row = arena_.Get<int32_t>()[td_.rowOffset / 4];
        DataCopyExtParams cp{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(raw, permGm_[i0], cp, pad);
        Duplicate<int32_t>(row, 0, static_cast<int32_t>(td_.rowStride));
        mxrec::PipeSync<HardEvent::MTE2_S>();
        // row[c + 2] counts bucket c; after the prefix sum row[c + 1] is where bucket c starts
        // and serves as its write cursor, so it ends as bucket c's end: row[0..C] the bounds.
        // Entry k narrows into bytes [4k, 4k + 4), which no later entry of raw occupies.
        for (int64_t k = 0; k < n; ++k) {
            const int64_t v = static_cast<int64_t>(raw.GetValue(static_cast<uint32_t>(k)));
            if (v < 0 || v >= td_.len)
                Trap();  // not an entry of a permutation of 0..N-1
            vals.SetValue(static_cast<uint32_t>(k), static_cast<int32_t>(v));
            const uint32_t at = static_cast<uint32_t>(v / td_.chunk + 2);
            row.SetValue(at, row.GetValue(at) + 1);
        }
        for (int64_t c = 2; c < td_.chunks + 2; ++c) {
            const uint32_t at = static_cast<uint32_t>(c);
            row.SetValue(at, row.GetValue(at) + row.GetValue(at - 1));
        }
        for (int64_t k = 0; k < n; ++k) {
            const int32_t v = vals.GetValue(static_cast<uint32_t>(k));
            const uint32_t at = static_cast<uint32_t>(v / td_.chunk + 1);
            const int32_t slot = row.GetValue(at);
            row.SetValue(at, slot + 1);
            pairs.SetValue(static_cast<uint32_t>(slot),
                           static_cast<uint32_t>(v % td_.chunk) << 16 | static_cast<uint32_t>(k));
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams out{1, static_cast<uint32_t>(n * 4), 0, 0, 0};
        DataCopyPad(pairGm_[p * td_.piece], pairs, out);
        DataCopyExtParams bounds{1, static_cast<uint32_t>((td_.chunks + 1) * 4), 0, 0, 0};
        DataCopyPad(boundGm_[p * td_.rowStride], row, bounds);
        // The next piece lands on the pairs and the row is cleared: both must have left.
        mxrec::PipeSync<HardEvent::MTE3_MTE2>();
        mxrec::PipeSync<HardEvent::MTE3_V>();
    }

    __aicore__ inline void FillChunk(int64_t c) {
        const int64_t s0 = c * td_.chunk;
        const int64_t m = mxrec::Min64(td_.chunk, td_.len - s0);
        const int32_t whole = static_cast<int32_t>(mxrec::AlignUp(m, 8));
        LocalTensor<int32_t> slots = arena_.Get<int32_t>();
        LocalTensor<int32_t> bnd = arena_.Get<int32_t>()[td_.boundOffset / 4];
        Duplicate<int32_t>(slots, -1, whole);
        for (int64_t p0 = 0; p0 < td_.pieces; p0 += td_.window) {
            const int64_t w = mxrec::Min64(td_.window, td_.pieces - p0);
            // Bounds c and c + 1 of pieces p0.. p0 + w: 8 bytes a row, each landing on its own
            // 32-byte block in UB.
            DataCopyExtParams cp{static_cast<uint16_t>(w), 8,
                                 static_cast<uint32_t>(td_.rowStride * 4 - 8), 0, 0};
            DataCopyPadExtParams<int32_t> pad{false, 0, 0, 0};
            DataCopyPad(bnd, boundGm_[p0 * td_.rowStride + c], cp, pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t j = 0; j < w; ++j) {
                const int32_t lo = bnd.GetValue(static_cast<uint32_t>(j * 8));
                const int32_t hi = bnd.GetValue(static_cast<uint32_t>(j * 8 + 1));
                for (int32_t at = lo; at < hi; at += static_cast<int32_t>(td_.pairCap))
                    Place(slots, p0 + j, at, mxrec::Min64(hi - at, td_.pairCap));
            }
            mxrec::PipeSync<HardEvent::S_MTE2>();  // the next window overwrites the bounds
        }
        // The previous chunk has left its T buffer before this one is converted into it.
        if (outPending_)
            WaitFlag<HardEvent::MTE3_V>(outEvent_);
        LocalTensor<T> out = arena_.Get<T>()[td_.outOffset / sizeof(T)];
        if constexpr (sizeof(T) == 8) {
            Cast(out, slots, RoundMode::CAST_NONE, static_cast<uint32_t>(whole));
        } else {
            DataCopy(out, slots, static_cast<uint32_t>(whole));
        }
        mxrec::PipeSync<HardEvent::V_MTE3>();
        DataCopyExtParams cp{1, static_cast<uint32_t>(m * sizeof(T)), 0, 0, 0};
        DataCopyPad(invGm_[s0], out, cp);
        SetFlag<HardEvent::MTE3_V>(outEvent_);
        outPending_ = true;
    }

    // Pairs [lo, lo + n) of piece p, all in the chunk in UB.
    __aicore__ inline void Place(const LocalTensor<int32_t>& slots, int64_t p, int32_t lo,
                                 int64_t n) {
        LocalTensor<uint32_t> pairs = arena_.Get<uint32_t>()[td_.pairOffset / 4];
        DataCopyExtParams cp{1, static_cast<uint32_t>(n * 4), 0, 0, 0};
        DataCopyPadExtParams<uint32_t> pad{false, 0, 0, 0};
        DataCopyPad(pairs, pairGm_[p * td_.piece + lo], cp, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        const int32_t i0 = static_cast<int32_t>(p * td_.piece);
        for (int64_t k = 0; k < n; ++k) {
            const uint32_t pair = pairs.GetValue(static_cast<uint32_t>(k));
            const uint32_t slot = pair >> 16;
            if (slots.GetValue(slot) != -1)
                Trap();  // a second entry with this value: some other value is missing
            slots.SetValue(slot, i0 + static_cast<int32_t>(pair & 0xFFFFu));
        }
        mxrec::PipeSync<HardEvent::S_MTE2>();  // the next bucket overwrites pairs
    }

    InvertPermuteTilingData td_;
    TPipe* pipe_ = nullptr;
    int32_t outEvent_ = 0;
    bool outPending_ = false;
    GlobalTensor<T> permGm_;
    GlobalTensor<T> invGm_;
    GlobalTensor<uint32_t> pairGm_;
    GlobalTensor<int32_t> boundGm_;
    TBuf<TPosition::VECCALC> arena_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "invert_permute_kernel_entry.h"
