// Kernel helpers shared by the copy-style operators (AscendC, device code).
//
// - PipeSync<E>(): the SetFlag/WaitFlag pair that orders two pipes of a core when a buffer
//   outside a queue (TBuf) passes from one to the other (e.g. MTE2_V: DMA in, then vector work;
//   V_MTE2 before the next DMA into a buffer the vector unit read). The id is FetchEventID's:
//   the lowest one no queue buffer or AllocEventID holds, free again right after the Wait.
//   Scalar and V-after-V orderings are the compiler's (--cce-auto-sync); a PipeSync for them
//   duplicates one it inserts (核内同步/关键特性说明.md warns that duplicates cost time and may
//   upset the program's logic). The sim reports a missing PipeSync (recsdk_sim/hazard.h).
// - GmCopier<T>: global memory -> UB -> global memory through a double-buffered TQueBind; any
//   addresses and lengths (DataCopyPad), no vector work.
// - GmFiller<T>: writes one value repeatedly; the value arrives as the element's bit pattern
//   from the tiling (64-bit values are replicated by doubling UB->UB copies, since A2/A3 have
//   no 64-bit Duplicate).
// - OffsetWindow<T>: sequential reads of an offsets tensor through a UB window.
#ifndef MXREC_KERNEL_COPY_H
#define MXREC_KERNEL_COPY_H

#include "kernel_operator.h"
#include "mxrec_common.h"

namespace mxrec {

template <AscendC::HardEvent E>
__aicore__ inline void PipeSync() {
    const int32_t id = static_cast<int32_t>(::GetTPipePtr()->FetchEventID(E));
    AscendC::SetFlag<E>(id);
    AscendC::WaitFlag<E>(id);
}

template <typename T>
class GmCopier {
public:
    // bufBytes: one of the two UB buffers.
    __aicore__ inline void Init(AscendC::TPipe* pipe, uint32_t bufBytes) {
        pipe->InitBuffer(que_, 2, bufBytes);
        chunk_ = ElemsPerBlocks(bufBytes, sizeof(T));
    }

    __aicore__ inline void Copy(const AscendC::GlobalTensor<T>& dst,
                                const AscendC::GlobalTensor<T>& src, int64_t count) {
        for (int64_t off = 0; off < count; off += chunk_) {
            const int64_t n = Min64(chunk_, count - off);
            AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
            AscendC::LocalTensor<T> in = que_.template AllocTensor<T>();
            AscendC::DataCopyPad(in, src[off], params, pad);
            que_.EnQue(in);
            AscendC::LocalTensor<T> out = que_.template DeQue<T>();
            AscendC::DataCopyPad(dst[off], out, params);
            que_.FreeTensor(out);
        }
    }

private:
    AscendC::TQueBind<AscendC::TPosition::VECIN, AscendC::TPosition::VECOUT, 1> que_;
    int64_t chunk_ = 0;
};

template <typename T>
class GmFiller {
public:
    __aicore__ inline void Init(AscendC::TPipe* pipe, uint32_t bufBytes, uint64_t bits) {
        pipe->InitBuffer(buf_, bufBytes);
        count_ = ElemsPerBlocks(bufBytes, sizeof(T));
        if constexpr (sizeof(T) == 2) {
            AscendC::LocalTensor<uint16_t> u = buf_.template Get<uint16_t>();
            AscendC::Duplicate(u, static_cast<uint16_t>(bits), static_cast<int32_t>(count_));
            PipeSync<AscendC::HardEvent::V_MTE3>();
        } else if constexpr (sizeof(T) == 4) {
            AscendC::LocalTensor<uint32_t> u = buf_.template Get<uint32_t>();
            AscendC::Duplicate(u, static_cast<uint32_t>(bits), static_cast<int32_t>(count_));
            PipeSync<AscendC::HardEvent::V_MTE3>();
        } else {
            AscendC::LocalTensor<uint64_t> u = buf_.template Get<uint64_t>();
            const int64_t seed = kBlockBytes / 8;
            for (int64_t i = 0; i < seed; ++i)
                u.SetValue(static_cast<uint32_t>(i), bits);
            AscendC::PipeBarrier<PIPE_ALL>();  // one-off set-up: order scalar, UB->UB and later DMA
            for (int64_t have = seed; have < count_; have *= 2) {
                const int64_t n = Min64(have, count_ - have);
                AscendC::DataCopy(u[static_cast<uint32_t>(have)], u, static_cast<uint32_t>(n));
                AscendC::PipeBarrier<PIPE_ALL>();
            }
        }
    }

    __aicore__ inline void Fill(const AscendC::GlobalTensor<T>& dst, int64_t count) {
        AscendC::LocalTensor<T> src = buf_.template Get<T>();
        for (int64_t off = 0; off < count; off += count_) {
            const int64_t n = Min64(count_, count - off);
            AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            AscendC::DataCopyPad(dst[off], src, params);
        }
    }

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf_;
    int64_t count_ = 0;
};

template <typename T>
class OffsetWindow {
public:
    __aicore__ inline void Init(AscendC::TPipe* pipe, const AscendC::GlobalTensor<T>& gm,
                                int64_t total, uint32_t windowBytes) {
        gm_ = gm;
        total_ = total;
        pipe->InitBuffer(buf_, windowBytes);
        window_ = ElemsPerBlocks(windowBytes, sizeof(T));
    }

    // offsets[i] as int64; i must lie in [0, total).
    __aicore__ inline int64_t Get(int64_t i) {
        if (i < start_ || i >= start_ + len_)
            Load(i);
        return static_cast<int64_t>(
            buf_.template Get<T>().GetValue(static_cast<uint32_t>(i - start_)));
    }

private:
    __aicore__ inline void Load(int64_t i) {
        start_ = i;
        len_ = Min64(window_, total_ - i);
        AscendC::LocalTensor<T> win = buf_.template Get<T>();
        PipeSync<AscendC::HardEvent::S_MTE2>();  // earlier scalar reads of the window are done
        AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(len_ * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, static_cast<T>(0)};
        AscendC::DataCopyPad(win, gm_[i], params, pad);
        PipeSync<AscendC::HardEvent::MTE2_S>();
    }

    AscendC::GlobalTensor<T> gm_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf_;
    int64_t total_ = 0;
    int64_t window_ = 0;
    int64_t start_ = 0;
    int64_t len_ = 0;
};

}  // namespace mxrec

#endif  // MXREC_KERNEL_COPY_H
