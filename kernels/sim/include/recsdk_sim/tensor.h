// GlobalTensor and LocalTensor.
//
// Semantics follow docs/api/SIMD-API/基础API/数据结构/GlobalTensor/*.md and LocalTensor/*.md:
// GlobalTensor is a typed view of global memory (SetGlobalBuffer, GetValue/SetValue,
// operator[] for an offset view, GetPhyAddr, GetSize); LocalTensor is a typed view of the
// core's unified buffer handed out by a queue or TBuf (GetValue/SetValue, operator[],
// ReinterpretCast, GetSize in elements, GetLength in bytes).
//
// Checks: every GlobalTensor access lies inside a tensor passed to the kernel (CheckGm);
// every LocalTensor access lies inside the buffer it was allocated from, and the buffer has
// not been freed back to its queue since (use after FreeTensor).
#ifndef RECSDK_SIM_TENSOR_H
#define RECSDK_SIM_TENSOR_H

#include <cstdint>
#include <string>
#include <utility>

#include "recsdk_sim/hazard.h"
#include "recsdk_sim/model.h"
#include "recsdk_sim/runtime.h"

namespace AscendC {

enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM,
    TSCM,
    MAX,
};
using QuePosition = TPosition;

// kernel_tensor_base.h: a queue buffer's handle is its address.
using TBufHandle = uint8_t*;

// What LocalTensor::GetPhyAddr returns: on the device the unified-buffer address as a uint64_t,
// which kernels also cast to a __ubuf__ pointer and dereference. Here it converts implicitly to
// the UB offset (arithmetic, alignment tests) and explicitly to a pointer to the host bytes of
// the unified buffer (a C-style or static_cast). Accesses through such a pointer are not checked
// (bounds, hazards), as scalar pointer code on the device is not.
struct UbAddr {
    uint64_t offset;
    void* host;
    operator uint64_t() const { return offset; }  // NOLINT: the device's type
    template <typename U>
    explicit operator U*() const {
        return static_cast<U*>(host);
    }
};

inline const char* PositionName(TPosition p) {
    // The positions a user queue or buffer can name; the rest print as "other".
    static constexpr std::pair<TPosition, const char*> kNames[] = {
        {TPosition::VECIN, "VECIN"}, {TPosition::VECOUT, "VECOUT"}, {TPosition::VECCALC, "VECCALC"},
        {TPosition::GM, "GM"},       {TPosition::TSCM, "TSCM"},
    };
    for (const auto& [pos, name] : kNames) {
        if (pos == p)
            return name;
    }
    return "other";
}

}  // namespace AscendC

namespace recsdk::sim {

// Whether [p, p + bytes) lies in a writable region of the launch's global memory.
inline bool GmWritable(const void* p, uint64_t bytes) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& r : Core().launch->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (a >= b && a + bytes <= b + r.bytes)
            return r.writable;
    }
    return false;
}

// One block of a queue or TBuf. Generations make stale LocalTensor copies detectable: a block's
// generation changes when it is freed back to its queue.
struct BufSlot {
    uint32_t offset = 0;
    uint32_t bytes = 0;
    uint32_t gen = 0;
    uint8_t state = 0;  // 0 free, 1 allocated, 2 enqueued
    bool is_tbuf = false;
    bool l1 = false;  // a TSCM buffer: in the AI core's L1, not the unified buffer (pipe.h)
    AscendC::TPosition pos = AscendC::TPosition::VECCALC;
    const char* owner = "TQue";
    HazardRanges hz;             // which pipes wrote and read which bytes (recsdk_sim/hazard.h)
    int8_t enq_event = -1;       // event id its EnQue's SetFlag holds until DeQue
    Pipe enq_prod = Pipe::MTE2;  // the pipes of that event
    Pipe enq_cons = Pipe::V;
    int8_t free_event = -1;  // event id its FreeTensor's SetFlag holds until the next AllocTensor
};

}  // namespace recsdk::sim

namespace AscendC {

template <typename T>
class LocalTensor {
public:
    using PrimType = T;

    LocalTensor() = default;

    // Simulator constructor (queues and TBuf use it).
    LocalTensor(T* ptr, uint32_t elems, recsdk::sim::BufSlot* slot, uint32_t gen, TPosition pos)
        : ptr_(ptr), elems_(elems), slot_(slot), gen_(gen), pos_(pos) {}

    PrimType GetValue(const uint32_t index, recsdk::sim::SrcLoc loc = {}) const {
        Validate("LocalTensor::GetValue", loc);
        InUb("LocalTensor::GetValue", loc);
        CheckIndex(index, "LocalTensor::GetValue", loc);
        ++recsdk::sim::Stats().scalar_ub_accesses;
        SimAccess(uint64_t(index) * sizeof(T), sizeof(T), recsdk::sim::Pipe::S,
                  recsdk::sim::Acc::kRead, "LocalTensor::GetValue", loc);
        return ptr_[index];
    }

