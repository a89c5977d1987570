// DataCopy and DataCopyPad between global memory and the unified buffer.
//
// Semantics (docs/api/SIMD-API/基础API/Memory矢量计算/数据搬运/):
// - DataCopy_GMAndUB_continuous.md: UB addresses 32-byte aligned, GM addresses aligned to the
//   element size, and count * sizeof(T) a multiple of 32 bytes. The hardware does not fault on a
//   short length, it silently rounds it down; the emulator fails instead, naming the call.
// - DataCopy_UBToUB_continuous.md: both sides 32-byte aligned, length a multiple of 32 bytes.
// - DataCopy with DataCopyParams (…highdim_split.md): blockCount blocks of blockLen 32-byte
//   units, strides in 32-byte units.
// - DataCopyPad_GMToUB.md: any GM address; each of blockCount blocks of blockLen bytes lands
//   32-byte aligned in UB (dstStride in 32-byte blocks, srcStride in bytes), padded on the left/
//   right by leftPadding/rightPadding elements (at most 32 bytes each) and then with "dummy"
//   data up to 32 bytes. isPad=true fills padding and dummy with paddingValue (which must be 0
//   for 64-bit types); isPad=false leaves them undefined, except that with no padding the dummy
//   repeats the block's first element. blockCount in [0, 4095], blockLen in [0, 2097151] and a
//   multiple of sizeof(T); either being 0 is a no-op on Atlas A2/A3.
// - DataCopyPad_UBToGM.md: the reverse; srcStride in 32-byte blocks, dstStride in bytes; only
//   blockLen bytes per block reach GM.
// - SetAtomicAdd.md: with atomic add enabled, UB->GM copies add element-wise into GM.
//
// Undefined bytes are filled with a poison pattern so that kernels relying on them fail tests.
//
// Pipes (核内同步能力概述.md table 1, for the hazard checker, recsdk_sim/hazard.h): GM->UB is
// PIPE_MTE2, UB->GM PIPE_MTE3; UB->UB is a vector-pipe copy (C-API asc_copy_ub2ub.md "流水类型
// PIPE_V", the copy DataCopy_UBToUB issues). The unified-buffer side of a DMA is counted in the
// 32-byte blocks it moves (padding and dummy bytes of DataCopyPad included).
#ifndef RECSDK_SIM_DATACOPY_H
#define RECSDK_SIM_DATACOPY_H

#include <cstring>
#include <string>

#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

namespace AscendC {

struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn,
                   const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn,
                      const uint32_t dstStrideIn, const uint32_t rsvIn)
        : blockCount(count),
          blockLen(len),
          srcStride(srcStrideIn),
          dstStride(dstStrideIn),
          rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue,
                         const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue),
          leftPadding(leftPadValue),
          rightPadding(rightPadValue),
          paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T{};
};

}  // namespace AscendC

namespace recsdk::sim {

constexpr uint8_t kPoison = 0xA7;

// count blocks of `block` bytes, `stride` bytes apart, from the tensor's start: one access when
// they are contiguous, else one per block.
template <typename T>
inline void DmaBlocks(const AscendC::LocalTensor<T>& t, uint64_t count, uint64_t block,
                      uint64_t stride, Pipe pipe, Acc acc, const char* call, const SrcLoc& loc) {
    if (count == 0 || block == 0)
        return;
    if (stride == block) {
        t.SimAccess(0, count * block, pipe, acc, call, loc);
        return;
    }
    for (uint64_t i = 0; i < count; ++i)
        t.SimAccess(i * stride, block, pipe, acc, call, loc);
}

inline void CheckUbAligned(const void* p, const char* call, const SrcLoc& loc, const char* what) {
    const auto off = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(p) - Core().ub);
    if (off % 32 != 0) {
        Fail(call, loc,
             std::string(what) + " unified-buffer address (UB offset " + std::to_string(off) +
                 ") is not 32-byte aligned");
    }
}

