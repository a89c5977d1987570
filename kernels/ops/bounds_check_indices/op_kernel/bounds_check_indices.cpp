// BoundsCheckIndices: fbgemm's bounds check of TBE indices and offsets, in place.
//
// Phases (see the tiling header): 1. slice maxima of the clamped offsets; 2. the running maximum
// (corrected offsets), bag violations, write-back of changed slices and the corrected offset of
// every table boundary; 3. index checks per table slice, zeroing out-of-range indices (-1, a
// pruned row, is left alone); 4. the violation count into warning. Fatal mode traps on the first
// violation. All checks are scalar compares over UB pieces: the data is integers with per-table
// bounds, and 64-bit integers have no vector compare on A2/A3.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "bounds_check_indices_tiling_data.h"

using namespace AscendC;

namespace {

constexpr int64_t kFatal = 0;
constexpr int64_t kWarning = 1;
constexpr int64_t kSlot = 4;  // int64 per 32-byte slot
constexpr int64_t kMinInt64 = -0x7fffffffffffffffLL - 1;

template <typename TI, typename TO>
class BoundsCheckIndices {
public:
    // weights and b_t_map are not read: corrected indices keep their weights, and the table of
    // a bag comes from the offsets' table boundaries.
    __aicore__ inline void Init(GM_ADDR rows, GM_ADDR indices, GM_ADDR offsets, GM_ADDR warning,
                                GM_ADDR /*weights*/, GM_ADDR bOffsets, GM_ADDR /*bTMap*/,
                                GM_ADDR workspace, const BoundsCheckIndicesTilingData& td,
                                TPipe* pipe) {
        if (TILING_KEY_IS(BCI_KEY_NONE)) {
            none_ = true;  // nothing to check (the tiling says why)
            return;
        } else if (TILING_KEY_IS(BCI_KEY_CHECK)) {
            none_ = false;
        }
        td_ = td;
        me_ = GetBlockIdx();
        rowsGm_.SetGlobalBuffer((__gm__ int64_t*)rows, td.tables);
        idxGm_.SetGlobalBuffer((__gm__ TI*)indices, td.numIndices);
        offGm_.SetGlobalBuffer((__gm__ TO*)offsets, td.totalB + 1);
        warnGm_.SetGlobalBuffer((__gm__ int64_t*)warning, 1);
        if (td.vbe)
            bOffGm_.SetGlobalBuffer((__gm__ int32_t*)bOffsets, td.tables + 1);
        GM_ADDR ws = GetUserWorkspace(workspace);
        wsMax_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsMax), td.coreNum * kSlot);
        wsCount_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsCount), td.coreNum * kSlot);
        wsTable_.SetGlobalBuffer((__gm__ int64_t*)(ws + td.wsTable), td.tables + 1);
        pipe->InitBuffer(piece_, td.pieceBytes);
        pipe->InitBuffer(totals_, static_cast<uint32_t>(td.coreNum * mxrec::kBlockBytes));
        pipe->InitBuffer(slot_, static_cast<uint32_t>(mxrec::kBlockBytes));
        pipe->InitBuffer(zero_, static_cast<uint32_t>(mxrec::kBlockBytes));
        LocalTensor<TI> zero = zero_.Get<TI>();
        for (uint32_t j = 0; j < mxrec::kBlockBytes / sizeof(TI); ++j)
            zero.SetValue(j, static_cast<TI>(0));
        mxrec::PipeSync<HardEvent::S_MTE3>();
    }

    __aicore__ inline void Process() {
        if (none_)
            return;
        const mxrec::Span ks = mxrec::SplitEven(td_.totalB + 1, td_.coreNum, me_);
        // The original offset just past this slice ends its last bag; read it now, before the
        // next core may correct it in phase 2.
        if (ks.end > ks.begin && ks.end < td_.totalB)
            nextOffset_ = static_cast<int64_t>(offGm_.GetValue(ks.end));
        Publish(wsMax_, SliceMax(ks));
        SyncAll();
        CorrectOffsets(ks, PrefixOf(wsMax_, true));
        SyncAll();
        CheckIndices();
        Publish(wsCount_, count_);
        SyncAll();
        if (me_ == 0 && td_.mode == kWarning) {
            LocalTensor<int64_t> s = slot_.Get<int64_t>();
            s.SetValue(0, PrefixOf(wsCount_, false));
            mxrec::PipeSync<HardEvent::S_MTE3>();
            DataCopyPad(warnGm_, s, DataCopyExtParams{1, sizeof(int64_t), 0, 0, 0});
        }
    }

