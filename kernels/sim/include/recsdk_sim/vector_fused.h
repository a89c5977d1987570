// Compound and logic instructions: AddRelu, SubRelu, FusedMulAdd, MulAddRelu, MulAddDst, Axpy,
// And, Or, Not, Rsqrt, each in its count form and its two level-0 forms (mask array / mask count,
// repeatTime, repeat parameters); and Brcb (its only form: repeatTime and BrcbRepeatParams).
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/复合计算/, 逻辑计算/, 基础算术/Rsqrt.md):
// - AddRelu / SubRelu: dst = max(src0 ± src1, 0); int16_t, half, float.
// - FusedMulAdd: dst = src0 * dst + src1; MulAddRelu: dst = max(src0 * dst + src1, 0); half,
//   float. MulAddDst: dst = src0 * src1 + dst; Axpy: dst = scalar * src + dst; same-type half or
//   float, or half sources into a float dst (the count form only here: a level-0 repeat of the
//   mixed form reads 64 half lanes, a layout the level-0 code below does not model, so it is
//   refused).
// - And / Or / Not: bitwise on int16_t / uint16_t. Rsqrt: dst = 1 / sqrt(src); half, float.
// Floating results are computed in double and rounded once to the destination type; int16_t
// AddRelu / SubRelu wrap as the hardware's 16-bit adder (overflow is not documented).
#ifndef RECSDK_SIM_VECTOR_FUSED_H
#define RECSDK_SIM_VECTOR_FUSED_H

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "recsdk_sim/vector_masked.h"

namespace recsdk::sim {

template <typename T>
constexpr bool kI16Type = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>;
template <typename T>
constexpr bool kReluArith = std::is_same_v<T, int16_t> || kHalfFloat<T>;

// The value an operand contributes to the arithmetic: double for floating types, int64_t for
// integers.
template <typename T>
using Wide = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

template <typename T>
inline Wide<T> W(T v) {
    if constexpr (std::is_integral_v<T>)
        return static_cast<int64_t>(v);
    else
        return static_cast<double>(static_cast<float>(v));
}

template <typename T, typename V>
inline T Narrow(V v) {
    if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<int64_t>(v));
    else
        return static_cast<T>(static_cast<float>(v));
}

// dst[i] = f(s0[i], s1[i], dst[i]) over the first `count` elements; s1 may be null (unary).
template <bool kReadsDst, typename D, typename S, typename F>
inline void ApplyCount(const char* call, const AscendC::LocalTensor<D>& dst,
                       const AscendC::LocalTensor<S>& s0, const AscendC::LocalTensor<S>* s1,
                       int32_t count, F&& f, const SrcLoc& loc) {
    VecOperand(dst, count, call, loc);
    VecOperand(s0, count, call, loc);
    if (s1 != nullptr)
        VecOperand(*s1, count, call, loc);
    VecReadSrc(s0, dst, count, call, loc);
    if (s1 != nullptr)
        VecReadSrc(*s1, dst, count, call, loc);
    if constexpr (kReadsDst)
        VecRead(dst, count, call, loc);
    VecWrite(dst, count, call, loc);
    D* d = dst.SimData();
    const S* a = s0.SimData();
    const S* b = s1 != nullptr ? s1->SimData() : nullptr;
    for (int32_t i = 0; i < count; ++i)
        d[i] = f(a[i], b != nullptr ? b[i] : S{}, d[i]);
    VecDone(count, sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
}

// The level-0 form over the lanes of `plan` (same-type operands).
template <bool kReadsDst, typename T, typename P, typename F>
inline void ApplyLevel0(const char* call, const AscendC::LocalTensor<T>& dst,
                        const AscendC::LocalTensor<T>& s0, const AscendC::LocalTensor<T>* s1,
                        const P& plan, const Lane0& sd, const Lane0& a0, const Lane0& a1, F&& f,
                        const SrcLoc& loc) {
    Operand0(s0, plan, a0, Acc::kRead, call, loc);
    if (s1 != nullptr)
        Operand0(*s1, plan, a1, Acc::kRead, call, loc);
    if constexpr (kReadsDst)
        Operand0(dst, plan, sd, Acc::kRead, call, loc);
    Operand0(dst, plan, sd, Acc::kWrite, call, loc);
    T* d = dst.SimData();
    const T* a = s0.SimData();
    const T* b = s1 != nullptr ? s1->SimData() : nullptr;
    Run0<T>(plan, [&](uint32_t r, uint32_t j) {
        T& out = d[P::At(r, j, sd)];
        out = f(a[P::At(r, j, a0)], b != nullptr ? b[P::At(r, j, a1)] : T{}, out);
    });
}

template <typename D, typename S>
constexpr bool kMulAddTypes = (std::is_same_v<D, S> && kHalfFloat<D>) ||
                              (std::is_same_v<D, float> && std::is_same_v<S, half>);

}  // namespace recsdk::sim

