// Compare, Compares / CompareScalar, Select, the CmpMask register (GetCmpMask, SetCmpMask) and
// GatherMask.
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/比较与选择/, impl/basic_api/dav_c220/
// kernel_operator_vec_cmp_impl.h and kernel_operator_vec_cmpsel_impl.h for what the 910B does):
// - Compare / Compares write one bit per compared element into a uint8_t (Compare: also int8_t)
//   tensor, element i of the run in bit i % 8 of byte i / 8 (little-endian). On Atlas A2/A3 the
//   mask argument is a reserved parameter with no effect: every lane of every repeat is compared,
//   and a repeat's 256 / sizeof(T) bits follow the previous repeat's in dst whatever the dst
//   strides (the count form issues up to 252 repeats with the default dstRepStride of 8 and
//   expects the bits packed: kernel_operator_vec_cmp_impl.h, CompareCompute). The count form
//   compares whole 256-byte repeats only; a tail shorter than 256 bytes is not compared.
//   Types: half and float in every CMPMODE, int32_t in CMPMODE::EQ only.
// - Compare without dst puts one repeat's bits into the 128-bit CmpMask register (half/float);
//   GetCmpMask stores the register's 16 bytes, SetCmpMask loads them.
// - Select (half/float; selMask any of uint8/16/32/64_t, read as bits): bit set -> src0, clear ->
//   src1. VSEL_CMPMASK_SPR: every repeat uses the first 256 / sizeof(T) bits of selMask (the
//   register forms: of the CmpMask register). VSEL_TENSOR_SCALAR_MODE (src1 a scalar) and
//   VSEL_TENSOR_TENSOR_MODE: repeat r uses bits [r * lanes, (r + 1) * lanes) of selMask. Lanes the
//   mask leaves out keep dst's value. The register form of mode 1 takes the scalar from the first
//   element of the CmpMask register (the implementation broadcasts the scalar into a block and
//   loads it with set_cmpmask).
#ifndef RECSDK_SIM_VECTOR_CMPSEL_H
#define RECSDK_SIM_VECTOR_CMPSEL_H

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "recsdk_sim/vector_masked.h"

namespace AscendC {

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };

enum class SELMODE : uint8_t {
    VSEL_CMPMASK_SPR = 0,
    VSEL_TENSOR_SCALAR_MODE,
    VSEL_TENSOR_TENSOR_MODE,
};

}  // namespace AscendC

