// AsynchronousCompleteCumsum: y[..., 0] = 0, y[..., k + 1] = x[..., 0] + ... + x[..., k].
//
// Scans are sequential, so the scan itself runs on the scalar unit over the unified buffer;
// 64-bit integers have no vector arithmetic on A2/A3, and for int32 the step offset is added
// with one vector Adds. The leading zero of a row is produced by the DMA: the first chunk of a
// row is loaded with one element of zero left padding (DataCopyPad), so the chunk is already
// [0, x0, x1, ...] and is written out with the zero in one transfer.
#include "kernel_operator.h"
#include "mxrec_common.h"
#include "kernel_copy.h"
#include "asynchronous_complete_cumsum_tiling_data.h"

using namespace AscendC;

namespace {

template <typename T>
class CompleteCumsum {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR workspace,
                                const AsynchronousCompleteCumsumTilingData& td, TPipe* pipe) {
        rows_ = td.rows;
        cols_ = td.cols;
        chunk_ = td.chunk;
        coreNum_ = td.coreNum;
        xGm_.SetGlobalBuffer((__gm__ T*)x, rows_ * cols_);
        yGm_.SetGlobalBuffer((__gm__ T*)y, rows_ * (cols_ + 1));
        if (workspace != nullptr) {
            wsGm_.SetGlobalBuffer((__gm__ T*)GetUserWorkspace(workspace), 2 * coreNum_ * kSlot);
        }
        pipe->InitBuffer(dataBuf_, static_cast<uint32_t>((chunk_ + kSlot) * sizeof(T)));
        pipe->InitBuffer(totalsBuf_, static_cast<uint32_t>(coreNum_ * mxrec::kBlockBytes));
        pipe->InitBuffer(slotBuf_, static_cast<uint32_t>(mxrec::kBlockBytes));
    }

    __aicore__ inline void Process() {
        if (TILING_KEY_IS(CUMSUM_KEY_SCAN)) {
            ProcessScan();
        } else if (TILING_KEY_IS(CUMSUM_KEY_ROWS)) {
            ProcessRows();
        }
    }

private:
    // Tiling key SCAN: all cores scan every row together, one step of coreNum x chunk elements
    // at a time.
    __aicore__ inline void ProcessScan() {
        const int64_t idx = GetBlockIdx();
        const int64_t stepElems = coreNum_ * chunk_;
        int64_t parity = 0;
        for (int64_t row = 0; row < rows_; ++row) {
            if (cols_ == 0) {
                if (idx == 0)
                    WriteLeadingZero(row);
                continue;
            }
            T carry = 0;
            for (int64_t stepStart = 0; stepStart < cols_; stepStart += stepElems) {
                const int64_t stepLen = mxrec::Min64(stepElems, cols_ - stepStart);
                const mxrec::Span span = mxrec::SplitEven(stepLen, coreNum_, idx);
                const int64_t len = span.end - span.begin;
                const int64_t k0 = stepStart + span.begin;
                LocalTensor<T> data = dataBuf_.Get<T>();
                T total = 0;
                if (len > 0)
                    total = LoadAndScan(data, row, k0, len, 0);
                Publish(parity, idx, total);
                SyncAll();
                T before = 0;
                T stepTotal = 0;
                ReadTotals(parity, idx, before, stepTotal);
                if (len > 0) {
                    const T add = static_cast<T>(carry + before);
                    if (add != 0)
                        AddOffset(data, len, add);
                    Store(data, row, k0, len);
                }
                carry = static_cast<T>(carry + stepTotal);
                parity ^= 1;
            }
        }
    }

    // Tiling key ROWS: whole rows per core.
    __aicore__ inline void ProcessRows() {
        const mxrec::Span span = mxrec::SplitEven(rows_, coreNum_, GetBlockIdx());
        for (int64_t row = span.begin; row < span.end; ++row) {
            if (cols_ == 0) {
                WriteLeadingZero(row);
                continue;
            }
            T carry = 0;
            for (int64_t k0 = 0; k0 < cols_; k0 += chunk_) {
                const int64_t len = mxrec::Min64(chunk_, cols_ - k0);
                LocalTensor<T> data = dataBuf_.Get<T>();
                carry = LoadAndScan(data, row, k0, len, carry);
                Store(data, row, k0, len);
            }
        }
    }

private:
    static constexpr int64_t kSlot = mxrec::kBlockBytes / static_cast<int64_t>(sizeof(T));