template <typename T>
inline void CheckGmAligned(const T* p, const char* call, const SrcLoc& loc) {
    if (reinterpret_cast<uintptr_t>(p) % sizeof(T) != 0) {
        Fail(call, loc,
             "global-memory address is not aligned to sizeof(" + std::string(TypeName<T>()) + ")");
    }
}

inline void CheckMultipleOf32(uint64_t bytes, const char* call, const SrcLoc& loc) {
    if (bytes % 32 != 0) {
        Fail(call, loc,
             "length " + std::to_string(bytes) +
                 " bytes is not a multiple of 32: the hardware would silently move only " +
                 std::to_string(bytes / 32 * 32) +
                 " bytes (use DataCopyPad for unaligned lengths)");
    }
}

template <typename T>
inline T AtomicAddValue(T a, T b) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) {
        return T(float(a) + float(b));
    } else {
        return static_cast<T>(a + b);
    }
}

// Element-wise atomic add of n elements into global memory (SetAtomicAdd window). Real atomics:
// concurrent cores adding into the same element all land.
template <typename T>
inline void AtomicAddToGm(T* dst, const T* src, uint64_t n) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "atomic size");
    using Bits = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    for (uint64_t i = 0; i < n; ++i) {
        auto* word = reinterpret_cast<Bits*>(dst + i);
        Bits expected = __atomic_load_n(word, __ATOMIC_RELAXED);
        for (;;) {
            T cur;
            std::memcpy(&cur, &expected, sizeof(T));
            const T sum = AtomicAddValue(cur, src[i]);
            Bits desired;
            std::memcpy(&desired, &sum, sizeof(T));
            if (__atomic_compare_exchange_n(word, &expected, desired, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        }
    }
}

template <typename T>
inline void WriteGm(T* dst, const T* src, uint64_t n, const char* call, const SrcLoc& loc) {
    auto& c = Core();
    if (c.atomic_mode == 1) {
        if (std::strcmp(c.atomic_type, TypeName<T>()) != 0) {
            Fail(call, loc,
                 std::string("SetAtomicAdd<") + c.atomic_type + "> is active but the copy moves " +
                     TypeName<T>() + " elements");
        }
        AtomicAddToGm(dst, src, n);
        c.stats->atomic_write_bytes += n * sizeof(T);
    } else {
        std::memcpy(dst, src, n * sizeof(T));
    }
    CountGmWrite(*c.stats, dst, n * sizeof(T));
}

}  // namespace recsdk::sim

