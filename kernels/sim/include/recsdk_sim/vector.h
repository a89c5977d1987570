// Vector instructions in count mode (the "前n个数据计算" prototypes).
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/):
// - 数据填充/Duplicate.md: dst[i] = scalar; A2/A3 types
// int16/uint16/half/bfloat16/int32/uint32/float.
// - 基础算术/Adds.md, Muls.md, Maxs.md, Mins.md: dst[i] = src[i] op scalar; A2/A3 types
//   int16/half/int32/float (Muls also the same list).
// - 基础算术/Add.md, Sub.md, Mul.md, Max.md, Min.md: dst[i] = src0[i] op src1[i]; same types.
// - 基础算术/Div.md: dst[i] = src0[i] / src1[i]; Sqrt.md: dst[i] = sqrt(src[i]); A2/A3 types
//   half/float only.
// - 类型转换/Cast.md: in recsdk_sim/vector_cast.h.
// - 离散与聚合/Gather.md: dst[i] = src[(srcBaseAddr + srcOffset[i]) / sizeof(T)], byte offsets
//   aligned to the element size; A2/A3 types are 16- and 32-bit; dst and src must not overlap.
// - SIMD计算说明/连续计算.md: operands start 32-byte aligned in the unified buffer.
// 64-bit integers have no vector arithmetic on A2/A3, which is why kernels here do 64-bit
// offset arithmetic with scalar code; the emulator rejects such instructions.
#ifndef RECSDK_SIM_VECTOR_H
#define RECSDK_SIM_VECTOR_H

#include <cmath>
#include <string>
#include <type_traits>

#include "recsdk_sim/datacopy.h"
#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

namespace AscendC {

enum class RoundMode {
    CAST_NONE = 0,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD,
};

}  // namespace AscendC

namespace recsdk::sim {

template <typename T>
constexpr bool kArithType = std::is_same_v<T, int16_t> || std::is_same_v<T, half> ||
                            std::is_same_v<T, int32_t> || std::is_same_v<T, float>;

template <typename T>
constexpr bool kFloatType = std::is_same_v<T, half> || std::is_same_v<T, float>;

template <typename T>
constexpr bool kDuplicateType = kArithType<T> || std::is_same_v<T, uint16_t> ||
                                std::is_same_v<T, bfloat16_t> || std::is_same_v<T, uint32_t>;

template <typename T>
inline void VecOperand(const AscendC::LocalTensor<T>& t, int32_t count, const char* call,
                       const SrcLoc& loc) {
    if (count < 0)
        Fail(call, loc, "negative count " + std::to_string(count));
    t.CheckSpan(static_cast<uint64_t>(count), call, loc);
    CheckUbAligned(t.SimData(), call, loc, "operand");
}

// elem_bytes: the widest operand's element size; an instruction takes one 256-byte repeat per
// cycle at best (recsdk_sim/model.h), so the modelled vector time counts repeats; instr (the API
// name) for the instructions the vendor lists at a lower rate (model.h VectorRepeatCycles).
inline void VecDone(int32_t count, uint64_t elem_bytes, const char* instr = nullptr) {
    auto& s = Stats();
    s.vector_elements += static_cast<uint64_t>(count);
    const uint64_t repeats = (static_cast<uint64_t>(count) * elem_bytes + 255) / 256;
    s.vector_repeats += repeats;
    ++s.vector_instrs;
    ModelVector(repeats, VectorRepeatCycles(instr, elem_bytes));
}

// The first `count` elements of an operand are read / written on PIPE_V (recsdk_sim/hazard.h).
template <typename T>
inline void VecRead(const AscendC::LocalTensor<T>& t, uint64_t count, const char* call,
                    const SrcLoc& loc) {
    t.SimAccess(0, count * sizeof(T), Pipe::V, Acc::kRead, call, loc);
}
template <typename T>
inline void VecWrite(const AscendC::LocalTensor<T>& t, uint64_t count, const char* call,
                     const SrcLoc& loc) {
    t.SimAccess(0, count * sizeof(T), Pipe::V, Acc::kWrite, call, loc);
}
// A source the instruction also overwrites in place (dst == src): the write's checks cover the
// read's (same bytes, same pipe), and the write replaces its record.
template <typename T, typename U>
inline void VecReadSrc(const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<U>& dst,
                       uint64_t count, const char* call, const SrcLoc& loc) {
    if (static_cast<const void*>(src.SimData()) == static_cast<const void*>(dst.SimData()) &&
        count * sizeof(T) <= uint64_t(dst.GetLength())) {
        return;
    }
    VecRead(src, count, call, loc);
}

template <bool ok, typename T>
inline void VecType(const char* call, const SrcLoc& loc) {
    if constexpr (!ok) {
        Fail(call, loc,
             std::string(TypeName<T>()) +
                 " is not a supported data type of this instruction on Atlas A2/A3");
    }
}

template <typename T>
inline float AsFloat(T v) {
    return static_cast<float>(v);
}

// The source byte one Gather lane reads (both forms): Gather.md gives byte offsets from the
// source's start, and the hardware needs them element-aligned and inside the source.
template <typename T>
inline uint64_t GatherSourceByte(uint32_t base, uint32_t offset, uint64_t limit,
                                 const SrcLoc& loc) {
    const uint64_t byte = uint64_t(base) + offset;
    if (byte % sizeof(T) != 0)
        Fail("Gather", loc,
             "offset " + std::to_string(byte) + " is not aligned to the element size");
    if (byte + sizeof(T) > limit) {
        Fail("Gather", loc,
             "offset " + std::to_string(byte) + " reads outside the " + std::to_string(limit) +
                 "-byte source tensor");
    }
    return byte;
}

}  // namespace recsdk::sim