private:
    // The clamped offset whose running maximum is the corrected offset (o[total_B] counts as N).
    __aicore__ inline int64_t Clamped(int64_t k, int64_t o) const {
        const int64_t n = td_.numIndices;
        if (td_.totalB == 0 || k == td_.totalB)
            return n;
        if (k == 0)
            return mxrec::Clamp64(o, 0, n);
        return mxrec::Min64(o, n);
    }

    __aicore__ inline void LoadOffsets(LocalTensor<TO>& piece, int64_t p0, int64_t len) {
        mxrec::PipeSync<HardEvent::MTE3_MTE2>();
        mxrec::PipeSync<HardEvent::S_MTE2>();
        DataCopyPadExtParams<TO> pad{false, 0, 0, static_cast<TO>(0)};
        DataCopyPad(piece, offGm_[p0],
                    DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(TO)), 0, 0, 0}, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
    }

    // ---- phase 1 ---------------------------------------------------------------------------
    __aicore__ inline int64_t SliceMax(mxrec::Span ks) {
        int64_t best = kMinInt64;
        LocalTensor<TO> piece = piece_.Get<TO>();
        for (int64_t p0 = ks.begin; p0 < ks.end; p0 += td_.chunk) {
            const int64_t len = mxrec::Min64(td_.chunk, ks.end - p0);
            LoadOffsets(piece, p0, len);
            for (int64_t j = 0; j < len; ++j) {
                best = mxrec::Max64(
                    best, Clamped(p0 + j,
                                  static_cast<int64_t>(piece.GetValue(static_cast<uint32_t>(j)))));
            }
        }
        return best;
    }

    // ---- phase 2 ---------------------------------------------------------------------------
    __aicore__ inline void CorrectOffsets(mxrec::Span ks, int64_t carry) {
        const int64_t n = td_.numIndices;
        const int64_t tb = td_.totalB;
        int64_t running = carry;
        int64_t table = FirstBoundaryAtOrAfter(ks.begin);
        LocalTensor<TO> piece = piece_.Get<TO>();
        for (int64_t p0 = ks.begin; p0 < ks.end; p0 += td_.chunk) {
            const int64_t len = mxrec::Min64(td_.chunk, ks.end - p0);
            LoadOffsets(piece, p0, len);
            bool changed = false;
            for (int64_t j = 0; j < len; ++j) {
                const int64_t k = p0 + j;
                const int64_t o = static_cast<int64_t>(piece.GetValue(static_cast<uint32_t>(j)));
                const int64_t corrected =
                    k == 0 ? Clamped(0, o) : mxrec::Max64(running, Clamped(k, o));
                running = corrected;
                if (k == tb && o != n)
                    Violation();  // the last offset must be the number of indices
                if (k < tb) {     // bag k: [start, end) within [0, N]
                    const int64_t start = k == 0 ? o : corrected;
                    int64_t end = n;
                    if (k + 1 < tb) {
                        end =
                            j + 1 < len
                                ? static_cast<int64_t>(piece.GetValue(static_cast<uint32_t>(j + 1)))
                                : (k + 1 < ks.end ? static_cast<int64_t>(offGm_.GetValue(k + 1))
                                                  : nextOffset_);
                    }
                    if (start < 0 || start > end || end > n)
                        Violation();
                }
                if (corrected != o) {
                    changed = true;
                    if (td_.writeOffsets)
                        piece.SetValue(static_cast<uint32_t>(j), static_cast<TO>(corrected));
                }
                while (table <= td_.tables && Boundary(table) == k)
                    RecordBoundary(table++, corrected);
            }
            if (changed && td_.writeOffsets) {
                mxrec::PipeSync<HardEvent::S_MTE3>();
                DataCopyPad(offGm_[p0], piece,
                            DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(TO)), 0, 0, 0});
            }
        }
    }

    // The offsets index where table t's bags start (t == T: total_B).
    __aicore__ inline int64_t Boundary(int64_t t) {
        if (td_.vbe)
            return mxrec::Clamp64(static_cast<int64_t>(bOffGm_.GetValue(t)), 0, td_.totalB);
        return t * td_.batch;
    }

    __aicore__ inline int64_t FirstBoundaryAtOrAfter(int64_t k) {
        int64_t lo = 0;
        int64_t hi = td_.tables + 1;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (Boundary(mid) >= k) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    __aicore__ inline void RecordBoundary(int64_t t, int64_t corrected) {
        LocalTensor<int64_t> s = slot_.Get<int64_t>();
        mxrec::PipeSync<HardEvent::MTE3_S>();
        s.SetValue(0, corrected);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyPad(wsTable_[t], s, DataCopyExtParams{1, sizeof(int64_t), 0, 0, 0});
    }

    // ---- phase 3 ---------------------------------------------------------------------------
    __aicore__ inline void CheckIndices() {
        const mxrec::Span is = mxrec::SplitEven(td_.numIndices, td_.coreNum, me_);
        if (is.begin >= is.end)
            return;
        int64_t i =
            mxrec::Max64(is.begin, wsTable_.GetValue(0));  // indices before bag 0 are unchecked
        int64_t lo = 0;                                    // first table whose range ends after i
        int64_t hi = td_.tables;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (wsTable_.GetValue(mid + 1) > i) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        for (int64_t t = lo; t < td_.tables && i < is.end; ++t) {
            const int64_t end = mxrec::Min64(wsTable_.GetValue(t + 1), is.end);
            if (end > i) {
                CheckRange(i, end, rowsGm_.GetValue(t));
                i = end;
            }
        }
    }

    __aicore__ inline void CheckRange(int64_t from, int64_t to, int64_t rows) {
        LocalTensor<TI> piece = piece_.Get<TI>();
        LocalTensor<TI> zero = zero_.Get<TI>();
        for (int64_t p0 = from; p0 < to; p0 += td_.chunk) {
            const int64_t len = mxrec::Min64(td_.chunk, to - p0);
            mxrec::PipeSync<HardEvent::MTE3_MTE2>();
            mxrec::PipeSync<HardEvent::S_MTE2>();
            DataCopyPadExtParams<TI> pad{false, 0, 0, static_cast<TI>(0)};
            const DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(TI)), 0, 0, 0};
            DataCopyPad(piece, idxGm_[p0], copy, pad);
            mxrec::PipeSync<HardEvent::MTE2_S>();
            for (int64_t j = 0; j < len; ++j) {
                const int64_t v = static_cast<int64_t>(piece.GetValue(static_cast<uint32_t>(j)));
                if (v == -1 || (v >= 0 && v < rows))
                    continue;  // -1 marks a pruned row
                Violation();
                // Out-of-range indices are rare: write just the element (from a zeroed UB
                // block) rather than the whole piece back.
                DataCopyPad(idxGm_[p0 + j], zero, DataCopyExtParams{1, sizeof(TI), 0, 0, 0});
            }
        }
    }

    // ---- shared ----------------------------------------------------------------------------
    __aicore__ inline void Violation() {
        if (td_.mode == kFatal)
            Trap();  // fbgemm raises; a device asserts
        ++count_;
    }

    __aicore__ inline void Publish(GlobalTensor<int64_t>& gm, int64_t value) {
        LocalTensor<int64_t> s = slot_.Get<int64_t>();
        mxrec::PipeSync<HardEvent::MTE3_S>();
        s.SetValue(0, value);
        mxrec::PipeSync<HardEvent::S_MTE3>();
        DataCopyPad(gm[me_ * kSlot], s, DataCopyExtParams{1, sizeof(int64_t), 0, 0, 0});
    }

    // Max of the slots of the cores before this one (max = true), or the sum of all (false).
    __aicore__ inline int64_t PrefixOf(GlobalTensor<int64_t>& gm, bool max) {
        LocalTensor<int64_t> all = totals_.Get<int64_t>();
        DataCopyExtParams copy{static_cast<uint16_t>(td_.coreNum), sizeof(int64_t),
                               static_cast<uint32_t>(mxrec::kBlockBytes - sizeof(int64_t)), 0, 0};
        DataCopyPadExtParams<int64_t> pad{false, 0, 0, 0};
        DataCopyPad(all, gm, copy, pad);
        mxrec::PipeSync<HardEvent::MTE2_S>();
        int64_t acc = max ? kMinInt64 : 0;
        const int64_t upto = max ? me_ : td_.coreNum;
        for (int64_t j = 0; j < upto; ++j) {
            const int64_t v = all.GetValue(static_cast<uint32_t>(j * kSlot));
            acc = max ? mxrec::Max64(acc, v) : acc + v;
        }
        return acc;
    }

    BoundsCheckIndicesTilingData td_;
    int64_t me_ = 0;
    bool none_ = false;
    int64_t count_ = 0;
    int64_t nextOffset_ = 0;
    GlobalTensor<int64_t> rowsGm_;
    GlobalTensor<TI> idxGm_;
    GlobalTensor<TO> offGm_;
    GlobalTensor<int64_t> warnGm_;
    GlobalTensor<int32_t> bOffGm_;
    GlobalTensor<int64_t> wsMax_;
    GlobalTensor<int64_t> wsCount_;
    GlobalTensor<int64_t> wsTable_;
    TBuf<TPosition::VECCALC> piece_;
    TBuf<TPosition::VECCALC> totals_;
    TBuf<TPosition::VECCALC> slot_;
    TBuf<TPosition::VECCALC> zero_;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "bounds_check_indices_kernel_entry.h"