namespace AscendC {

// ---- DataCopy, contiguous -----------------------------------------------------------------------

// Both directions of a contiguous copy: the UB span and alignment, the GM alignment and bounds,
// whole 32-byte blocks, and the pipe's access (MTE2 writes UB, MTE3 reads it). Returns the bytes.
template <typename T>
inline uint64_t CheckContiguous(const LocalTensor<T>& ub, const T* gm, uint32_t count, bool toGm,
                                const char* call, recsdk::sim::SrcLoc loc) {
    using namespace recsdk::sim;
    ub.CheckSpan(count, call, loc);
    CheckUbAligned(ub.SimData(), call, loc, toGm ? "source" : "destination");
    CheckGmAligned(gm, call, loc);
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    CheckMultipleOf32(bytes, call, loc);
    CheckGm(gm, bytes, toGm, call, loc);
    ub.SimAccess(0, bytes, toGm ? Pipe::MTE3 : Pipe::MTE2, toGm ? Acc::kRead : Acc::kWrite, call,
                 loc);
    return bytes;
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(GM->UB)";
    const uint64_t bytes = CheckContiguous(dst, src.SimData(), count, false, call, loc);
    std::memcpy(dst.SimData(), src.SimData(), bytes);
    auto& s = Stats();
    CountGmRead(s, src.SimData(), bytes);
    ++s.dma_transfers;
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(UB->GM)";
    CheckContiguous(src, dst.SimData(), count, true, call, loc);
    WriteGm(dst.SimData(), src.SimData(), count, call, loc);
    ++Stats().dma_transfers;
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(UB->UB)";
    dst.CheckSpan(count, call, loc);
    src.CheckSpan(count, call, loc);
    CheckUbAligned(dst.SimData(), call, loc, "destination");
    CheckUbAligned(src.SimData(), call, loc, "source");
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    CheckMultipleOf32(bytes, call, loc);
    src.SimAccess(0, bytes, Pipe::V, Acc::kRead, call, loc);
    dst.SimAccess(0, bytes, Pipe::V, Acc::kWrite, call, loc);
    std::memmove(dst.SimData(), src.SimData(), bytes);
}

// ---- DataCopy with block parameters (all units are 32-byte blocks) -----------------------------

// The UB side of a blocked copy, either direction: alignment, the span the blocks and their
// UB-side gaps cover, and the pipe's access to each block. Returns the block size in bytes.
template <typename T>
inline uint64_t CheckUbBlocks(const LocalTensor<T>& ub, const DataCopyParams& p, uint64_t ubStride,
                              recsdk::sim::Pipe pipe, recsdk::sim::Acc acc, const char* call,
                              recsdk::sim::SrcLoc loc, const char* side) {
    recsdk::sim::CheckUbAligned(ub.SimData(), call, loc, side);
    const uint64_t block = uint64_t(p.blockLen) * 32;
    const uint64_t pitch = block + ubStride * 32ull;
    const uint64_t span = p.blockCount == 0 ? 0 : (p.blockCount - 1) * pitch + block;
    ub.CheckSpan((span + sizeof(T) - 1) / sizeof(T), call, loc);
    recsdk::sim::DmaBlocks(ub, p.blockCount, block, pitch, pipe, acc, call, loc);
    return block;
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(GM->UB, DataCopyParams)";
    CheckGmAligned(src.SimData(), call, loc);
    const uint64_t block =
        CheckUbBlocks(dst, p, p.dstStride, Pipe::MTE2, Acc::kWrite, call, loc, "destination");
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* from = s + i * (block + p.srcStride * 32ull);
        CheckGm(from, block, false, call, loc);
        std::memcpy(d + i * (block + p.dstStride * 32ull), from, block);
    }
    auto& st = Stats();
    CountGmRead(st, src.SimData(), block * p.blockCount);
    ++st.dma_transfers;
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(UB->GM, DataCopyParams)";
    CheckGmAligned(dst.SimData(), call, loc);
    const uint64_t block =
        CheckUbBlocks(src, p, p.srcStride, Pipe::MTE3, Acc::kRead, call, loc, "source");
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        uint8_t* to = d + i * (block + p.dstStride * 32ull);
        CheckGm(to, block, true, call, loc);
        WriteGm(reinterpret_cast<T*>(to),
                reinterpret_cast<const T*>(s + i * (block + p.srcStride * 32ull)),
                block / sizeof(T), call, loc);
    }
    ++Stats().dma_transfers;
}

// ---- DataCopyPad
// ----------------------------------------------------------------------------------

