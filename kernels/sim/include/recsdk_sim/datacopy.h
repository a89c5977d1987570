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

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "recsdk_sim/model.h"
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

// DataCopy_GMToL1_ND2NZ.md, 表3: ndNum ND matrices of nValue rows x dValue columns (srcDValue
// elements per source row, srcNdMatrixStride elements between matrices) into NZ: column group j
// (C0 = 32 bytes of columns) of row r at j * dstNzC0Stride + r * dstNzNStride (units of 32 bytes),
// matrices dstNzMatrixStride elements apart.
struct Nd2NzParams {
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn,
                const uint16_t dstNzC0StrideIn, const uint16_t dstNzNStrideIn,
                const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn),
          nValue(nValueIn),
          dValue(dValueIn),
          srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn),
          dstNzC0Stride(dstNzC0StrideIn),
          dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

// The pre-Ext form (kernel_struct_data_copy.h): the value is a raw 64-bit word, written to the
// move-pad register unconverted (dav_c220 DataCopyPadGm2UBImpl passes it to set_mov_pad_val as it
// is, where the Ext form converts a T first), so a kernel writes the element's bit pattern.
struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue,
                      const uint8_t rightPadValue, const uint64_t padValue)
        : isPad(isPadValue),
          leftPadding(leftPadValue),
          rightPadding(rightPadValue),
          paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
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

// The atomic operation of CoreState::atomic_mode: 1 add (SetAtomicAdd), 2 max (SetAtomicMax),
// 3 min (SetAtomicMin).
template <typename T>
inline T AtomicValue(int mode, T cur, T in) {
    if (mode == 2)
        return static_cast<float>(in) > static_cast<float>(cur) ? in : cur;
    if (mode == 3)
        return static_cast<float>(in) < static_cast<float>(cur) ? in : cur;
    return AtomicAddValue(cur, in);
}

// Element-wise atomic add of n elements into global memory (SetAtomicAdd window). Real atomics:
// concurrent cores adding into the same element all land.
template <typename T>
inline void AtomicAddToGm(T* dst, const T* src, uint64_t n, int mode = 1) {
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
            const T sum = AtomicValue(mode, cur, src[i]);
            Bits desired;
            std::memcpy(&desired, &sum, sizeof(T));
            if (__atomic_compare_exchange_n(word, &expected, desired, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        }
    }
}

// A GM -> UB DMA of `bytes` from `from`: the DMA moves whole 32-byte blocks, so a read that runs
// past the end of the tensor it starts in by less than 32 bytes is what the hardware does (and a
// kernel copying the last partial block whole relies on it). Such a read is a warning, not an
// error: it is counted (gm_overread_bytes), reported on stderr once per core, and the bytes past
// the end land as poison. Anything farther out fails as CheckGm does.
inline void ReadGmBurst(uint8_t* to, const uint8_t* from, uint64_t bytes, const char* call,
                        const SrcLoc& loc) {
    if (bytes == 0)
        return;
    const LaunchState* l = Core().launch;
    const auto a = reinterpret_cast<uintptr_t>(from);
    for (const auto& r : l->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (a < b || a >= b + r.bytes)
            continue;
        const uint64_t inside = std::min<uint64_t>(bytes, b + r.bytes - a);
        const uint64_t over = bytes - inside;
        if (over == 0 || over >= 32)
            break;  // in bounds, or too far: CheckGm decides
        std::memcpy(to, from, inside);
        std::memset(to + inside, kPoison, over);
        auto& c = Core();
        if (c.stats->gm_overread_bytes == 0) {
            std::fprintf(stderr,
                         "recsdk sim warning: %s: %s read %llu bytes past the end of %s within "
                         "its last 32-byte block (allowed by the DMA burst; the bytes are "
                         "undefined)\n",
                         CoreName(c).c_str(), Where(call, loc).c_str(),
                         static_cast<unsigned long long>(over), r.name.c_str());
        }
        c.stats->gm_overread_bytes += over;
        return;
    }
    CheckGm(from, bytes, false, call, loc);
    std::memcpy(to, from, bytes);
}