namespace recsdk::sim {

inline CmpMaskState& CmpMaskReg() {
    return Core().cmp_mask;
}

template <typename T>
inline void CmpType(AscendC::CMPMODE mode, const char* call, const SrcLoc& loc) {
    if constexpr (std::is_same_v<T, int32_t>) {
        if (mode != AscendC::CMPMODE::EQ)
            Fail(call, loc, "int32_t is compared in CMPMODE::EQ only on Atlas A2/A3");
    } else {
        VecType<kHalfFloat<T>, T>(call, loc);
    }
}

template <typename T>
inline bool CmpHolds(AscendC::CMPMODE mode, T a, T b) {
    using V = std::conditional_t<std::is_integral_v<T>, int64_t, float>;
    const V x = static_cast<V>(a), y = static_cast<V>(b);
    switch (mode) {
        case AscendC::CMPMODE::LT:
            return x < y;
        case AscendC::CMPMODE::GT:
            return x > y;
        case AscendC::CMPMODE::EQ:
            return x == y;
        case AscendC::CMPMODE::LE:
            return x <= y;
        case AscendC::CMPMODE::GE:
            return x >= y;
        case AscendC::CMPMODE::NE:
            return x != y;
    }
    return false;
}

// Every lane of `repeats` repeats: Compare's mask is not used on A2/A3.
template <typename T>
inline LanePlan<T> AllLanes(uint32_t repeats, const char* call, const SrcLoc& loc) {
    if (MaskRegs().counter) {
        Fail(call, loc,
             "counter mask mode: what the comparison does with it is not documented for Atlas "
             "A2/A3 (call SetMaskNorm first)");
    }
    LanePlan<T> p;
    p.bits[0] = ~uint64_t{0};
    p.bits[1] = sizeof(T) == 2 ? ~uint64_t{0} : 0;
    p.repeats = repeats;
    return p;
}

// Compare / Compares into a bit tensor. src1 is a tensor (Compare) or null (Compares: scalar).
template <typename T, typename U>
inline void CompareBits(const char* call, const AscendC::LocalTensor<U>& dst,
                        const AscendC::LocalTensor<T>& src0, const AscendC::LocalTensor<T>* src1,
                        T scalar, AscendC::CMPMODE mode, uint32_t repeats, const Lane0& s0,
                        const Lane0& s1, const SrcLoc& loc) {
    CmpType<T>(mode, call, loc);
    const LanePlan<T> plan = AllLanes<T>(repeats, call, loc);
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    if (repeats == 0)
        return;  // A2/A3: a NOP, dst untouched
    Operand0(src0, plan, s0, Acc::kRead, call, loc);
    if (src1 != nullptr)
        Operand0(*src1, plan, s1, Acc::kRead, call, loc);
    constexpr uint32_t kBytesPerRepeat = LanePlan<T>::kLanes / 8;
    const uint64_t bytes = uint64_t(repeats) * kBytesPerRepeat;
    dst.CheckSpan((bytes + sizeof(U) - 1) / sizeof(U), call, loc);
    dst.SimAccess(0, bytes, Pipe::V, Acc::kWrite, call, loc);
    std::vector<uint8_t> out(bytes, 0);
    const T* a = src0.SimData();
    const T* b = src1 != nullptr ? src1->SimData() : nullptr;
    Run0<T>(plan, [&](uint32_t r, uint32_t j) {
        const T y = b != nullptr ? b[LanePlan<T>::At(r, j, s1)] : scalar;
        if (CmpHolds(mode, a[LanePlan<T>::At(r, j, s0)], y)) {
            const uint64_t bit = uint64_t(r) * LanePlan<T>::kLanes + j;
            out[bit / 8] |= uint8_t(1u << (bit % 8));
        }
    });
    std::memcpy(reinterpret_cast<uint8_t*>(dst.SimData()), out.data(), bytes);
}

// Compare into the CmpMask register: one repeat, the lanes of a full mask.
template <typename T, typename P>
inline void CompareToRegister(const AscendC::LocalTensor<T>& src0,
                              const AscendC::LocalTensor<T>& src1, AscendC::CMPMODE mode,
                              const P& plan, const AscendC::BinaryRepeatParams& rp,
                              const SrcLoc& loc) {
    const char* call = "Compare";
    VecType<kHalfFloat<T>, T>(call, loc);
    RefuseStrideModes(rp, call, loc);
    if (plan.counter) {
        Fail(call, loc,
             "counter mask mode: the register form's use of it is not documented (call "
             "SetMaskNorm first)");
    }
    for (uint32_t j = 0; j < P::kLanes; ++j) {
        if (!plan.On(0, j)) {
            Fail(call, loc,
                 "a mask that leaves lanes out: the CmpMask bits of those lanes are not "
                 "documented (pass a full mask)");
        }
    }
    const Lane0 s0{rp.src0BlkStride, rp.src0RepStride}, s1{rp.src1BlkStride, rp.src1RepStride};
    P one = plan;
    one.repeats = 1;
    Operand0(src0, one, s0, Acc::kRead, call, loc);
    Operand0(src1, one, s1, Acc::kRead, call, loc);
    CmpMaskState& reg = CmpMaskReg();
    std::memset(reg.bytes, 0, sizeof(reg.bytes));
    const T* a = src0.SimData();
    const T* b = src1.SimData();
    Run0<T>(one, [&](uint32_t r, uint32_t j) {
        if (CmpHolds(mode, a[P::At(r, j, s0)], b[P::At(r, j, s1)]))
            reg.bytes[j / 8] |= uint8_t(1u << (j % 8));
    });
}

template <typename U>
constexpr bool kSelMaskType = std::is_same_v<U, uint8_t> || std::is_same_v<U, uint16_t> ||
                              std::is_same_v<U, uint32_t> || std::is_same_v<U, uint64_t>;

// Select over the lanes of `plan`. sel: the selMask tensor, or null for the CmpMask register
// (mode 0). src1: a tensor (modes 0 and 2) or null (mode 1: `scalar`).
template <typename T, typename U, typename P>
inline void SelectLanes(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>* sel,
                        const AscendC::LocalTensor<T>& src0, const AscendC::LocalTensor<T>* src1,
                        T scalar, AscendC::SELMODE mode, const P& plan,
                        const AscendC::BinaryRepeatParams& rp, const SrcLoc& loc) {
    static_assert(kSelMaskType<U>, "Select: selMask is uint8_t, uint16_t, uint32_t or uint64_t");
    const char* call = "Select";
    VecType<kHalfFloat<T>, T>(call, loc);
    RefuseStrideModes(rp, call, loc);
    const bool scalar_mode = mode == AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE;
    if (scalar_mode != (src1 == nullptr)) {
        Fail(call, loc,
             scalar_mode ? "VSEL_TENSOR_SCALAR_MODE takes a scalar src1"
                         : "a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
    }
    if (uint8_t(mode) > 2)
        Fail(call, loc, "selMode " + std::to_string(int(mode)) + " is not a SELMODE");
    const Lane0 sd{rp.dstBlkStride, rp.dstRepStride};
    const Lane0 s0{rp.src0BlkStride, rp.src0RepStride}, s1{rp.src1BlkStride, rp.src1RepStride};
    if (plan.repeats == 0 || plan.HighestLane() == 0)
        return;
    Operand0(src0, plan, s0, Acc::kRead, call, loc);
    if (src1 != nullptr)
        Operand0(*src1, plan, s1, Acc::kRead, call, loc);
    // The selMask bits the call consumes: one repeat's in mode 0, one per repeat otherwise.
    const bool per_repeat = mode != AscendC::SELMODE::VSEL_CMPMASK_SPR;
    const uint64_t sel_bits =
        uint64_t(per_repeat ? plan.repeats - 1 : 0) * P::kLanes + plan.HighestLane();
    const uint64_t sel_bytes = (sel_bits + 7) / 8;
    std::vector<uint8_t> bits(sel_bytes, 0);
    if (sel != nullptr) {
        sel->Validate(call, loc);
        sel->InUb(call, loc);
        CheckUbAligned(sel->SimData(), call, loc, "selMask");
        sel->CheckSpan((sel_bytes + sizeof(U) - 1) / sizeof(U), call, loc);
        sel->SimAccess(0, sel_bytes, Pipe::V, Acc::kRead, call, loc);
        std::memcpy(bits.data(), sel->SimData(), sel_bytes);
    } else {
        std::memcpy(bits.data(), CmpMaskReg().bytes, sel_bytes < 16 ? sel_bytes : 16);
    }
    Operand0(dst, plan, sd, Acc::kWrite, call, loc);
    T* d = dst.SimData();
    const T* a = src0.SimData();
    const T* b = src1 != nullptr ? src1->SimData() : nullptr;
    Run0<T>(plan, [&](uint32_t r, uint32_t j) {
        const uint64_t k = (per_repeat ? uint64_t(r) * P::kLanes : 0) + j;
        const bool take0 = (bits[k / 8] >> (k % 8)) & 1u;
        d[P::At(r, j, sd)] =
            take0 ? a[P::At(r, j, s0)] : (b != nullptr ? b[P::At(r, j, s1)] : scalar);
    });
}

// The count forms' lanes: the first `count` elements, contiguous, in counter mode.
template <typename T>
inline LanePlan<T> CountPlan(uint32_t count) {
    LanePlan<T> p;
    p.counter = true;
    p.count = count;
    p.repeats = static_cast<uint32_t>((uint64_t(count) + p.kLanes - 1) / p.kLanes);
    return p;
}

}  // namespace recsdk::sim

namespace AscendC {

// ---- Compare (Compare.md) -----------------------------------------------------------------------

template <typename U>
constexpr bool kCompareDst = std::is_same_v<U, uint8_t> || std::is_same_v<U, int8_t>;

template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                    const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
                    uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                    recsdk::sim::SrcLoc loc = {}) {
    static_assert(kCompareDst<U>, "Compare: dst is uint8_t or int8_t (one bit per element)");
    (void)mask;  // reserved on A2/A3
    recsdk::sim::RefuseStrideModes(repeatParams, "Compare", loc);
    recsdk::sim::CompareBits("Compare", dst, src0, &src1, T{}, cmpMode, repeatTime,
                             {repeatParams.src0BlkStride, repeatParams.src0RepStride},
                             {repeatParams.src1BlkStride, repeatParams.src1RepStride}, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                    const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
                    uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                    recsdk::sim::SrcLoc loc = {}) {
    const uint64_t bits[2] = {mask, 0};
    Compare<T, U, isSetMask>(dst, src0, src1, cmpMode, bits, repeatTime, repeatParams, loc);
}
template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                    const LocalTensor<T>& src1, CMPMODE cmpMode, uint32_t count,
                    recsdk::sim::SrcLoc loc = {}) {
    static_assert(kCompareDst<U>, "Compare: dst is uint8_t or int8_t (one bit per element)");
    recsdk::sim::CompareBits("Compare", dst, src0, &src1, T{}, cmpMode,
                             static_cast<uint32_t>(uint64_t(count) * sizeof(T) / 256), {1, 8},
                             {1, 8}, loc);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask[], const BinaryRepeatParams& repeatParams,
                    recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::CompareToRegister(src0, src1, cmpMode,
                                   recsdk::sim::PlanFromBits<T>(mask, 1, isSetMask, "Compare", loc),
                                   repeatParams, loc);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask, const BinaryRepeatParams& repeatParams,
                    recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::CompareToRegister(
        src0, src1, cmpMode, recsdk::sim::PlanFromCount<T>(mask, 1, isSetMask, "Compare", loc),
        repeatParams, loc);
}

// GetCmpMask / SetCmpMask (GetCmpMask(ISASI).md, SetCmpMask(ISASI).md): the register's 16 bytes.
template <typename T>
inline void GetCmpMask(const LocalTensor<T>& dst, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(sizeof(T) <= 4, "GetCmpMask: a b8, b16 or b32 tensor");
    dst.Validate("GetCmpMask", loc);
    dst.InUb("GetCmpMask", loc);
    dst.CheckSpan(16 / sizeof(T), "GetCmpMask", loc);
    dst.SimAccess(0, 16, Pipe::V, Acc::kWrite, "GetCmpMask", loc);
    std::memcpy(reinterpret_cast<uint8_t*>(dst.SimData()), CmpMaskReg().bytes, 16);
    VecDone(1, 16);
}
template <typename T>
inline void SetCmpMask(const LocalTensor<T>& src, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(sizeof(T) <= 4, "SetCmpMask: a b8, b16 or b32 tensor");
    src.Validate("SetCmpMask", loc);
    src.InUb("SetCmpMask", loc);
    src.CheckSpan(16 / sizeof(T), "SetCmpMask", loc);
    src.SimAccess(0, 16, Pipe::V, Acc::kRead, "SetCmpMask", loc);
    std::memcpy(CmpMaskReg().bytes, reinterpret_cast<const uint8_t*>(src.SimData()), 16);
    VecDone(1, 16);
}

// ---- Compares / CompareScalar (Compares.md; CompareScalar is its former name) -------------------

#define RECSDK_SIM_COMPARES(NAME)                                                                  \
    template <typename T, typename U, bool isSetMask = true>                                       \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar,    \
                     CMPMODE cmpMode, const uint64_t mask[], uint8_t repeatTime,                   \
                     const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {        \
        static_assert(std::is_same_v<U, uint8_t>, #NAME ": dst is uint8_t (one bit per element)"); \
        (void)mask; /* reserved on A2/A3 */                                                        \
        recsdk::sim::RefuseStrideModes(repeatParams, #NAME, loc);                                  \
        recsdk::sim::CompareBits(                                                                  \
            #NAME, dst, src0, static_cast<const LocalTensor<T>*>(nullptr), src1Scalar, cmpMode,    \
            repeatTime, {repeatParams.srcBlkStride, repeatParams.srcRepStride}, {1, 8}, loc);      \
    }                                                                                              \
    template <typename T, typename U, bool isSetMask = true>                                       \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar,    \
                     CMPMODE cmpMode, const uint64_t mask, uint8_t repeatTime,                     \
                     const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {        \
        const uint64_t bits[2] = {mask, 0};                                                        \
        NAME<T, U, isSetMask>(dst, src0, src1Scalar, cmpMode, bits, repeatTime, repeatParams,      \
                              loc);                                                                \
    }                                                                                              \
    template <typename T, typename U>                                                              \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar,    \
                     CMPMODE cmpMode, uint32_t count, recsdk::sim::SrcLoc loc = {}) {              \
        static_assert(std::is_same_v<U, uint8_t>, #NAME ": dst is uint8_t (one bit per element)"); \
        recsdk::sim::CompareBits(                                                                  \
            #NAME, dst, src0, static_cast<const LocalTensor<T>*>(nullptr), src1Scalar, cmpMode,    \
            static_cast<uint32_t>(uint64_t(count) * sizeof(T) / 256), {1, 8}, {1, 8}, loc);        \
    }
RECSDK_SIM_COMPARES(Compares)
RECSDK_SIM_COMPARES(CompareScalar)
#undef RECSDK_SIM_COMPARES

// ---- Select (Select.md) -------------------------------------------------------------------------

template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, const LocalTensor<T>& src1, SELMODE selMode,
                   uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                   recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::SelectLanes(
        dst, &selMask, src0, &src1, T{}, selMode,
        recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "Select", loc), repeatParams,
        loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, const LocalTensor<T>& src1, SELMODE selMode,
                   uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                   recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::SelectLanes(
        dst, &selMask, src0, &src1, T{}, selMode,
        recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "Select", loc), repeatParams,
        loc);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, const LocalTensor<T>& src1, SELMODE selMode,
                   uint32_t count, recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::SelectLanes(dst, &selMask, src0, &src1, T{}, selMode,
                             recsdk::sim::CountPlan<T>(count), BinaryRepeatParams{}, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, T src1, SELMODE selMode, uint64_t mask[],
                   uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                   recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::SelectLanes(
        dst, &selMask, src0, static_cast<const LocalTensor<T>*>(nullptr), src1, selMode,
        recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "Select", loc), repeatParams,
        loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, T src1, SELMODE selMode, uint64_t mask,
                   uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                   recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::SelectLanes(
        dst, &selMask, src0, static_cast<const LocalTensor<T>*>(nullptr), src1, selMode,
        recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "Select", loc), repeatParams,
        loc);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, T src1, SELMODE selMode, uint32_t count,
                   recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::SelectLanes(dst, &selMask, src0, static_cast<const LocalTensor<T>*>(nullptr), src1,
                             selMode, recsdk::sim::CountPlan<T>(count), BinaryRepeatParams{}, loc);
}
// The register forms: the lanes from SetVectorMask, the bits (mode 0) or the scalar (mode 1)
// from the CmpMask register.
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, uint8_t repeatTime,
                   const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    static_assert(selMode == SELMODE::VSEL_CMPMASK_SPR,
                  "Select without selMask is emulated for VSEL_CMPMASK_SPR only: in "
                  "VSEL_TENSOR_TENSOR_MODE the CmpMask register holds selMask's UB address");
    recsdk::sim::SelectLanes(
        dst, static_cast<const LocalTensor<uint8_t>*>(nullptr), src0, &src1, T{}, selMode,
        recsdk::sim::PlanFromBits<T>(MASK_PLACEHOLDER_LIST, repeatTime, false, "Select", loc),
        repeatParams, loc);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                   const LocalTensor<T>& src0, uint8_t repeatTime,
                   const BinaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {
    T scalar;
    std::memcpy(&scalar, recsdk::sim::CmpMaskReg().bytes, sizeof(T));
    recsdk::sim::SelectLanes(
        dst, &selMask, src0, static_cast<const LocalTensor<T>*>(nullptr), scalar,
        SELMODE::VSEL_TENSOR_SCALAR_MODE,
        recsdk::sim::PlanFromBits<T>(MASK_PLACEHOLDER_LIST, repeatTime, false, "Select", loc),
        repeatParams, loc);
}

// ---- GatherMask (比较与选择/GatherMask.md): the selected elements of src0, packed into dst ------
//
// Normal mode (reduceMode false): repeat r covers 256 / sizeof(T) elements of src0 (block and
// repeat strides of gatherMaskParams), the mask argument unused. Counter mode (reduceMode true,
// A2's "配置方式一"): repeat r covers its first `mask` elements; a mask beyond one repeat's lanes
// has no documented layout and is refused. The pattern: built-in 1-7 (even lanes, odd lanes, lane %
// 4
// == 0..3, all), the same every repeat; or a tensor whose bits are consumed in lane order within
// a repeat, repeat r's starting src1RepeatStride * 32 bytes after repeat r - 1's. rsvdCnt: the
// elements kept. The call leaves the mask registers in normal mode, as the page says.

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
const GatherMaskMode defaultGahterMaskMode = GatherMaskMode::VERSION_V2;
const GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn,
                     const uint16_t src0RepeatStrideIn, const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn),
          repeatTimes(repeatTimesIn),
          src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

