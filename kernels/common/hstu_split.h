// Host side of the HSTU attention tilings: the cost of each piece of work and the cut of the work
// order (hstu_common.h) into one contiguous range per vector core, balanced by cost. Pure
// functions of the sequence lengths (the seq_offset attribute), heads and mask type, like every
// tiling (tiling_common.h).
//
// Cost. Forward: query rows [r0, r1) of a sequence of length len are computed against the keys
// they need, [0, HstuKeyEnd) (causal: up to r1, so blocks above the diagonal are skipped), in
// Cube calls of at most kHstuBlockK keys. Backward (keyMajor): key rows [r0, r1) against the
// queries that need them, [HstuQueryStart, len), in calls of at most kHstuChunkQ queries. The
// Cube (rows x extent x D MACs per product) and the vector cores (every score) work in
// proportion to rows x extent, rows padded to the Cube's 16-row fractal and each call's extent
// padded to 16, so a piece costs
//     AlignUp(r1 - r0, 16) x PaddedExtent + kHstuCallCost x calls
// (kHstuCallCost stands for the fixed work of one call: the Matmul calls and the vector setup).
// The cost of a sequence grows with the square of its length under the causal mask.
//
// Balance. Work is cut at 16-row groups: group g of a sequence (rows 16g .. 16g + 15) costs
// 16 x PaddedExtent(of the group), plus the call costs at the first group of each block. Worker
// w starts at the group boundary nearest to w / W of the total cost, so each worker's share is
// within about one group (16 rows x the longest extent) of the mean: a cut may fall inside a
// block, whose rows then go to two workers (different output rows, so nothing is shared).
// Balancing by cost rather than by counting blocks matters for jagged batches, whose sequences
// differ in length by orders of magnitude. The tiled forward (HstuWork::tile) moves a cut to the
// nearest block boundary when that shifts at most kHstuSnap of a worker's mean share: a block cut
// in two reads the keys left of it twice (from global memory, the traffic its tiles save).
//
// Block height. Under the causal mask a block computes its diagonal square in full, so taller
// blocks issue more Cube work than the mask keeps; shorter blocks mean more Cube calls. The
// tiling takes the tallest of 128, 64, 32, 16 rows whose issued work stays within 5% of the
// 16-row staircase (the least the Cube can issue); without the causal mask, 128.
#ifndef MXREC_HSTU_SPLIT_H
#define MXREC_HSTU_SPLIT_H

#include <cstdint>
#include <vector>

#include "hstu_common.h"
#include "mxrec_common.h"

