// Arithmetic shared by tiling functions (host) and kernels (device): work splitting and
// alignment. No library headers, so it compiles for the AI core as well as the host.
#ifndef MXREC_COMMON_H
#define MXREC_COMMON_H

#include <cstdint>

#if defined(__aicore__)
#define MXREC_HD __aicore__ inline
#else
#define MXREC_HD inline
#endif

namespace mxrec {

constexpr int64_t kBlockBytes = 32;  // DMA and vector operands are 32-byte aligned in UB

MXREC_HD int64_t CeilDiv(int64_t a, int64_t b) {
    return b == 0 ? 0 : (a + b - 1) / b;
}
MXREC_HD int64_t AlignUp(int64_t a, int64_t b) {
    return CeilDiv(a, b) * b;
}
MXREC_HD int64_t AlignDown(int64_t a, int64_t b) {
    return b == 0 ? 0 : a / b * b;
}
MXREC_HD int64_t Min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}
MXREC_HD int64_t Max64(int64_t a, int64_t b) {
    return a < b ? b : a;
}
MXREC_HD int64_t Clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

// Even split of `total` items over `parts`: the first total % parts parts get one more.
struct Span {
    int64_t begin;
    int64_t end;
};

MXREC_HD Span SplitEven(int64_t total, int64_t parts, int64_t idx) {
    if (parts <= 0)
        return Span{0, 0};
    const int64_t base = total / parts;
    const int64_t rem = total % parts;
    const int64_t begin = idx * base + (idx < rem ? idx : rem);
    return Span{begin, begin + base + (idx < rem ? 1 : 0)};
}

// The last t in [0, count) with a[t * stride] <= k, for `a` (a GlobalTensor, read by scalar
// accesses) rising with t; 0 when none is. A binary search: the bags' feature, a position's table.
template <typename Array>
MXREC_HD int64_t LastAtMost(Array& a, int64_t stride, int64_t count, int64_t k) {
    int64_t lo = 0;
    int64_t hi = count - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (static_cast<int64_t>(a.GetValue(mid * stride)) <= k) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// Split of units [0, units) over `parts` by cost: `cost(k)` is what units [0, k) cost (it must
// not fall as k rises; only differences from cost(0) count), and part idx starts at the first k
// whose cost from 0 reaches idx / parts of the whole. Each part finds its own bounds by a binary
// search of cost (a few scalar reads where cost reads global memory), and neighbours compute
// their shared bound alike, so the spans tile [0, units) when cost rises. A cost that falls may
// give end < begin: the caller checks that and refuses its data.
template <typename CostFn>
MXREC_HD int64_t CostBound(CostFn& cost, int64_t units, int64_t c0, int64_t total, int64_t parts,
                           int64_t idx) {
    const int64_t target = c0 + total / parts * idx + total % parts * idx / parts;
    int64_t lo = 0;
    int64_t hi = units;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cost(mid) < target) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

template <typename CostFn>
MXREC_HD Span SplitByCost(CostFn& cost, int64_t units, int64_t parts, int64_t idx) {
    const int64_t c0 = cost(0);
    const int64_t total = cost(units) - c0;
    const int64_t begin = idx == 0 ? 0 : CostBound(cost, units, c0, total, parts, idx);
    const int64_t end =
        idx + 1 == parts ? units : CostBound(cost, units, c0, total, parts, idx + 1);
    return Span{begin, end};
}

// Elements of `elemBytes` that fit in `bytes`, rounded down to whole 32-byte blocks.
MXREC_HD int64_t ElemsPerBlocks(int64_t bytes, int64_t elemBytes) {
    return AlignDown(bytes, kBlockBytes) / elemBytes;
}

}  // namespace mxrec

#endif  // MXREC_COMMON_H
