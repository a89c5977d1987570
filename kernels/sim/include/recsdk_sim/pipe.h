// TPipe, TQueBind/TQue and TBuf: the unified-buffer allocator and the queues that order the
// copy-in / compute / copy-out stages.
//
// Semantics (docs/api/SIMD-API/基础API/资源管理/):
// - TPipe/InitBuffer.md: InitBuffer(que, num, len) carves num blocks of len bytes (rounded up
//   to 32) out of the unified buffer; InitBuffer(tbuf, len) one block; at most 64 buffers per
//   kernel. Memory is released when the TPipe is destroyed or Reset.
// - TQue/TQue简介.md: depth is how many EnQue may happen in a row without DeQue; tensors
//   allocated at the same time on one TPosition are limited by the hardware event ids
//   (8 on Atlas A2/A3); num=2 is double buffering.
// - TQue/AllocTensor.md, EnQue.md, DeQue.md ("对空队列执行DeQue是一种异常行为"), FreeTensor.md.
// - TBuf/Get.md, GetWithOffset.md: a TBuf is one block used without queue semantics.
//
// Checks: unified buffer overflow (per-SoC capacity), more than 64 buffers, AllocTensor with
// every block in use, EnQue beyond the depth, DeQue of an empty queue, FreeTensor of a tensor
// that is not allocated from this queue (double free, enqueued, foreign), and at kernel exit
// tensors still allocated or enqueued.
//
// A queue object is a handle: copies share the same blocks, as on the device (kernels pass
// queues by value into helper classes).
#ifndef RECSDK_SIM_PIPE_H
#define RECSDK_SIM_PIPE_H

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

namespace recsdk::sim {

struct QueueState {
    const char* kind = "TQue";
    AscendC::TPosition pos = AscendC::TPosition::VECIN;
    int32_t depth = 1;
    uint32_t len = 0;
    std::vector<std::unique_ptr<BufSlot>> slots;
    std::deque<BufSlot*> fifo;
    bool alive = true;
    const void* pipe = nullptr;
};

inline uint32_t AllocatedOnPosition(const CoreState& c, AscendC::TPosition pos) {
    uint32_t n = 0;
    for (const auto& q : c.queues) {
        if (!q->alive || q->pos != pos || std::string(q->kind) == "TBuf") continue;
        for (const auto& s : q->slots) n += s->state != 0 ? 1 : 0;
    }
    return n;
}

}  // namespace recsdk::sim

namespace AscendC {

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    TQueBind() = default;

    template <typename T>
    LocalTensor<T> AllocTensor(recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::AllocTensor", loc);
        if (depth == 0) {
            recsdk::sim::Fail("TQue::AllocTensor", loc,
                              "the non-inplace AllocTensor needs a queue depth > 0");
        }
        recsdk::sim::BufSlot* free_slot = nullptr;
        for (auto& s : q.slots) {
            if (s->state == 0) {
                free_slot = s.get();
                break;
            }
        }
        if (free_slot == nullptr) {
            recsdk::sim::Fail("TQue::AllocTensor", loc,
                              "all " + std::to_string(q.slots.size()) +
                                  " buffers of the queue are allocated or enqueued (missing "
                                  "FreeTensor?); the device would block forever");
        }
        const auto& core = recsdk::sim::Core();
        if (recsdk::sim::AllocatedOnPosition(core, q.pos) >= core.launch->soc->que_events) {
            recsdk::sim::Fail("TQue::AllocTensor", loc,
                              std::string("more than ") + std::to_string(core.launch->soc->que_events) +
                                  " tensors allocated at once on TPosition " + PositionName(q.pos) +
                                  " (hardware event ids)");
        }
        free_slot->state = 1;
        ++free_slot->gen;
        return Tensor<T>(free_slot);
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::EnQue", loc);
        recsdk::sim::BufSlot* s = Owned(q, tensor, "TQue::EnQue", loc);
        if (s->state != 1) {
            recsdk::sim::Fail("TQue::EnQue", loc, "the tensor is already enqueued");
        }
        if (static_cast<int32_t>(q.fifo.size()) >= depth) {
            recsdk::sim::Fail("TQue::EnQue", loc,
                              "EnQue beyond the queue depth " + std::to_string(depth) +
                                  " (that many tensors are already enqueued without DeQue)");
        }
        s->state = 2;
        q.fifo.push_back(s);
        return true;
    }

    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    bool EnQue(const LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        return EnQue(tensor, loc);
    }