template <typename T>
inline void WriteGm(T* dst, const T* src, uint64_t n, const char* call, const SrcLoc& loc) {
    auto& c = Core();
    if (c.atomic_mode != 0) {
        if (std::strcmp(c.atomic_type, TypeName<T>()) != 0) {
            static const char* const names[] = {"", "SetAtomicAdd<", "SetAtomicMax<",
                                                "SetAtomicMin<"};
            Fail(call, loc,
                 std::string(names[c.atomic_mode & 3]) + c.atomic_type +
                     "> is active but the copy moves " + TypeName<T>() + " elements");
        }
        AtomicAddToGm(dst, src, n, c.atomic_mode);
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
    if (toGm)
        CheckGm(gm, bytes, toGm, call, loc);  // reads: ReadGmBurst
    ub.SimAccess(0, bytes, toGm ? Pipe::MTE3 : Pipe::MTE2, toGm ? Acc::kRead : Acc::kWrite, call,
                 loc);
    return bytes;
}

// ---- GM -> L1 (a TSCM buffer) -------------------------------------------------------------------
//
// MTE2 writes the L1 buffer (the TSCM queue's EnQue/DeQue orders it before the Cube's MTE1 reads,
// pipe.h); the destination must be 32-byte aligned (DataCopy_GMToL1_ND2NZ.md 约束说明) and inside
// the buffer. The bytes are counted as the requesting core's GM reads and GM -> L1 traffic.

template <typename T>
inline void CheckL1Span(const LocalTensor<T>& l1, uint64_t elems, const char* call,
                        const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    l1.Validate(call, loc);
    if (l1.UbOffset() % 32 != 0) {
        Fail(call, loc,
             "L1 destination (offset " + std::to_string(l1.UbOffset()) +
                 " in the TSCM area) is not 32-byte aligned");
    }
    if (elems > l1.GetSize()) {
        Fail(call, loc,
             std::to_string(elems) + " elements of " + TypeName<T>() + " exceed the " +
                 std::to_string(l1.GetSize()) + " elements left in the TSCM tensor");
    }
}

template <typename T>
inline void CountGmToL1(const T* gm, uint64_t bytes) {
    auto& s = recsdk::sim::Stats();
    recsdk::sim::CountGmRead(s, gm, bytes);
    s.gm_to_l1_bytes += bytes;
    ++s.dma_transfers;
    recsdk::sim::ModelDma(recsdk::sim::Pipe::MTE2, gm, bytes, 1);
}

template <typename T>
inline void DataCopyGmToL1(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count,
                           const recsdk::sim::SrcLoc& loc) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(GM->L1)";
    CheckL1Span(dst, count, call, loc);
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    CheckMultipleOf32(bytes, call, loc);
    CheckGm(src.SimData(), bytes, false, call, loc);
    dst.SimAccess(0, bytes, Pipe::MTE2, Acc::kWrite, call, loc);
    std::memcpy(dst.SimData(), src.SimData(), bytes);
    CountGmToL1(src.SimData(), bytes);
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(GM->L1, ND2NZ)";
    if (!dst.SimInL1()) {
        Fail(call, loc,
             "the destination must be in L1 (a TSCM buffer); ND2NZ into the unified buffer is not "
             "a GM -> UB path");
    }
    if (p.ndNum > 4095 || p.nValue > 16384 || p.srcDValue < 1 || p.dstNzC0Stride < 1 ||
        p.dstNzC0Stride > 16384 || p.dstNzNStride < 1 || p.dstNzNStride > 16384 ||
        p.dstNzMatrixStride > 16384) {
        Fail(call, loc, "an Nd2NzParams field is outside its range (DataCopy_GMToL1_ND2NZ.md 表4)");
    }
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0)
        return;  // a NOP
    if (p.dValue > p.srcDValue) {
        Fail(call, loc,
             "dValue " + std::to_string(p.dValue) + " exceeds the source row of srcDValue " +
                 std::to_string(p.srcDValue) + " elements");
    }
    constexpr int64_t c0 = 32 / sizeof(T);
    const int64_t groups = (p.dValue + c0 - 1) / c0;
    const int64_t nd = p.ndNum, n = p.nValue;
    // The last element each matrix writes, and the span of the source the copy reads.
    const int64_t lastDst = (nd - 1) * p.dstNzMatrixStride +
                            ((groups - 1) * p.dstNzC0Stride + (n - 1) * p.dstNzNStride) * c0 + c0;
    CheckL1Span(dst, static_cast<uint64_t>(lastDst), call, loc);
    const int64_t srcSpan = (nd - 1) * p.srcNdMatrixStride + (n - 1) * p.srcDValue + p.dValue;
    CheckGm(src.SimData(), uint64_t(srcSpan) * sizeof(T), false, call, loc);
    T* out = dst.SimData();
    const T* in = src.SimData();
    for (int64_t i = 0; i < nd; ++i) {
        for (int64_t j = 0; j < groups; ++j) {  // the rows of a column group: 32 bytes each
            const int64_t at = i * p.dstNzMatrixStride + j * p.dstNzC0Stride * c0;
            if (p.dstNzNStride == 1) {
                dst.SimAccess(uint64_t(at) * sizeof(T), uint64_t(n) * 32, Pipe::MTE2, Acc::kWrite,
                              call, loc);
            } else {
                for (int64_t r = 0; r < n; ++r)
                    dst.SimAccess(uint64_t(at + r * p.dstNzNStride * c0) * sizeof(T), 32,
                                  Pipe::MTE2, Acc::kWrite, call, loc);
            }
        }
        for (int64_t r = 0; r < n; ++r) {
            for (int64_t j = 0; j < groups; ++j) {
                const int64_t at =
                    i * p.dstNzMatrixStride + (j * p.dstNzC0Stride + r * p.dstNzNStride) * c0;
                const T* row = in + i * p.srcNdMatrixStride + r * p.srcDValue + j * c0;
                for (int64_t e = 0; e < c0; ++e) {
                    // Columns past dValue are zero-filled to the 32-byte C0 (表3 dValue).
                    out[at + e] = j * c0 + e < p.dValue ? row[e] : T{};
                }
            }
        }
    }
    CountGmToL1(in, uint64_t(nd * n * p.dValue) * sizeof(T));
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    if (dst.SimInL1())
        return DataCopyGmToL1(dst, src, count, loc);
    const char* call = "DataCopy(GM->UB)";
    const uint64_t bytes = CheckContiguous(dst, src.SimData(), count, false, call, loc);
    ReadGmBurst(reinterpret_cast<uint8_t*>(dst.SimData()),
                reinterpret_cast<const uint8_t*>(src.SimData()), bytes, call, loc);
    auto& s = Stats();
    CountGmRead(s, src.SimData(), bytes);
    ++s.dma_transfers;
    ModelDma(Pipe::MTE2, src.SimData(), bytes, 1);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(UB->GM)";
    CheckContiguous(src, dst.SimData(), count, true, call, loc);
    WriteGm(dst.SimData(), src.SimData(), count, call, loc);
    ++Stats().dma_transfers;
    ModelDma(Pipe::MTE3, dst.SimData(), uint64_t(count) * sizeof(T), 1);
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
    ModelLocalCopy(Pipe::V, bytes);
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
        ReadGmBurst(d + i * (block + p.dstStride * 32ull), from, block, call, loc);
    }
    auto& st = Stats();
    CountGmRead(st, src.SimData(), block * p.blockCount);
    ++st.dma_transfers;
    ModelDma(Pipe::MTE2, src.SimData(), block, p.blockCount);
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
    ModelDma(Pipe::MTE3, dst.SimData(), block, p.blockCount);
}