namespace AscendC {

// Binary instructions: EXPR of x (src0), y (src1) and o (dst's old value), all Wide<T>.
#define RECSDK_SIM_BINARY_EXT(NAME, OK, READS_DST, EXPR)                                     \
    template <typename T>                                                                    \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,                  \
                     const LocalTensor<T>& src1, const int32_t& count,                       \
                     recsdk::sim::SrcLoc loc = {}) {                                         \
        using namespace recsdk::sim;                                                         \
        VecType<OK<T>, T>(#NAME, loc);                                                       \
        if constexpr (OK<T>)                                                                 \
            ApplyCount<READS_DST>(                                                           \
                #NAME, dst, src0, &src1, count,                                              \
                [](T xs, T ys, T os) {                                                       \
                    const auto x = W(xs), y = W(ys), o = W(os);                              \
                    (void)o;                                                                 \
                    return Narrow<T>(EXPR);                                                  \
                },                                                                           \
                loc);                                                                        \
    }                                                                                        \
    template <typename T, typename P>                                                        \
    inline void NAME##Level0(const LocalTensor<T>& dst, const LocalTensor<T>& src0,          \
                             const LocalTensor<T>& src1, const P& plan,                      \
                             const BinaryRepeatParams& rp, const recsdk::sim::SrcLoc& loc) { \
        using namespace recsdk::sim;                                                         \
        VecType<OK<T>, T>(#NAME, loc);                                                       \
        RefuseStrideModes(rp, #NAME, loc);                                                   \
        if constexpr (OK<T>)                                                                 \
            ApplyLevel0<READS_DST>(                                                          \
                #NAME, dst, src0, &src1, plan, {rp.dstBlkStride, rp.dstRepStride},           \
                {rp.src0BlkStride, rp.src0RepStride}, {rp.src1BlkStride, rp.src1RepStride},  \
                [](T xs, T ys, T os) {                                                       \
                    const auto x = W(xs), y = W(ys), o = W(os);                              \
                    (void)o;                                                                 \
                    return Narrow<T>(EXPR);                                                  \
                },                                                                           \
                loc);                                                                        \
    }                                                                                        \
    template <typename T, bool isSetMask = true>                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,                  \
                     const LocalTensor<T>& src1, uint64_t mask[], const uint8_t repeatTime,  \
                     const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) { \
        NAME##Level0(dst, src0, src1,                                                        \
                     recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, #NAME, loc),  \
                     repeatParams, loc);                                                     \
    }                                                                                        \
    template <typename T, bool isSetMask = true>                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,                  \
                     const LocalTensor<T>& src1, uint64_t mask, const uint8_t repeatTime,    \
                     const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) { \
        NAME##Level0(dst, src0, src1,                                                        \
                     recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, #NAME, loc), \
                     repeatParams, loc);                                                     \
    }

RECSDK_SIM_BINARY_EXT(AddRelu, recsdk::sim::kReluArith, false, (x + y > 0 ? x + y : 0))
RECSDK_SIM_BINARY_EXT(SubRelu, recsdk::sim::kReluArith, false, (x - y > 0 ? x - y : 0))
RECSDK_SIM_BINARY_EXT(FusedMulAdd, recsdk::sim::kHalfFloat, true, x* o + y)
RECSDK_SIM_BINARY_EXT(MulAddRelu, recsdk::sim::kHalfFloat, true, (x * o + y > 0 ? x * o + y : 0))
RECSDK_SIM_BINARY_EXT(And, recsdk::sim::kI16Type, false, (x & y))
RECSDK_SIM_BINARY_EXT(Or, recsdk::sim::kI16Type, false, (x | y))
#undef RECSDK_SIM_BINARY_EXT