    template <typename T>
    LocalTensor<T> DeQue(recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::DeQue", loc);
        if (q.fifo.empty()) {
            recsdk::sim::Fail("TQue::DeQue", loc,
                              "DeQue of an empty queue (no EnQue before it); the device would "
                              "wait forever");
        }
        recsdk::sim::BufSlot* s = q.fifo.front();
        q.fifo.pop_front();
        s->state = 1;
        return Tensor<T>(s);
    }

    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    LocalTensor<T> DeQue(recsdk::sim::SrcLoc loc = {}) {
        return DeQue<T>(loc);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::FreeTensor", loc);
        if (tensor.SimSlot() == nullptr) {
            recsdk::sim::Fail("TQue::FreeTensor", loc, "the tensor was not allocated from a queue");
        }
        recsdk::sim::BufSlot* s = tensor.SimSlot();
        bool mine = false;
        for (auto& own : q.slots) mine = mine || own.get() == s;
        if (!mine) {
            recsdk::sim::Fail("TQue::FreeTensor", loc, "the tensor belongs to another queue");
        }
        if (s->state == 0 || s->gen != tensor.SimGen()) {
            recsdk::sim::Fail("TQue::FreeTensor", loc,
                              "double free: the tensor's buffer was already returned to the queue");
        }
        if (s->state == 2) {
            recsdk::sim::Fail("TQue::FreeTensor", loc, "the tensor is still enqueued (DeQue it first)");
        }
        s->state = 0;
        ++s->gen;
    }

    bool HasTensorInQue() { return !State("TQue::HasTensorInQue", {}).fifo.empty(); }
    int32_t GetTensorCountInQue() {
        return static_cast<int32_t>(State("TQue::GetTensorCountInQue", {}).fifo.size());
    }
    bool VacantInQue() {
        return static_cast<int32_t>(State("TQue::VacantInQue", {}).fifo.size()) < depth;
    }
    bool HasIdleBuffer() {
        for (auto& s : State("TQue::HasIdleBuffer", {}).slots) {
            if (s->state == 0) return true;
        }
        return false;
    }
    void FreeAllEvent() {}

    // ---- simulator internals ----
    std::shared_ptr<recsdk::sim::QueueState> sim_state;

protected:
    recsdk::sim::QueueState& State(const char* call, const recsdk::sim::SrcLoc& loc) {
        recsdk::sim::Core();  // stops aborted cores
        if (!sim_state) recsdk::sim::Fail(call, loc, "queue used before TPipe::InitBuffer");
        if (!sim_state->alive) recsdk::sim::Fail(call, loc, "queue used after its TPipe was reset or destroyed");
        return *sim_state;
    }

    template <typename T>
    LocalTensor<T> Tensor(recsdk::sim::BufSlot* s) {
        auto* base = recsdk::sim::Core().ub + s->offset;
        return LocalTensor<T>(reinterpret_cast<T*>(base), s->bytes / static_cast<uint32_t>(sizeof(T)), s,
                              s->gen, s->pos);
    }

