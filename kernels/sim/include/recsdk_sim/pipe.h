// TPipe, TQueBind/TQue, TSCM and TBuf: the unified-buffer (and L1, for TSCM) allocator and the
// queues that order the copy-in / compute / copy-out stages.
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
// - TSCM/TSCM简介.md: TSCM<pos, depth> is TQueBind<pos, TSCM, depth>: buffers in the AI core's L1
//   (CarveL1 below), filled GM -> L1 (MTE2) and read by the Matmul API (MTE1).
//
// Checks: unified buffer overflow (per-SoC capacity), more than 64 buffers, AllocTensor with
// every block in use, EnQue beyond the depth, DeQue of an empty queue, FreeTensor of a tensor
// that is not allocated from this queue (double free, enqueued, foreign), and at kernel exit
// tensors still allocated or enqueued.
//
// A queue object is a handle: copies share the same blocks, as on the device (kernels pass
// queues by value into helper classes).
//
// Synchronisation (for the pipe-hazard checker, recsdk_sim/hazard.h): guide TPipe-TQue框架编程
// 原理.md, "数据依赖与同步机制": EnQue issues a Set and DeQue the matching Wait (the producer's
// writes finish before the consumer reads); FreeTensor issues a Set and the AllocTensor that next
// hands out that buffer the Wait (the consumer's reads finish before the producer overwrites).
// Which pipes, the reference leaves to the implementation; asc-devkit impl/basic_api/
// kernel_event.h GetQueEvt and kernel_tquebind_impl.h: TQue<VECIN> is a GM->UB queue (EnQue
// MTE2_V, FreeTensor V_MTE2), TQue<VECOUT> UB->GM (V_MTE3, MTE3_V), TQueBind<VECIN, VECOUT>
// UB->UB (MTE2_MTE3, MTE3_MTE2); GM->L1 queues (A1/B1/C1) MTE2_MTE1, L1->L0A/L0B (A2/B2)
// MTE1_M, L0C (CO1) M_FIX. Each Set takes an event id with AllocEventID until its Wait, so ids
// held by queue buffers are not handed out by FetchEventID/AllocEventID (TQue简介.md "TQue
// Buffer限制"). The buffers are handed out round robin (kernel_tquebind_impl.h AllocBuffer's
// bufCursor), so double buffering alternates buffers as on the device. A TBuf has no events.
#ifndef RECSDK_SIM_PIPE_H
#define RECSDK_SIM_PIPE_H

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "recsdk_sim/hazard.h"
#include "recsdk_sim/mix.h"
#include "recsdk_sim/runtime.h"
#include "recsdk_sim/sync.h"
#include "recsdk_sim/tensor.h"

