// Vector instructions in their level-0 forms (mask array / mask count, repeatTime and the repeat
// parameters), the mask registers, and the count forms of the instructions vector.h lacks.
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/, SIMD计算说明/):
// - One repeat reads 256 bytes: 8 blocks of 32 bytes. Lane j of a repeat is element j % (32 /
//   sizeof(T)) of block j / (32 / sizeof(T)); block b of repeat r of an operand starts at
//   (r * repStride + b * blkStride) * 32 bytes (strides in 32-byte blocks, per operand).
// - Normal mask mode: mask[] is a bit mask of the lanes (mask[0] the low 64 lanes, mask[1] the
//   high 64 of a 16-bit type; 32-bit types have 64 lanes, mask[1] must be 0); a mask count m
//   takes the first m lanes (1..128 for 16-bit, 1..64 for 32-bit types).
// - Counter mode (SetMaskCount): repeatTime is not used and the instruction processes the count
//   set by SetVectorMask (isSetMask = false) or given as the mask argument (isSetMask = true),
//   in as many repeats as it takes, with the same strides. SetMaskNorm returns to normal mode;
//   ResetMask sets every lane.
// - Dtypes: the A2/A3 lists of each instruction's page (Exp/Ln/Reciprocal/Sqrt: half/float;
//   Abs, Relu: half/float/int32 (Relu) ; LeakyRelu: half/float; Copy: 16- and 32-bit types).
// Every operand is 32-byte aligned in the unified buffer and every lane touched lies inside the
// operand's tensor; the span of each operand is recorded as a PIPE_V access for the hazard
// checker (recsdk_sim/hazard.h).
#ifndef RECSDK_SIM_VECTOR_MASKED_H
#define RECSDK_SIM_VECTOR_MASKED_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "recsdk_sim/pipe.h"
#include "recsdk_sim/sync.h"
#include "recsdk_sim/vector.h"

namespace AscendC {

// kernel_reg.h: the mask argument of a call that uses the mask registers (isSetMask = false).
constexpr uint64_t MASK_PLACEHOLDER = 0;
constexpr uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};

constexpr uint32_t DEFAULT_BLK_NUM = 8;
constexpr uint16_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint16_t DEFAULT_DATA_COPY_STRIDE = 0;
constexpr int32_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

// Where WholeReduceMax/Min put the value and its index (impl/basic_api/utils/kernel_utils_mode.h).
enum class ReduceOrder : uint8_t {
    ORDER_VALUE_INDEX = 0,
    ORDER_INDEX_VALUE,
    ORDER_ONLY_VALUE,
    ORDER_ONLY_INDEX,
};

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn,
                       const uint8_t src1BlkStrideIn, const uint8_t dstRepStrideIn,
                       const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn),
          src0BlkStride(src0BlkStrideIn),
          src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn),
          src0RepStride(src0RepStrideIn),
          src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn,
                      const uint8_t dstRepStrideIn, const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn),
          srcBlkStride(srcBlkStrideIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn,
                      const uint8_t dstRepStrideIn, const uint8_t srcRepStrideIn,
                      const bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn),
          srcBlkStride(srcBlkStrideIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn),
          halfBlock(halfBlockIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

struct CopyRepeatParams {
    CopyRepeatParams() {}
    CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn,
                     uint16_t dstRepeatSizeIn, uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn),
          srcStride(srcStrideIn),
          dstRepeatSize(dstRepeatSizeIn),
          srcRepeatSize(srcRepeatSizeIn) {}
    uint16_t dstStride = DEFAULT_DATA_COPY_STRIDE;
    uint16_t srcStride = DEFAULT_DATA_COPY_STRIDE;
    uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
    uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

}  // namespace AscendC

