// IEEE half and bfloat16 bit patterns of a float, rounded to nearest even (host code: tiling
// functions turn attribute values into element bits; the sim's half/bfloat16_t types use it too).
#ifndef MXREC_FLOAT_BITS_H
#define MXREC_FLOAT_BITS_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mxrec {

inline uint32_t FloatBits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float BitsFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline uint16_t FloatToHalfBits(float f) {
    const uint32_t x = FloatBits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477ff000u)
        return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
    if (absx < 0x38800000u) {  // half subnormals: multiples of 2^-24, rint rounds half to even
        const float q = std::nearbyint(BitsFloat(absx) * 16777216.0f);
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(q));
    }
    const uint32_t mant = absx & 0x7fffffu;
    uint32_t h = (((absx >> 23) - 112u) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        ++h;  // a carry into the exponent is right
    return static_cast<uint16_t>(sign | h);
}

inline float HalfBitsToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        const float v = static_cast<float>(mant) / 16777216.0f;
        return sign ? -v : v;
    }
    if (exp == 31)
        return BitsFloat(sign | 0x7f800000u | (mant << 13));
    return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t FloatToBf16Bits(float f) {
    const uint32_t x = FloatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float Bf16BitsToFloat(uint16_t b) {
    return BitsFloat(static_cast<uint32_t>(b) << 16);
}

}  // namespace mxrec

#endif  // MXREC_FLOAT_BITS_H