namespace recsdk::sim {

struct QueueState {
    const char* kind = "TQue";
    AscendC::TPosition pos = AscendC::TPosition::VECIN;
    AscendC::TPosition src = AscendC::TPosition::VECIN;  // TSCM queues: where they are filled from
    int32_t depth = 1;
    uint32_t len = 0;
    std::vector<std::unique_ptr<BufSlot>> slots;
    std::deque<BufSlot*> fifo;
    bool alive = true;
    const void* pipe = nullptr;
    // EnQue sets prod -> cons, FreeTensor cons -> prod (see above); no events: a TBuf.
    bool events = false;
    Pipe prod = Pipe::MTE2;
    Pipe cons = Pipe::V;
    size_t cursor = 0;  // where AllocTensor looks first
};

// The event of a queue between TPosition src and dst, as asc-devkit's GetQueEvt picks it. TQue<pos>
// reaches here as (pos, pos) and stands for the logical path of its position.
inline bool QueueEvent(AscendC::TPosition src, AscendC::TPosition dst, Pipe* prod, Pipe* cons) {
    using AscendC::TPosition;
    enum class Mem { GM, UB, L1, L0A, L0B, L0C, Other };
    auto phys = [](TPosition p) {
        switch (p) {
            case TPosition::GM:
                return Mem::GM;
            case TPosition::VECIN:
            case TPosition::VECOUT:
            case TPosition::VECCALC:
                return Mem::UB;
            case TPosition::A1:
            case TPosition::B1:
            case TPosition::C1:
            case TPosition::TSCM:
                return Mem::L1;
            case TPosition::A2:
                return Mem::L0A;
            case TPosition::B2:
                return Mem::L0B;
            case TPosition::CO1:
                return Mem::L0C;
            case TPosition::CO2:
                return Mem::GM;  // arch 2201: CO2 is GM
            default:
                return Mem::Other;
        }
    };
    if (src == dst) {  // TQue<pos>: kernel_tpipe.h GetBufferLogicPos
        switch (src) {
            case TPosition::VECIN:
            case TPosition::A1:
            case TPosition::B1:
            case TPosition::C1:
                src = TPosition::GM;
                break;
            case TPosition::VECOUT:
                dst = TPosition::GM;
                break;
            case TPosition::A2:
                src = TPosition::A1;
                break;
            case TPosition::B2:
                src = TPosition::B1;
                break;
            case TPosition::CO1:
                dst = TPosition::CO2;
                break;
            default:
                return false;
        }
    }
    const Mem s = phys(src);
    const Mem d = phys(dst);
    auto set = [&](Pipe a, Pipe b) {
        *prod = a;
        *cons = b;
        return true;
    };
    if (s == Mem::GM && d == Mem::UB)
        return set(Pipe::MTE2, Pipe::V);
    if (s == Mem::GM && d == Mem::L1)
        return set(Pipe::MTE2, Pipe::MTE1);
    if (s == Mem::GM && (d == Mem::L0A || d == Mem::L0B))
        return set(Pipe::MTE2, Pipe::M);
    if (s == Mem::UB && d == Mem::GM)
        return set(Pipe::V, Pipe::MTE3);
    if (s == Mem::UB && d == Mem::UB)
        return set(Pipe::MTE2, Pipe::MTE3);
    if (s == Mem::UB && d == Mem::L1)
        return set(Pipe::MTE3, Pipe::MTE1);
    if (s == Mem::L1 && d == Mem::UB)
        return set(Pipe::MTE1, Pipe::V);
    if (s == Mem::L1 && (d == Mem::L0A || d == Mem::L0B))
        return set(Pipe::MTE1, Pipe::M);
    if (s == Mem::L0C && d == Mem::GM)
        return set(Pipe::M, Pipe::FIX);
    return false;
}

inline uint32_t AllocatedOnPosition(const CoreState& c, AscendC::TPosition pos) {
    uint32_t n = 0;
    for (const auto& q : c.queues) {
        if (!q->alive || q->pos != pos || std::string(q->kind) == "TBuf")
            continue;
        for (const auto& s : q->slots)
            n += s->state != 0 ? 1 : 0;
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
        const size_t n = q.slots.size();
        for (size_t k = 0; k < n; ++k) {
            const size_t at = (q.cursor + k) % n;
            if (q.slots[at]->state == 0) {
                free_slot = q.slots[at].get();
                q.cursor = (at + 1) % n;
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
                              std::string("more than ") +
                                  std::to_string(core.launch->soc->que_events) +
                                  " tensors allocated at once on TPosition " + PositionName(q.pos) +
                                  " (hardware event ids)");
        }
        if (free_slot->free_event >= 0) {  // the last FreeTensor of this buffer
            recsdk::sim::HzWaitFlag(q.cons, q.prod, free_slot->free_event, "TQue::AllocTensor",
                                    loc);
            recsdk::sim::HzReleaseEventID(q.cons, q.prod, free_slot->free_event,
                                          "TQue::AllocTensor", loc);
            free_slot->free_event = -1;
        }
        free_slot->state = 1;
        ++free_slot->gen;
        return Tensor<T>(free_slot);
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::EnQue", loc);
        return EnQueOn(q, tensor, q.prod, q.cons, loc);
    }

    // EnQue.md: with user positions (TQueBind of VECIN and VECOUT) the event is the user path's
    // (GM->VECIN: MTE2_V, VECOUT->GM: V_MTE3), and DeQue must name the same path.
    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    bool EnQue(const LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::EnQue", loc);
        recsdk::sim::Pipe prod = q.prod, cons = q.cons;
        recsdk::sim::QueueEvent(srcUserPos, dstUserPos, &prod, &cons);
        return EnQueOn(q, tensor, prod, cons, loc);
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
        if (s->enq_event >= 0) {
            recsdk::sim::HzWaitFlag(s->enq_prod, s->enq_cons, s->enq_event, "TQue::DeQue", loc);
            recsdk::sim::HzReleaseEventID(s->enq_prod, s->enq_cons, s->enq_event, "TQue::DeQue",
                                          loc);
            s->enq_event = -1;
        }
        return Tensor<T>(s);
    }

    // DeQue.md: the forms that fill a tensor the caller holds and that return the buffer's handle
    // (TBufHandle, the buffer's address: here the host address of its unified-buffer bytes).
    template <typename T>
    void DeQue(LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        tensor = DeQue<T>(loc);
    }
    TBufHandle DeQue(recsdk::sim::SrcLoc loc = {}) {
        return reinterpret_cast<TBufHandle>(DeQue<uint8_t>(loc).SimData());
    }
    // AllocTensor.md: the form that fills a tensor the caller holds.
    template <typename T>
    void AllocTensor(LocalTensor<T>& tensor, recsdk::sim::SrcLoc loc = {}) {
        tensor = AllocTensor<T>(loc);
    }

    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    LocalTensor<T> DeQue(recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::DeQue", loc);
        recsdk::sim::Pipe prod, cons;
        if (q.events && !q.fifo.empty() && q.fifo.front()->enq_event >= 0 &&
            recsdk::sim::QueueEvent(srcUserPos, dstUserPos, &prod, &cons) &&
            (prod != q.fifo.front()->enq_prod || cons != q.fifo.front()->enq_cons)) {
            recsdk::sim::Fail(
                "TQue::DeQue", loc,
                "DeQue names another path than the EnQue of this tensor (HardEvent::" +
                    recsdk::sim::EventName(q.fifo.front()->enq_prod, q.fifo.front()->enq_cons) +
                    " at EnQue, " + recsdk::sim::EventName(prod, cons) +
                    " here): the Wait would not match the Set");
        }
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
        for (auto& own : q.slots)
            mine = mine || own.get() == s;
        if (!mine) {
            recsdk::sim::Fail("TQue::FreeTensor", loc, "the tensor belongs to another queue");
        }
        if (s->state == 0 || s->gen != tensor.SimGen()) {
            recsdk::sim::Fail("TQue::FreeTensor", loc,
                              "double free: the tensor's buffer was already returned to the queue");
        }
        if (s->state == 2) {
            recsdk::sim::Fail("TQue::FreeTensor", loc,
                              "the tensor is still enqueued (DeQue it first)");
        }
        if (q.events) {
            s->free_event = static_cast<int8_t>(
                recsdk::sim::HzAllocEventID(q.cons, q.prod, "TQue::FreeTensor", loc));
            recsdk::sim::HzSetFlag(q.cons, q.prod, s->free_event, "TQue::FreeTensor", loc);
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
            if (s->state == 0)
                return true;
        }
        return false;
    }
    // FreeAllEvent.md: waits for and releases the events the queue's freed buffers hold.
    void FreeAllEvent(recsdk::sim::SrcLoc loc = {}) {
        auto& q = State("TQue::FreeAllEvent", loc);
        for (auto& s : q.slots) {
            if (s->free_event < 0)
                continue;
            recsdk::sim::HzWaitFlag(q.cons, q.prod, s->free_event, "TQue::FreeAllEvent", loc);
            recsdk::sim::HzReleaseEventID(q.cons, q.prod, s->free_event, "TQue::FreeAllEvent", loc);
            s->free_event = -1;
        }
    }

    // ---- simulator internals ----
    std::shared_ptr<recsdk::sim::QueueState> sim_state;

protected:
    recsdk::sim::QueueState& State(const char* call, const recsdk::sim::SrcLoc& loc) {
        recsdk::sim::Core();  // stops aborted cores
        if (!sim_state)
            recsdk::sim::Fail(call, loc, "queue used before TPipe::InitBuffer");
        if (!sim_state->alive)
            recsdk::sim::Fail(call, loc, "queue used after its TPipe was reset or destroyed");
        return *sim_state;
    }

    template <typename T>
    LocalTensor<T> Tensor(recsdk::sim::BufSlot* s) {
        auto& c = recsdk::sim::Core();
        auto* base = (s->l1 ? c.tscm : c.ub) + s->offset;
        return LocalTensor<T>(reinterpret_cast<T*>(base),
                              s->bytes / static_cast<uint32_t>(sizeof(T)), s, s->gen, s->pos);
    }

    template <typename T>
    bool EnQueOn(recsdk::sim::QueueState& q, const LocalTensor<T>& tensor, recsdk::sim::Pipe prod,
                 recsdk::sim::Pipe cons, const recsdk::sim::SrcLoc& loc) {
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
        if (q.events)
            Signal(s, prod, cons, loc);
        return true;
    }

    // EnQue's Set: an event id held until the DeQue.
    void Signal(recsdk::sim::BufSlot* s, recsdk::sim::Pipe prod, recsdk::sim::Pipe cons,
                const recsdk::sim::SrcLoc& loc) {
        s->enq_prod = prod;
        s->enq_cons = cons;
        s->enq_event =
            static_cast<int8_t>(recsdk::sim::HzAllocEventID(prod, cons, "TQue::EnQue", loc));
        recsdk::sim::HzSetFlag(prod, cons, s->enq_event, "TQue::EnQue", loc);
    }

    template <typename T>
    recsdk::sim::BufSlot* Owned(recsdk::sim::QueueState& q, const LocalTensor<T>& t,
                                const char* call, const recsdk::sim::SrcLoc& loc) {
        recsdk::sim::BufSlot* s = t.SimSlot();
        bool mine = false;
        for (auto& own : q.slots)
            mine = mine || own.get() == s;
        if (s == nullptr || !mine)
            recsdk::sim::Fail(call, loc, "the tensor was not allocated from this queue");
        if (s->state == 0 || s->gen != t.SimGen()) {
            recsdk::sim::Fail(call, loc, "the tensor's buffer was already freed");
        }
        return s;
    }
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

// TSCM简介.md: a queue whose buffers are in the AI core's L1, filled from GM (TPosition::GM) or
// from the unified buffer (TPosition::VECIN) and read by the Matmul API (SetTensorA/SetTensorB).
template <TPosition pos, int32_t depth, auto mask = 0>
using TSCM = TQueBind<pos, TPosition::TSCM, depth, mask>;

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
                              std::to_string(len) + " elements exceed the " +
                                  std::to_string(s.bytes) + "-byte buffer");
        }
        return LocalTensor<T>(reinterpret_cast<T*>(recsdk::sim::Core().ub + s.offset), len, &s,
                              s.gen, pos);
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
        return LocalTensor<T>(reinterpret_cast<T*>(recsdk::sim::Core().ub + s.offset + bufOffset),
                              size, &s, s.gen, pos);
    }

    // kernel_tbuf_impl.h: a TBuf's queue interface is its one buffer - AllocTensor and DeQue
    // return Get(), EnQue and FreeTensor do nothing (a TBuf has no events).
    template <typename T>
    LocalTensor<T> AllocTensor(recsdk::sim::SrcLoc loc = {}) {
        return Get<T>(loc);
    }
    template <typename T>
    void FreeTensor(LocalTensor<T>&, recsdk::sim::SrcLoc loc = {}) {
        Slot("TBuf::FreeTensor", loc);
    }
    template <typename T>
    void EnQue(const LocalTensor<T>&, recsdk::sim::SrcLoc loc = {}) {
        Slot("TBuf::EnQue", loc);
    }
    template <typename T>
    LocalTensor<T> DeQue(recsdk::sim::SrcLoc loc = {}) {
        return Get<T>(loc);
    }

    std::shared_ptr<recsdk::sim::QueueState> sim_state;

