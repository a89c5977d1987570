// HFP8 encoding of one float, fbgemm's float_to_hfp8 in integer arithmetic.
//
// fbgemm clamps the magnitude with fminf (a quiet NaN yields max_pos), then rounds to
// nearest even either on the normal grid (a "bouncer" float added and subtracted) or on the
// subnormal grid 2^(1 - bias - mbits) (the bouncer's low bits are then the code). Both roundings
// are done here on the float's bits: no reliance on the scalar unit's float adds, its handling
// of fp32 subnormals, or on a compiler keeping (b + x) - b. The two agree for every magnitude
// below 2^100 and bias in [1, 127], which the host checks.
// Shared by float_to_hfp8 and float_to_fp8_rowwise.
#ifndef MXREC_HFP8_ENCODE_H
#define MXREC_HFP8_ENCODE_H

#include <cstdint>

namespace mxrec_hfp8 {

union Bits32 {
    float f;
    uint32_t u;
};

// Round-to-nearest-even of m / 2^shift, for m < 2^24.
__aicore__ inline uint32_t ShiftRoundEven(uint32_t m, int32_t shift) {
    if (shift <= 0)
        return m << (-shift);
    if (shift >= 32)
        return 0u;  // m < 2^24 <= half of 2^shift: rounds to 0
    const uint64_t wide = m;
    const uint64_t q = wide >> shift;
    const uint64_t rest = wide & ((uint64_t(1) << shift) - 1);
    const uint64_t half = uint64_t(1) << (shift - 1);
    return static_cast<uint32_t>(q + ((rest > half || (rest == half && (q & 1u) != 0)) ? 1u : 0u));
}

__aicore__ inline uint8_t EncodeHfp8(float x, int32_t ebits, int32_t bias, float maxPos) {
    const int32_t mbits = 7 - ebits;
    Bits32 v;
    v.f = x;
    const uint32_t sign = v.u & 0x80000000u;
    v.u &= 0x7fffffffu;
    if (v.u > 0x7f800000u && (v.u & 0x400000u) == 0) {
        // A signalling NaN: fminf gives back its quiet twin, not max_pos (IEEE minNum, as
        // fbgemm's CPU op runs), which takes the subnormal path, where the bouncer's sum is
        // that NaN again: its low byte, and the sign, become the code.
        return static_cast<uint8_t>((v.u | (sign >> 24)) & 0xffu);
    }
    if (!(v.f < maxPos))
        v.f = maxPos;  // fminf: NaN and anything above max_pos become max_pos
    const uint32_t exp = v.u >> 23;
    const uint32_t smallestNormal = static_cast<uint32_t>(128 - bias) << 23;
    uint32_t code = 0;
    if (v.u >= smallestNormal) {
        // Round off 23 - mbits mantissa bits; a carry moves into the exponent as the
        // bouncer's sum does. Then rebias the exponent and keep the top byte.
        // Ties go to the even significand, implicit bit included: with no mantissa bits
        // (ebits 7) the kept bit is the implicit 1, so a tie always rounds up.
        const int32_t drop = 23 - mbits;
        const uint32_t half = 1u << (drop - 1);
        const uint32_t keptLsb = (((v.u & 0x7fffffu) | 0x800000u) >> drop) & 1u;
        const uint32_t rounded = (v.u + half - 1u + keptLsb) & ~((1u << drop) - 1u);
        code =
            (((rounded - (static_cast<uint32_t>(127 - bias) << 23)) << (8 - ebits)) | sign) >> 24;
    } else {
        // The subnormal grid: the magnitude in units of 2^(1 - bias - mbits), rounded.
        const uint32_t mant = exp == 0 ? (v.u & 0x7fffffu) : ((v.u & 0x7fffffu) | 0x800000u);
        const int32_t e = exp == 0 ? -149 : static_cast<int32_t>(exp) - 150;  // v = mant * 2^e
        code = ShiftRoundEven(mant, (1 - bias - mbits) - e) | (sign >> 24);
    }
    return static_cast<uint8_t>(code & 0xffu);
}

}  // namespace mxrec_hfp8

#endif  // MXREC_HFP8_ENCODE_H