namespace detail {

// bit(r, j): whether lane j of repeat r is kept.
template <typename T, typename Bit>
inline void GatherMaskRun(const LocalTensor<T>& dst, const LocalTensor<T>& src0, bool reduceMode,
                          uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt, Bit&& bit,
                          const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    const char* call = "GatherMask";
    constexpr bool ok = (sizeof(T) == 2 || sizeof(T) == 4) && !std::is_same_v<T, int64_t>;
    VecType<ok, T>(call, loc);
    LanePlan<T> plan;
    plan.repeats = p.repeatTimes;
    if (reduceMode) {
        if (mask < 1 || mask > LanePlan<T>::kLanes) {
            Fail(call, loc,
                 "counter-mode mask " + std::to_string(mask) + " outside [1, " +
                     std::to_string(LanePlan<T>::kLanes) +
                     "]: a repeat of more than its lanes has no documented layout");
        }
        for (uint32_t j = 0; j < mask; ++j)
            plan.bits[j / 64] |= uint64_t{1} << (j % 64);
    } else {
        plan.bits[0] = ~uint64_t{0};
        plan.bits[1] = sizeof(T) == 2 ? ~uint64_t{0} : 0;
    }
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    const Lane0 ss{p.src0BlockStride, p.src0RepeatStride};
    Operand0(src0, plan, ss, Acc::kRead, call, loc);
    std::vector<T> kept;
    const T* a = src0.SimData();
    Run0<T>(plan, [&](uint32_t r, uint32_t j) {
        if (bit(r, j))
            kept.push_back(a[LanePlan<T>::At(r, j, ss)]);
    });
    rsvdCnt = kept.size();
    Core().gather_mask_kept = static_cast<int64_t>(kept.size());
    if (!kept.empty()) {
        dst.CheckSpan(kept.size(), call, loc);
        dst.SimAccess(0, kept.size() * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
        std::memcpy(dst.SimData(), kept.data(), kept.size() * sizeof(T));
    }
    MaskRegs().counter = false;
}

}  // namespace detail

template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                       const LocalTensor<U>& src1Pattern, const bool reduceMode,
                       const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(std::is_unsigned_v<U> && sizeof(U) == sizeof(T),
                  "GatherMask: src1Pattern is uint16_t for 16-bit src0, uint32_t for 32-bit");
    constexpr uint32_t lanes = LanePlan<T>::kLanes;
    const uint32_t used = reduceMode ? mask : lanes;  // bits a repeat consumes
    const uint64_t rep_bytes = uint64_t(gatherMaskParams.src1RepeatStride) * 32;
    const uint64_t reps = gatherMaskParams.repeatTimes;
    const uint64_t bytes = reps == 0 ? 0 : (reps - 1) * rep_bytes + (used + 7) / 8;
    src1Pattern.Validate("GatherMask", loc);
    src1Pattern.InUb("GatherMask", loc);
    CheckUbAligned(src1Pattern.SimData(), "GatherMask", loc, "src1Pattern");
    std::vector<uint8_t> bits(bytes, 0);
    if (bytes > 0) {
        src1Pattern.CheckSpan((bytes + sizeof(U) - 1) / sizeof(U), "GatherMask", loc);
        src1Pattern.SimAccess(0, bytes, Pipe::V, Acc::kRead, "GatherMask", loc);
        std::memcpy(bits.data(), src1Pattern.SimData(), bytes);
    }
    detail::GatherMaskRun(
        dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
        [&](uint32_t r, uint32_t j) {
            const uint64_t k = uint64_t(r) * rep_bytes * 8 + j;
            return ((bits[k / 8] >> (k % 8)) & 1u) != 0;
        },
        loc);
}
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                       const uint8_t src1Pattern, const bool reduceMode, const uint32_t mask,
                       const GatherMaskParams& gatherMaskParams, uint64_t& rsvdCnt,
                       recsdk::sim::SrcLoc loc = {}) {
    if (src1Pattern < 1 || src1Pattern > 7) {
        recsdk::sim::Fail(
            "GatherMask", loc,
            "built-in pattern " + std::to_string(int(src1Pattern)) + " outside [1, 7]");
    }
    detail::GatherMaskRun(
        dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
        [&](uint32_t, uint32_t j) {
            switch (src1Pattern) {
                case 1:
                    return j % 2 == 0;
                case 2:
                    return j % 2 == 1;
                case 7:
                    return true;
                default:
                    return j % 4 == uint32_t(src1Pattern - 3);
            }
        },
        loc);
}

// GetGatherMaskRemainCount (dav_c220: the register GatherMask leaves its count in, get_rsvd_cnt;
// 0 on an AIC): the elements the core's last GatherMask kept. The register before any GatherMask
// of the launch is not documented, so reading it then is refused.
inline int64_t GetGatherMaskRemainCount(recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const CoreState& c = Core();
    if (c.core_type == kAic)
        return 0;
    if (c.gather_mask_kept < 0) {
        Fail("GetGatherMaskRemainCount", loc,
             "no GatherMask ran before it on this core (the register's content is undocumented "
             "until one does)");
    }
    return c.gather_mask_kept;
}

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_CMPSEL_H