// DataCopy_UBToUB (DataCopyParams form): blockCount blocks of blockLen 32-byte units, strides in
// 32-byte units on both sides; a vector-pipe copy like the count form.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "DataCopy(UB->UB, DataCopyParams)";
    const uint64_t block = uint64_t(p.blockLen) * 32;
    CheckUbBlocks(src, p, p.srcStride, Pipe::V, Acc::kRead, call, loc, "source");
    CheckUbBlocks(dst, p, p.dstStride, Pipe::V, Acc::kWrite, call, loc, "destination");
    auto* d = reinterpret_cast<uint8_t*>(dst.SimData());
    const auto* s = reinterpret_cast<const uint8_t*>(src.SimData());
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        std::memmove(d + i * (block + p.dstStride * 32ull), s + i * (block + p.srcStride * 32ull),
                     block);
    }
    ModelLocalCopy(Pipe::V, block * p.blockCount);
}

// DataCopy overloads CANN declares for dav_c220 that the emulation refuses where a kernel uses
// them (the parameter structs they take are not declared either, so those fail at the name).
struct SliceInfo {
    SliceInfo() {}
    SliceInfo(const uint32_t startIndexIn, const uint32_t endIndexIn, const uint32_t strideIn,
              const uint32_t burstLenIn, const uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn),
          endIndex(endIndexIn),
          stride(strideIn),
          burstLen(burstLenIn),
          shapeValue(shapeValueIn) {}
    uint32_t startIndex = 0;
    uint32_t endIndex = 31;
    uint32_t stride = 0;
    uint32_t burstLen = 32;
    uint32_t shapeValue = 0;
};