    // Loads x[row, k0 : k0 + len) (with the row's leading zero in front when k0 == 0) and turns
    // it into an inclusive scan starting from `carry`. Returns the last value.
    __aicore__ inline T LoadAndScan(LocalTensor<T>& data, int64_t row, int64_t k0, int64_t len,
                                    T carry) {
        const uint8_t lead = k0 == 0 ? 1 : 0;
        DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{lead != 0, lead, 0, static_cast<T>(0)};
        // dataBuf_ is a TBuf: the previous chunk's DMA out (Store) must have read it before
        // this DMA in overwrites it; nothing else orders MTE3 before MTE2.
        mxrec::PipeSync<HardEvent::MTE3_MTE2>();
        DataCopyPad(data, xGm_[row * cols_ + k0], copy, pad);
        T acc = carry;
        for (int64_t i = lead; i < lead + len; ++i) {
            acc = static_cast<T>(acc + data.GetValue(static_cast<uint32_t>(i)));
            data.SetValue(static_cast<uint32_t>(i), acc);
        }
        return acc;
    }

    // Adds `add` to the scanned slice. Only slices that do not start a row get an offset, so
    // the slice starts 32-byte aligned at UB index 0.
    __aicore__ inline void AddOffset(LocalTensor<T>& data, int64_t len, T add) {
        if constexpr (sizeof(T) == 4) {
            Adds(data, data, add, static_cast<int32_t>(len));
            mxrec::PipeSync<HardEvent::V_MTE3>();  // Store's DMA reads the vector result
        } else {
            for (int64_t i = 0; i < len; ++i) {
                data.SetValue(static_cast<uint32_t>(i),
                              static_cast<T>(data.GetValue(static_cast<uint32_t>(i)) + add));
            }
        }
    }

    __aicore__ inline void Store(LocalTensor<T>& data, int64_t row, int64_t k0, int64_t len) {
        const int64_t base = row * (cols_ + 1);
        if (k0 == 0) {
            DataCopyExtParams copy{1, static_cast<uint32_t>((len + 1) * sizeof(T)), 0, 0, 0};
            DataCopyPad(yGm_[base], data, copy);
        } else {
            DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
            DataCopyPad(yGm_[base + 1 + k0], data, copy);
        }
    }

    __aicore__ inline void WriteLeadingZero(int64_t row) {
        LocalTensor<T> slot = slotBuf_.Get<T>();
        slot.SetValue(0, static_cast<T>(0));
        DataCopyExtParams copy{1, static_cast<uint32_t>(sizeof(T)), 0, 0, 0};
        DataCopyPad(yGm_[row * (cols_ + 1)], slot, copy);
    }

    __aicore__ inline void Publish(int64_t parity, int64_t idx, T total) {
        LocalTensor<T> slot = slotBuf_.Get<T>();
        slot.SetValue(0, total);
        DataCopyExtParams copy{1, static_cast<uint32_t>(sizeof(T)), 0, 0, 0};
        DataCopyPad(wsGm_[(parity * coreNum_ + idx) * kSlot], slot, copy);
    }

    // Every core's total of this step lands in its own 32-byte block of `totals`.
    __aicore__ inline void ReadTotals(int64_t parity, int64_t idx, T& before, T& all) {
        LocalTensor<T> totals = totalsBuf_.Get<T>();
        DataCopyExtParams copy{static_cast<uint16_t>(coreNum_), static_cast<uint32_t>(sizeof(T)),
                               static_cast<uint32_t>(mxrec::kBlockBytes - sizeof(T)), 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        DataCopyPad(totals, wsGm_[parity * coreNum_ * kSlot], copy, pad);
        before = 0;
        all = 0;
        for (int64_t j = 0; j < coreNum_; ++j) {
            const T v = totals.GetValue(static_cast<uint32_t>(j * kSlot));
            if (j < idx)
                before = static_cast<T>(before + v);
            all = static_cast<T>(all + v);
        }
    }

    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
    GlobalTensor<T> wsGm_;
    TBuf<TPosition::VECCALC> dataBuf_;
    TBuf<TPosition::VECCALC> totalsBuf_;
    TBuf<TPosition::VECCALC> slotBuf_;
    int64_t rows_ = 0;
    int64_t cols_ = 0;
    int64_t chunk_ = 0;
    int64_t coreNum_ = 1;
};

}  // namespace

// The kernel entry, generated from op.toml: Init(tensors..., workspace, td, &pipe), Process().
#include "asynchronous_complete_cumsum_kernel_entry.h"
