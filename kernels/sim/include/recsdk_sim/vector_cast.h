// Cast: the Atlas A2/A3 conversion table with its rounding modes, in the count form and the two
// level-0 forms.
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/类型转换/Cast.md, 数据结构/
// precision_conversion.md):
// - The (src, dst, roundMode) combinations of Cast.md's Atlas A2 table; any other is a Fail
//   naming the conversion. int4b_t rows are not emulated (no sub-byte tensors here).
//   int32_t -> half ignores the round mode and scales by the half in the DEQSCALE register
//   (Cast.md's row, SetDeqScale.md): dst = src * scale rounded once to nearest-even, saturating
//   (CastDequant.md's formula; the instruction is CastDequant's, recsdk_sim/vector_deq.h).
// - Rounding (precision_conversion.md table 1): CAST_RINT nearest-even, CAST_FLOOR, CAST_CEIL,
//   CAST_ROUND nearest with ties away from zero, CAST_TRUNC toward zero, CAST_ODD the neighbour
//   with an odd last bit when inexact; CAST_NONE is CAST_RINT where the conversion loses
//   precision. To an integer type the value is rounded to an integer; float -> float rounds to an
//   integral value. Out-of-range results saturate (the documented default overflow mode; the mode
//   register, SetCastOverflowMode, is not modelled); NaN converts to 0 for integer destinations.
// - MulCast / AddReluCast / SubReluCast (复合计算/MulCast.md, AddReluCast.md, SubReluCast.md):
//   dst = Cast(src0 * src1), Cast(Relu(src0 + src1)), Cast(Relu(src0 - src1)), the operation in
//   the source type (as Mul / Add / Sub compute it) and the conversion by precision_conversion.md
//   with no round mode given (CAST_NONE: CAST_RINT where precision is lost, saturating); the A2
//   combinations of the pages: MulCast half -> int8_t / uint8_t, the others half -> int8_t,
//   int16_t -> int8_t, float -> half. Level 0 as Cast's (BinaryRepeatParams, each operand's
//   blocks in its own type); count 0 / repeatTime 0 write nothing.
// - Level 0: a repeat covers 256 bytes of the wider type (256 / max(sizeof(dst), sizeof(src))
//   lanes); each operand's blocks are 32 bytes of its own type, so with half -> int32_t a
//   contiguous repeat is dstRepStride 8, srcRepStride 4. The mask selects lanes of the wider type.
#ifndef RECSDK_SIM_VECTOR_CAST_H
#define RECSDK_SIM_VECTOR_CAST_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "recsdk_sim/vector_masked.h"

namespace recsdk::sim {

enum class CastRow { kNo, kExact, kRound, kRoundOrExact, kRoundOdd, kDeq };

// Cast.md, "Atlas A2 训练系列产品/Atlas A2 推理系列产品支持的数据类型组合情况".
template <typename D, typename S>
constexpr CastRow CastTable() {
    using R = CastRow;
    if constexpr (std::is_same_v<S, int8_t> && std::is_same_v<D, half>)
        return R::kExact;
    if constexpr (std::is_same_v<S, uint8_t> && std::is_same_v<D, half>)
        return R::kExact;
    if constexpr (std::is_same_v<S, int16_t> && std::is_same_v<D, half>)
        return R::kRoundOrExact;
    if constexpr (std::is_same_v<S, int16_t> && std::is_same_v<D, float>)
        return R::kExact;
    if constexpr (std::is_same_v<S, half> &&
                  (std::is_same_v<D, int8_t> || std::is_same_v<D, uint8_t>))
        return R::kRoundOrExact;
    if constexpr (std::is_same_v<S, half> &&
                  (std::is_same_v<D, int16_t> || std::is_same_v<D, int32_t>))
        return R::kRound;
    if constexpr (std::is_same_v<S, half> && std::is_same_v<D, float>)
        return R::kExact;
    if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, int32_t>)
        return R::kRound;
    if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<D, float>)
        return R::kExact;
    if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, int16_t>)
        return R::kExact;
    if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, half>)
        return R::kDeq;
    if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, float>)
        return R::kRoundOrExact;
    if constexpr (std::is_same_v<S, int32_t> && std::is_same_v<D, int64_t>)
        return R::kExact;
    if constexpr (std::is_same_v<S, float> &&
                  (std::is_same_v<D, int16_t> || std::is_same_v<D, bfloat16_t> ||
                   std::is_same_v<D, int32_t> || std::is_same_v<D, float> ||
                   std::is_same_v<D, int64_t>))
        return R::kRound;
    if constexpr (std::is_same_v<S, float> && std::is_same_v<D, half>)
        return R::kRoundOdd;
    if constexpr (std::is_same_v<S, int64_t> && std::is_same_v<D, int32_t>)
        return R::kExact;
    if constexpr (std::is_same_v<S, int64_t> && std::is_same_v<D, float>)
        return R::kRound;
    return R::kNo;
}