// Unary instructions: EXPR of x (src), Wide<T>.
#define RECSDK_SIM_UNARY_EXT(NAME, OK, EXPR)                                                      \
    template <typename T>                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,  \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        using namespace recsdk::sim;                                                              \
        VecType<OK<T>, T>(#NAME, loc);                                                            \
        if constexpr (OK<T>)                                                                      \
            ApplyCount<false>(                                                                    \
                #NAME, dst, src, static_cast<const LocalTensor<T>*>(nullptr), count,              \
                [](T xs, T, T) {                                                                  \
                    const auto x = W(xs);                                                         \
                    return Narrow<T>(EXPR);                                                       \
                },                                                                                \
                loc);                                                                             \
    }                                                                                             \
    template <typename T, typename P>                                                             \
    inline void NAME##Level0(const LocalTensor<T>& dst, const LocalTensor<T>& src, const P& plan, \
                             const UnaryRepeatParams& rp, const recsdk::sim::SrcLoc& loc) {       \
        using namespace recsdk::sim;                                                              \
        VecType<OK<T>, T>(#NAME, loc);                                                            \
        RefuseStrideModes(rp, #NAME, loc);                                                        \
        if constexpr (OK<T>)                                                                      \
            ApplyLevel0<false>(                                                                   \
                #NAME, dst, src, static_cast<const LocalTensor<T>*>(nullptr), plan,               \
                {rp.dstBlkStride, rp.dstRepStride}, {rp.srcBlkStride, rp.srcRepStride}, {0, 0},   \
                [](T xs, T, T) {                                                                  \
                    const auto x = W(xs);                                                         \
                    return Narrow<T>(EXPR);                                                       \
                },                                                                                \
                loc);                                                                             \
    }                                                                                             \
    template <typename T, bool isSetMask = true>                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[],       \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,             \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        NAME##Level0(dst, src,                                                                    \
                     recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, #NAME, loc),       \
                     repeatParams, loc);                                                          \
    }                                                                                             \
    template <typename T, bool isSetMask = true>                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,         \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,             \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        NAME##Level0(dst, src,                                                                    \
                     recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, #NAME, loc),      \
                     repeatParams, loc);                                                          \
    }

RECSDK_SIM_UNARY_EXT(Not, recsdk::sim::kI16Type, (~x))
RECSDK_SIM_UNARY_EXT(Rsqrt, recsdk::sim::kHalfFloat, (1.0 / std::sqrt(x)))
#undef RECSDK_SIM_UNARY_EXT

// ---- MulAddDst, Axpy (MulAddDst.md, Axpy.md): dst accumulates; U the sources' type ------------

template <typename T, typename U>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0,
                      const LocalTensor<U>& src1, const int32_t& count,
                      recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kMulAddTypes<T, U>, U>("MulAddDst", loc);
    VecOperand(dst, count, "MulAddDst", loc);
    VecOperand(src0, count, "MulAddDst", loc);
    VecOperand(src1, count, "MulAddDst", loc);
    VecRead(src0, count, "MulAddDst", loc);
    VecRead(src1, count, "MulAddDst", loc);
    VecRead(dst, count, "MulAddDst", loc);
    VecWrite(dst, count, "MulAddDst", loc);
    T* d = dst.SimData();
    const U* a = src0.SimData();
    const U* b = src1.SimData();
    for (int32_t i = 0; i < count; ++i)
        d[i] = Narrow<T>(W(a[i]) * W(b[i]) + W(d[i]));
    VecDone(count, sizeof(T));
}
template <typename T, typename U>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue,
                 const int32_t& count, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kMulAddTypes<T, U>, U>("Axpy", loc);
    VecOperand(dst, count, "Axpy", loc);
    VecOperand(src, count, "Axpy", loc);
    VecRead(src, count, "Axpy", loc);
    VecRead(dst, count, "Axpy", loc);
    VecWrite(dst, count, "Axpy", loc);
    T* d = dst.SimData();
    const U* a = src.SimData();
    const double s = W(scalarValue);
    for (int32_t i = 0; i < count; ++i)
        d[i] = Narrow<T>(s * W(a[i]) + W(d[i]));
    VecDone(count, sizeof(T));
}

template <typename T, typename U>
inline void RefuseMixedLevel0(const char* call, const recsdk::sim::SrcLoc& loc) {
    if constexpr (!std::is_same_v<T, U>) {
        recsdk::sim::Fail(call, loc,
                          "the level-0 form with half sources into a float dst (64 lanes a "
                          "repeat) is not emulated: use the count form");
    }
}

