// Vector code of the HSTU attention kernels (hstu_dense_forward, hstu_dense_backward): AscendC
// device code, float32. exp comes from the vector unit's Exp (Exp.md: half and float on Atlas
// A2/A3), 32 elements a cycle (Vector指令理论性能汇总.md 表3): one instruction where building it
// from Muls/Adds/Cast and a polynomial took about thirty.
#ifndef MXREC_HSTU_KERNEL_H
#define MXREC_HSTU_KERNEL_H

#include "kernel_operator.h"
#include "mxrec_common.h"
#include "hstu_common.h"

namespace mxrec {

// dst = 1 + exp(-z), float32. dst and z may be the same buffer.
__aicore__ inline void HstuOnePlusExpNeg(const AscendC::LocalTensor<float>& dst,
                                         const AscendC::LocalTensor<float>& z, int32_t n) {
    using namespace AscendC;
    Muls(dst, z, -1.0f, n);
    Exp(dst, dst, n);
    Adds(dst, dst, 1.0f, n);
}

// dst = silu(z) = z / (1 + exp(-z)), float32. For z far below 0, exp(-z) overflows to inf and
// dst is -0, as silu's limit. dst and z are different buffers.
__aicore__ inline void HstuSilu(const AscendC::LocalTensor<float>& dst,
                                const AscendC::LocalTensor<float>& z, int32_t n) {
    using namespace AscendC;
    Muls(dst, z, -1.0f, n);
    Exp(dst, dst, n);
    Adds(dst, dst, 1.0f, n);
    Div(dst, z, dst, n);
}

// q's dtype <-> float32 for n elements (float32: a vector copy).
template <typename T>
__aicore__ inline void HstuToFloat(const AscendC::LocalTensor<float>& dst,
                                   const AscendC::LocalTensor<T>& src, int32_t n) {
    if constexpr (sizeof(T) == 4) {
        AscendC::DataCopy(dst, src.template ReinterpretCast<float>(), static_cast<uint32_t>(n));
    } else {
        AscendC::Cast(dst, src, AscendC::RoundMode::CAST_NONE, static_cast<uint32_t>(n));
    }
}

// Rounded to nearest even (CAST_RINT), as the rounding points of hstu.md §2.
template <typename T>
__aicore__ inline void HstuFromFloat(const AscendC::LocalTensor<T>& dst,
                                     const AscendC::LocalTensor<float>& src, int32_t n) {
    if constexpr (sizeof(T) == 4) {
        AscendC::DataCopy(dst.template ReinterpretCast<float>(), src, static_cast<uint32_t>(n));
    } else {
        AscendC::Cast(dst, src, AscendC::RoundMode::CAST_RINT, static_cast<uint32_t>(n));
    }
}

// The sequences of a launch and the one being worked on: rows [b * S, (b + 1) * S) in the
// "normal" layout, rows [offsets[b], offsets[b + 1]) in the jagged one. Jagged offsets are
// checked where they become addresses: a bad one traps, as torch raises.
template <typename TD>
struct HstuSequences {
    const TD* td = nullptr;
    AscendC::GlobalTensor<int64_t> offsets;
    int64_t batch = 0;  // the selected sequence
    int64_t row = 0;    // its first row

    __aicore__ inline void Init(const TD& tiling, GM_ADDR offsetsGm) {
        td = &tiling;
        if (tiling.jagged)
            offsets.SetGlobalBuffer((__gm__ int64_t*)offsetsGm, tiling.batch + 1);
    }

    // Selects sequence b; returns its length.
    __aicore__ inline int64_t Select(int64_t b) {
        batch = b;
        if (!td->jagged) {
            row = b * td->seqLen;
            return td->seqLen;
        }
        const int64_t start = offsets.GetValue(b);
        const int64_t stop = offsets.GetValue(b + 1);
        if (start < 0 || stop < start || stop > td->rows || stop - start > td->seqLen)
            AscendC::Trap();
        row = start;
        return stop - start;
    }

    // The offsets tensor must hold the seq_offset attribute the tiling balanced with (one core
    // checks it: a different tensor would break the balance and maybe the bounds).
    __aicore__ inline void CheckOffsets() {
        uint64_t sum = 0;
        for (int64_t i = 0; i <= td->batch; ++i) {
            sum += static_cast<uint64_t>(offsets.GetValue(i)) * static_cast<uint64_t>(i + 1);
        }
        if (static_cast<int64_t>(sum) != td->offsetSum)
            AscendC::Trap();
    }
};

// Walks a worker's share [cur, end) of the work order (tiling: HstuSplit) and calls
// kernel.Piece(h, r0, r1, len) for the rows [r0, r1) of each block of `block` rows it covers,
// after seq.Select() of the block's sequence (length len). A method, not a lambda: device code
// calls only __aicore__ functions.
template <typename TD, typename Kernel>
__aicore__ inline void HstuForEachPiece(HstuSequences<TD>& seq, HstuPos cur, const HstuPos& end,
                                        int64_t block, Kernel& kernel) {
    while (HstuBefore(cur, end)) {
        const int64_t len = seq.Select(cur.b);
        const int64_t blocks = CeilDiv(len, block);
        if (cur.qb >= blocks) {  // an empty sequence
            cur = HstuPos{cur.b + 1, 0, 0, 0};
            continue;
        }
        const int64_t first = static_cast<int64_t>(cur.qb) * block;
        const int64_t rows = Min64(block, len - first);
        const bool last = end.b == cur.b && end.h == cur.h && end.qb == cur.qb;
        const int64_t rowEnd = last ? end.row : rows;
        if (rowEnd > cur.row)
            kernel.Piece(cur.h, first + cur.row, first + rowEnd, len);
        if (last)
            break;
        cur.row = 0;
        if (++cur.qb == blocks) {
            cur.qb = 0;
            if (++cur.h == seq.td->heads) {
                cur.h = 0;
                ++cur.b;
            }
        }
    }
}

}  // namespace mxrec

#endif  // MXREC_HSTU_KERNEL_H