// The half scale of the DEQSCALE register that int32_t -> half conversions read (bits 0-15, set
// by SetDeqScale(half)). Unset, or last set by another SetDeqScale form (whose bits mean a float
// scale with offset and sign mode, or a UB address), what the conversion would read is not
// documented: refused.
inline float DeqHalfScale(const char* call, const SrcLoc& loc) {
    const DeqRegister& r = Core().deq;
    if (r.kind != DeqRegister::kHalfScale) {
        Fail(call, loc,
             std::string("int32_t -> half scales by the DEQSCALE register's half, ") +
                 (r.kind == DeqRegister::kUnset
                      ? "which no SetDeqScale(half) has set in this launch"
                      : "but the last SetDeqScale set it for CastDequant's int16_t -> b8 form") +
                 ": call SetDeqScale(half scale) first");
    }
    return static_cast<float>(half::FromBits(static_cast<uint16_t>(r.bits & 0xFFFFu)));
}

template <typename D, typename S>
inline void CheckCast(AscendC::RoundMode m, const SrcLoc& loc) {
    using AscendC::RoundMode;
    constexpr CastRow row = CastTable<D, S>();
    const std::string what = std::string("conversion ") + TypeName<S>() + " -> " + TypeName<D>();
    if constexpr (row == CastRow::kDeq) {
        DeqHalfScale("Cast", loc);  // the round mode has no effect (Cast.md)
        return;
    }
    const bool none = m == RoundMode::CAST_NONE;
    const bool round = m == RoundMode::CAST_RINT || m == RoundMode::CAST_FLOOR ||
                       m == RoundMode::CAST_CEIL || m == RoundMode::CAST_ROUND ||
                       m == RoundMode::CAST_TRUNC;
    bool ok = false;
    switch (row) {
        case CastRow::kExact:
            ok = none;
            break;
        case CastRow::kRound:
            ok = round;
            break;
        case CastRow::kRoundOrExact:
            ok = round || none;
            break;
        case CastRow::kRoundOdd:
            ok = round || none || m == RoundMode::CAST_ODD;
            break;
        default:
            break;
    }
    if (row == CastRow::kNo)
        Fail("Cast", loc, what + " is not supported on Atlas A2/A3");
    if (!ok) {
        Fail("Cast", loc,
             what + " does not take round mode " + std::to_string(int(m)) +
                 " on Atlas A2/A3 (Cast.md's table)");
    }
}

// Ordered neighbours of a 16-bit float pattern (half, bfloat16_t) and of float.
inline uint16_t Next16(uint16_t b, bool up) {
    int32_t o = (b & 0x8000) ? -int32_t(b & 0x7FFF) : int32_t(b);
    o += up ? 1 : -1;
    return o >= 0 ? uint16_t(o) : uint16_t(0x8000 | uint16_t(-o));
}
template <typename D>
inline D NextFloat(D v, bool up) {
    if constexpr (std::is_same_v<D, float>) {
        return std::nextafter(v, up ? std::numeric_limits<float>::infinity()
                                    : -std::numeric_limits<float>::infinity());
    } else {
        return D::FromBits(Next16(v.bits, up));
    }
}
template <typename D>
inline uint32_t LastBit(D v) {
    if constexpr (std::is_same_v<D, float>) {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        return b & 1u;
    } else {
        return v.bits & 1u;
    }
}
template <typename D>
inline long double MaxFinite() {
    if constexpr (std::is_same_v<D, float>)
        return std::numeric_limits<float>::max();
    else if constexpr (std::is_same_v<D, half>)
        return 65504.0L;
    else
        return static_cast<long double>(float(bfloat16_t::FromBits(0x7F7F)));
}