private:
    recsdk::sim::BufSlot& Slot(const char* call, const recsdk::sim::SrcLoc& loc) {
        recsdk::sim::Core();
        if (!sim_state)
            recsdk::sim::Fail(call, loc, "TBuf used before TPipe::InitBuffer");
        if (!sim_state->alive)
            recsdk::sim::Fail(call, loc, "TBuf used after its TPipe was reset or destroyed");
        return *sim_state->slots[0];
    }
};

using TEventID = int8_t;

class TPipe {
public:
    TPipe() {
        auto& c = recsdk::sim::Core();
        base_ = c.ub_top;
        l1Base_ = c.tscm_top;
        prev_ = c.pipe;
        c.pipe = this;
    }
    ~TPipe() {
        Release(true);
        if (recsdk::sim::g_core != nullptr && recsdk::sim::g_core->pipe == this)
            recsdk::sim::g_core->pipe = prev_;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, recsdk::sim::SrcLoc loc = {}) {
        if (recsdk::sim::CubeMemOf(QuePos(que)) != recsdk::sim::CubeMem::kNone) {
            auto st = CarveCube("TPipe::InitBuffer", loc, que.sim_state, num, len, QuePos(que));
            st->depth = QueDepth(que);
            st->events = recsdk::sim::QueueEvent(QuePos(que), QueDst(que), &st->prod, &st->cons);
            return true;
        }
        const bool l1 = QueDst(que) == TPosition::TSCM;
        auto st = l1 ? CarveL1("TPipe::InitBuffer", loc, que.sim_state, num, len, QuePos(que))
                     : Carve("TPipe::InitBuffer", loc, que.sim_state, num, len, "TQue");
        st->depth = QueDepth(que);
        st->pos = l1 ? TPosition::TSCM : QuePos(que);
        st->events = recsdk::sim::QueueEvent(QuePos(que), QueDst(que), &st->prod, &st->cons);
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

    // Reset.md / Destroy.md: both wait for the events freed queue buffers hold; Destroy (and the
    // destructor, asc-devkit kernel_tpipe_impl.h ~TPipe) then waits for every pipe (PIPE_ALL).
    void Reset() { Release(false); }
    void Destroy() { Release(true); }
    void Init() {}

    // FetchEventID.md: the lowest id of the event not held by AllocEventID (or a queue buffer);
    // it stays free. AllocEventID.md / ReleaseEventID.md: take it until released.
    TEventID FetchEventID(HardEvent evt, recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Pipe src, dst;
        EventPipes(evt, &src, &dst);
        return static_cast<TEventID>(
            recsdk::sim::HzFetchEventID(src, dst, "TPipe::FetchEventID", loc));
    }
    template <HardEvent evt>
    TEventID FetchEventID(recsdk::sim::SrcLoc loc = {}) {
        return FetchEventID(evt, loc);
    }
    template <HardEvent evt>
    TEventID AllocEventID(recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Pipe src, dst;
        EventPipes(evt, &src, &dst);
        return static_cast<TEventID>(
            recsdk::sim::HzAllocEventID(src, dst, "TPipe::AllocEventID", loc));
    }
    template <HardEvent evt>
    void ReleaseEventID(TEventID id, recsdk::sim::SrcLoc loc = {}) {
        recsdk::sim::Pipe src, dst;
        EventPipes(evt, &src, &dst);
        recsdk::sim::HzReleaseEventID(src, dst, id, "TPipe::ReleaseEventID", loc);
    }

private:
    template <TPosition s, TPosition d, int32_t depth, auto m>
    static int32_t QueDepth(const TQueBind<s, d, depth, m>&) {
        return depth;
    }
    template <TPosition s, TPosition d, int32_t depth, auto m>
    static TPosition QuePos(const TQueBind<s, d, depth, m>&) {
        return s;
    }
    template <TPosition s, TPosition d, int32_t depth, auto m>
    static TPosition QueDst(const TQueBind<s, d, depth, m>&) {
        return d;
    }

    std::shared_ptr<recsdk::sim::QueueState> Carve(const char* call, const recsdk::sim::SrcLoc& loc,
                                                   std::shared_ptr<recsdk::sim::QueueState>& handle,
                                                   uint32_t num, uint32_t len, const char* kind) {
        auto& c = recsdk::sim::Core();
        if (handle && handle->alive) {
            recsdk::sim::Fail(
                call, loc,
                "InitBuffer on a queue/TBuf that already has buffers (Reset the pipe first)");
        }
        if (num == 0)
            recsdk::sim::Fail(call, loc, "InitBuffer with num == 0");
        if (c.core_type == recsdk::sim::kAic) {
            recsdk::sim::Fail(call, loc,
                              "a cube core (AIC) has no unified buffer: guard vector code with "
                              "`if ASCEND_IS_AIV` (the Matmul API manages the AIC's L1/L0 itself)");
        }
        const uint32_t rounded =
            (len + 31u) / 32u * 32u;  // InitBuffer.md: len is rounded up to 32 bytes
        const uint64_t need = uint64_t(rounded) * num;
        if (uint64_t(c.ub_top) + need > c.ub_size) {
            recsdk::sim::Fail(call, loc,
                              "unified buffer overflow: " + std::to_string(num) + " x " +
                                  std::to_string(rounded) + " bytes requested with " +
                                  std::to_string(c.ub_top) + " of " + std::to_string(c.ub_size) +
                                  " bytes already in use on " + c.launch->soc->name);
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
            s->hz.base = reinterpret_cast<uintptr_t>(c.ub + s->offset);
            s->hz.base_offset = s->offset;
            s->hz.owner = kind;
            st->slots.push_back(std::move(s));
        }
        c.ub_top += static_cast<uint32_t>(need);
        c.buffers += num;
        c.stats->ub_peak_bytes = std::max<uint64_t>(c.stats->ub_peak_bytes, c.ub_top);
        c.queues.push_back(st);
        handle = st;
        return st;
    }

    // TSCM buffers: this core's part of its AI core's L1. The L1 is one per AI core, shared by the
    // TSCM buffers of every core there (the AIVs' are placed apart: TSCM简介.md, mask bit 2) and
    // by the Matmul API's own operand buffers, which get what is left (matmul.h): a request that
    // leaves the AI core's TSCM beyond its L1 fails here.
    std::shared_ptr<recsdk::sim::QueueState> CarveL1(
        const char* call, const recsdk::sim::SrcLoc& loc,
        std::shared_ptr<recsdk::sim::QueueState>& handle, uint32_t num, uint32_t len,
        TPosition src) {
        using namespace recsdk::sim;
        auto& c = Core();
        LaunchState& l = *c.launch;
        if (src != TPosition::GM && src != TPosition::VECIN)
            Fail(call, loc, "a TSCM queue is filled from TPosition::GM or VECIN (TSCM简介.md)");
        if (l.aic_per_block == 0) {
            Fail(call, loc,
                 std::string(
                     "TSCM is the L1 of an AI core's Cube, and the kernel was launched as ") +
                     KernelTypeName(l.kernel_type) + " with no cube cores");
        }
        if (handle && handle->alive) {
            Fail(call, loc,
                 "InitBuffer on a queue/TBuf that already has buffers (Reset the pipe first)");
        }
        if (num == 0)
            Fail(call, loc, "InitBuffer with num == 0");
        if (c.buffers + num > 64)
            Fail(call, loc, "more than 64 buffers initialised in one kernel");
        if (src == TPosition::VECIN) {
            uint32_t held = 0;
            for (const auto& q : c.queues) {
                if (q->alive && q->pos == TPosition::TSCM && q->src == TPosition::VECIN)
                    held += static_cast<uint32_t>(q->slots.size());
            }
            if (held + num + c.matmul_objects > 10) {
                Fail(call, loc,
                     "TSCM buffers filled from VECIN (" + std::to_string(held + num) +
                         ") and Matmul objects (" + std::to_string(c.matmul_objects) +
                         ") exceed 10 (TSCM简介.md: they share the hardware event ids)");
            }
        }
        const uint32_t rounded = (len + 31u) / 32u * 32u;
        const uint64_t need = uint64_t(rounded) * num;
        const uint64_t l1 = l.soc->l1_bytes;
        CubeCore& cube = l.cube->cubes[c.block];
        const size_t who = CubeCore::TscmSlot(c);
        {
            std::lock_guard<std::mutex> hold(cube.mu);
            const uint64_t others = cube.TscmBytes() - cube.tscm[who];
            if (others + c.tscm_top + need > l1) {
                Fail(call, loc,
                     "L1 overflow: TSCM buffers of " + std::to_string(num) + " x " +
                         std::to_string(rounded) + " bytes requested with " +
                         std::to_string(c.tscm_top) + " bytes held by this core and " +
                         std::to_string(others) + " by the other cores of AI core " +
                         std::to_string(c.block) + "; its L1 holds " + std::to_string(l1) +
                         " bytes on " + l.soc->name);
            }
            cube.tscm[who] = c.tscm_top + need;
        }
        L1Store(c);
        auto st = std::make_shared<QueueState>();
        st->kind = "TSCM";
        st->len = rounded;
        st->pipe = this;
        st->src = src;
        for (uint32_t i = 0; i < num; ++i) {
            auto s = std::make_unique<BufSlot>();
            s->offset = c.tscm_top + i * rounded;
            s->bytes = rounded;
            s->owner = "TSCM";
            s->l1 = true;
            s->hz.base = reinterpret_cast<uintptr_t>(c.tscm + s->offset);
            s->hz.base_offset = s->offset;
            s->hz.mem = "L1";
            s->hz.owner = "TSCM";
            st->slots.push_back(std::move(s));
        }
        c.tscm_top += static_cast<uint32_t>(need);
        c.buffers += num;
        c.queues.push_back(st);
        handle = st;
        return st;
    }

    // The core's L1 store, with the AIC's L0A, L0B and L0C after the L1 (cube_basic.h CubeMemBase).
    static void L1Store(recsdk::sim::CoreState& c) {
        if (c.tscm == nullptr) {
            const recsdk::sim::SocInfo& soc = *c.launch->soc;
            c.tscm_store.assign(recsdk::sim::CubeStoreBytes(soc) + 64,
                                0xA7);  // datacopy.h kPoison: bytes nobody wrote
            const auto at = reinterpret_cast<uintptr_t>(c.tscm_store.data());
            c.tscm = c.tscm_store.data() + ((64 - at % 64) % 64);
        }
    }

    // Queues on the Cube's positions for the low-level Cube API (cube_basic.h): A1/B1/C1 in the AI
    // core's L1 (as TSCM buffers, on the same ledger), A2 in L0A, B2 in L0B, CO1 in L0C - the
    // AIC's own buffers, by capacity of the SoC.
    std::shared_ptr<recsdk::sim::QueueState> CarveCube(
        const char* call, const recsdk::sim::SrcLoc& loc,
        std::shared_ptr<recsdk::sim::QueueState>& handle, uint32_t num, uint32_t len,
        TPosition pos) {
        using namespace recsdk::sim;
        const CubeMem mem = CubeMemOf(pos);
        if (mem == CubeMem::kL1) {
            auto st = CarveL1(call, loc, handle, num, len, TPosition::GM);
            st->pos = pos;
            st->kind = "TQue";
            for (auto& s : st->slots) {
                s->pos = pos;
                s->owner = CubePosName(pos);
                s->hz.owner = CubePosName(pos);
            }
            return st;
        }
        auto& c = Core();
        if (c.core_type != kAic) {
            Fail(call, loc,
                 std::string("TPosition::") + CubePosName(pos) + " is the " + CubeMemName(mem) +
                     " of the AIC's Cube; a vector core has none (guard Cube code with `if "
                     "ASCEND_IS_AIC`)");
        }
        if (handle && handle->alive) {
            Fail(call, loc,
                 "InitBuffer on a queue/TBuf that already has buffers (Reset the pipe first)");
        }
        if (num == 0)
            Fail(call, loc, "InitBuffer with num == 0");
        if (c.buffers + num > 64)
            Fail(call, loc, "more than 64 buffers initialised in one kernel");
        L1Store(c);
        const SocInfo& soc = *c.launch->soc;
        const uint64_t base = CubeMemBase(soc, mem), cap = CubeMemBytes(soc, mem);
        uint64_t top = base;  // after the live buffers of this memory
        for (const auto& q : c.queues) {
            if (!q->alive || q->slots.empty() || CubeMemOf(q->pos) != mem)
                continue;
            top = std::max<uint64_t>(top, q->slots.back()->offset + q->slots.back()->bytes);
        }
        const uint32_t rounded = (len + 31u) / 32u * 32u;
        const uint64_t need = uint64_t(rounded) * num;
        if (top + need > base + cap) {
            Fail(call, loc,
                 std::string(CubeMemName(mem)) + " overflow: " + std::to_string(num) + " x " +
                     std::to_string(rounded) + " bytes requested with " +
                     std::to_string(top - base) + " in use; it holds " + std::to_string(cap) +
                     " bytes on " + soc.name);
        }
        auto st = std::make_shared<QueueState>();
        st->kind = "TQue";
        st->len = rounded;
        st->pipe = this;
        st->pos = pos;
        for (uint32_t i = 0; i < num; ++i) {
            auto s = std::make_unique<BufSlot>();
            s->offset = static_cast<uint32_t>(top + uint64_t(i) * rounded);
            s->bytes = rounded;
            s->owner = CubePosName(pos);
            s->l1 = true;
            s->pos = pos;
            s->hz.base = reinterpret_cast<uintptr_t>(c.tscm + s->offset);
            s->hz.base_offset = s->offset - base;
            s->hz.mem = CubeMemName(mem);
            s->hz.owner = CubePosName(pos);
            st->slots.push_back(std::move(s));
        }
        c.buffers += num;
        c.queues.push_back(st);
        handle = st;
        return st;
    }

    void Release(bool destroy) {
        recsdk::sim::CoreState* c = recsdk::sim::g_core;
        if (c == nullptr)
            return;
        for (auto& q : c->queues) {
            if (q->pipe != this || !q->alive)
                continue;
            q->alive = false;
            for (auto& s : q->slots) {
                if (s->free_event >= 0)
                    recsdk::sim::HzDrainNoThrow(*c, q->cons, q->prod, s->free_event);
                s->free_event = -1;
            }
            if (std::string(q->kind) == "TBuf")
                continue;
            uint32_t held = 0;
            for (const auto& s : q->slots)
                held += s->state != 0 ? 1 : 0;
            if (held != 0 && c->leak.empty()) {
                c->leak = std::to_string(held) + " tensor(s) of a queue on TPosition " +
                          AscendC::PositionName(q->pos) +
                          " still allocated or enqueued when the TPipe was released "
                          "(missing DeQue/FreeTensor)";
            }
        }
        if (c->ub_top > base_)
            c->ub_top = base_;
        if (c->tscm_top > l1Base_) {
            c->tscm_top = l1Base_;
            recsdk::sim::CubeCore& cube = c->launch->cube->cubes[c->block];
            std::lock_guard<std::mutex> hold(cube.mu);
            cube.tscm[recsdk::sim::CubeCore::TscmSlot(*c)] = l1Base_;
        }
        if (destroy)
            recsdk::sim::HzBarrierAllNoThrow(*c);
    }

    uint32_t base_ = 0;
    uint32_t l1Base_ = 0;
    void* prev_ = nullptr;
};

}  // namespace AscendC