namespace AscendC {

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count,
                      recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::VecType<recsdk::sim::kDuplicateType<T>, T>("Duplicate", loc);
    recsdk::sim::VecOperand(dst, count, "Duplicate", loc);
    recsdk::sim::VecWrite(dst, count, "Duplicate", loc);
    T* d = dst.SimData();
    for (int32_t i = 0; i < count; ++i)
        d[i] = scalarValue;
    recsdk::sim::VecDone(count, sizeof(T));
}

#define RECSDK_SIM_SCALAR_OP(NAME, EXPR)                                                         \
    template <typename T, typename U>                                                            \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, \
                     const int32_t& count, recsdk::sim::SrcLoc loc = {}) {                       \
        recsdk::sim::VecType<recsdk::sim::kArithType<T>, T>(#NAME, loc);                         \
        recsdk::sim::VecOperand(dst, count, #NAME, loc);                                         \
        recsdk::sim::VecOperand(src, count, #NAME, loc);                                         \
        recsdk::sim::VecReadSrc(src, dst, count, #NAME, loc);                                    \
        recsdk::sim::VecWrite(dst, count, #NAME, loc);                                           \
        const T s = static_cast<T>(scalarValue);                                                 \
        T* d = dst.SimData();                                                                    \
        const T* a = src.SimData();                                                              \
        for (int32_t i = 0; i < count; ++i) {                                                    \
            const T x = a[i];                                                                    \
            d[i] = static_cast<T>(EXPR);                                                         \
        }                                                                                        \
        recsdk::sim::VecDone(count, sizeof(T));                                                  \
    }

RECSDK_SIM_SCALAR_OP(Adds, x + s)
RECSDK_SIM_SCALAR_OP(Muls, x* s)
RECSDK_SIM_SCALAR_OP(Maxs, (x < s ? s : x))
RECSDK_SIM_SCALAR_OP(Mins, (s < x ? s : x))
#undef RECSDK_SIM_SCALAR_OP

// TYPES: the trait of the dtypes the instruction takes on A2/A3.
#define RECSDK_SIM_BINARY_OP(NAME, TYPES, EXPR)                             \
    template <typename T>                                                   \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, \
                     const LocalTensor<T>& src1, const int32_t& count,      \
                     recsdk::sim::SrcLoc loc = {}) {                        \
        recsdk::sim::VecType<recsdk::sim::TYPES<T>, T>(#NAME, loc);         \
        recsdk::sim::VecOperand(dst, count, #NAME, loc);                    \
        recsdk::sim::VecOperand(src0, count, #NAME, loc);                   \
        recsdk::sim::VecOperand(src1, count, #NAME, loc);                   \
        recsdk::sim::VecReadSrc(src0, dst, count, #NAME, loc);              \
        recsdk::sim::VecReadSrc(src1, dst, count, #NAME, loc);              \
        recsdk::sim::VecWrite(dst, count, #NAME, loc);                      \
        T* d = dst.SimData();                                               \
        const T* a = src0.SimData();                                        \
        const T* b = src1.SimData();                                        \
        for (int32_t i = 0; i < count; ++i) {                               \
            const T x = a[i];                                               \
            const T y = b[i];                                               \
            d[i] = static_cast<T>(EXPR);                                    \
        }                                                                   \
        recsdk::sim::VecDone(count, sizeof(T), #NAME);                      \
    }

RECSDK_SIM_BINARY_OP(Div, kFloatType, x / y)

template <typename T>
inline void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,
                 recsdk::sim::SrcLoc loc = {}) {
    recsdk::sim::VecType<recsdk::sim::kFloatType<T>, T>("Sqrt", loc);
    recsdk::sim::VecOperand(dst, count, "Sqrt", loc);
    recsdk::sim::VecOperand(src, count, "Sqrt", loc);
    recsdk::sim::VecRead(src, count, "Sqrt", loc);
    recsdk::sim::VecWrite(dst, count, "Sqrt", loc);
    T* d = dst.SimData();
    const T* a = src.SimData();
    for (int32_t i = 0; i < count; ++i)
        d[i] = static_cast<T>(std::sqrt(recsdk::sim::AsFloat(a[i])));
    recsdk::sim::VecDone(count, sizeof(T), "Sqrt");
}

RECSDK_SIM_BINARY_OP(Add, kArithType, x + y)
RECSDK_SIM_BINARY_OP(Sub, kArithType, x - y)
RECSDK_SIM_BINARY_OP(Mul, kArithType, x* y)
RECSDK_SIM_BINARY_OP(Max, kArithType, (x < y ? y : x))
RECSDK_SIM_BINARY_OP(Min, kArithType, (y < x ? y : x))
#undef RECSDK_SIM_BINARY_OP

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                   const LocalTensor<uint32_t>& srcOffset, const uint32_t srcBaseAddr,
                   const uint32_t count, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    constexpr bool ok = sizeof(T) == 2 || sizeof(T) == 4;
    VecType<ok, T>("Gather", loc);
    if (count == 0)
        return;  // Gather.md: count 0 is a no-op
    VecOperand(dst, static_cast<int32_t>(count), "Gather", loc);
    VecOperand(srcOffset, static_cast<int32_t>(count), "Gather", loc);
    src.Validate("Gather", loc);
    CheckUbAligned(src.SimData(), "Gather", loc, "source");
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    if (s == reinterpret_cast<const uint8_t*>(dst.SimData()))
        Fail("Gather", loc, "dst and src are the same memory");
    const uint64_t limit = src.GetLength();
    VecRead(srcOffset, count, "Gather", loc);
    src.SimAccess(0, limit, Pipe::V, Acc::kRead, "Gather", loc);  // any element may be gathered
    VecWrite(dst, count, "Gather", loc);
    const uint32_t* off = srcOffset.SimData();
    T* d = dst.SimData();
    for (uint32_t i = 0; i < count; ++i)
        std::memcpy(&d[i], s + GatherSourceByte<T>(srcBaseAddr, off[i], limit, loc), sizeof(T));
    VecDone(static_cast<int32_t>(count), sizeof(T));
}

}  // namespace AscendC

#endif  // RECSDK_SIM_VECTOR_H
