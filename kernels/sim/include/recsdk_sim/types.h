// Scalar types of AscendC kernels on the host: half and bfloat16_t with IEEE round-to-nearest-even
// conversions (what the vector unit's Cast with CAST_RINT does), plus the qualifiers and
// GM_ADDR of kernel code. Arithmetic on half/bfloat16_t goes through float, as scalar code
// on the AI core does.
#ifndef RECSDK_SIM_TYPES_H
#define RECSDK_SIM_TYPES_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __inout_pipe__(x)
#ifndef GM_ADDR
#define GM_ADDR uint8_t*
#endif

#include "float_bits.h"  // kernels/common: the conversions tiling functions use as well

namespace recsdk::sim::detail {
using mxrec::Bf16BitsToFloat;
using mxrec::FloatToBf16Bits;
using mxrec::FloatToHalfBits;
using mxrec::HalfBitsToFloat;
}  // namespace recsdk::sim::detail

struct half {
    uint16_t bits;  // no initializer: trivial like the device's built-in type
    half() = default;
    // Implicit from any arithmetic type, as on the device; doubles go through float first.
    template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
    half(U v) : bits(recsdk::sim::detail::FloatToHalfBits(static_cast<float>(v))) {}  // NOLINT
    operator float() const { return recsdk::sim::detail::HalfBitsToFloat(bits); }     // NOLINT
    static half FromBits(uint16_t b) {
        half h;
        h.bits = b;
        return h;
    }
    half& operator+=(half o) { return *this = half(float(*this) + float(o)); }
    half& operator-=(half o) { return *this = half(float(*this) - float(o)); }
    half& operator*=(half o) { return *this = half(float(*this) * float(o)); }
};

struct bfloat16_t {
    uint16_t bits;  // no initializer: trivial like the device's built-in type
    bfloat16_t() = default;
    template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
    bfloat16_t(U v)
        : bits(recsdk::sim::detail::FloatToBf16Bits(static_cast<float>(v))) {}     // NOLINT
    operator float() const { return recsdk::sim::detail::Bf16BitsToFloat(bits); }  // NOLINT
    static bfloat16_t FromBits(uint16_t b) {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
    bfloat16_t& operator+=(bfloat16_t o) { return *this = bfloat16_t(float(*this) + float(o)); }
    bfloat16_t& operator-=(bfloat16_t o) { return *this = bfloat16_t(float(*this) - float(o)); }
    bfloat16_t& operator*=(bfloat16_t o) { return *this = bfloat16_t(float(*this) * float(o)); }
};

// The AI core compiler's name for float, which kernels use beside half and bfloat16_t.
using float32_t = float;

static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit types must be 2 bytes");
static_assert(std::is_trivial_v<half> && std::is_trivial_v<bfloat16_t>,
              "memcpy-able like the device types");

namespace recsdk::sim {

// False, but only once a template using it is instantiated: a refused API's static_assert fires
// where a kernel calls it, not where the header declares it.
template <typename... T>
constexpr bool kRefused = false;

template <typename T>
inline const char* TypeName() {
    if constexpr (std::is_same_v<T, float>)
        return "float";
    else if constexpr (std::is_same_v<T, half>)
        return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>)
        return "bfloat16_t";
    else if constexpr (std::is_same_v<T, double>)
        return "double";
    else if constexpr (std::is_same_v<T, int64_t>)
        return "int64_t";
    else if constexpr (std::is_same_v<T, uint64_t>)
        return "uint64_t";
    else if constexpr (std::is_same_v<T, int32_t>)
        return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>)
        return "uint32_t";
    else if constexpr (std::is_same_v<T, int16_t>)
        return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>)
        return "uint16_t";
    else if constexpr (std::is_same_v<T, int8_t>)
        return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>)
        return "uint8_t";
    else if constexpr (std::is_same_v<T, bool>)
        return "bool";
    else
        return "?";
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_TYPES_H
