// The DEQSCALE register and the dequantising conversion that reads it.
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/):
// - 类型转换辅助配置接口/SetDeqScale.md, table 1: the 64-bit register. SetDeqScale(half scale)
//   puts the half in bits 0-15 (read by Cast int32_t -> half, CastDequant's s322fp16 form and
//   AddDeqRelu). SetDeqScale(float scale, int16_t offset, bool signMode) packs the float's bits
//   into 0-31, offset's low 9 bits into 37-45 and signMode into bit 46 (CastDequant's int16_t ->
//   b8 form without vector dequantisation). SetDeqScale(LocalTensor<uint64_t> vdeq, VdeqInfo)
//   writes the 16 (scale, offset, signMode) words so packed into vdeq (128 bytes, 32-byte
//   aligned; scalar writes) and vdeq's address into the register. On an AIC all three do nothing
//   (dav_c220 returns on the cube core).
// - 复合计算/CastDequant.md (CastDeq is its former name, same overloads): int32_t -> half is
//   dst = Cast(src * scale) with CAST_RINT, saturating, the scale the register's half: Cast's
//   int32_t -> half instruction (vector_cast.h: one rounding of the exact product); count form
//   and level 0 with a mask array / mask count (lanes of int32_t, 64 a repeat) and
//   UnaryRepeatParams, each operand's blocks in its own type; isVecDeq and halfBlock do not apply.
//   The int16_t -> int8_t / uint8_t forms are refused at compile time (below).
// The register is the core's state of one launch, like the mask registers: every launch starts
// with it unset, and a conversion that reads a half scale nobody set is refused at run time.
#ifndef RECSDK_SIM_VECTOR_DEQ_H
#define RECSDK_SIM_VECTOR_DEQ_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "recsdk_sim/vector_cast.h"

namespace AscendC {

constexpr int32_t VDEQ_TENSOR_SIZE = 16;

// kernel_struct_vdeq.h: the 16 parameter sets of the vector dequantisation.
struct VdeqInfo {
    VdeqInfo() {}
    VdeqInfo(const float vdeqScaleIn[VDEQ_TENSOR_SIZE],
             const int16_t vdeqOffsetIn[VDEQ_TENSOR_SIZE],
             const bool vdeqSignModeIn[VDEQ_TENSOR_SIZE]) {
        for (int32_t i = 0; i < VDEQ_TENSOR_SIZE; ++i) {
            vdeqScale[i] = vdeqScaleIn[i];
            vdeqOffset[i] = vdeqOffsetIn[i];
            vdeqSignMode[i] = vdeqSignModeIn[i];
        }
    }
    float vdeqScale[VDEQ_TENSOR_SIZE] = {0};
    int16_t vdeqOffset[VDEQ_TENSOR_SIZE] = {0};
    bool vdeqSignMode[VDEQ_TENSOR_SIZE] = {0};
};

}  // namespace AscendC

namespace recsdk::sim {

// SetDeqScale.md table 1: scale in bits 0-31, offset's 9 low bits in 37-45, signMode in 46.
inline uint64_t DeqWord(float scale, int16_t offset, bool signMode) {
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof(bits));
    return (uint64_t{signMode} << 46) | ((uint64_t(uint16_t(offset)) & 0x1FFu) << 37) | bits;
}

inline bool DeqOnAic() {
    return Core().core_type == kAic;
}

template <typename T, typename U>
inline void DequantTypes(const char* call) {
    static_assert(
        !(std::is_same_v<U, int16_t> && (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)),
        "AscendC API CastDequant / CastDeq from int16_t to int8_t / uint8_t is not "
        "emulated: CastDequant.md gives dst = Cast(src * scale + offset) but not how "
        "the hardware rounds the scale it reads as a (1,8,10) float, the round mode of "
        "the result, nor exactly where halfBlock puts the 16 results of a block");
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int32_t>,
                  "CastDequant on Atlas A2/A3 converts int32_t -> half (and int16_t -> "
                  "int8_t / uint8_t, not emulated)");
    (void)call;
}

template <typename T, typename U, typename P>
inline void DequantLevel0(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                          const P& plan, const AscendC::UnaryRepeatParams& rp, const char* call,
                          const SrcLoc& loc) {
    const float scale = DeqHalfScale(call, loc);
    RefuseStrideModes(rp, call, loc);
    const Lane0 sd{rp.dstBlkStride, rp.dstRepStride}, ss{rp.srcBlkStride, rp.srcRepStride};
    CastOperand(src, plan, ss, Acc::kRead, loc, call);
    CastOperand(dst, plan, sd, Acc::kWrite, loc, call);
    T* d = dst.SimData();
    const U* s = src.SimData();
    Run0<U>(plan, [&](uint32_t r, uint32_t j) {
        d[CastAt<T>(r, j, sd)] = DeqOne(s[CastAt<U>(r, j, ss)], scale);
    });
}

