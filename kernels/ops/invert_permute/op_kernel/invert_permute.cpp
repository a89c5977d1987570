// InvertPermute: inv[permute[i]] = i.
//
// Scattering straight to global memory costs a DMA (or a scalar write) per entry; here the
// scatter happens in UB.
// Pass 1: each core takes whole pieces of E entries of permute, range-checks a piece on the
// scalar unit (an entry outside [0, N) traps before anything is written), counting-sorts it by
// destination chunk (value / E) and writes it to the workspace as packed pairs (value % E << 16
// | offset in the piece), with the row of bucket bounds: [0, end of bucket 0, ..., end of
// bucket P - 1]. All cores meet (SyncAll). Pass 2: each core takes whole chunks of E slots of
// inv, fills the chunk with -1 in UB, fetches the chunk's bounds in every piece (strided DMAs of
// two bounds per piece), reads each piece's bucket with one DMA and writes the indices into the
// chunk. A slot written twice means a repeated entry and traps; since every entry is in range
// and there are N of them, no repeat also means no slot is missing. The chunk then leaves with
// one DMA. An out-of-range entry traps before inv is written at all; every slot of inv is
// written once (a repeat may trap after other chunks have left).
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
        permGm_.SetGlobalBuffer((__gm__ T*)permute, td.len);
        invGm_.SetGlobalBuffer((__gm__ T*)inv, td.len);
        if (workspace != nullptr) {
            GM_ADDR ws = GetUserWorkspace(workspace);
            pairGm_.SetGlobalBuffer((__gm__ uint32_t*)ws, td.pieces * td.piece);
            boundGm_.SetGlobalBuffer((__gm__ int32_t*)(ws + td.tableOffset),
                                     td.pieces * td.rowStride);
        }
        pipe->InitBuffer(elemBuf_, td.elemBufBytes);
        pipe->InitBuffer(pairBuf_, td.pairBufBytes);
        pipe->InitBuffer(rowBuf_, td.rowBufBytes);
        pipe->InitBuffer(boundBuf_, td.boundBufBytes);
    }

    __aicore__ inline void Process() {
        // As many chunks of inv as pieces of permute, so one split serves both passes.
        const mxrec::Span mine = mxrec::SplitEven(td_.pieces, td_.coreNum, GetBlockIdx());
        for (int64_t p = mine.begin; p < mine.end; ++p)
            SortPiece(p);
        PipeBarrier<PIPE_ALL>();  // the pairs and bounds have left before other cores read them
        SyncAll();
        for (int64_t c = mine.begin; c < mine.end; ++c)
            FillChunk(c);
    }