template <typename T>
inline void DataCopy(const LocalTensor<T>&, const GlobalTensor<T>&, const SliceInfo[],
                     const SliceInfo[], const uint32_t = 1) {
    static_assert(recsdk::sim::kRefused<T>,
                  "DataCopy with SliceInfo (multi-dimensional slices, GM->UB) is not emulated: "
                  "copy each slice with DataCopyPad and DataCopyExtParams");
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>&, const LocalTensor<T>&, const SliceInfo[],
                     const SliceInfo[], const uint32_t = 1) {
    static_assert(recsdk::sim::kRefused<T>,
                  "DataCopy with SliceInfo (multi-dimensional slices, UB->GM) is not emulated: "
                  "copy each slice with DataCopyPad and DataCopyExtParams");
}

// UB->UB between tensors of different types (a reinterpreting copy CANN declares with
// DataCopyParams): refused rather than guessed.
template <typename T, typename U, std::enable_if_t<!std::is_same_v<T, U>, bool> = true>
inline void DataCopy(const LocalTensor<T>&, const LocalTensor<U>&, const DataCopyParams&) {
    static_assert(recsdk::sim::kRefused<T, U>,
                  "DataCopy(LocalTensor<T>, LocalTensor<U>, DataCopyParams) between different "
                  "types is not emulated: ReinterpretCast one tensor first");
}

template <typename T>
inline void DataCopy(const LocalTensor<T>&, const LocalTensor<T>&, const Nd2NzParams&) {
    static_assert(recsdk::sim::kRefused<T>,
                  "AscendC API DataCopy with Nd2NzParams between local tensors (UB -> L1) is not "
                  "emulated: on Atlas A2/A3 the AIV has no path into L1");
}