namespace mxrec {

constexpr int64_t kHstuCallCost = 16 * 64;
constexpr double kHstuSnap = 0.03;

struct HstuWork {
    std::vector<int64_t> lengths;  // per batch
    int64_t heads = 1;
    bool causal = true;
    bool keyMajor = false;  // rows are key rows (backward), not query rows (forward)
    int64_t block = 128;    // rows per block
    // Forward, causal, tiled (hstu_dense_forward's L1 plan): the keys left of a piece in calls
    // of blockK, its diagonal square in tiles of `tile` rows and keys, one call per tile. 0: not.
    int64_t tile = 0;
    int64_t blockK = kHstuBlockK;
    // Cost of each row beyond its scores, in scores (the tiling's estimate of what moving the
    // row's tensor rows costs a vector core against what a score does): without it a worker of
    // many short sequences, whose rows cost more than their few scores, is given too many. 0: none.
    int64_t rowCost = 0;
};

// An extent of n columns in calls of `chunk`, each padded to 16.
inline int64_t HstuPadded(int64_t n, int64_t chunk) {
    if (n <= 0)
        return 0;
    const int64_t full = (n - 1) / chunk;
    return full * chunk + AlignUp(n - full * chunk, 16);
}

// What rows [r0, r1) of a sequence of length len are computed against: {first, end, call size}.
struct HstuExtent {
    int64_t begin;
    int64_t end;
    int64_t chunk;
};

inline HstuExtent HstuExtentOf(const HstuWork& w, int64_t r0, int64_t r1, int64_t len) {
    if (w.keyMajor)
        return HstuExtent{HstuQueryStart(w.causal, r0), len, kHstuChunkQ};
    return HstuExtent{0, HstuKeyEnd(w.causal, r1, len), kHstuBlockK};
}

// Tiled forward: rows [r0, r1) against the keys left of them, then tile (t, c), t >= c, of
// their diagonal square.
inline int64_t HstuTiledPieceCost(const HstuWork& w, int64_t r0, int64_t r1) {
    int64_t cost =
        AlignUp(r1 - r0, 16) * HstuPadded(r0, w.blockK) + kHstuCallCost * CeilDiv(r0, w.blockK);
    for (int64_t t0 = r0; t0 < r1; t0 += w.tile) {
        const int64_t keys = Min64(r1, t0 + w.tile) - r0;  // keys of tiles c <= t
        cost += AlignUp(Min64(w.tile, r1 - t0), 16) * HstuPadded(keys, w.tile);
    }
    return cost;
}

inline int64_t HstuPieceCost(const HstuWork& w, int64_t r0, int64_t r1, int64_t len) {
    if (w.tile > 0)
        return HstuTiledPieceCost(w, r0, r1) + (r1 - r0) * w.rowCost;
    const HstuExtent e = HstuExtentOf(w, r0, r1, len);
    return AlignUp(r1 - r0, 16) * HstuPadded(e.end - e.begin, e.chunk) +
           kHstuCallCost * CeilDiv(e.end - e.begin, e.chunk) + (r1 - r0) * w.rowCost;
}

// Group g (rows [16g, 16g + 16) clipped to len) of a sequence.
inline int64_t HstuGroupCost(const HstuWork& w, int64_t g, int64_t len) {
    const int64_t r0 = g * kHstuRowGroup;
    const int64_t r1 = Min64(len, r0 + kHstuRowGroup);
    if (w.tile > 0) {  // its share of its block's calls and tiles (tiles start at the block)
        const int64_t b0 = r0 / w.block * w.block;
        const int64_t t = (r0 - b0) / w.tile;
        int64_t cost =
            kHstuRowGroup * (HstuPadded(b0, w.blockK) + (t + 1) * w.tile) + (r1 - r0) * w.rowCost;
        if (r0 == b0)
            cost += kHstuCallCost * CeilDiv(b0, w.blockK);
        return cost;
    }
    const HstuExtent e = HstuExtentOf(w, r0, r1, len);
    int64_t cost = kHstuRowGroup * HstuPadded(e.end - e.begin, e.chunk) + (r1 - r0) * w.rowCost;
    if (r0 % w.block == 0) {
        const HstuExtent b = HstuExtentOf(w, r0, Min64(len, r0 + w.block), len);
        cost += kHstuCallCost * CeilDiv(b.end - b.begin, b.chunk);
    }
    return cost;
}

inline int64_t HstuSequenceCost(const HstuWork& w, int64_t len) {
    int64_t cost = 0;
    for (int64_t g = 0; g * kHstuRowGroup < len; ++g)
        cost += HstuGroupCost(w, g, len);
    return cost;
}

// Cube MACs per D and product issued for a sequence cut into blocks of `block` rows.
inline int64_t HstuIssued(const HstuWork& w, int64_t block, int64_t len) {
    int64_t issued = 0;
    for (int64_t r0 = 0; r0 < len; r0 += block) {
        const int64_t r1 = Min64(len, r0 + block);
        const HstuExtent e = HstuExtentOf(w, r0, r1, len);
        issued += AlignUp(r1 - r0, 16) * HstuPadded(e.end - e.begin, e.chunk);
    }
    return issued;
}

// The block height (see the header): w.block is ignored.
inline int64_t HstuChooseBlock(const HstuWork& w) {
    if (!w.causal)
        return 128;
    auto total = [&](int64_t block) {
        int64_t s = 0;
        for (int64_t len : w.lengths)
            s += HstuIssued(w, block, len);
        return s;
    };
    const int64_t least = total(16);
    for (int64_t block : {128, 64, 32}) {
        if (total(block) * 100 <= least * 105)
            return block;
    }
    return 16;
}

// Position of the first work at or after (b, h, g): normalised so that a position at the end
// of a sequence moves to the next non-empty one; (B, 0, 0, 0) is the end.
inline HstuPos HstuNormalize(const HstuWork& w, int64_t b, int64_t h, int64_t g) {
    const int64_t nb = static_cast<int64_t>(w.lengths.size());
    for (;;) {
        if (b >= nb)
            return HstuPos{static_cast<int32_t>(nb), 0, 0, 0};
        const int64_t groups = CeilDiv(w.lengths[b], kHstuRowGroup);
        if (g >= groups) {
            g = 0;
            if (++h >= w.heads) {
                h = 0;
                ++b;
            }
            continue;
        }
        const int64_t row = g * kHstuRowGroup;
        return HstuPos{static_cast<int32_t>(b), static_cast<int32_t>(h),
                       static_cast<int32_t>(row / w.block), static_cast<int32_t>(row % w.block)};
    }
}

// The cut at group g (the work before it, `acc`, against the target `rem`) moved to the block
// boundary before or after it, whichever is nearer the target, if that is within `slack`.
inline int64_t HstuSnapToBlock(const HstuWork& w, int64_t len, int64_t g, double acc, double rem,
                               double slack) {
    const int64_t per = w.block / kHstuRowGroup;  // groups per block
    const int64_t groups = CeilDiv(len, kHstuRowGroup);
    const int64_t down = g / per * per;
    const int64_t up = Min64(down + per, groups);
    double before = acc;  // the work before `down`
    for (int64_t i = down; i < g; ++i)
        before -= static_cast<double>(HstuGroupCost(w, i, len));
    double after = acc;  // the work before `up`
    for (int64_t i = g; i < up; ++i)
        after += static_cast<double>(HstuGroupCost(w, i, len));
    const double dDown = rem - before, dUp = after - rem;
    if (g == down || Min64(static_cast<int64_t>(dDown), static_cast<int64_t>(dUp)) > slack)
        return g;
    return dDown <= dUp ? down : up;
}

// start[0..workers]: worker i takes [start[i], start[i + 1]).
inline std::vector<HstuPos> HstuSplit(const HstuWork& w, int64_t workers) {
    const int64_t nb = static_cast<int64_t>(w.lengths.size());
    std::vector<int64_t> seqCost(static_cast<size_t>(nb));
    std::vector<int64_t> prefix(static_cast<size_t>(nb) + 1, 0);  // cost before batch b (all heads)
    for (int64_t b = 0; b < nb; ++b) {
        seqCost[b] = HstuSequenceCost(w, w.lengths[b]);
        prefix[b + 1] = prefix[b] + w.heads * seqCost[b];
    }
    const int64_t total = prefix[nb];
    std::vector<HstuPos> start(static_cast<size_t>(workers) + 1);
    start[0] = HstuNormalize(w, 0, 0, 0);
    start[workers] = HstuPos{static_cast<int32_t>(nb), 0, 0, 0};
    int64_t b = 0;
    for (int64_t i = 1; i < workers; ++i) {
        // The target as a fraction of the total, without overflowing int64.
        const double target =
            static_cast<double>(total) * static_cast<double>(i) / static_cast<double>(workers);
        while (b < nb && static_cast<double>(prefix[b + 1]) <= target)
            ++b;
        if (b >= nb) {
            start[i] = start[workers];
            continue;
        }
        double rem = target - static_cast<double>(prefix[b]);
        const int64_t h =
            seqCost[b] > 0
                ? Min64(static_cast<int64_t>(rem / static_cast<double>(seqCost[b])), w.heads - 1)
                : 0;
        rem -= static_cast<double>(h) * static_cast<double>(seqCost[b]);
        // The group boundary nearest to the target (tiled: a block boundary if one is close).
        int64_t g = 0;
        double acc = 0;
        const int64_t groups = CeilDiv(w.lengths[b], kHstuRowGroup);
        while (g < groups) {
            const double c = static_cast<double>(HstuGroupCost(w, g, w.lengths[b]));
            if (acc + c / 2 > rem)
                break;
            acc += c;
            ++g;
        }
        if (w.tile > 0)
            g = HstuSnapToBlock(w, w.lengths[b], g, acc, rem,
                                kHstuSnap * static_cast<double>(total) / workers);
        HstuPos p = HstuNormalize(w, b, h, g);
        if (HstuBefore(p, start[i - 1]))
            p = start[i - 1];
        start[i] = p;
    }
    return start;
}

// The cost of every worker's range (for tests and the benchmark's balance figures): pieces are
// costed as the kernel runs them (a query block shared by two workers is two pieces).
inline std::vector<int64_t> HstuWorkerCosts(const HstuWork& w, const std::vector<HstuPos>& start) {
    const int64_t workers = static_cast<int64_t>(start.size()) - 1;
    std::vector<int64_t> cost(static_cast<size_t>(workers), 0);
    for (int64_t i = 0; i < workers; ++i) {
        HstuPos cur = start[i];
        const HstuPos end = start[i + 1];
        while (HstuBefore(cur, end)) {
            const int64_t len = w.lengths[cur.b];
            const int64_t blocks = CeilDiv(len, w.block);
            if (cur.qb >= blocks) {
                cur = HstuPos{cur.b + 1, 0, 0, 0};
                continue;
            }
            const int64_t q0 = static_cast<int64_t>(cur.qb) * w.block;
            const int64_t rows = Min64(w.block, len - q0);
            const bool last = end.b == cur.b && end.h == cur.h && end.qb == cur.qb;
            const int64_t rowEnd = last ? end.row : rows;
            if (rowEnd > cur.row)
                cost[i] += HstuPieceCost(w, q0 + cur.row, q0 + rowEnd, len);
            if (last)
                break;
            cur.row = 0;
            if (++cur.qb == blocks) {
                cur.qb = 0;
                if (++cur.h == w.heads) {
                    cur.h = 0;
                    ++cur.b;
                }
            }
        }
    }
    return cost;
}

}  // namespace mxrec

#endif  // MXREC_HSTU_SPLIT_H
