// Variable batch per feature (fbgemm's VBE) in the TBE kernels (AscendC, device code): the check
// that fbgemm's per-feature metadata tiles a flat [R * T]-block output (forward) or output
// gradient (backward), shared so the two kernels accept exactly the same metadata.
//
// fbgemm's VBEMetadata, as the kernels take it:
//   b_offsets            [T + 1] int32: feature t's bags are b_offsets[t] .. b_offsets[t + 1] - 1
//   vbe_output_offsets   [R * T + 1] int64: rank r's rows of feature t start there in the output
//   vbe_b_offsets_rank   [T, R + 1] int32: rank r holds feature t's local bags [r] .. [r + 1] - 1
// The chains are short (T + 1, T * (R + 1), R * T + 1 entries, read as scalars), so each core
// checks them whole rather than trusting a neighbour: a bag then always has one feature and one
// output row inside the output.
#ifndef MXREC_TBE_VBE_H
#define MXREC_TBE_VBE_H

#include "kernel_operator.h"
#include "mxrec_common.h"

namespace mxrec {

struct VbeMetadata {
    AscendC::GlobalTensor<int32_t> bOffsets;
    AscendC::GlobalTensor<int64_t> outputOffsets;
    AscendC::GlobalTensor<int32_t> rankOffsets;
    int64_t tables = 0;
    int64_t ranks = 0;

    __aicore__ inline void Init(GM_ADDR b, GM_ADDR output, GM_ADDR rank, int64_t t, int64_t r) {
        tables = t;
        ranks = r;
        bOffsets.SetGlobalBuffer((__gm__ int32_t*)b, t + 1);
        outputOffsets.SetGlobalBuffer((__gm__ int64_t*)output, r * t + 1);
        rankOffsets.SetGlobalBuffer((__gm__ int32_t*)rank, t * (r + 1));
    }

    __aicore__ inline int64_t BOff(int64_t t) { return static_cast<int64_t>(bOffsets.GetValue(t)); }

    __aicore__ inline int64_t RankOff(int64_t t, int64_t r) {
        return static_cast<int64_t>(rankOffsets.GetValue(t * (ranks + 1) + r));
    }

    __aicore__ inline int64_t OutputAt(int64_t r, int64_t t) {
        return outputOffsets.GetValue(r * tables + t);
    }

    // True when the metadata tiles an output of outLen floats for `bags` bags with the columns
    // D_t = dOffsets[t + 1] - dOffsets[t]: features cover the bags in order, every feature's
    // ranks cover its bags, and rank r's block of feature t holds its rows times D_t.
    __aicore__ inline bool Tiles(AscendC::GlobalTensor<int32_t>& dOffsets, int64_t bags,
                                 int64_t outLen) {
        if (BOff(0) != 0 || BOff(tables) != bags)
            return false;
        if (OutputAt(0, 0) != 0 || outputOffsets.GetValue(ranks * tables) != outLen)
            return false;
        for (int64_t t = 0; t < tables; ++t) {
            const int64_t featureB = BOff(t + 1) - BOff(t);
            const int64_t d = static_cast<int64_t>(dOffsets.GetValue(t + 1)) - dOffsets.GetValue(t);
            if (featureB < 0 || d < 0 || RankOff(t, 0) != 0 || RankOff(t, ranks) != featureB)
                return false;
            for (int64_t r = 0; r < ranks; ++r) {
                const int64_t rows = RankOff(t, r + 1) - RankOff(t, r);
                const int64_t at = r * tables + t;
                if (rows < 0 ||
                    outputOffsets.GetValue(at + 1) - outputOffsets.GetValue(at) != rows * d)
                    return false;
            }
        }
        return true;
    }

    // The feature holding bag k: the last t with b_offsets[t] <= k (a binary search; empty
    // features before it share its first bag). Valid once Tiles() held and 0 <= k < bags.
    __aicore__ inline int64_t FeatureOf(int64_t k) { return LastAtMost(bOffsets, 1, tables, k); }

    // The rank holding bag b local to feature t: the last r with RankOff(t, r) <= b. R is small
    // (the world size), so a walk rather than a search.
    __aicore__ inline int64_t RankOf(int64_t t, int64_t b) {
        int64_t r = 0;
        while (RankOff(t, r + 1) <= b)
            ++r;
        return r;
    }

    // Bag b (local to feature t, whose rows are d floats wide): its row in the output, in the
    // block of the rank holding it. Valid once Tiles() held and 0 <= b < the feature's bags.
    __aicore__ inline int64_t RowAt(int64_t t, int64_t b, int64_t d) {
        const int64_t r = RankOf(t, b);
        return OutputAt(r, t) + (b - RankOff(t, r)) * d;
    }
};

}  // namespace mxrec

#endif  // MXREC_TBE_VBE_H
