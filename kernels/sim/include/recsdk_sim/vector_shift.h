// ShiftLeft and ShiftRight by a scalar, each in its count form and its two level-0 forms (mask
// array / mask count, repeatTime, UnaryRepeatParams; ShiftRight's with roundEn), and the
// U-typed overloads CANN declares beside them (kernel_operator_vec_binary_scalar_intf.h).
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/逻辑计算/ShiftLeft.md, ShiftRight.md):
// - A2/A3 types int16_t, uint16_t, int32_t, uint32_t; the shift lies in [0, 16] for the 16-bit
//   types and [0, 32] for the 32-bit ones.
// - Unsigned: logical shifts (the bits shifted out are dropped, zeros come in), so a shift by the
//   full width gives 0.
// - ShiftLeft on a signed type is the documented "arithmetic left shift": the sign bit stays and
//   the bits below it shift (int16 0b1010101010101010 << 1 = 0b1101010101010100, << 3 =
//   0b1101010101010000), so a shift by the full width leaves the sign bit alone.
// - ShiftRight on a signed type copies the sign bit in (x >> 16 of a negative int16 is -1).
// - roundEn (level 0 only; it takes effect for int16_t / int32_t only): 1 is added when the last
//   bit shifted out is 1 (17 >> 5 with roundEn is 1). Which bit that is for a shift of 0 is not
//   documented, so roundEn with a shift of 0 is refused.
// - A count or repeatTime of 0 is a no-op.
// The tensor-of-shifts forms (kernel_operator_vec_binary_intf.h, "左移位数为Tensor") list Atlas
// A2/A3 as not supported, and are refused at compile time.
#ifndef RECSDK_SIM_VECTOR_SHIFT_H
#define RECSDK_SIM_VECTOR_SHIFT_H

#include <cstdint>
#include <string>
#include <type_traits>

#include "recsdk_sim/vector_fused.h"

namespace recsdk::sim {

template <typename T>
constexpr bool kShiftType = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> ||
                            std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;

// The checked shift amount of a call; Fail()s outside the documented range.
template <typename T>
inline uint32_t ShiftAmount(T scalar, bool round, const char* call, const SrcLoc& loc) {
    constexpr int64_t width = int64_t(sizeof(T)) * 8;
    const int64_t n = static_cast<int64_t>(scalar);
    if (n < 0 || n > width) {
        Fail(call, loc,
             "shift " + std::to_string(n) + " is outside [0, " + std::to_string(width) + "] for " +
                 TypeName<T>());
    }
    if (round && std::is_signed_v<T> && n == 0)
        Fail(call, loc, "roundEn with a shift of 0: the rounding bit is not documented");
    return static_cast<uint32_t>(n);
}

template <typename T>
inline T ShiftLeftOne(T x, uint32_t n) {
    using B = std::make_unsigned_t<T>;
    constexpr uint32_t width = sizeof(T) * 8;
    const uint64_t bits = static_cast<B>(x);
    if constexpr (std::is_unsigned_v<T>) {
        return static_cast<T>(n >= width ? 0 : static_cast<B>(bits << n));
    } else {
        const uint64_t sign = bits & (uint64_t{1} << (width - 1));
        const uint64_t body = (bits << n) & ((uint64_t{1} << (width - 1)) - 1);
        return static_cast<T>(static_cast<B>(sign | body));
    }
}

template <typename T>
inline T ShiftRightOne(T x, uint32_t n, bool round) {
    if constexpr (std::is_unsigned_v<T>) {
        return static_cast<T>(n >= sizeof(T) * 8 ? 0 : x >> n);
    } else {
        const int64_t v = static_cast<int64_t>(x);  // >> of a negative int64_t is arithmetic
        const int64_t q = v >> n;
        return static_cast<T>(round ? q + ((v >> (n - 1)) & 1) : q);
    }
}

// The shared body of both instructions' count form and level-0 forms.
template <bool kLeft, typename T>
inline void ShiftCount(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       T scalar, int32_t count, const char* call, const SrcLoc& loc) {
    VecType<kShiftType<T>, T>(call, loc);
    if constexpr (kShiftType<T>) {
        const uint32_t n = ShiftAmount(scalar, false, call, loc);
        ApplyCount<false>(
            call, dst, src, static_cast<const AscendC::LocalTensor<T>*>(nullptr), count,
            [n](T x, T, T) { return kLeft ? ShiftLeftOne(x, n) : ShiftRightOne(x, n, false); },
            loc);
    }
}

template <bool kLeft, typename T, typename P>
inline void ShiftLevel0(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        T scalar, const P& plan, const AscendC::UnaryRepeatParams& rp, bool roundEn,
                        const char* call, const SrcLoc& loc) {
    VecType<kShiftType<T>, T>(call, loc);
    RefuseStrideModes(rp, call, loc);
    if constexpr (kShiftType<T>) {
        const bool round = roundEn && std::is_signed_v<T>;
        const uint32_t n = ShiftAmount(scalar, round, call, loc);
        ApplyLevel0<false>(
            call, dst, src, static_cast<const AscendC::LocalTensor<T>*>(nullptr), plan,
            {rp.dstBlkStride, rp.dstRepStride}, {rp.srcBlkStride, rp.srcRepStride}, {0, 0},
            [n, round](T x, T, T) {
                return kLeft ? ShiftLeftOne(x, n) : ShiftRightOne(x, n, round);
            },
            loc);
    }
}

}  // namespace recsdk::sim

