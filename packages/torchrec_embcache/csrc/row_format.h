// Storage dtype of a row's embedding: float32, float16 or bfloat16.
//
// A stored row is [embedding | optimiser state]. The state is always float32 (16-bit moments
// would lose the small updates they accumulate); only the embedding may be 16-bit. Rows are
// addressed in 4-byte units throughout the core (row stores, swaps, checkpoints), so a 16-bit
// embedding of `dim` values takes ceil(dim / 2) units, padded with a zero half.
//
// Rounding of an update into a 16-bit row is done once, from the float64 value of the update
// (see optimizer.cpp): round-to-nearest-even, or stochastic rounding, which picks the upper
// neighbour with probability (x - lo) / (hi - lo) and so is unbiased.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace embcache {

enum class RowDtype : int { F32 = 0, F16 = 1, BF16 = 2 };

// 4-byte units taken by the embedding part of a row.
inline int64_t embedding_units(RowDtype t, int64_t dim) {
    return t == RowDtype::F32 ? dim : (dim + 1) / 2;
}

inline const char* dtype_name(RowDtype t) {
    static constexpr const char* kNames[] = {"float32", "float16", "bfloat16"};  // by value
    const auto i = static_cast<unsigned>(t);
    return i < 3 ? kNames[i] : "unknown";
}

inline float bits_to_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

inline uint32_t float_to_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

inline float bf16_to_float(uint16_t h) {
    return bits_to_float(static_cast<uint32_t>(h) << 16);
}

inline float f16_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)
        return bits_to_float(sign | 0x7f800000u | (man << 13));
    if (exp != 0)
        return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
    // Subnormal (or zero): man * 2^-24 is exact in float.
    const float v = static_cast<float>(man) * 0x1.0p-24f;
    return sign ? -v : v;
}

// Parameters of a 16-bit format: significand bits (with the implicit one), smallest normal
// exponent, largest finite value.
struct Format16 {
    int precision;
    int emin;
    double max_finite;
};

inline Format16 format_of(RowDtype t) {
    if (t == RowDtype::F16)
        return {11, -14, 65504.0};
    return {8, -126, 0x1.fep127};  // bfloat16
}

// Encodes a double that is exactly representable in the format (or +-inf, or nan).
inline uint16_t encode_exact(RowDtype t, double v) {
    if (t == RowDtype::BF16) {
        const uint32_t b = float_to_bits(static_cast<float>(v));  // exact: v has <= 8 bits
        if (std::isnan(v))
            return static_cast<uint16_t>((b >> 16) | 0x40u);
        return static_cast<uint16_t>(b >> 16);
    }
    const uint16_t sign = std::signbit(v) ? 0x8000u : 0u;
    const double a = std::fabs(v);
    if (std::isnan(v))
        return static_cast<uint16_t>(sign | 0x7e00u);
    if (std::isinf(a))
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (a < 0x1.0p-14)  // subnormal: a multiple of 2^-24
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(a * 0x1.0p24));
    int e;
    const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    const uint32_t man = static_cast<uint32_t>(std::ldexp(m, 11)) & 0x3ffu;
    return static_cast<uint16_t>(sign | ((e - 1 + 15) << 10) | man);
}

// Rounds x once into the format. `u` in [0, 1) selects stochastic rounding (the upper
// neighbour in magnitude is taken when u < (|x| - lo) / q); u < 0 means round to nearest even.
inline uint16_t round_to_16(RowDtype t, double x, double u) {
    if (std::isnan(x) || std::isinf(x) || x == 0.0)
        return encode_exact(t, x);
    const Format16 f = format_of(t);
    const double a = std::fabs(x);
    int e;
    std::frexp(a, &e);
    // Spacing of representable values around a: 2^(e - p) for normals, fixed for subnormals.
    const double q = std::ldexp(1.0, (e - 1 < f.emin ? f.emin + 1 : e) - f.precision);
    const double lo = std::floor(a / q) * q;  // exact: scaling by a power of two
    const double rest = a - lo;               // exact: same binade
    bool up;
    if (u >= 0.0) {
        up = u < rest / q;
    } else {
        const double half = 0.5 * q;
        up = rest > half || (rest == half && std::fmod(lo / q, 2.0) != 0.0);
    }
    double r = up ? lo + q : lo;
    if (r > f.max_finite)
        r = HUGE_VAL;  // beyond the largest finite value rounds (or steps) to infinity
    return encode_exact(t, x < 0 ? -r : r);
}

// Round to nearest even from a float (initial values, defaults).
inline uint16_t round_float_to_16(RowDtype t, float x) {
    return round_to_16(t, static_cast<double>(x), -1.0);
}

inline float decode_16(RowDtype t, uint16_t h) {
    return t == RowDtype::BF16 ? bf16_to_float(h) : f16_to_float(h);
}

// Embedding part of a stored row -> `dim` floats.
inline void decode_embedding(RowDtype t, const float* stored, float* out, int64_t dim) {
    if (t == RowDtype::F32) {
        std::memcpy(out, stored, dim * sizeof(float));
        return;
    }
    const uint16_t* h = reinterpret_cast<const uint16_t*>(stored);
    if (t == RowDtype::BF16) {
        for (int64_t j = 0; j < dim; ++j)
            out[j] = bf16_to_float(h[j]);
    } else {
        for (int64_t j = 0; j < dim; ++j)
            out[j] = f16_to_float(h[j]);
    }
}

// `dim` floats -> the embedding part of a stored row, rounded to nearest even.
inline void encode_embedding(RowDtype t, const float* in, float* stored, int64_t dim) {
    if (t == RowDtype::F32) {
        std::memcpy(stored, in, dim * sizeof(float));
        return;
    }
    uint16_t* h = reinterpret_cast<uint16_t*>(stored);
    for (int64_t j = 0; j < dim; ++j)
        h[j] = round_float_to_16(t, in[j]);
    if (dim & 1)
        h[dim] = 0;  // the padding half
}

}  // namespace embcache