// v (exact in long double) to the floating type D under mode m.
template <typename D>
inline D RoundToFloat(long double v, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    if (std::isnan(v))
        return D(std::numeric_limits<float>::quiet_NaN());
    const long double top = MaxFinite<D>();
    if (v > top)
        return D(static_cast<float>(top));
    if (v < -top)
        return D(static_cast<float>(-top));
    // Nearest-even candidate: float from long double rounds once; half / bfloat16_t sources are
    // exact in float (Cast.md's rows into them come from float or 8/16-bit types).
    const float f = static_cast<float>(v);
    const D n = D(f);
    const long double nv = static_cast<long double>(static_cast<float>(n));
    if (nv == v || m == RoundMode::CAST_RINT || m == RoundMode::CAST_NONE)
        return n;
    D lo = n, hi = n;
    if (nv < v)
        hi = NextFloat(n, true);
    else
        lo = NextFloat(n, false);
    const long double lv = static_cast<float>(lo), hv = static_cast<float>(hi);
    switch (m) {
        case RoundMode::CAST_FLOOR:
            return lo;
        case RoundMode::CAST_CEIL:
            return hi;
        case RoundMode::CAST_TRUNC:
            return v > 0 ? lo : hi;
        case RoundMode::CAST_ROUND:
            if (v - lv == hv - v)
                return v > 0 ? hi : lo;
            return v - lv < hv - v ? lo : hi;
        case RoundMode::CAST_ODD:
            return LastBit(lo) ? lo : hi;
        default:
            return n;
    }
}

template <typename D>
inline D RoundToInt(long double v, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    if (std::isnan(v))
        return D(0);
    long double r;
    switch (m) {
        case RoundMode::CAST_FLOOR:
            r = std::floor(v);
            break;
        case RoundMode::CAST_CEIL:
            r = std::ceil(v);
            break;
        case RoundMode::CAST_ROUND:
            r = std::round(v);
            break;
        case RoundMode::CAST_TRUNC:
            r = std::trunc(v);
            break;
        default:
            r = std::nearbyint(v);  // the default FE_TONEAREST: ties to even
    }
    const long double lo = static_cast<long double>(std::numeric_limits<D>::min());
    const long double hi = static_cast<long double>(std::numeric_limits<D>::max());
    if (r <= lo)
        return std::numeric_limits<D>::min();
    if (r >= hi)
        return std::numeric_limits<D>::max();
    return static_cast<D>(r);
}

// float -> float: the rounding modes round to an integral value.
inline long double RoundIntegral(long double x, AscendC::RoundMode m) {
    if (std::isnan(x) || std::isinf(x) || std::fabs(x) >= 8388608.0L)
        return x;  // already integral (or not a number)
    switch (m) {
        case AscendC::RoundMode::CAST_FLOOR:
            return std::floor(x);
        case AscendC::RoundMode::CAST_CEIL:
            return std::ceil(x);
        case AscendC::RoundMode::CAST_ROUND:
            return std::round(x);
        case AscendC::RoundMode::CAST_TRUNC:
            return std::trunc(x);
        default:
            return std::nearbyint(x);
    }
}

template <typename S>
inline long double Exact(S v) {
    if constexpr (std::is_integral_v<S>)
        return static_cast<long double>(v);
    else
        return static_cast<long double>(static_cast<float>(v));
}

template <typename D, typename S>
inline D ConvertOne(S v, AscendC::RoundMode m) {
    if constexpr (std::is_integral_v<D>) {
        return RoundToInt<D>(Exact(v), m);
    } else if constexpr (std::is_same_v<D, float> && std::is_same_v<S, float>) {
        return static_cast<float>(RoundIntegral(Exact(v), m));
    } else {
        return RoundToFloat<D>(Exact(v), m);
    }
}

// v (exact) to half, nearest with ties to even in a single rounding (a float first could round
// twice), saturating at +-65504.
inline half NearestHalf(long double v) {
    if (v >= 65504.0L)
        return half(65504.0f);
    if (v <= -65504.0L)
        return half(-65504.0f);
    const half n = half(static_cast<float>(v));  // within one unit in the last place of v
    half best = n;
    long double gap = std::fabs(static_cast<long double>(static_cast<float>(n)) - v);
    for (const half c : {NextFloat(n, false), NextFloat(n, true)}) {
        const long double d = std::fabs(static_cast<long double>(static_cast<float>(c)) - v);
        if (d < gap || (d == gap && LastBit(best) && !LastBit(c))) {
            best = c;
            gap = d;
        }
    }
    return best;
}