template <typename T, typename U, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0,
                      const LocalTensor<U>& src1, const uint64_t mask[], const uint8_t repeatTime,
                      const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kMulAddTypes<T, U>, U>("MulAddDst", loc);
    RefuseMixedLevel0<T, U>("MulAddDst", loc);
    if constexpr (std::is_same_v<T, U>) {
        RefuseStrideModes(repeatParams, "MulAddDst", loc);
        const auto& rp = repeatParams;
        ApplyLevel0<true>(
            "MulAddDst", dst, src0, &src1,
            PlanFromBits<T>(mask, repeatTime, isSetMask, "MulAddDst", loc),
            {rp.dstBlkStride, rp.dstRepStride}, {rp.src0BlkStride, rp.src0RepStride},
            {rp.src1BlkStride, rp.src1RepStride},
            [](T x, T y, T o) { return Narrow<T>(W(x) * W(y) + W(o)); }, loc);
    }
}
template <typename T, typename U, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0,
                      const LocalTensor<U>& src1, uint64_t mask, const uint8_t repeatTime,
                      const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kMulAddTypes<T, U>, U>("MulAddDst", loc);
    RefuseMixedLevel0<T, U>("MulAddDst", loc);
    if constexpr (std::is_same_v<T, U>) {
        const auto plan = PlanFromCount<T>(mask, repeatTime, isSetMask, "MulAddDst", loc);
        RefuseStrideModes(repeatParams, "MulAddDst", loc);
        const auto& rp = repeatParams;
        ApplyLevel0<true>(
            "MulAddDst", dst, src0, &src1, plan, {rp.dstBlkStride, rp.dstRepStride},
            {rp.src0BlkStride, rp.src0RepStride}, {rp.src1BlkStride, rp.src1RepStride},
            [](T x, T y, T o) { return Narrow<T>(W(x) * W(y) + W(o)); }, loc);
    }
}
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue,
                 uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,
                 recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kMulAddTypes<T, U>, U>("Axpy", loc);
    RefuseMixedLevel0<T, U>("Axpy", loc);
    if constexpr (std::is_same_v<T, U>) {
        RefuseStrideModes(repeatParams, "Axpy", loc);
        const auto& rp = repeatParams;
        const double s = W(scalarValue);
        ApplyLevel0<true>(
            "Axpy", dst, src, static_cast<const LocalTensor<T>*>(nullptr),
            PlanFromBits<T>(mask, repeatTime, isSetMask, "Axpy", loc),
            {rp.dstBlkStride, rp.dstRepStride}, {rp.srcBlkStride, rp.srcRepStride}, {0, 0},
            [s](T x, T, T o) { return Narrow<T>(s * W(x) + W(o)); }, loc);
    }
}
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue,
                 uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,
                 recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kMulAddTypes<T, U>, U>("Axpy", loc);
    RefuseMixedLevel0<T, U>("Axpy", loc);
    if constexpr (std::is_same_v<T, U>) {
        RefuseStrideModes(repeatParams, "Axpy", loc);
        const auto& rp = repeatParams;
        const double s = W(scalarValue);
        ApplyLevel0<true>(
            "Axpy", dst, src, static_cast<const LocalTensor<T>*>(nullptr),
            PlanFromCount<T>(mask, repeatTime, isSetMask, "Axpy", loc),
            {rp.dstBlkStride, rp.dstRepStride}, {rp.srcBlkStride, rp.srcRepStride}, {0, 0},
            [s](T x, T, T o) { return Narrow<T>(s * W(x) + W(o)); }, loc);
    }
}

// ---- Brcb (数据填充/Brcb.md): element i * 8 + j of src fills the 32-byte block j of repeat i of
// dst, at (i * dstRepStride + j * dstBlkStride) blocks (a dstBlkStride of 0 counts as 1) ---------

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                 const BrcbRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kDuplicateType<T>, T>("Brcb", loc);
    dst.Validate("Brcb", loc);
    dst.InUb("Brcb", loc);
    CheckUbAligned(dst.SimData(), "Brcb", loc, "destination");
    src.Validate("Brcb", loc);
    src.InUb("Brcb", loc);
    CheckUbAligned(src.SimData(), "Brcb", loc, "source");
    if (repeatTime == 0)
        return;
    constexpr uint64_t blk = 32 / sizeof(T);
    const uint64_t bs = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    const uint64_t rs = repeatParams.dstRepStride;
    const uint64_t n = uint64_t(repeatTime) * 8;
    src.CheckSpan(n, "Brcb", loc);
    uint64_t end = 0;
    for (uint64_t i : {uint64_t(0), uint64_t(repeatTime - 1)}) {
        const uint64_t e = (i * rs + 7 * bs) * blk + blk;
        end = e > end ? e : end;
    }
    dst.CheckSpan(end, "Brcb", loc);
    src.SimAccess(0, n * sizeof(T), Pipe::V, Acc::kRead, "Brcb", loc);
    dst.SimAccess(0, end * sizeof(T), Pipe::V, Acc::kWrite, "Brcb", loc);
    std::vector<T> v(src.SimData(), src.SimData() + n);  // dst may overlap src
    T* d = dst.SimData();
    for (uint64_t i = 0; i < repeatTime; ++i) {
        for (uint64_t j = 0; j < 8; ++j) {
            T* block = d + (i * rs + j * bs) * blk;
            for (uint64_t e = 0; e < blk; ++e)
                block[e] = v[i * 8 + j];
        }
    }
    auto& s = Stats();
    s.vector_elements += uint64_t(repeatTime) * 256 / sizeof(T);
    s.vector_repeats += repeatTime;
    ++s.vector_instrs;
    ModelVector(repeatTime);
}

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_FUSED_H