    template <typename T>
    recsdk::sim::BufSlot* Owned(recsdk::sim::QueueState& q, const LocalTensor<T>& t, const char* call,
                                const recsdk::sim::SrcLoc& loc) {
        recsdk::sim::BufSlot* s = t.SimSlot();
        bool mine = false;
        for (auto& own : q.slots) mine = mine || own.get() == s;
        if (s == nullptr || !mine) recsdk::sim::Fail(call, loc, "the tensor was not allocated from this queue");
        if (s->state == 0 || s->gen != t.SimGen()) {
            recsdk::sim::Fail(call, loc, "the tensor's buffer was already freed");
        }
        return s;
    }
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

template <TPosition pos = TPosition::LCM>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get(recsdk::sim::SrcLoc loc = {}) {
        auto& s = Slot("TBuf::Get", loc);
        return LocalTensor<T>(reinterpret_cast<T*>(recsdk::sim::Core().ub + s.offset),
                              s.bytes / static_cast<uint32_t>(sizeof(T)), &s, s.gen, pos);
    }
    template <typename T>
    LocalTensor<T> Get(uint32_t len, recsdk::sim::SrcLoc loc = {}) {
        auto& s = Slot("TBuf::Get", loc);
        if (uint64_t(len) * sizeof(T) > s.bytes) {
            recsdk::sim::Fail("TBuf::Get", loc,
                              std::to_string(len) + " elements exceed the " + std::to_string(s.bytes) +
                                  "-byte buffer");
        }
        return LocalTensor<T>(reinterpret_cast<T*>(recsdk::sim::Core().ub + s.offset), len, &s, s.gen, pos);
    }
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, recsdk::sim::SrcLoc loc = {}) {
        auto& s = Slot("TBuf::GetWithOffset", loc);
        if (bufOffset % 32 != 0) {
            recsdk::sim::Fail("TBuf::GetWithOffset", loc,
                              "offset " + std::to_string(bufOffset) + " is not 32-byte aligned");
        }
        if (uint64_t(bufOffset) + uint64_t(size) * sizeof(T) > s.bytes) {
            recsdk::sim::Fail("TBuf::GetWithOffset", loc, "the view exceeds the buffer");
        }
        return LocalTensor<T>(reinterpret_cast<T*>(recsdk::sim::Core().ub + s.offset + bufOffset), size, &s,
                              s.gen, pos);
    }

    std::shared_ptr<recsdk::sim::QueueState> sim_state;

private:
    recsdk::sim::BufSlot& Slot(const char* call, const recsdk::sim::SrcLoc& loc) {
        recsdk::sim::Core();
        if (!sim_state) recsdk::sim::Fail(call, loc, "TBuf used before TPipe::InitBuffer");
        if (!sim_state->alive) recsdk::sim::Fail(call, loc, "TBuf used after its TPipe was reset or destroyed");
        return *sim_state->slots[0];
    }
};

using TEventID = int8_t;

class TPipe {
public:
    TPipe() {
        auto& c = recsdk::sim::Core();
        base_ = c.ub_top;
        prev_ = c.pipe;
        c.pipe = this;
    }
    ~TPipe() {
        Release();
        if (recsdk::sim::g_core != nullptr && recsdk::sim::g_core->pipe == this) recsdk::sim::g_core->pipe = prev_;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, recsdk::sim::SrcLoc loc = {}) {
        auto st = Carve("TPipe::InitBuffer", loc, que.sim_state, num, len, "TQue");
        st->depth = QueDepth(que);
        st->pos = QuePos(que);
        return true;
    }

    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len, recsdk::sim::SrcLoc loc = {}) {
        auto st = Carve("TPipe::InitBuffer", loc, buf.sim_state, 1, len, "TBuf");
        st->pos = bufPos;
        st->slots[0]->is_tbuf = true;
        st->slots[0]->state = 1;
        return true;
    }

    void Reset() { Release(); }
    void Destroy() { Release(); }
    void Init() {}

    // TPipe/FetchEventID.md: an event id for a SetFlag/WaitFlag pair. The emulator runs each
    // core in program order, so any id serves; the pairing itself is still checked.
    template <typename E>
    TEventID FetchEventID(E) {
        recsdk::sim::Core();
        return 0;
    }