template <typename T, typename U>
inline void DequantCount(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                         uint32_t count, const char* call, const SrcLoc& loc) {
    if (count == 0)
        return;  // CastDequant.md: a no-op on Atlas A2/A3
    const float scale = DeqHalfScale(call, loc);
    VecOperand(dst, static_cast<int32_t>(count), call, loc);
    VecOperand(src, static_cast<int32_t>(count), call, loc);
    VecRead(src, count, call, loc);
    VecWrite(dst, count, call, loc);
    T* d = dst.SimData();
    const U* s = src.SimData();
    for (uint32_t i = 0; i < count; ++i)
        d[i] = DeqOne(s[i], scale);
    VecDone(static_cast<int32_t>(count), sizeof(U));
}

}  // namespace recsdk::sim

namespace AscendC {

inline void SetDeqScale(half scale, recsdk::sim::SrcLoc = {}) {
    if (recsdk::sim::DeqOnAic())
        return;
    auto& r = recsdk::sim::Core().deq;
    r.kind = recsdk::sim::DeqRegister::kHalfScale;
    r.bits = scale.bits;
}

inline void SetDeqScale(float scale, int16_t offset, bool signMode, recsdk::sim::SrcLoc = {}) {
    if (recsdk::sim::DeqOnAic())
        return;
    auto& r = recsdk::sim::Core().deq;
    r.kind = recsdk::sim::DeqRegister::kScaleOffsetSign;
    r.bits = recsdk::sim::DeqWord(scale, offset, signMode);
}

template <typename T>
inline void SetDeqScale(const LocalTensor<T>& vdeq, const VdeqInfo& vdeqInfo,
                        recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    if (DeqOnAic())
        return;
    VecType<std::is_same_v<T, uint64_t>, T>("SetDeqScale", loc);
    vdeq.Validate("SetDeqScale", loc);
    vdeq.InUb("SetDeqScale", loc);
    CheckUbAligned(vdeq.SimData(), "SetDeqScale", loc, "vdeq");
    vdeq.CheckSpan(VDEQ_TENSOR_SIZE, "SetDeqScale", loc);  // the page's 128 bytes
    for (int32_t i = 0; i < VDEQ_TENSOR_SIZE; ++i) {
        vdeq.SetValue(
            static_cast<uint32_t>(i),
            DeqWord(vdeqInfo.vdeqScale[i], vdeqInfo.vdeqOffset[i], vdeqInfo.vdeqSignMode[i]), loc);
    }
    auto& r = Core().deq;
    r.kind = DeqRegister::kVectorAddress;
    r.bits = 0;
}

#define RECSDK_SIM_DEQUANT(NAME)                                                                  \
    template <typename T, typename U, bool isSetMask = true, bool isVecDeq = true,                \
              bool halfBlock = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[], \
                     uint8_t repeatTime, const UnaryRepeatParams& repeatParams,                   \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        recsdk::sim::DequantTypes<T, U>(#NAME);                                                   \
        recsdk::sim::DequantLevel0(                                                               \
            dst, src, recsdk::sim::PlanFromBits<U>(mask, repeatTime, isSetMask, #NAME, loc),      \
            repeatParams, #NAME, loc);                                                            \
    }                                                                                             \
    template <typename T, typename U, bool isSetMask = true, bool isVecDeq = true,                \
              bool halfBlock = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,    \
                     uint8_t repeatTime, const UnaryRepeatParams& repeatParams,                   \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        recsdk::sim::DequantTypes<T, U>(#NAME);                                                   \
        recsdk::sim::DequantLevel0(                                                               \
            dst, src,                                                                             \
            recsdk::sim::PlanFromCount<U>(static_cast<uint64_t>(mask), repeatTime, isSetMask,     \
                                          #NAME, loc),                                            \
            repeatParams, #NAME, loc);                                                            \
    }                                                                                             \
    template <typename T, typename U, bool isVecDeq = true, bool halfBlock = true>                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint32_t count,  \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        recsdk::sim::DequantTypes<T, U>(#NAME);                                                   \
        recsdk::sim::DequantCount(dst, src, count, #NAME, loc);                                   \
    }

RECSDK_SIM_DEQUANT(CastDequant)
RECSDK_SIM_DEQUANT(CastDeq)
#undef RECSDK_SIM_DEQUANT

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_DEQ_H