    template <typename S>
    void SetValue(const uint32_t index, const S value, recsdk::sim::SrcLoc loc = {}) const {
        Validate("LocalTensor::SetValue", loc);
        InUb("LocalTensor::SetValue", loc);
        CheckIndex(index, "LocalTensor::SetValue", loc);
        ++recsdk::sim::Stats().scalar_ub_accesses;
        SimAccess(uint64_t(index) * sizeof(T), sizeof(T), recsdk::sim::Pipe::S,
                  recsdk::sim::Acc::kWrite, "LocalTensor::SetValue", loc);
        ptr_[index] = static_cast<T>(value);
    }

    T& operator()(const uint32_t index) const {
        recsdk::sim::SrcLoc loc("LocalTensor::operator() (no source location)", 0);
        Validate("LocalTensor::operator()", loc);
        InUb("LocalTensor::operator()", loc);
        CheckIndex(index, "LocalTensor::operator()", loc);
        ++recsdk::sim::Stats().scalar_ub_accesses;
        // The reference may be read or written: both, for the hazard checker.
        SimAccess(uint64_t(index) * sizeof(T), sizeof(T), recsdk::sim::Pipe::S,
                  recsdk::sim::Acc::kRead, "LocalTensor::operator()", loc);
        SimAccess(uint64_t(index) * sizeof(T), sizeof(T), recsdk::sim::Pipe::S,
                  recsdk::sim::Acc::kWrite, "LocalTensor::operator()", loc);
        return ptr_[index];
    }

    // An offset view; its size is what is left of the buffer.
    LocalTensor operator[](const uint32_t offset) const {
        if (offset > elems_) {
            recsdk::sim::Fail("LocalTensor::operator[]",
                              recsdk::sim::SrcLoc("(operator[] has no source location)", 0),
                              "offset " + std::to_string(offset) + " is beyond the " +
                                  std::to_string(elems_) + " elements of the tensor");
        }
        return LocalTensor(ptr_ + offset, elems_ - offset, slot_, gen_, pos_);
    }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(reinterpret_cast<U*>(ptr_),
                              static_cast<uint32_t>((uint64_t(elems_) * sizeof(T)) / sizeof(U)),
                              slot_, gen_, pos_);
    }

    uint32_t GetSize() const { return elems_; }
    uint32_t GetLength() const { return elems_ * static_cast<uint32_t>(sizeof(T)); }
    void SetSize(const uint32_t size) {
        if (slot_ != nullptr && uint64_t(size) * sizeof(T) > slot_->bytes) {
            recsdk::sim::Fail("LocalTensor::SetSize", recsdk::sim::SrcLoc(),
                              "size " + std::to_string(size) + " exceeds the buffer");
        }
        elems_ = size;
    }
    UbAddr GetPhyAddr() const { return UbAddr{UbOffset(), static_cast<void*>(ptr_)}; }
    UbAddr GetPhyAddr(const uint32_t offset) const {
        return UbAddr{UbOffset() + offset * sizeof(T), static_cast<void*>(ptr_ + offset)};
    }
    int32_t GetPosition() const { return static_cast<int32_t>(pos_); }

    // ---- simulator internals ----
    T* SimData() const { return ptr_; }
    recsdk::sim::BufSlot* SimSlot() const { return slot_; }
    uint32_t SimGen() const { return gen_; }
    uint64_t UbOffset() const {
        const recsdk::sim::CoreState* c = recsdk::sim::g_core;
        if (c == nullptr)
            return 0;
        const uint8_t* base = SimInL1() ? c->tscm : c->ub;
        return static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(ptr_) - base);
    }
    bool SimInL1() const { return slot_ != nullptr && slot_->l1; }

    // Vector, scalar and unified-buffer copy instructions cannot reach L1: a TSCM tensor is only
    // a DataCopy destination and a Matmul operand (TSCM简介.md).
    void InUb(const char* call, const recsdk::sim::SrcLoc& loc) const {
        if (SimInL1()) {
            recsdk::sim::Fail(call, loc,
                              "the tensor is a TSCM buffer in the AI core's L1, not in the unified "
                              "buffer: only DataCopy into it and the Matmul API (SetTensorA/B) "
                              "use it");
        }
    }

    void Validate(const char* call, const recsdk::sim::SrcLoc& loc) const {
        if (ptr_ == nullptr) {
            recsdk::sim::Fail(call, loc, "LocalTensor was never allocated (AllocTensor/DeQue/Get)");
        }
        if (slot_ != nullptr && !slot_->is_tbuf && (slot_->gen != gen_ || slot_->state == 0)) {
            recsdk::sim::Fail(call, loc,
                              "LocalTensor used after FreeTensor returned its buffer to the queue");
        }
    }

    // An instruction on `pipe` reads or writes bytes [offset, offset + bytes) of the tensor
    // (recsdk_sim/hazard.h). Call after the operand's own checks, before the data moves.
    void SimAccess(uint64_t offset, uint64_t bytes, recsdk::sim::Pipe pipe, recsdk::sim::Acc acc,
                   const char* call, const recsdk::sim::SrcLoc& loc) const {
        if (slot_ != nullptr) {
            recsdk::sim::HzAccess(slot_->hz, reinterpret_cast<const uint8_t*>(ptr_) + offset, bytes,
                                  pipe, acc, call, loc);
        }
    }

    // Elements [0, count) must be inside the buffer.
    void CheckSpan(uint64_t count, const char* call, const recsdk::sim::SrcLoc& loc) const {
        Validate(call, loc);
        InUb(call, loc);
        if (count > elems_) {
            recsdk::sim::Fail(call, loc,
                              std::to_string(count) + " elements of " + recsdk::sim::TypeName<T>() +
                                  " exceed the " + std::to_string(elems_) +
                                  " elements left in the unified-buffer tensor (UB offset " +
                                  std::to_string(UbOffset()) + ")");
        }
    }

