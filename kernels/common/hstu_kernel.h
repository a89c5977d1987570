// Vector code of the HSTU attention kernels (hstu_dense_forward, hstu_dense_backward): AscendC
// device code, float32.
//
// The vector cores of the emulation have no Exp (nor Sigmoid/Silu): exp(-z) is taken from its
// definition with the instructions it has (Muls/Adds/Maxs/Mins/Cast/Sub/Mul): 2^k * e^y with
// k = rint(-z log2 e) clamped to +-126 (2^k stays a normal float; beyond, the result saturates
// towards 0 or inf as exp does, which 1 / (1 + exp(-z)) absorbs), y = -z - k ln 2 in two parts
// (Cody-Waite: |y| <= ln2 / 2, exact k ln2_hi), e^y by its Taylor polynomial to degree 7
// (truncation < 6e-9 relative) and 2^k assembled from k's exponent bits. A device build could use
// Exp instead; this is the same arithmetic on both targets.
#ifndef MXREC_HSTU_KERNEL_H
#define MXREC_HSTU_KERNEL_H

#include "kernel_operator.h"

namespace mxrec {

constexpr float kHstuLog2e = 1.44269504088896341f;
constexpr float kHstuLn2Hi = 0.693145751953125f;  // ln 2 to 17 bits: k * kHstuLn2Hi is exact
constexpr float kHstuLn2Lo = 1.42860682030941723212e-6f;
constexpr float kHstuExpClamp = 126.0f;

// dst = 1 + exp(-z), float32. t1 and t2 are scratch (t2 also as int32); dst, t1, t2 and z are
// four different buffers of at least n elements.
__aicore__ inline void HstuOnePlusExpNeg(const AscendC::LocalTensor<float>& dst,
                                         const AscendC::LocalTensor<float>& z,
                                         const AscendC::LocalTensor<float>& t1,
                                         const AscendC::LocalTensor<float>& t2, int32_t n) {
    using namespace AscendC;
    // 1 / n!, n = 0..7
    constexpr float kInvFact[8] = {1.0f,         1.0f,          0.5f,          1.0f / 6.0f,
                                   1.0f / 24.0f, 1.0f / 120.0f, 1.0f / 720.0f, 1.0f / 5040.0f};
    LocalTensor<int32_t> k = t2.ReinterpretCast<int32_t>();
    Muls(t1, z, -kHstuLog2e, n);
    Maxs(t1, t1, -kHstuExpClamp, n);
    Mins(t1, t1, kHstuExpClamp, n);
    Cast(k, t1, RoundMode::CAST_RINT, n);
    Cast(t1, k, RoundMode::CAST_NONE, n);
    Muls(dst, t1, -kHstuLn2Hi, n);  // y = -z - k ln 2
    Sub(dst, dst, z, n);
    Muls(t1, t1, kHstuLn2Lo, n);
    Sub(dst, dst, t1, n);
    Muls(t1, dst, kInvFact[7], n);  // e^y by Horner
    for (int i = 6; i >= 1; --i) {
        Adds(t1, t1, kInvFact[i], n);
        Mul(t1, t1, dst, n);
    }
    Adds(t1, t1, kInvFact[0], n);
    Adds(k, k, 127, n);  // 2^k: the float with exponent field k + 127
    Muls(k, k, 1 << 23, n);
    Mul(dst, t1, t2, n);
    Adds(dst, dst, 1.0f, n);
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

}  // namespace mxrec

#endif  // MXREC_HSTU_KERNEL_H