// int32_t -> half by the DEQSCALE scale (CastDequant.md: Cast(src * scale), CAST_RINT,
// saturating); the product of an int32_t and a half is exact in long double.
inline half DeqOne(int32_t v, float scale) {
    return NearestHalf(static_cast<long double>(v) * static_cast<long double>(scale));
}

template <typename T, typename U>
constexpr bool kDeqCast = std::is_same_v<T, half> && std::is_same_v<U, int32_t>;

// One operand of a Cast repeat whose lanes count in the wider type: element offset of lane j.
template <typename X>
inline uint64_t CastAt(uint32_t r, uint32_t j, const Lane0& s) {
    constexpr uint32_t blk = 32 / sizeof(X);
    return (uint64_t(r) * s.rep_stride + uint64_t(j / blk) * s.blk_stride) * blk + j % blk;
}

template <typename X, typename P>
inline void CastOperand(const AscendC::LocalTensor<X>& t, const P& plan, const Lane0& s, Acc acc,
                        const SrcLoc& loc, const char* call = "Cast") {
    t.Validate(call, loc);
    t.InUb(call, loc);
    CheckUbAligned(t.SimData(), call, loc, "operand");
    if (plan.repeats == 0 || plan.HighestLane() == 0)
        return;
    uint64_t end = 0;
    for (uint32_t r : {0u, plan.repeats - 1}) {
        for (uint32_t j = 0; j < P::kLanes; ++j) {
            if (plan.On(r, j)) {
                const uint64_t e = CastAt<X>(r, j, s) + 1;
                end = e > end ? e : end;
            }
        }
    }
    t.CheckSpan(end, call, loc);
    t.SimAccess(0, end * sizeof(X), Pipe::V, acc, call, loc);
}

template <typename A, typename B>
using Wider = std::conditional_t<(sizeof(A) >= sizeof(B)), A, B>;

}  // namespace recsdk::sim