private:
    __aicore__ inline int64_t Count(int64_t first) {
        return mxrec::Min64(td_.piece, td_.len - first);
    }

    __aicore__ inline void SortPiece(int64_t p) {
        const int64_t i0 = p * td_.piece;
        const int64_t n = Count(i0);
        LocalTensor<T> in = elemBuf_.Get<T>();
        LocalTensor<uint32_t> pairs = pairBuf_.Get<uint32_t>();
        LocalTensor<int32_t> row = rowBuf_.Get<int32_t>();
        DataCopyExtParams cp{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(in, permGm_[i0], cp, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        // row[c + 2] counts bucket c; after the prefix sum row[c + 1] is where bucket c starts
        // and serves as its write cursor, so it ends as bucket c's end: row[0..P] the bounds.
        for (int64_t c = 0; c < td_.pieces + 2; ++c)
            row.SetValue(static_cast<uint32_t>(c), 0);
        for (int64_t k = 0; k < n; ++k) {
            const int64_t v = static_cast<int64_t>(in.GetValue(static_cast<uint32_t>(k)));
            if (v < 0 || v >= td_.len)
                Trap();  // not an entry of a permutation of 0..N-1
            const uint32_t at = static_cast<uint32_t>(v / td_.piece + 2);
            row.SetValue(at, row.GetValue(at) + 1);
        }
        for (int64_t c = 2; c < td_.pieces + 2; ++c) {
            const uint32_t at = static_cast<uint32_t>(c);
            row.SetValue(at, row.GetValue(at) + row.GetValue(at - 1));
        }
        for (int64_t k = 0; k < n; ++k) {
            const int64_t v = static_cast<int64_t>(in.GetValue(static_cast<uint32_t>(k)));
            const uint32_t at = static_cast<uint32_t>(v / td_.piece + 1);
            const int32_t slot = row.GetValue(at);
            row.SetValue(at, slot + 1);
            pairs.SetValue(static_cast<uint32_t>(slot),
                           static_cast<uint32_t>(v % td_.piece) << 16 | static_cast<uint32_t>(k));
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams out{1, static_cast<uint32_t>(n * 4), 0, 0, 0};
        DataCopyPad(pairGm_[p * td_.piece], pairs, out);
        DataCopyExtParams bounds{1, static_cast<uint32_t>((td_.pieces + 1) * 4), 0, 0, 0};
        DataCopyPad(boundGm_[p * td_.rowStride], row, bounds);
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the next piece rewrites pairs and row
    }

    __aicore__ inline void FillChunk(int64_t c) {
        const int64_t s0 = c * td_.piece;
        const int64_t m = Count(s0);
        LocalTensor<T> inv = elemBuf_.Get<T>();
        for (int64_t k = 0; k < m; ++k)
            inv.SetValue(static_cast<uint32_t>(k), static_cast<T>(-1));
        for (int64_t p0 = 0; p0 < td_.pieces; p0 += td_.window) {
            const int64_t w = mxrec::Min64(td_.window, td_.pieces - p0);
            LocalTensor<int32_t> bnd = boundBuf_.Get<int32_t>();
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
                if (hi > lo)
                    Place(inv, p0 + j, lo, hi);
            }
            mxrec::PipeSync<HardEvent::S_MTE2>();  // the next window overwrites the bounds
        }
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyExtParams out{1, static_cast<uint32_t>(m * sizeof(T)), 0, 0, 0};
        DataCopyPad(invGm_[s0], inv, out);
        mxrec::PipeSync<HardEvent::MTE3_S>();  // the next chunk refills inv
    }

    // Piece p's pairs [lo, hi) all land in the chunk in UB.
    __aicore__ inline void Place(const LocalTensor<T>& inv, int64_t p, int32_t lo, int32_t hi) {
        LocalTensor<uint32_t> pairs = pairBuf_.Get<uint32_t>();
        const int64_t n = hi - lo;
        DataCopyExtParams cp{1, static_cast<uint32_t>(n * 4), 0, 0, 0};
        DataCopyPadExtParams<uint32_t> pad{false, 0, 0, 0};
        DataCopyPad(pairs, pairGm_[p * td_.piece + lo], cp, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        const int64_t i0 = p * td_.piece;
        for (int64_t k = 0; k < n; ++k) {
            const uint32_t pair = pairs.GetValue(static_cast<uint32_t>(k));
            const uint32_t slot = pair >> 16;
            if (inv.GetValue(slot) != static_cast<T>(-1))
                Trap();  // a second entry with this value: some other value is missing
            inv.SetValue(slot, static_cast<T>(i0 + static_cast<int64_t>(pair & 0xFFFFu)));
        }
        mxrec::PipeSync<HardEvent::S_MTE2>();  // the next bucket overwrites pairs
    }

    InvertPermuteTilingData td_;
    GlobalTensor<T> permGm_;
    GlobalTensor<T> invGm_;
    GlobalTensor<uint32_t> pairGm_;
    GlobalTensor<int32_t> boundGm_;
    TBuf<TPosition::VECCALC> elemBuf_;
    TBuf<TPosition::VECCALC> pairBuf_;
    TBuf<TPosition::VECCALC> rowBuf_;
    TBuf<TPosition::VECCALC> boundBuf_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "invert_permute_kernel_entry.h"