private:
    template <TPosition s, TPosition d, int32_t depth, auto m>
    static int32_t QueDepth(const TQueBind<s, d, depth, m>&) { return depth; }
    template <TPosition s, TPosition d, int32_t depth, auto m>
    static TPosition QuePos(const TQueBind<s, d, depth, m>&) { return s; }

    std::shared_ptr<recsdk::sim::QueueState> Carve(const char* call, const recsdk::sim::SrcLoc& loc,
                                                   std::shared_ptr<recsdk::sim::QueueState>& handle,
                                                   uint32_t num, uint32_t len, const char* kind) {
        auto& c = recsdk::sim::Core();
        if (handle && handle->alive) {
            recsdk::sim::Fail(call, loc, "InitBuffer on a queue/TBuf that already has buffers (Reset the pipe first)");
        }
        if (num == 0) recsdk::sim::Fail(call, loc, "InitBuffer with num == 0");
        if (c.core_type == recsdk::sim::kAic) {
            recsdk::sim::Fail(call, loc, "a cube core (AIC) has no unified buffer: guard vector code with "
                                         "`if ASCEND_IS_AIV` (the Matmul API manages the AIC's L1/L0 itself)");
        }
        const uint32_t rounded = (len + 31u) / 32u * 32u;  // InitBuffer.md: len is rounded up to 32 bytes
        const uint64_t need = uint64_t(rounded) * num;
        if (uint64_t(c.ub_top) + need > c.ub_size) {
            recsdk::sim::Fail(call, loc,
                              "unified buffer overflow: " + std::to_string(num) + " x " + std::to_string(rounded) +
                                  " bytes requested with " + std::to_string(c.ub_top) + " of " +
                                  std::to_string(c.ub_size) + " bytes already in use on " +
                                  c.launch->soc->name);
        }
        if (c.buffers + num > 64) {
            recsdk::sim::Fail(call, loc, "more than 64 buffers initialised in one kernel");
        }
        auto st = std::make_shared<recsdk::sim::QueueState>();
        st->kind = kind;
        st->len = rounded;
        st->pipe = this;
        for (uint32_t i = 0; i < num; ++i) {
            auto s = std::make_unique<recsdk::sim::BufSlot>();
            s->offset = c.ub_top + i * rounded;
            s->bytes = rounded;
            s->owner = kind;
            st->slots.push_back(std::move(s));
        }
        c.ub_top += static_cast<uint32_t>(need);
        c.buffers += num;
        c.stats->ub_peak_bytes = std::max<uint64_t>(c.stats->ub_peak_bytes, c.ub_top);
        c.queues.push_back(st);
        handle = st;
        return st;
    }

    void Release() {
        recsdk::sim::CoreState* c = recsdk::sim::g_core;
        if (c == nullptr) return;
        for (auto& q : c->queues) {
            if (q->pipe != this || !q->alive) continue;
            q->alive = false;
            if (std::string(q->kind) == "TBuf") continue;
            uint32_t held = 0;
            for (const auto& s : q->slots) held += s->state != 0 ? 1 : 0;
            if (held != 0 && c->leak.empty()) {
                c->leak = std::to_string(held) + " tensor(s) of a queue on TPosition " +
                          AscendC::PositionName(q->pos) +
                          " still allocated or enqueued when the TPipe was released "
                          "(missing DeQue/FreeTensor)";
            }
        }
        if (c->ub_top > base_) c->ub_top = base_;
    }

    uint32_t base_ = 0;
    void* prev_ = nullptr;
};

// 资源管理/GetTPipePtr.md: the kernel's current TPipe.
inline TPipe* GetTPipePtr() {
    auto& c = recsdk::sim::Core();
    if (c.pipe == nullptr) recsdk::sim::Fail("GetTPipePtr", recsdk::sim::SrcLoc(), "no TPipe exists");
    return static_cast<TPipe*>(c.pipe);
}

}  // namespace AscendC

namespace recsdk::sim {

// Tensors a core leaves allocated or enqueued when the kernel returns: a missing
// FreeTensor/DeQue, which leaves hardware events unbalanced.
inline void CheckQueuesAtExit(CoreState& c) {
    if (!c.leak.empty()) {
        throw CheckError(Where("at kernel exit", SrcLoc("", 0)) + ": " + c.leak);
    }
    for (const auto& q : c.queues) {
        if (!q->alive || std::string(q->kind) == "TBuf") continue;
        uint32_t held = 0;
        for (const auto& s : q->slots) held += s->state != 0 ? 1 : 0;
        if (held != 0) {
            throw CheckError(Where("at kernel exit", SrcLoc("", 0)) + ": " +
                             std::to_string(held) + " tensor(s) of a queue on TPosition " +
                             AscendC::PositionName(q->pos) +
                             " still allocated or enqueued (missing DeQue/FreeTensor)");
        }
    }
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_PIPE_H