namespace AscendC {

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint32_t count, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    CheckCast<T, U>(roundMode, loc);
    VecOperand(dst, static_cast<int32_t>(count), "Cast", loc);
    VecOperand(src, static_cast<int32_t>(count), "Cast", loc);
    VecRead(src, count, "Cast", loc);
    VecWrite(dst, count, "Cast", loc);
    T* d = dst.SimData();
    const U* s = src.SimData();
    if constexpr (kDeqCast<T, U>) {
        const float scale = DeqHalfScale("Cast", loc);
        for (uint32_t i = 0; i < count; ++i)
            d[i] = DeqOne(s[i], scale);
    } else {
        for (uint32_t i = 0; i < count; ++i)
            d[i] = ConvertOne<T, U>(s[i], roundMode);
    }
    VecDone(static_cast<int32_t>(count), sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
}

template <typename T, typename U, typename P>
inline void CastLevel0(const LocalTensor<T>& dst, const LocalTensor<U>& src, RoundMode roundMode,
                       const P& plan, const UnaryRepeatParams& rp, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    CheckCast<T, U>(roundMode, loc);
    RefuseStrideModes(rp, "Cast", loc);
    const Lane0 sd{rp.dstBlkStride, rp.dstRepStride}, ss{rp.srcBlkStride, rp.srcRepStride};
    CastOperand(src, plan, ss, Acc::kRead, loc);
    CastOperand(dst, plan, sd, Acc::kWrite, loc);
    T* d = dst.SimData();
    const U* s = src.SimData();
    if constexpr (kDeqCast<T, U>) {
        const float scale = DeqHalfScale("Cast", loc);
        Run0<Wider<T, U>>(plan, [&](uint32_t r, uint32_t j) {
            d[CastAt<T>(r, j, sd)] = DeqOne(s[CastAt<U>(r, j, ss)], scale);
        });
    } else {
        Run0<Wider<T, U>>(plan, [&](uint32_t r, uint32_t j) {
            d[CastAt<T>(r, j, sd)] = ConvertOne<T, U>(s[CastAt<U>(r, j, ss)], roundMode);
        });
    }
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask[], const uint8_t repeatTime,
                 const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    using W = recsdk::sim::Wider<T, U>;
    CastLevel0(dst, src, roundMode,
               recsdk::sim::PlanFromBits<W>(mask, repeatTime, isSetMask, "Cast", loc), repeatParams,
               loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask, const uint8_t repeatTime,
                 const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    using W = recsdk::sim::Wider<T, U>;
    CastLevel0(dst, src, roundMode,
               recsdk::sim::PlanFromCount<W>(mask, repeatTime, isSetMask, "Cast", loc),
               repeatParams, loc);
}

// ---- scalar Cast (标量计算/Cast（float转bfloat16_t）.md, Cast（多类型转float）.md,
// Cast（float转half-int32_t）.md): float -> bfloat16_t with CAST_RINT, bfloat16_t -> float
// exactly, and Cast<T, U, roundMode> for the A2 rows float -> half (CAST_ODD) and float ->
// int32_t (CAST_ROUND/CEIL/FLOOR/RINT); precision_conversion.md's rounding, as the vector Cast.

inline bfloat16_t Cast(const float& fVal) {
    return recsdk::sim::RoundToFloat<bfloat16_t>(recsdk::sim::Exact(fVal), RoundMode::CAST_RINT);
}
inline float Cast(const bfloat16_t& bVal) {
    return static_cast<float>(bVal);
}
template <typename T, typename U, RoundMode roundMode>
inline U Cast(T valueIn) {
    constexpr bool toHalf =
        std::is_same_v<T, float> && std::is_same_v<U, half> && roundMode == RoundMode::CAST_ODD;
    constexpr bool toInt =
        std::is_same_v<T, float> && std::is_same_v<U, int32_t> &&
        (roundMode == RoundMode::CAST_ROUND || roundMode == RoundMode::CAST_CEIL ||
         roundMode == RoundMode::CAST_FLOOR || roundMode == RoundMode::CAST_RINT);
    static_assert(toHalf || toInt,
                  "the scalar Cast<T, U, roundMode> converts float -> half with CAST_ODD and "
                  "float -> int32_t with CAST_ROUND/CEIL/FLOOR/RINT on Atlas A2/A3");
    return recsdk::sim::ConvertOne<U, T>(valueIn, roundMode);
}

}  // namespace AscendC

// ---- MulCast / AddReluCast / SubReluCast ------------------------------------------------------

namespace recsdk::sim {

template <typename T, typename U>
constexpr bool kMulCastTypes =
    std::is_same_v<U, half> && (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>);
template <typename T, typename U>
constexpr bool kReluCastTypes = (std::is_same_v<U, half> && std::is_same_v<T, int8_t>) ||
                                (std::is_same_v<U, int16_t> && std::is_same_v<T, int8_t>) ||
                                (std::is_same_v<U, float> && std::is_same_v<T, half>);

template <bool ok, typename T, typename U>
inline void FusedCastTypes(const char* call, const SrcLoc& loc) {
    if constexpr (!ok) {
        Fail(call, loc,
             std::string(TypeName<U>()) + " -> " + TypeName<T>() +
                 " is not one of its page's Atlas A2/A3 type combinations");
    }
}

template <typename U>
inline U ReluOf(U v) {
    const U zero = static_cast<U>(0.0f);
    return v < zero ? zero : v;
}

struct MulOp {
    template <typename U>
    U operator()(U x, U y) const {
        return static_cast<U>(x * y);
    }
};
struct AddReluOp {
    template <typename U>
    U operator()(U x, U y) const {
        return ReluOf(static_cast<U>(x + y));
    }
};
struct SubReluOp {
    template <typename U>
    U operator()(U x, U y) const {
        return ReluOf(static_cast<U>(x - y));
    }
};

template <typename T, typename U, typename Op>
inline void FusedCastCount(const char* call, const AscendC::LocalTensor<T>& dst,
                           const AscendC::LocalTensor<U>& src0, const AscendC::LocalTensor<U>& src1,
                           uint32_t count, Op op, const SrcLoc& loc) {
    VecOperand(dst, static_cast<int32_t>(count), call, loc);
    VecOperand(src0, static_cast<int32_t>(count), call, loc);
    VecOperand(src1, static_cast<int32_t>(count), call, loc);
    VecRead(src0, count, call, loc);
    VecRead(src1, count, call, loc);
    VecWrite(dst, count, call, loc);
    T* d = dst.SimData();
    const U* a = src0.SimData();
    const U* b = src1.SimData();
    for (uint32_t i = 0; i < count; ++i)
        d[i] = ConvertOne<T, U>(op(a[i], b[i]), AscendC::RoundMode::CAST_NONE);
    VecDone(static_cast<int32_t>(count), sizeof(Wider<T, U>));
}

template <typename T, typename U, typename P, typename Op>
inline void FusedCastLevel0(const char* call, const AscendC::LocalTensor<T>& dst,
                            const AscendC::LocalTensor<U>& src0,
                            const AscendC::LocalTensor<U>& src1, const P& plan,
                            const AscendC::BinaryRepeatParams& rp, Op op, const SrcLoc& loc) {
    RefuseStrideModes(rp, call, loc);
    const Lane0 sd{rp.dstBlkStride, rp.dstRepStride};
    const Lane0 s0{rp.src0BlkStride, rp.src0RepStride}, s1{rp.src1BlkStride, rp.src1RepStride};
    CastOperand(src0, plan, s0, Acc::kRead, loc, call);
    CastOperand(src1, plan, s1, Acc::kRead, loc, call);
    CastOperand(dst, plan, sd, Acc::kWrite, loc, call);
    T* d = dst.SimData();
    const U* a = src0.SimData();
    const U* b = src1.SimData();
    Run0<Wider<T, U>>(plan, [&](uint32_t r, uint32_t j) {
        d[CastAt<T>(r, j, sd)] = ConvertOne<T, U>(
            op(a[CastAt<U>(r, j, s0)], b[CastAt<U>(r, j, s1)]), AscendC::RoundMode::CAST_NONE);
    });
}

}  // namespace recsdk::sim

namespace AscendC {

#define RECSDK_SIM_FUSED_CAST(NAME, TYPES, OP)                                                    \
    template <typename T, typename U>                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0,                       \
                     const LocalTensor<U>& src1, const uint32_t count,                            \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        recsdk::sim::FusedCastTypes<recsdk::sim::TYPES<T, U>, T, U>(#NAME, loc);                  \
        recsdk::sim::FusedCastCount(#NAME, dst, src0, src1, count, recsdk::sim::OP{}, loc);       \
    }                                                                                             \
    template <typename T, typename U, bool isSetMask = true>                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0,                       \
                     const LocalTensor<U>& src1, uint64_t mask[], const uint8_t repeatTime,       \
                     const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {      \
        using W = recsdk::sim::Wider<T, U>;                                                       \
        recsdk::sim::FusedCastTypes<recsdk::sim::TYPES<T, U>, T, U>(#NAME, loc);                  \
        recsdk::sim::FusedCastLevel0(                                                             \
            #NAME, dst, src0, src1,                                                               \
            recsdk::sim::PlanFromBits<W>(mask, repeatTime, isSetMask, #NAME, loc), repeatParams,  \
            recsdk::sim::OP{}, loc);                                                              \
    }                                                                                             \
    template <typename T, typename U, bool isSetMask = true>                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src0,                       \
                     const LocalTensor<U>& src1, uint64_t mask, const uint8_t repeatTime,         \
                     const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {      \
        using W = recsdk::sim::Wider<T, U>;                                                       \
        recsdk::sim::FusedCastTypes<recsdk::sim::TYPES<T, U>, T, U>(#NAME, loc);                  \
        recsdk::sim::FusedCastLevel0(                                                             \
            #NAME, dst, src0, src1,                                                               \
            recsdk::sim::PlanFromCount<W>(mask, repeatTime, isSetMask, #NAME, loc), repeatParams, \
            recsdk::sim::OP{}, loc);                                                              \
    }

RECSDK_SIM_FUSED_CAST(MulCast, kMulCastTypes, MulOp)
RECSDK_SIM_FUSED_CAST(AddReluCast, kReluCastTypes, AddReluOp)
RECSDK_SIM_FUSED_CAST(SubReluCast, kReluCastTypes, SubReluOp)
#undef RECSDK_SIM_FUSED_CAST

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_CAST_H