namespace AscendC {

#define RECSDK_SIM_COUNT_MASK_ONLY(NAME)                                        \
    static_assert(isSetMask, #NAME                                              \
                  "<T, false> (the count from SetVectorMask) is not emulated: " \
                  "pass count")

// ---- ShiftLeft ------------------------------------------------------------------------------

template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      uint64_t mask[], const uint8_t repeatTime,
                      const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::ShiftLevel0<true>(
        dst, src, scalarValue,
        recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "ShiftLeft", loc), repeatParams,
        false, "ShiftLeft", loc);
}
template <typename T, typename U, bool isSetMask = true,
          typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                      uint64_t mask[], const uint8_t repeatTime,
                      const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    ShiftLeft<T, isSetMask>(dst, src, scalarValue, mask, repeatTime, repeatParams, loc);
}
template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      uint64_t mask, const uint8_t repeatTime,
                      const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::ShiftLevel0<true>(
        dst, src, scalarValue,
        recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "ShiftLeft", loc), repeatParams,
        false, "ShiftLeft", loc);
}
template <typename T, typename U, bool isSetMask = true,
          typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                      uint64_t mask, const uint8_t repeatTime,
                      const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    ShiftLeft<T, isSetMask>(dst, src, scalarValue, mask, repeatTime, repeatParams, loc);
}
template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      const int32_t& count, recsdk::sim::SrcLoc loc = {}) {
    RECSDK_SIM_COUNT_MASK_ONLY(ShiftLeft);
    recsdk::sim::ShiftCount<true>(dst, src, scalarValue, count, "ShiftLeft", loc);
}
template <typename T, typename U, bool isSetMask = true,
          typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                      const int32_t& count, recsdk::sim::SrcLoc loc = {}) {
    ShiftLeft<T, isSetMask>(dst, src, scalarValue, count, loc);
}
template <typename T, typename U>
inline void ShiftLeft(const LocalTensor<T>&, const LocalTensor<T>&, const LocalTensor<U>&,
                      const int32_t&, recsdk::sim::SrcLoc = {}) {
    static_assert(recsdk::sim::kRefused<T, U>,
                  "AscendC API ShiftLeft with a tensor of shifts is not emulated: its page "
                  "(ShiftLeft（左移位数为Tensor）.md) lists Atlas A2/A3 as not supported");
}

// ---- ShiftRight -----------------------------------------------------------------------------

template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                       uint64_t mask[], const uint8_t repeatTime,
                       const UnaryRepeatParams& repeatParams, bool roundEn = false,
                       recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::ShiftLevel0<false>(
        dst, src, scalarValue,
        recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "ShiftRight", loc), repeatParams,
        roundEn, "ShiftRight", loc);
}
template <typename T, typename U, bool isSetMask = true,
          typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                       uint64_t mask[], const uint8_t repeatTime,
                       const UnaryRepeatParams& repeatParams, bool roundEn,
                       recsdk::sim::SrcLoc loc = {}) {
    ShiftRight<T, isSetMask>(dst, src, scalarValue, mask, repeatTime, repeatParams, roundEn, loc);
}
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                       uint64_t mask, const uint8_t repeatTime,
                       const UnaryRepeatParams& repeatParams, bool roundEn = false,
                       recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::ShiftLevel0<false>(
        dst, src, scalarValue,
        recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "ShiftRight", loc), repeatParams,
        roundEn, "ShiftRight", loc);
}
template <typename T, typename U, bool isSetMask = true,
          typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                       uint64_t mask, const uint8_t repeatTime,
                       const UnaryRepeatParams& repeatParams, bool roundEn,
                       recsdk::sim::SrcLoc loc = {}) {
    ShiftRight<T, isSetMask>(dst, src, scalarValue, mask, repeatTime, repeatParams, roundEn, loc);
}
template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                       const int32_t& count, recsdk::sim::SrcLoc loc = {}) {
    RECSDK_SIM_COUNT_MASK_ONLY(ShiftRight);
    recsdk::sim::ShiftCount<false>(dst, src, scalarValue, count, "ShiftRight", loc);
}
template <typename T, typename U, bool isSetMask = true,
          typename std::enable_if<std::is_same<T, U>::value, bool>::type = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                       const int32_t& count, recsdk::sim::SrcLoc loc = {}) {
    ShiftRight<T, isSetMask>(dst, src, scalarValue, count, loc);
}
template <typename T, typename U>
inline void ShiftRight(const LocalTensor<T>&, const LocalTensor<T>&, const LocalTensor<U>&,
                       const int32_t&, recsdk::sim::SrcLoc = {}) {
    static_assert(recsdk::sim::kRefused<T, U>,
                  "AscendC API ShiftRight with a tensor of shifts is not emulated: its page "
                  "(ShiftRight（右移位数为Tensor）.md) lists Atlas A2/A3 as not supported");
}

#undef RECSDK_SIM_COUNT_MASK_ONLY

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_SHIFT_H