// 资源管理/GetTPipePtr.md: the kernel's current TPipe. Declared in the global namespace, where
// CANN's kernel_common.h declares it (a call spelled AscendC::GetTPipePtr() does not compile
// against the real headers).
inline AscendC::TPipe* GetTPipePtr() {
    auto& c = recsdk::sim::Core();
    if (c.pipe == nullptr)
        recsdk::sim::Fail("GetTPipePtr", recsdk::sim::SrcLoc(), "no TPipe exists");
    return static_cast<AscendC::TPipe*>(c.pipe);
}

namespace recsdk::sim {

// Tensors a core leaves allocated or enqueued when the kernel returns: a missing
// FreeTensor/DeQue, which leaves hardware events unbalanced.
inline void CheckQueuesAtExit(CoreState& c) {
    if (!c.leak.empty()) {
        throw CheckError(Where("at kernel exit", SrcLoc("", 0)) + ": " + c.leak);
    }
    for (const auto& q : c.queues) {
        if (!q->alive || std::string(q->kind) == "TBuf")
            continue;
        uint32_t held = 0;
        for (const auto& s : q->slots)
            held += s->state != 0 ? 1 : 0;
        if (held != 0) {
            throw CheckError(Where("at kernel exit", SrcLoc("", 0)) + ": " + std::to_string(held) +
                             " tensor(s) of a queue on TPosition " + AscendC::PositionName(q->pos) +
                             " still allocated or enqueued (missing DeQue/FreeTensor)");
        }
    }
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_PIPE_H