// The checks both directions of DataCopyPad make (the SoC, the UB side, the block sizes).
template <typename T>
inline recsdk::sim::CoreState& CheckPadParams(const LocalTensor<T>& ub, const DataCopyExtParams& p,
                                              const char* call, recsdk::sim::SrcLoc loc,
                                              const char* side) {
    using namespace recsdk::sim;
    auto& core = Core();
    if (!core.launch->soc->has_datacopy_pad) {
        Fail(call, loc, std::string("DataCopyPad is not available on ") + core.launch->soc->name);
    }
    ub.Validate(call, loc);
    CheckUbAligned(ub.SimData(), call, loc, side);
    if (p.blockCount > 4095)
        Fail(call, loc, "blockCount " + std::to_string(p.blockCount) + " > 4095");
    if (p.blockLen > 2097151)
        Fail(call, loc, "blockLen " + std::to_string(p.blockLen) + " > 2097151");
    if (p.blockLen % sizeof(T) != 0) {
        Fail(call, loc,
             "blockLen " + std::to_string(p.blockLen) + " is not a multiple of sizeof(" +
                 TypeName<T>() + ")");
    }
    return core;
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                        const DataCopyExtParams& p, const DataCopyPadExtParams<T>& pad,
                        recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopyPad(GM->UB)";
    CheckPadParams(dst, p, call, loc, "destination");
    if (pad.leftPadding * sizeof(T) > 32 || pad.rightPadding * sizeof(T) > 32) {
        Fail(call, loc, "leftPadding/rightPadding exceed 32 bytes");
    }
    if (sizeof(T) == 8 && pad.isPad) {
        T zero{};
        if (std::memcmp(&pad.paddingValue, &zero, sizeof(T)) != 0) {
            Fail(call, loc, "paddingValue of a 64-bit type must be 0");
        }
    }
    if (p.blockCount == 0 || p.blockLen == 0)
        return;  // NOP on Atlas A2/A3
    const uint64_t left = pad.leftPadding * sizeof(T);
    const uint64_t right = pad.rightPadding * sizeof(T);
    const uint64_t ub_block = (left + p.blockLen + right + 31) / 32 * 32;
    const uint64_t ub_stride = ub_block + uint64_t(p.dstStride) * 32;
    const uint64_t ub_span = (p.blockCount - 1) * ub_stride + ub_block;
    dst.CheckSpan((ub_span + sizeof(T) - 1) / sizeof(T), call, loc);
    DmaBlocks(dst, p.blockCount, ub_block, ub_stride, Pipe::MTE2, Acc::kWrite, call, loc);
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* from = s + i * (uint64_t(p.blockLen) + p.srcStride);
        CheckGm(from, p.blockLen, false, call, loc);
        uint8_t* to = d + i * ub_stride;
        std::memcpy(to + left, from, p.blockLen);
        auto fill = [&](uint64_t begin, uint64_t end, bool as_padding) {
            for (uint64_t b = begin; b < end; b += sizeof(T)) {
                if (pad.isPad) {
                    std::memcpy(to + b, &pad.paddingValue, sizeof(T));
                } else if (!as_padding && left == 0 && right == 0) {
                    std::memcpy(to + b, from, sizeof(T));  // dummy repeats the first element
                } else {
                    std::memset(to + b, kPoison, sizeof(T));
                }
            }
        };
        fill(0, left, true);
        fill(left + p.blockLen, left + p.blockLen + right, true);
        fill(left + p.blockLen + right, ub_block, false);
    }
    auto& st = Stats();
    CountGmRead(st, src.SimData(), uint64_t(p.blockLen) * p.blockCount);
    ++st.dma_transfers;
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                        const DataCopyExtParams& p, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopyPad(UB->GM)";
    auto& core = CheckPadParams(src, p, call, loc, "source");
    if (p.blockCount == 0 || p.blockLen == 0)
        return;
    const uint64_t ub_block = (uint64_t(p.blockLen) + 31) / 32 * 32;
    const uint64_t ub_stride = ub_block + uint64_t(p.srcStride) * 32;
    // The last block is read only up to blockLen (the rest of its 32-byte unit is dummy).
    const uint64_t ub_span = (p.blockCount - 1) * ub_stride + p.blockLen;
    src.CheckSpan((ub_span + sizeof(T) - 1) / sizeof(T), call, loc);
    DmaBlocks(src, p.blockCount, ub_block, ub_stride, Pipe::MTE3, Acc::kRead, call, loc);
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        uint8_t* to = d + i * (uint64_t(p.blockLen) + p.dstStride);
        CheckGm(to, p.blockLen, true, call, loc);
        if (reinterpret_cast<uintptr_t>(to) % alignof(T) != 0 && core.atomic_mode == 1) {
            Fail(call, loc,
                 "atomic add to a global-memory address not aligned to the element size");
        }
        WriteGm(reinterpret_cast<T*>(to), reinterpret_cast<const T*>(s + i * ub_stride),
                p.blockLen / sizeof(T), call, loc);
    }
    ++Stats().dma_transfers;
}

}  // namespace AscendC

#endif  // RECSDK_SIM_DATACOPY_H