namespace recsdk::sim {

// The core's mask registers (CoreState: reset at every launch).
inline MaskState& MaskRegs() {
    return Core().mask;
}

// The repeat parameters' mode switches (repeatStrideMode, strideSizeMode, UnaryRepeatParams'
// halfBlock) change how strides are counted; their semantics are not emulated, so a call that
// sets one is refused rather than run with the default counting.
template <typename R>
inline void RefuseStrideModes(const R& rp, const char* call, const SrcLoc& loc) {
    bool half = false;
    if constexpr (std::is_same_v<R, AscendC::UnaryRepeatParams>)
        half = rp.halfBlock;
    if (rp.repeatStrideMode || rp.strideSizeMode || half) {
        Fail(call, loc,
             "repeatStrideMode / strideSizeMode / halfBlock of the repeat parameters are not "
             "emulated (leave them false)");
    }
}

// One operand of a level-0 instruction: its tensor's data, element strides of a block and a
// repeat.
struct Lane0 {
    uint64_t blk_stride;  // in 32-byte blocks
    uint64_t rep_stride;
};

// The lanes a level-0 call processes, as (repeat, lane) pairs; fills `last` with the number of
// repeats. mask_bits: lane mask of one repeat (normal mode); counter mode: `count` elements.
template <typename T>
struct LanePlan {
    static constexpr uint32_t kLanes = 256 / sizeof(T);
    static constexpr uint32_t kBlk = 32 / sizeof(T);
    bool counter = false;
    uint64_t bits[2] = {0, 0};
    uint64_t count = 0;  // counter mode
    uint32_t repeats = 0;
    bool On(uint32_t r, uint32_t j) const {
        if (counter)
            return uint64_t(r) * kLanes + j < count;
        return (bits[j / 64] >> (j % 64)) & 1u;
    }
    // Element offset of lane j of repeat r for an operand with these strides.
    static uint64_t At(uint32_t r, uint32_t j, const Lane0& s) {
        return (uint64_t(r) * s.rep_stride + uint64_t(j / kBlk) * s.blk_stride) * kBlk + j % kBlk;
    }
    uint32_t HighestLane() const {
        if (counter)
            return count == 0 ? 0 : static_cast<uint32_t>(count < kLanes ? count : kLanes);
        for (int j = int(kLanes) - 1; j >= 0; --j) {
            if ((bits[j / 64] >> (j % 64)) & 1u)
                return uint32_t(j) + 1;
        }
        return 0;
    }
};

template <typename T>
inline LanePlan<T> PlanFromBits(const uint64_t* mask, uint8_t repeat, bool isSetMask,
                                const char* call, const SrcLoc& loc) {
    LanePlan<T> p;
    MaskState& m = MaskRegs();
    if (m.counter) {
        p.counter = true;
        p.count = isSetMask ? mask[0] : m.lo;
        p.repeats = static_cast<uint32_t>((p.count + p.kLanes - 1) / p.kLanes);
        return p;
    }
    if (isSetMask) {
        p.bits[0] = mask[0];
        p.bits[1] = sizeof(T) == 2 ? mask[1] : 0;
        if (sizeof(T) == 4 && mask[1] != 0) {
            Fail(call, loc,
                 "mask[1] must be 0 for a 32-bit type (64 lanes per repeat, mask[0] only)");
        }
        if (sizeof(T) == 1 || sizeof(T) == 8)
            Fail(call, loc, std::string(TypeName<T>()) + " has no level-0 form on Atlas A2/A3");
        if (p.bits[0] == 0 && p.bits[1] == 0)
            Fail(call, loc, "the mask selects no lane");
    } else {
        p.bits[0] = m.lo;
        p.bits[1] = sizeof(T) == 2 ? m.hi : 0;
    }
    p.repeats = repeat;
    return p;
}

template <typename T>
inline LanePlan<T> PlanFromCount(uint64_t mask, uint8_t repeat, bool isSetMask, const char* call,
                                 const SrcLoc& loc) {
    MaskState& m = MaskRegs();
    if (!m.counter && isSetMask) {
        constexpr uint64_t lanes = 256 / sizeof(T);
        if (mask < 1 || mask > lanes) {
            Fail(call, loc,
                 "mask " + std::to_string(mask) + " is outside [1, " + std::to_string(lanes) +
                     "] for " + TypeName<T>() + " in normal mask mode");
        }
        uint64_t bits[2] = {0, 0};
        for (uint64_t j = 0; j < mask; ++j)
            bits[j / 64] |= uint64_t{1} << (j % 64);
        return PlanFromBits<T>(bits, repeat, true, call, loc);
    }
    const uint64_t bits[2] = {mask, 0};
    return PlanFromBits<T>(bits, repeat, isSetMask, call, loc);
}

// Checks an operand of a level-0 instruction and records its span: returns its element extent.
template <typename T, typename P>
inline void Operand0(const AscendC::LocalTensor<T>& t, const P& plan, const Lane0& s, Acc acc,
                     const char* call, const SrcLoc& loc) {
    t.Validate(call, loc);
    t.InUb(call, loc);
    CheckUbAligned(t.SimData(), call, loc, "operand");
    if (plan.repeats == 0)
        return;
    const uint32_t top = plan.HighestLane();
    if (top == 0)
        return;
    uint64_t end = 0;
    const uint32_t last_r = plan.repeats - 1;
    // The farthest element: the last repeat's highest lane (strides are non-negative).
    for (uint32_t r : {0u, last_r}) {
        for (uint32_t j = 0; j < top; ++j) {
            if (plan.On(r, j)) {
                const uint64_t e = P::At(r, j, s) + 1;
                end = e > end ? e : end;
            }
        }
    }
    t.CheckSpan(end, call, loc);
    t.SimAccess(0, end * sizeof(T), Pipe::V, acc, call, loc);
}

// instr: the API name, for the instructions the vendor lists at a lower rate (model.h).
template <typename T, typename P, typename F>
inline void Run0(const P& plan, F&& f, const char* instr = nullptr) {
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (uint32_t j = 0; j < P::kLanes; ++j) {
            if (plan.On(r, j))
                f(r, j);
        }
    }
    auto& s = Stats();
    s.vector_elements += uint64_t(plan.repeats) * P::kLanes;
    s.vector_repeats += plan.repeats;
    ++s.vector_instrs;
    recsdk::sim::ModelVector(plan.repeats, recsdk::sim::VectorRepeatCycles(instr, sizeof(T)));
}

template <typename T>
constexpr bool kHalfFloat = std::is_same_v<T, half> || std::is_same_v<T, float>;
template <typename T>
constexpr bool kB16B32 = sizeof(T) == 2 || sizeof(T) == 4;

}  // namespace recsdk::sim

namespace AscendC {

// ---- mask registers ---------------------------------------------------------------------------

inline void SetMaskCount() {
    recsdk::sim::MaskRegs().counter = true;
}
inline void SetMaskNorm() {
    recsdk::sim::MaskRegs().counter = false;
}
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow) {
    auto& m = recsdk::sim::MaskRegs();
    m.hi = maskHigh;
    m.lo = maskLow;
}
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len) {
    auto& m = recsdk::sim::MaskRegs();
    if (m.counter || mode == MaskMode::COUNTER) {
        m.hi = 0;
        m.lo = static_cast<uint64_t>(len);
        return;
    }
    m.hi = 0;
    m.lo = 0;
    for (int32_t j = 0; j < len && j < 128; ++j)
        (j < 64 ? m.lo : m.hi) |= uint64_t{1} << (j % 64);
}
inline void ResetMask() {
    auto& m = recsdk::sim::MaskRegs();
    m.hi = ~uint64_t{0};
    m.lo = ~uint64_t{0};
}

// ---- helpers the API declares (kernel_utils_ceil_oom_que.h, kernel_scalar_convert.h) ----------

constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) {
    return (a + b - 1) / b;
}
constexpr inline uint32_t AlignUp(uint32_t a, uint32_t b) {
    return DivCeil(a, b) * b;
}
constexpr inline uint32_t ConstCeil(uint32_t a, uint32_t b) {
    return (a + b - 1) / b;
}
inline bfloat16_t ToBfloat16(const float& fVal) {
    return bfloat16_t(fVal);
}
inline float ToFloat(const bfloat16_t& bVal) {
    return static_cast<float>(bVal);
}

// ---- Duplicate, level 0 -----------------------------------------------------------------------

template <typename T, typename P>
inline void Duplicate0(const LocalTensor<T>& dst, const T& v, const P& plan, uint16_t blk,
                       uint8_t rep, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    VecType<kDuplicateType<T>, T>("Duplicate", loc);
    const Lane0 s{blk, rep};
    Operand0(dst, plan, s, Acc::kWrite, "Duplicate", loc);
    T* d = dst.SimData();
    Run0<T>(plan, [&](uint32_t r, uint32_t j) { d[P::At(r, j, s)] = v; });
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask,
                      const uint8_t repeatTime, const uint16_t dstBlockStride,
                      const uint8_t dstRepeatStride, recsdk::sim::SrcLoc loc = {}) {
    const auto plan = recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "Duplicate", loc);
    Duplicate0(dst, scalarValue, plan, dstBlockStride, dstRepeatStride, loc);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask[],
                      const uint8_t repeatTime, const uint16_t dstBlockStride,
                      const uint8_t dstRepeatStride, recsdk::sim::SrcLoc loc = {}) {
    const auto plan = recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "Duplicate", loc);
    Duplicate0(dst, scalarValue, plan, dstBlockStride, dstRepeatStride, loc);
}

// ---- unary and scalar instructions, level 0 and count -------------------------------------------