private:
    void CheckIndex(uint32_t index, const char* call, const recsdk::sim::SrcLoc& loc) const {
        if (index >= elems_) {
            recsdk::sim::Fail(call, loc,
                              "index " + std::to_string(index) + " outside the " +
                                  std::to_string(elems_) + " elements of the tensor");
        }
    }

    T* ptr_ = nullptr;
    uint32_t elems_ = 0;
    recsdk::sim::BufSlot* slot_ = nullptr;
    uint32_t gen_ = 0;
    TPosition pos_ = TPosition::VECCALC;
};

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;

    GlobalTensor() = default;

    void SetGlobalBuffer(__gm__ PrimType* buffer, uint64_t bufferSize) {
        addr_ = buffer;
        size_ = bufferSize;
    }
    void SetGlobalBuffer(__gm__ PrimType* buffer) {
        addr_ = buffer;
        size_ = UINT64_MAX / sizeof(T);
    }

    const __gm__ PrimType* GetPhyAddr() const { return addr_; }
    __gm__ PrimType* GetPhyAddr(const uint64_t offset) const { return addr_ + offset; }

    PrimType GetValue(const uint64_t offset, recsdk::sim::SrcLoc loc = {}) const {
        recsdk::sim::CheckGm(addr_ + offset, sizeof(T), false, "GlobalTensor::GetValue", loc);
        auto& s = recsdk::sim::Stats();
        ++s.scalar_gm_reads;
        recsdk::sim::ModelScalarGm();
        recsdk::sim::CountGmRead(s, addr_ + offset, sizeof(T));
        return addr_[offset];
    }

    void SetValue(const uint64_t offset, PrimType value, recsdk::sim::SrcLoc loc = {}) const {
        recsdk::sim::CheckGm(addr_ + offset, sizeof(T), true, "GlobalTensor::SetValue", loc);
        auto& s = recsdk::sim::Stats();
        ++s.scalar_gm_writes;
        recsdk::sim::ModelScalarGm();
        recsdk::sim::CountGmWrite(s, addr_ + offset, sizeof(T));
        addr_[offset] = value;
    }

    // GlobalTensor/operator().md: a reference to one element, read or written by scalar code
    // (counted as one scalar read; the bounds are checked for writing when the tensor is
    // writable, for reading otherwise).
    __gm__ PrimType& operator()(const uint64_t offset) const {
        recsdk::sim::SrcLoc loc("GlobalTensor::operator() (no source location)", 0);
        const bool writable = recsdk::sim::GmWritable(addr_ + offset, sizeof(T));
        recsdk::sim::CheckGm(addr_ + offset, sizeof(T), writable, "GlobalTensor::operator()", loc);
        auto& s = recsdk::sim::Stats();
        ++s.scalar_gm_reads;
        recsdk::sim::ModelScalarGm();
        recsdk::sim::CountGmRead(s, addr_ + offset, sizeof(T));
        return addr_[offset];
    }

    uint64_t GetSize() const { return size_; }

    GlobalTensor operator[](const uint64_t offset) const {
        GlobalTensor g;
        g.addr_ = addr_ + offset;
        g.size_ = size_ > offset ? size_ - offset : 0;
        return g;
    }

    template <typename U>
    GlobalTensor<U> ReinterpretCast() const {
        GlobalTensor<U> g;
        g.SetGlobalBuffer(reinterpret_cast<U*>(addr_), (size_ * sizeof(T)) / sizeof(U));
        return g;
    }

    // ---- simulator internals ----
    T* SimData() const { return addr_; }

private:
    T* addr_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace AscendC

#endif  // RECSDK_SIM_TENSOR_H
