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

// Elements of `elemBytes` that fit in `bytes`, rounded down to whole 32-byte blocks.
MXREC_HD int64_t ElemsPerBlocks(int64_t bytes, int64_t elemBytes) {
    return AlignDown(bytes, kBlockBytes) / elemBytes;
}

}  // namespace mxrec

#endif  // MXREC_COMMON_H