template <typename T, uint8_t subBlockId = 0, typename P>
inline void DataCopyL1ToUB(const LocalTensor<T>&, const LocalTensor<T>&, const P&) {
    static_assert(recsdk::sim::kRefused<T, P>,
                  "DataCopyL1ToUB is not emulated: on Atlas A2/A3 the AIV has no path from L1");
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

// The move-pad register SetPadValue writes (CoreState: reset at every launch).
inline recsdk::sim::PadRegister& SimPadValueRegister() {
    return recsdk::sim::Core().pad;
}

// GM -> UB with padding, both parameter forms: `pad_bits` is the element's bit pattern when the
// call sets the value itself (isPad), else null.
template <typename T>
inline void DataCopyPadGmToUb(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                              const DataCopyExtParams& p, uint8_t leftPadding, uint8_t rightPadding,
                              const uint8_t* pad_bits, const char* call, recsdk::sim::SrcLoc loc) {
    using namespace recsdk::sim;
    if (dst.SimInL1()) {
        Fail(call, loc,
             "DataCopyPad GM->L1 (DataCopyPad (GMToL1)) is not emulated: copy 32-byte-aligned "
             "data with DataCopy, or pad in UB");
    }
    CheckPadParams(dst, p, call, loc, "destination");
    if (leftPadding * sizeof(T) > 32 || rightPadding * sizeof(T) > 32) {
        Fail(call, loc, "leftPadding/rightPadding exceed 32 bytes");
    }
    if (sizeof(T) == 8 && pad_bits != nullptr) {
        static const uint8_t zero[8] = {};
        if (std::memcmp(pad_bits, zero, sizeof(T)) != 0) {
            Fail(call, loc, "paddingValue of a 64-bit type must be 0");
        }
    }
    const recsdk::sim::PadRegister& reg = SimPadValueRegister();
    if (pad_bits == nullptr && reg.set)
        pad_bits = reg.bits;
    if (p.blockCount == 0 || p.blockLen == 0)
        return;  // NOP on Atlas A2/A3
    const uint64_t left = leftPadding * sizeof(T);
    const uint64_t right = rightPadding * sizeof(T);
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
                if (pad_bits != nullptr) {
                    std::memcpy(to + b, pad_bits, sizeof(T));
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
    ModelDma(Pipe::MTE2, src.SimData(), p.blockLen, p.blockCount);
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                        const DataCopyExtParams& p, const DataCopyPadExtParams<T>& pad,
                        recsdk::sim::SrcLoc loc = {}) {
    DataCopyPadGmToUb(dst, src, p, pad.leftPadding, pad.rightPadding,
                      pad.isPad ? reinterpret_cast<const uint8_t*>(&pad.paddingValue) : nullptr,
                      "DataCopyPad(GM->UB)", loc);
}

// The DataCopyParams form: the same transfer with 16-bit fields (blockLen and srcStride in bytes,
// dstStride in 32-byte blocks) and the raw padding word.
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                        const DataCopyParams& p, const DataCopyPadParams& pad,
                        recsdk::sim::SrcLoc loc = {}) {
    // Little-endian: the low sizeof(T) bytes of the word are the element.
    uint8_t bits[8];
    std::memcpy(bits, &pad.paddingValue, 8);
    DataCopyPadGmToUb(dst, src,
                      DataCopyExtParams{p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0},
                      pad.leftPadding, pad.rightPadding, pad.isPad ? bits : nullptr,
                      "DataCopyPad(GM->UB, DataCopyParams)", loc);
}

template <typename T, typename P>
inline void DataCopyPad(const LocalTensor<T>&, const LocalTensor<T>&, const P&,
                        const Nd2NzParams&) {
    static_assert(recsdk::sim::kRefused<T, P>,
                  "DataCopyPad UB->L1 with Nd2NzParams (DataCopyPad (UBToL1)) is not emulated: on "
                  "Atlas A2/A3 the AIV has no path to L1");
}

template <typename T, TPosition pos = TPosition::MAX>
inline void SetPadValue(T paddingValue) {
    static_assert(pos == TPosition::MAX || pos == TPosition::VECIN || pos == TPosition::VECOUT,
                  "SetPadValue: on Atlas A2/A3 the pad register serves GM->UB (VECIN/VECOUT)");
    static_assert(sizeof(T) <= 8, "SetPadValue: an 8-, 16-, 32- or 64-bit type");
    recsdk::sim::PadRegister& reg = SimPadValueRegister();
    reg.set = true;
    std::memset(reg.bits, 0, sizeof(reg.bits));
    std::memcpy(reg.bits, &paddingValue, sizeof(T));
}

template <typename T>
inline void DataCopyPadUbToGm(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                              const DataCopyExtParams& p, const char* call,
                              recsdk::sim::SrcLoc loc) {
    using namespace recsdk::sim;
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
        if (reinterpret_cast<uintptr_t>(to) % alignof(T) != 0 && core.atomic_mode != 0) {
            Fail(call, loc,
                 "atomic add to a global-memory address not aligned to the element size");
        }
        WriteGm(reinterpret_cast<T*>(to), reinterpret_cast<const T*>(s + i * ub_stride),
                p.blockLen / sizeof(T), call, loc);
    }
    ++Stats().dma_transfers;
    ModelDma(Pipe::MTE3, dst.SimData(), p.blockLen, p.blockCount);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                        const DataCopyExtParams& p, recsdk::sim::SrcLoc loc = {}) {
    DataCopyPadUbToGm(dst, src, p, "DataCopyPad(UB->GM)", loc);
}

// The DataCopyParams form: blockLen and dstStride in bytes, srcStride in 32-byte blocks.
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                        const DataCopyParams& p, recsdk::sim::SrcLoc loc = {}) {
    DataCopyPadUbToGm(dst, src,
                      DataCopyExtParams{p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0},
                      "DataCopyPad(UB->GM, DataCopyParams)", loc);
}

}  // namespace AscendC

#endif  // RECSDK_SIM_DATACOPY_H