#define RECSDK_SIM_UNARY0(NAME, OK, EXPR)                                                         \
    template <typename T, typename P>                                                             \
    inline void NAME##Level0(const LocalTensor<T>& dst, const LocalTensor<T>& src, const P& plan, \
                             const UnaryRepeatParams& rp, const recsdk::sim::SrcLoc& loc) {       \
        using namespace recsdk::sim;                                                              \
        VecType<OK<T>, T>(#NAME, loc);                                                            \
        RefuseStrideModes(rp, #NAME, loc);                                                        \
        const Lane0 sd{rp.dstBlkStride, rp.dstRepStride}, ss{rp.srcBlkStride, rp.srcRepStride};   \
        Operand0(src, plan, ss, Acc::kRead, #NAME, loc);                                          \
        Operand0(dst, plan, sd, Acc::kWrite, #NAME, loc);                                         \
        T* d = dst.SimData();                                                                     \
        const T* a = src.SimData();                                                               \
        Run0<T>(                                                                                  \
            plan,                                                                                 \
            [&](uint32_t r, uint32_t j) {                                                         \
                const float x = static_cast<float>(a[P::At(r, j, ss)]);                           \
                d[P::At(r, j, sd)] = static_cast<T>(EXPR);                                        \
            },                                                                                    \
            #NAME);                                                                               \
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
    }                                                                                             \
    template <typename T, bool isReuseSource = false>                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,  \
                     recsdk::sim::SrcLoc loc = {}) {                                              \
        using namespace recsdk::sim;                                                              \
        VecType<OK<T>, T>(#NAME, loc);                                                            \
        VecOperand(dst, count, #NAME, loc);                                                       \
        VecOperand(src, count, #NAME, loc);                                                       \
        VecReadSrc(src, dst, count, #NAME, loc);                                                  \
        VecWrite(dst, count, #NAME, loc);                                                         \
        T* d = dst.SimData();                                                                     \
        const T* a = src.SimData();                                                               \
        for (int32_t i = 0; i < count; ++i) {                                                     \
            const float x = static_cast<float>(a[i]);                                             \
            d[i] = static_cast<T>(EXPR);                                                          \
        }                                                                                         \
        VecDone(count, sizeof(T), #NAME);                                                         \
    }

namespace detail {
template <typename T>
constexpr bool kAbsType = recsdk::sim::kHalfFloat<T>;
template <typename T>
constexpr bool kReluType = recsdk::sim::kHalfFloat<T> || std::is_same_v<T, int32_t>;
}  // namespace detail

RECSDK_SIM_UNARY0(Exp, recsdk::sim::kHalfFloat, std::exp(x))
RECSDK_SIM_UNARY0(Ln, recsdk::sim::kHalfFloat, std::log(x))
RECSDK_SIM_UNARY0(Abs, detail::kAbsType, std::fabs(x))
RECSDK_SIM_UNARY0(Reciprocal, recsdk::sim::kHalfFloat, 1.0f / x)
RECSDK_SIM_UNARY0(Relu, detail::kReluType, (x > 0.0f ? x : 0.0f))
#undef RECSDK_SIM_UNARY0

// Sqrt: vector.h has the count form.
template <typename T, typename P>
inline void SqrtLevel0(const LocalTensor<T>& dst, const LocalTensor<T>& src, const P& plan,
                       const UnaryRepeatParams& rp, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    VecType<kHalfFloat<T>, T>("Sqrt", loc);
    RefuseStrideModes(rp, "Sqrt", loc);
    const Lane0 sd{rp.dstBlkStride, rp.dstRepStride}, ss{rp.srcBlkStride, rp.srcRepStride};
    Operand0(src, plan, ss, Acc::kRead, "Sqrt", loc);
    Operand0(dst, plan, sd, Acc::kWrite, "Sqrt", loc);
    T* d = dst.SimData();
    const T* a = src.SimData();
    Run0<T>(
        plan,
        [&](uint32_t r, uint32_t j) {
            d[P::At(r, j, sd)] = static_cast<T>(std::sqrt(static_cast<float>(a[P::At(r, j, ss)])));
        },
        "Sqrt");
}
template <typename T, bool isSetMask = true>
inline void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[],
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,
                 recsdk::sim::SrcLoc loc = {}) {
    SqrtLevel0(dst, src, recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "Sqrt", loc),
               repeatParams, loc);
}
template <typename T, bool isSetMask = true>
inline void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,
                 recsdk::sim::SrcLoc loc = {}) {
    SqrtLevel0(dst, src, recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "Sqrt", loc),
               repeatParams, loc);
}

// Scalar instructions (Adds, Muls, Maxs, Mins, LeakyRelu) at level 0; count forms of the first
// four are in vector.h.
#define RECSDK_SIM_SCALAR0(NAME, OK, EXPR)                                                       \
    template <typename T, typename P>                                                            \
    inline void NAME##Level0(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& sv,  \
                             const P& plan, const UnaryRepeatParams& rp,                         \
                             const recsdk::sim::SrcLoc& loc) {                                   \
        using namespace recsdk::sim;                                                             \
        VecType<OK<T>, T>(#NAME, loc);                                                           \
        RefuseStrideModes(rp, #NAME, loc);                                                       \
        const Lane0 sd{rp.dstBlkStride, rp.dstRepStride}, ss{rp.srcBlkStride, rp.srcRepStride};  \
        Operand0(src, plan, ss, Acc::kRead, #NAME, loc);                                         \
        Operand0(dst, plan, sd, Acc::kWrite, #NAME, loc);                                        \
        T* d = dst.SimData();                                                                    \
        const T* a = src.SimData();                                                              \
        const T s = sv;                                                                          \
        Run0<T>(plan, [&](uint32_t r, uint32_t j) {                                              \
            const T x = a[P::At(r, j, ss)];                                                      \
            d[P::At(r, j, sd)] = static_cast<T>(EXPR);                                           \
        });                                                                                      \
    }                                                                                            \
    template <typename T, bool isSetMask = true>                                                 \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, \
                     uint64_t mask[], const uint8_t repeatTime,                                  \
                     const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {      \
        NAME##Level0(dst, src, scalarValue,                                                      \
                     recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, #NAME, loc),      \
                     repeatParams, loc);                                                         \
    }                                                                                            \
    template <typename T, bool isSetMask = true>                                                 \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, \
                     uint64_t mask, const uint8_t repeatTime,                                    \
                     const UnaryRepeatParams& repeatParams, recsdk::sim::SrcLoc loc = {}) {      \
        NAME##Level0(dst, src, scalarValue,                                                      \
                     recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, #NAME, loc),     \
                     repeatParams, loc);                                                         \
    }

RECSDK_SIM_SCALAR0(Adds, recsdk::sim::kArithType, x + s)
RECSDK_SIM_SCALAR0(Muls, recsdk::sim::kArithType, x* s)
RECSDK_SIM_SCALAR0(Maxs, recsdk::sim::kArithType, (x < s ? s : x))
RECSDK_SIM_SCALAR0(Mins, recsdk::sim::kArithType, (s < x ? s : x))
RECSDK_SIM_SCALAR0(LeakyRelu, recsdk::sim::kHalfFloat,
                   (float(x) >= 0.0f ? float(x) : float(x) * float(s)))
#undef RECSDK_SIM_SCALAR0

template <typename T, typename U>
inline void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue,
                      const int32_t& count, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kHalfFloat<T>, T>("LeakyRelu", loc);
    VecOperand(dst, count, "LeakyRelu", loc);
    VecOperand(src, count, "LeakyRelu", loc);
    VecReadSrc(src, dst, count, "LeakyRelu", loc);
    VecWrite(dst, count, "LeakyRelu", loc);
    const float s = static_cast<float>(static_cast<T>(scalarValue));
    T* d = dst.SimData();
    const T* a = src.SimData();
    for (int32_t i = 0; i < count; ++i) {
        const float x = static_cast<float>(a[i]);
        d[i] = static_cast<T>(x >= 0.0f ? x : x * s);
    }
    VecDone(count, sizeof(T));
}

// ---- binary instructions, level 0 ---------------------------------------------------------------

#define RECSDK_SIM_BINARY0(NAME, OK, EXPR)                                                   \
    template <typename T, typename P>                                                        \
    inline void NAME##Level0(const LocalTensor<T>& dst, const LocalTensor<T>& src0,          \
                             const LocalTensor<T>& src1, const P& plan,                      \
                             const BinaryRepeatParams& rp, const recsdk::sim::SrcLoc& loc) { \
        using namespace recsdk::sim;                                                         \
        VecType<OK<T>, T>(#NAME, loc);                                                       \
        RefuseStrideModes(rp, #NAME, loc);                                                   \
        const Lane0 sd{rp.dstBlkStride, rp.dstRepStride};                                    \
        const Lane0 s0{rp.src0BlkStride, rp.src0RepStride},                                  \
            s1{rp.src1BlkStride, rp.src1RepStride};                                          \
        Operand0(src0, plan, s0, Acc::kRead, #NAME, loc);                                    \
        Operand0(src1, plan, s1, Acc::kRead, #NAME, loc);                                    \
        Operand0(dst, plan, sd, Acc::kWrite, #NAME, loc);                                    \
        T* d = dst.SimData();                                                                \
        const T* a = src0.SimData();                                                         \
        const T* b = src1.SimData();                                                         \
        Run0<T>(                                                                             \
            plan,                                                                            \
            [&](uint32_t r, uint32_t j) {                                                    \
                const T x = a[P::At(r, j, s0)];                                              \
                const T y = b[P::At(r, j, s1)];                                              \
                d[P::At(r, j, sd)] = static_cast<T>(EXPR);                                   \
            },                                                                               \
            #NAME);                                                                          \
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

RECSDK_SIM_BINARY0(Add, recsdk::sim::kArithType, x + y)
RECSDK_SIM_BINARY0(Sub, recsdk::sim::kArithType, x - y)
RECSDK_SIM_BINARY0(Mul, recsdk::sim::kArithType, x* y)
RECSDK_SIM_BINARY0(Div, recsdk::sim::kHalfFloat, x / y)
RECSDK_SIM_BINARY0(Max, recsdk::sim::kArithType, (x < y ? y : x))
RECSDK_SIM_BINARY0(Min, recsdk::sim::kArithType, (y < x ? y : x))
#undef RECSDK_SIM_BINARY0

// ---- reductions per repeat (WholeReduceSum.md, BlockReduceSum.md): A2/A3 half/float ------------
//
// WholeReduceSum: repeat r's selected lanes summed into dst[r * dstRepStride] (dstRepStride in
// elements: one result per repeat). BlockReduceSum: each 32-byte block of repeat r summed into
// dst[r * dstRepStride * 8 + b] (dstRepStride in units of one repeat's 8 results: 16 bytes for
// half, 32 for float, ReduceDataBlock.md). Sums run in float, pairwise as the hardware's adder
// tree (ReduceDataBlock.md draws the tree; results can differ from a sequential sum in the last
// bits).

template <typename T, typename P, typename Out>
inline void ReduceLevel0(const char* call, const LocalTensor<T>& src, const P& plan,
                         const recsdk::sim::Lane0& ss, Out&& out, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    VecType<kHalfFloat<T>, T>(call, loc);
    Operand0(src, plan, ss, Acc::kRead, call, loc);
    const T* a = src.SimData();
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        float lanes[P::kLanes];
        bool on[P::kLanes];
        for (uint32_t j = 0; j < P::kLanes; ++j) {
            on[j] = plan.On(r, j);
            lanes[j] = on[j] ? static_cast<float>(a[P::At(r, j, ss)]) : 0.0f;
        }
        out(r, lanes, on);
    }
    auto& s = Stats();
    s.vector_elements += uint64_t(plan.repeats) * P::kLanes;
    s.vector_repeats += plan.repeats;
    ++s.vector_instrs;
    recsdk::sim::ModelVector(plan.repeats);
}

inline float PairwiseSum(const float* v, uint32_t n) {
    if (n == 1)
        return v[0];
    const uint32_t h = n / 2;
    return PairwiseSum(v, h) + PairwiseSum(v + h, n - h);
}

template <typename T, typename P>
inline void WholeReduceSumLevel0(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const P& plan, int32_t dstRepStride, int32_t srcBlkStride,
                                 int32_t srcRepStride, const recsdk::sim::SrcLoc& loc,
                                 const char* call = "WholeReduceSum") {
    using namespace recsdk::sim;
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    if (plan.repeats > 0) {
        const uint64_t end = uint64_t(plan.repeats - 1) * uint64_t(dstRepStride) + 1;
        dst.CheckSpan(end, call, loc);
    }
    const Lane0 ss{uint64_t(srcBlkStride), uint64_t(srcRepStride)};
    std::vector<T> results(plan.repeats);
    ReduceLevel0(
        call, src, plan, ss,
        [&](uint32_t r, const float* v, const bool*) {
            results[r] = static_cast<T>(PairwiseSum(v, P::kLanes));
        },
        loc);
    if (plan.repeats > 0) {
        const uint64_t end = uint64_t(plan.repeats - 1) * uint64_t(dstRepStride) + 1;
        dst.SimAccess(0, end * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    }
    T* d = dst.SimData();
    for (uint32_t r = 0; r < plan.repeats; ++r)
        d[uint64_t(r) * uint64_t(dstRepStride)] = results[r];
}

template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                           const uint64_t mask[], const int32_t repeatTime,
                           const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, recsdk::sim::SrcLoc loc = {}) {
    WholeReduceSumLevel0(dst, src,
                         recsdk::sim::PlanFromBits<T>(mask, static_cast<uint8_t>(repeatTime),
                                                      isSetMask, "WholeReduceSum", loc),
                         dstRepStride, srcBlkStride, srcRepStride, loc);
}
template <typename T, bool isSetMask = true, typename U = T>
inline void WholeReduceSum(const LocalTensor<U>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride,
                           const int32_t srcBlkStride, const int32_t srcRepStride,
                           recsdk::sim::SrcLoc loc = {}) {
    static_assert(std::is_same_v<T, U>,
                  "WholeReduceSum: on Atlas A2/A3 the destination has the source's type");
    WholeReduceSumLevel0(
        dst, src,
        recsdk::sim::PlanFromCount<T>(static_cast<uint64_t>(mask), static_cast<uint8_t>(repeatTime),
                                      isSetMask, "WholeReduceSum", loc),
        dstRepStride, srcBlkStride, srcRepStride, loc);
}

// WholeReduceMax / WholeReduceMin (ReduceRepeat.md, the MAX/MIN rows): per repeat the extreme of
// the selected lanes and its lane index (the smallest on ties), stored by `order`: [value, index],
// [index, value], [value] or [index]; the index is an integer stored in an element of T's size
// (read it through uint16_t / uint32_t). dstRepStride counts results in the unit of table 3: the
// pair for the two-element orders, one element for ORDER_ONLY_VALUE, 4 bytes for
// ORDER_ONLY_INDEX (whose half layout the page does not give: refused for half). A mask or
// repeatTime of 0 is a no-op on A2/A3.
template <bool kMax, typename T, typename P>
inline void WholeReduceExtremeLevel0(const char* call, const LocalTensor<T>& dst,
                                     const LocalTensor<T>& src, const P& plan, int32_t dstRepStride,
                                     int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order,
                                     const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    if (order == ReduceOrder::ORDER_ONLY_INDEX && sizeof(T) == 2) {
        Fail(call, loc, "ORDER_ONLY_INDEX for half: its index layout is not documented");
    }
    const uint64_t unit =
        (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE)
            ? 2
            : 1;  // in elements of T
    const uint64_t per_result = unit;
    if (plan.repeats > 0) {
        dst.CheckSpan(uint64_t(plan.repeats - 1) * uint64_t(dstRepStride) * unit + per_result, call,
                      loc);
    }
    const Lane0 ss{uint64_t(srcBlkStride), uint64_t(srcRepStride)};
    std::vector<std::pair<T, Bits>> results(plan.repeats);
    std::vector<bool> any(plan.repeats, false);
    const T* a = src.SimData();
    ReduceLevel0(
        call, src, plan, ss,
        [&](uint32_t r, const float* v, const bool* on) {
            float best = 0.0f;
            for (uint32_t j = 0; j < P::kLanes; ++j) {
                if (!on[j])
                    continue;
                const bool better = kMax ? v[j] > best : v[j] < best;
                if (!any[r] || better) {
                    best = v[j];
                    any[r] = true;
                    results[r] = {a[P::At(r, j, ss)], static_cast<Bits>(j)};
                }
            }
        },
        loc);
    if (plan.repeats > 0) {
        const uint64_t end =
            uint64_t(plan.repeats - 1) * uint64_t(dstRepStride) * unit + per_result;
        dst.SimAccess(0, end * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    }
    T* d = dst.SimData();
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        if (!any[r])
            continue;  // no lane selected: nothing written
        T* out = d + uint64_t(r) * uint64_t(dstRepStride) * unit;
        const T value = results[r].first;
        const Bits index = results[r].second;
        switch (order) {
            case ReduceOrder::ORDER_VALUE_INDEX:
                out[0] = value;
                std::memcpy(out + 1, &index, sizeof(T));
                break;
            case ReduceOrder::ORDER_INDEX_VALUE:
                std::memcpy(out, &index, sizeof(T));
                out[1] = value;
                break;
            case ReduceOrder::ORDER_ONLY_VALUE:
                out[0] = value;
                break;
            case ReduceOrder::ORDER_ONLY_INDEX:
                std::memcpy(out, &index, sizeof(T));
                break;
        }
    }
}

#define RECSDK_SIM_WHOLE_REDUCE(NAME, IS_MAX)                                                      \
    template <typename T, bool isSetMask = true>                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],  \
                     const int32_t repeatTime, const int32_t dstRepStride,                         \
                     const int32_t srcBlkStride, const int32_t srcRepStride,                       \
                     ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                           \
                     recsdk::sim::SrcLoc loc = {}) {                                               \
        WholeReduceExtremeLevel0<IS_MAX>(                                                          \
            #NAME, dst, src,                                                                       \
            recsdk::sim::PlanFromBits<T>(mask, static_cast<uint8_t>(repeatTime), isSetMask, #NAME, \
                                         loc),                                                     \
            dstRepStride, srcBlkStride, srcRepStride, order, loc);                                 \
    }                                                                                              \
    template <typename T, bool isSetMask = true>                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,     \
                     const int32_t repeatTime, const int32_t dstRepStride,                         \
                     const int32_t srcBlkStride, const int32_t srcRepStride,                       \
                     ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                           \
                     recsdk::sim::SrcLoc loc = {}) {                                               \
        WholeReduceExtremeLevel0<IS_MAX>(                                                          \
            #NAME, dst, src,                                                                       \
            recsdk::sim::PlanFromCount<T>(static_cast<uint64_t>(mask),                             \
                                          static_cast<uint8_t>(repeatTime), isSetMask, #NAME,      \
                                          loc),                                                    \
            dstRepStride, srcBlkStride, srcRepStride, order, loc);                                 \
    }
RECSDK_SIM_WHOLE_REDUCE(WholeReduceMax, true)
RECSDK_SIM_WHOLE_REDUCE(WholeReduceMin, false)
#undef RECSDK_SIM_WHOLE_REDUCE

}  // namespace AscendC

namespace recsdk::sim {

template <typename T>
inline T ReadReduceSumSpr(const char* call, const SrcLoc& loc) {
    VecType<kHalfFloat<T>, T>(call, loc);
    // The register holds the last ReduceSum count form of this core
    // (GetReduceRepeatSumSpr(ISASI).md documents it for that form only, so a level-0 ReduceSum
    // leaves it unreadable).
    const CoreState& c = Core();
    if (c.reduce_sum_type == nullptr) {
        Fail(call, loc,
             "no ReduceSum count form ran before it on this core (the register is documented "
             "only after that form)");
    }
    if (std::string(c.reduce_sum_type) != TypeName<T>()) {
        Fail(call, loc,
             std::string("read as ") + TypeName<T>() + " after a ReduceSum of " +
                 c.reduce_sum_type + " (the page requires the ReduceSum's type)");
    }
    return static_cast<T>(c.reduce_sum_value);
}

}  // namespace recsdk::sim

namespace AscendC {

// GetReduceRepeatSumSpr(ISASI).md, and GetAccVal, its former name: the sum of the last ReduceSum
// count form; half, float.
template <typename T>
inline T GetReduceRepeatSumSpr(recsdk::sim::SrcLoc loc = {}) {
    return recsdk::sim::ReadReduceSumSpr<T>("GetReduceRepeatSumSpr", loc);
}
template <typename T>
inline T GetAccVal(recsdk::sim::SrcLoc loc = {}) {
    return recsdk::sim::ReadReduceSumSpr<T>("GetAccVal", loc);
}

// ReduceSum, count form (ReduceSum.md): dst[0] = the sum of src[0, count). On Atlas A2/A3 this
// form sums each 256-byte repeat as a binary tree and adds the repeats' sums in order ("方式一"),
// and sharedTmpBuffer is not used. half/float; a count of 0 is a no-op; isSetMask = false is
// refused. The mask / repeatTime forms are in recsdk_sim/vector_reduce.h.
template <typename T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                      const LocalTensor<T>& sharedTmpBuffer, const int32_t count,
                      recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(isSetMask,
                  "ReduceSum<T, false> (the mask from SetVectorMask) is not emulated: pass count");
    const char* call = "ReduceSum";
    VecType<kHalfFloat<T>, T>(call, loc);
    (void)sharedTmpBuffer;
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    VecOperand(src, count, call, loc);
    if (count == 0)
        return;
    dst.CheckSpan(1, call, loc);
    VecRead(src, static_cast<uint64_t>(count), call, loc);
    constexpr int32_t kLanes = 256 / sizeof(T);
    const T* a = src.SimData();
    T acc = static_cast<T>(0.0f);
    for (int32_t r0 = 0; r0 < count; r0 += kLanes) {
        float lanes[kLanes] = {};
        for (int32_t j = 0; j < kLanes && r0 + j < count; ++j)
            lanes[j] = static_cast<float>(a[r0 + j]);
        const T part = static_cast<T>(PairwiseSum(lanes, kLanes));
        acc = r0 == 0 ? part : static_cast<T>(static_cast<float>(acc) + static_cast<float>(part));
    }
    VecWrite(dst, 1, call, loc);
    dst.SimData()[0] = acc;
    Core().reduce_sum_type = TypeName<T>();
    Core().reduce_sum_value = static_cast<float>(acc);
    VecDone(count, sizeof(T));
}
template <typename T, typename P>
inline void BlockReduceSumLevel0(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const P& plan, int32_t dstRepStride, int32_t srcBlkStride,
                                 int32_t srcRepStride, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    const char* call = "BlockReduceSum";
    dst.Validate(call, loc);
    dst.InUb(call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    // dstRepStride counts one repeat's 8 results (ReduceDataBlock.md: 16 bytes for half).
    const uint64_t per = uint64_t(dstRepStride) * 8;
    const uint64_t end = plan.repeats == 0 ? 0 : (plan.repeats - 1) * per + 8;
    dst.CheckSpan(end, call, loc);
    const Lane0 ss{uint64_t(srcBlkStride), uint64_t(srcRepStride)};
    std::vector<T> results(uint64_t(plan.repeats) * 8);
    ReduceLevel0(
        call, src, plan, ss,
        [&](uint32_t r, const float* v, const bool*) {
            for (uint32_t b = 0; b < 8; ++b)
                results[r * 8 + b] = static_cast<T>(PairwiseSum(v + b * P::kBlk, P::kBlk));
        },
        loc);
    if (end > 0)
        dst.SimAccess(0, end * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
    T* d = dst.SimData();
    for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (uint32_t b = 0; b < 8; ++b)
            d[r * per + b] = results[r * 8 + b];
    }
}

template <typename T, bool isSetMask = true>
inline void BlockReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                           const int32_t repeatTime, const uint64_t mask[],
                           const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, recsdk::sim::SrcLoc loc = {}) {
    BlockReduceSumLevel0(dst, src,
                         recsdk::sim::PlanFromBits<T>(mask, static_cast<uint8_t>(repeatTime),
                                                      isSetMask, "BlockReduceSum", loc),
                         dstRepStride, srcBlkStride, srcRepStride, loc);
}
template <typename T, bool isSetMask = true>
inline void BlockReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                           const int32_t repeatTime, const int32_t mask, const int32_t dstRepStride,
                           const int32_t srcBlkStride, const int32_t srcRepStride,
                           recsdk::sim::SrcLoc loc = {}) {
    BlockReduceSumLevel0(
        dst, src,
        recsdk::sim::PlanFromCount<T>(static_cast<uint64_t>(mask), static_cast<uint8_t>(repeatTime),
                                      isSetMask, "BlockReduceSum", loc),
        dstRepStride, srcBlkStride, srcRepStride, loc);
}

// ---- Copy (UB -> UB on PIPE_V, DataCopy.md Copy) ------------------------------------------------

template <typename T, typename P>
inline void CopyLevel0(const LocalTensor<T>& dst, const LocalTensor<T>& src, const P& plan,
                       const CopyRepeatParams& rp, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    VecType<kB16B32<T>, T>("Copy", loc);
    const Lane0 sd{rp.dstStride, rp.dstRepeatSize}, ss{rp.srcStride, rp.srcRepeatSize};
    Operand0(src, plan, ss, Acc::kRead, "Copy", loc);
    Operand0(dst, plan, sd, Acc::kWrite, "Copy", loc);
    T* d = dst.SimData();
    const T* a = src.SimData();
    Run0<T>(plan, [&](uint32_t r, uint32_t j) { d[P::At(r, j, sd)] = a[P::At(r, j, ss)]; });
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                 const uint8_t repeatTime, const CopyRepeatParams& repeatParams,
                 recsdk::sim::SrcLoc loc = {}) {
    CopyLevel0(dst, src, recsdk::sim::PlanFromBits<T>(mask, repeatTime, isSetMask, "Copy", loc),
               repeatParams, loc);
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask,
                 const uint8_t repeatTime, const CopyRepeatParams& repeatParams,
                 recsdk::sim::SrcLoc loc = {}) {
    CopyLevel0(dst, src, recsdk::sim::PlanFromCount<T>(mask, repeatTime, isSetMask, "Copy", loc),
               repeatParams, loc);
}

// ---- Gather, level 0 (Gather.md, the 高维切分计算 forms) -------------------------------
// Lane j of repeat r writes dst's element j of the repeat's 8 contiguous blocks (the repeat
// starting dstRepStride blocks after the previous one) from src's byte srcBaseAddr +
// srcOffset[r * lanes + j]: the offsets are read contiguously, one per lane of every repeat,
// which is how the count form on dav_c220 splits into full repeats plus a tail with the offsets
// advanced by the elements gathered. Lanes the mask leaves out keep dst.

template <typename T, typename P>
inline void GatherLevel0(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                         const LocalTensor<uint32_t>& srcOffset, uint32_t srcBaseAddr,
                         const P& plan, uint16_t dstRepStride, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    VecType<kB16B32<T>, T>("Gather", loc);
    if (plan.repeats == 0)
        return;  // Gather.md: repeatTime 0 is a no-op on Atlas A2/A3
    src.Validate("Gather", loc);
    CheckUbAligned(src.SimData(), "Gather", loc, "source");
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    if (s == reinterpret_cast<const uint8_t*>(dst.SimData()))
        Fail("Gather", loc, "dst and src are the same memory");
    // The offsets are 32-bit: the lanes of a repeat of T index P::kLanes of them.
    const uint64_t offsets =
        plan.counter ? plan.count : uint64_t(plan.repeats - 1) * P::kLanes + plan.HighestLane();
    srcOffset.Validate("Gather", loc);
    CheckUbAligned(srcOffset.SimData(), "Gather", loc, "srcOffset");
    srcOffset.CheckSpan(offsets, "Gather", loc);
    srcOffset.SimAccess(0, offsets * sizeof(uint32_t), Pipe::V, Acc::kRead, "Gather", loc);
    const uint64_t limit = src.GetLength();
    src.SimAccess(0, limit, Pipe::V, Acc::kRead, "Gather", loc);  // any element may be gathered
    const Lane0 sd{1, dstRepStride};
    Operand0(dst, plan, sd, Acc::kWrite, "Gather", loc);
    const uint32_t* off = srcOffset.SimData();
    T* d = dst.SimData();
    Run0<T>(plan, [&](uint32_t r, uint32_t j) {
        const uint32_t offset = off[uint64_t(r) * P::kLanes + j];
        std::memcpy(&d[P::At(r, j, sd)], s + GatherSourceByte<T>(srcBaseAddr, offset, limit, loc),
                    sizeof(T));
    });
}
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                   const LocalTensor<uint32_t>& srcOffset, const uint32_t srcBaseAddr,
                   const uint64_t mask, const uint8_t repeatTime, const uint16_t dstRepStride,
                   recsdk::sim::SrcLoc loc = {}) {
    GatherLevel0(dst, src, srcOffset, srcBaseAddr,
                 recsdk::sim::PlanFromCount<T>(mask, repeatTime, true, "Gather", loc), dstRepStride,
                 loc);
}
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                   const LocalTensor<uint32_t>& srcOffset, const uint32_t srcBaseAddr,
                   const uint64_t mask[], const uint8_t repeatTime, const uint16_t dstRepStride,
                   recsdk::sim::SrcLoc loc = {}) {
    GatherLevel0(dst, src, srcOffset, srcBaseAddr,
                 recsdk::sim::PlanFromBits<T>(mask, repeatTime, true, "Gather", loc), dstRepStride,
                 loc);
}

// ---- CreateVecIndex (CreateVecIndex.md): dst[i] = firstValue + i; A2 half/int16/float/int32 -----

template <typename T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count,
                           recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kArithType<T>, T>("CreateVecIndex", loc);
    VecOperand(dst, static_cast<int32_t>(count), "CreateVecIndex", loc);
    VecWrite(dst, count, "CreateVecIndex", loc);
    T* d = dst.SimData();
    for (uint32_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<T>)
            d[i] = static_cast<T>(static_cast<int64_t>(firstValue) + int64_t(i));
        else
            d[i] = static_cast<T>(static_cast<float>(firstValue) + static_cast<float>(i));
    }
    VecDone(static_cast<int32_t>(count), sizeof(T));
}
template <typename T, typename P>
inline void CreateVecIndexLevel0(LocalTensor<T>& dst, const T& firstValue, const P& plan,
                                 uint16_t blk, uint8_t rep, const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    VecType<kArithType<T>, T>("CreateVecIndex", loc);
    const Lane0 s{blk, rep};
    Operand0(dst, plan, s, Acc::kWrite, "CreateVecIndex", loc);
    T* d = dst.SimData();
    Run0<T>(plan, [&](uint32_t r, uint32_t j) {
        const int64_t k = int64_t(r) * P::kLanes + j;
        if constexpr (std::is_integral_v<T>)
            d[P::At(r, j, s)] = static_cast<T>(static_cast<int64_t>(firstValue) + k);
        else
            d[P::At(r, j, s)] = static_cast<T>(static_cast<float>(firstValue) + float(k));
    });
}
template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dst, const T& firstValue, uint64_t mask,
                           uint8_t repeatTime, uint16_t dstBlkStride, uint8_t dstRepStride,
                           recsdk::sim::SrcLoc loc = {}) {
    CreateVecIndexLevel0(
        dst, firstValue,
        recsdk::sim::PlanFromCount<T>(mask, repeatTime, true, "CreateVecIndex", loc), dstBlkStride,
        dstRepStride, loc);
}
template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dst, const T& firstValue, uint64_t mask[],
                           uint8_t repeatTime, uint16_t dstBlkStride, uint8_t dstRepStride,
                           recsdk::sim::SrcLoc loc = {}) {
    CreateVecIndexLevel0(
        dst, firstValue,
        recsdk::sim::PlanFromBits<T>(mask, repeatTime, true, "CreateVecIndex", loc), dstBlkStride,
        dstRepStride, loc);
}

// ---- Silu (adv_api activation/silu.h): dst = x / (1 + exp(-x)); half/float ----------------------

template <typename T, bool isReuseSource = false>
inline void Silu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize,
                 recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    VecType<kHalfFloat<T>, T>("Silu", loc);
    const auto count = static_cast<int32_t>(dataSize);
    VecOperand(dstLocal, count, "Silu", loc);
    VecOperand(srcLocal, count, "Silu", loc);
    VecReadSrc(srcLocal, dstLocal, dataSize, "Silu", loc);
    VecWrite(dstLocal, dataSize, "Silu", loc);
    T* d = dstLocal.SimData();
    const T* a = srcLocal.SimData();
    for (uint32_t i = 0; i < dataSize; ++i) {
        const float x = static_cast<float>(a[i]);
        d[i] = static_cast<T>(x / (1.0f + std::exp(-x)));
    }
    VecDone(count, sizeof(T));
}

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_MASKED_H
