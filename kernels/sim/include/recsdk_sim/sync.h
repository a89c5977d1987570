// Cores, synchronisation, atomics, workspace, tiling macros and Trap.
//
// Semantics:
// - 工具接口/系统资源与变量/GetBlockIdx.md, GetBlockNum.md: the logical core index in
//   [0, blockDim) and blockDim.
// - 同步控制/核间同步/SyncAll.md: all cores of the launch meet; a core that has returned from
//   the kernel never arrives, so the others would hang (reported here as a deadlock).
// - 同步控制/核内同步/PipeBarrier_ISASI.md, SetFlag_WaitFlag_ISASI.md, SetFlag-WaitFlag.md
//   (TQueSync): ordering between the pipes of one core. The emulator executes a core's
//   instructions in program order; the pipe-hazard checker (recsdk_sim/hazard.h) keeps what each
//   pipe may assume finished and fails an access that races. A WaitFlag with no SetFlag before
//   it would hang, and a second SetFlag on a set event id is undefined: both are reported.
// - 原子操作/SetAtomicAdd.md: later UB->GM copies add element-wise into GM until
//   SetAtomicNone/DisableDmaAtomic; A2/A3 types int8/int16/half/bfloat16/int32/float.
// - 资源管理/workspace/GetUserWorkspace.md: the user workspace follows the system part.
// - Kernel-Tiling/GET_TILING_DATA.md, REGISTER_TILING_DEFAULT.md, TILING_KEY_IS.md.
// - 调试接口/异常检测/Trap.md: stops the AI core (a device-side assert).
#ifndef RECSDK_SIM_SYNC_H
#define RECSDK_SIM_SYNC_H

#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <type_traits>

#include "recsdk_sim/hazard.h"
#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

enum pipe_t {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_V2,
    PIPE_FIX
};
enum event_t {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7
};

// KERNEL_TYPE_* and KERNEL_TASK_TYPE_DEFAULT: recsdk_sim/mix.h.

namespace recsdk::sim {

// LaunchState::generation's step for a SyncAll every core meets (SyncAll<false>); an AIV-only one
// (SyncAll<true>) adds 1, so a Cube core's write is ordered by the former only (mix.h).
constexpr uint64_t kSyncAllCoresStep = uint64_t{1} << 32;

// mix.h: the barrier's parties share what they know of Cube results in global memory.
inline void XcoreSyncAllMerge(LaunchState& l, bool aiv_only);

}  // namespace recsdk::sim

namespace AscendC {

// <source pipe>_<destination pipe> (SetFlag_WaitFlag_ISASI.md); the names of asc-devkit's
// impl/basic_api/kernel_event.h.
enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};

// The source and destination pipe of an event (the checker's view, recsdk_sim/hazard.h).
inline void EventPipes(HardEvent e, recsdk::sim::Pipe* src, recsdk::sim::Pipe* dst) {
    using P = recsdk::sim::Pipe;
    static constexpr P table[][2] = {
        {P::MTE2, P::MTE1}, {P::MTE1, P::MTE2}, {P::MTE1, P::M},  {P::M, P::MTE1},
        {P::MTE2, P::V},    {P::V, P::MTE2},    {P::MTE3, P::V},  {P::V, P::MTE3},
        {P::M, P::V},       {P::V, P::M},       {P::V, P::V},     {P::MTE3, P::MTE1},
        {P::MTE1, P::MTE3}, {P::MTE1, P::V},    {P::MTE2, P::M},  {P::M, P::MTE2},
        {P::V, P::MTE1},    {P::M, P::FIX},     {P::FIX, P::M},   {P::MTE3, P::MTE2},
        {P::MTE2, P::MTE3}, {P::S, P::V},       {P::V, P::S},     {P::S, P::MTE2},
        {P::MTE2, P::S},    {P::S, P::MTE3},    {P::MTE3, P::S},  {P::MTE2, P::FIX},
        {P::FIX, P::MTE2},  {P::FIX, P::S},     {P::M, P::S},     {P::FIX, P::MTE3},
        {P::MTE1, P::FIX},  {P::FIX, P::MTE1},  {P::FIX, P::FIX},
    };
    static_assert(sizeof(table) / sizeof(table[0]) == static_cast<size_t>(HardEvent::MAX),
                  "one row per event");
    *src = table[static_cast<int>(e)][0];
    *dst = table[static_cast<int>(e)][1];
}

inline recsdk::sim::Pipe PipeOf(pipe_t p) {
    using P = recsdk::sim::Pipe;
    switch (p) {
        case PIPE_S:
            return P::S;
        case PIPE_M:
            return P::M;
        case PIPE_MTE1:
            return P::MTE1;
        case PIPE_MTE2:
            return P::MTE2;
        case PIPE_MTE3:
            return P::MTE3;
        case PIPE_FIX:
            return P::FIX;
        default:
            return P::V;  // PIPE_V, PIPE_V2
    }
}

enum class CacheLine { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

inline int64_t GetBlockIdx() {
    return recsdk::sim::Core().idx;
}
inline int64_t GetBlockNum() {
    return recsdk::sim::Core().launch->block_dim;
}

inline void InitSocState() {}

template <bool isAIVOnly = true>
inline void SyncAll(recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    CoreState& c = Core();
    // SyncAll.md does not say what it orders inside a core; asc-devkit's dav_c220 SyncAllImpl
    // starts with PipeBarrier<PIPE_ALL>() (a core's writes must have landed before the others
    // may read them), so every pipe's earlier work is complete after it.
    HzBarrierAll();
    LaunchState& l = *c.launch;
    ++c.stats->sync_all;
    const uint32_t nth = ++c.sync_count;
    // With cube cores in the launch, SyncAll<true> meets the AIVs only (an AIC passes through, as
    // asc-devkit's SoftSyncAllImpl returns on AIC) and SyncAll<false> every core.
    const bool aiv_only = isAIVOnly && l.aiv_per_block > 0;
    if (aiv_only && c.core_type == kAic)
        return;
    const uint32_t parties = aiv_only ? l.block_dim * l.aiv_per_block : l.cores_total;
    std::unique_lock<std::mutex> lock(l.mu);
    if (l.aborted)
        throw Abort{};
    auto gone = [&l, aiv_only] { return aiv_only ? l.finished - l.finished_aic : l.finished; };
    if (gone() > 0) {
        lock.unlock();
        Fail(
            "SyncAll", loc,
            "SyncAll #" + std::to_string(nth) +
                " after another core returned from the kernel: the remaining "
                "cores would wait forever (every core must call SyncAll the same number of times)");
    }
    const uint64_t gen = l.generation;
    if (l.waiting == 0) {
        l.waiting_at = loc.str();
        l.sync_aiv_only = aiv_only;
    }
    if (++l.waiting == parties) {
        l.waiting = 0;
        // The high half counts the barriers every core met (SyncAll<false>), the low half the
        // AIV-only ones: a Cube core's write is ordered by the former only (mix.h).
        l.generation += aiv_only ? 1 : recsdk::sim::kSyncAllCoresStep;
        XcoreSyncAllMerge(l, aiv_only);
        l.cv.notify_all();
        return;
    }
    // BlockUntil also reports the deadlock of a SyncAll waiting for a core stuck in another wait.
    const std::function<bool()> ready = [&] { return l.generation != gen || gone() > 0; };
    BlockUntil(
        lock, ready,
        "SyncAll #" + std::to_string(nth) + " at " + loc.str() + " waits for the other cores",
        "SyncAll", loc);
    if (l.generation != gen)
        return;
    lock.unlock();
    Fail("SyncAll", loc,
         "waiting in SyncAll #" + std::to_string(nth) +
             " while another core returned from the kernel: the device "
             "would hang");
}

// PipeBarrier<PIPE_S> is not supported ("Scalar流水之间的同步由硬件自动保证"): a no-op here.
inline void pipe_barrier(pipe_t pipe) {
    if (pipe == PIPE_ALL) {
        recsdk::sim::HzBarrierAll();
    } else if (pipe != PIPE_S) {
        recsdk::sim::HzBarrier(PipeOf(pipe));
    } else {
        recsdk::sim::Core();
    }
}
template <pipe_t pipe>
inline void PipeBarrier() {
    pipe_barrier(pipe);
}

// The intrinsics under SetFlag/WaitFlag (set_flag(pipe, tpipe, eventId)): the same flags, named
// by the source and destination pipe.
inline void set_flag(pipe_t pipe, pipe_t tpipe, event_t pipeID, recsdk::sim::SrcLoc loc = {}) {
    if (static_cast<int>(pipeID) < 0 || static_cast<int>(pipeID) > 7)
        recsdk::sim::Fail("set_flag", loc, "event id out of range");
    recsdk::sim::HzSetFlag(PipeOf(pipe), PipeOf(tpipe), static_cast<int32_t>(pipeID), "set_flag",
                           loc);
}
inline void set_flag(pipe_t pipe, pipe_t tpipe, int pipeID, recsdk::sim::SrcLoc loc = {}) {
    set_flag(pipe, tpipe, static_cast<event_t>(pipeID), loc);
}
inline void wait_flag(pipe_t pipe, pipe_t tpipe, event_t pipeID, recsdk::sim::SrcLoc loc = {}) {
    if (static_cast<int>(pipeID) < 0 || static_cast<int>(pipeID) > 7)
        recsdk::sim::Fail("wait_flag", loc, "event id out of range");
    recsdk::sim::HzWaitFlag(PipeOf(pipe), PipeOf(tpipe), static_cast<int32_t>(pipeID), "wait_flag",
                            loc);
}
inline void wait_flag(pipe_t pipe, pipe_t tpipe, int pipeID, recsdk::sim::SrcLoc loc = {}) {
    wait_flag(pipe, tpipe, static_cast<event_t>(pipeID), loc);
}

// SetFlag and WaitFlag: the event's id checked, its pipes looked up, then `hz` (the hazard
// checker's set or wait) called on them.
template <typename Hz>
inline void EventFlag(HardEvent event, int32_t eventID, const char* call, recsdk::sim::SrcLoc loc,
                      Hz hz) {
    if (eventID < 0 || eventID > 7)
        recsdk::sim::Fail(call, loc, "event id out of range");
    recsdk::sim::Pipe src, dst;
    EventPipes(event, &src, &dst);
    hz(src, dst, eventID, call, loc);
}

template <HardEvent event>
inline void SetFlag(int32_t eventID, recsdk::sim::SrcLoc loc = {}) {
    EventFlag(event, eventID, "SetFlag", loc, recsdk::sim::HzSetFlag);
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID, recsdk::sim::SrcLoc loc = {}) {
    EventFlag(event, eventID, "WaitFlag", loc, recsdk::sim::HzWaitFlag);
}

// 核内同步/TQueSync模板参数.md, SetFlag-WaitFlag.md: the same flags, named by pipes.
template <pipe_t src, pipe_t dst>
class TQueSync {
public:
    void SetFlag(int32_t id, recsdk::sim::SrcLoc loc = {}) {
        if (id < 0 || id > 7)
            recsdk::sim::Fail("TQueSync::SetFlag", loc, "event id out of range");
        recsdk::sim::HzSetFlag(PipeOf(src), PipeOf(dst), id, "TQueSync::SetFlag", loc);
    }
    void WaitFlag(int32_t id, recsdk::sim::SrcLoc loc = {}) {
        if (id < 0 || id > 7)
            recsdk::sim::Fail("TQueSync::WaitFlag", loc, "event id out of range");
        recsdk::sim::HzWaitFlag(PipeOf(src), PipeOf(dst), id, "TQueSync::WaitFlag", loc);
    }
};

template <typename T>
inline void SetAtomicAdd(recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    auto& c = Core();
    constexpr bool a2_type = std::is_same_v<T, float> || std::is_same_v<T, half> ||
                             std::is_same_v<T, int32_t> || std::is_same_v<T, int16_t> ||
                             std::is_same_v<T, int8_t> || std::is_same_v<T, bfloat16_t>;
    const bool needs_bf16 = std::is_same_v<T, bfloat16_t> || std::is_same_v<T, int8_t>;
    if (!a2_type || (needs_bf16 && !c.launch->soc->atomic_add_bf16)) {
        Fail("SetAtomicAdd", loc,
             std::string("atomic add of ") + TypeName<T>() + " is not supported on " +
                 c.launch->soc->name);
    }
    c.atomic_mode = 1;
    c.atomic_type = TypeName<T>();
}

// SetAtomicMax.md / SetAtomicMin.md: later UB->GM copies keep the element-wise maximum
// (minimum) of GM and the data until DisableDmaAtomic; A2/A3 types half/float/int16/int32/int8/
// bfloat16.
template <typename T>
inline void SetAtomicMaxMin(int mode, const char* call, recsdk::sim::SrcLoc loc) {
    using namespace recsdk::sim;
    auto& c = Core();
    constexpr bool a2_type = std::is_same_v<T, float> || std::is_same_v<T, half> ||
                             std::is_same_v<T, int32_t> || std::is_same_v<T, int16_t> ||
                             std::is_same_v<T, int8_t> || std::is_same_v<T, bfloat16_t>;
    if (!a2_type) {
        Fail(call, loc,
             std::string(TypeName<T>()) + " is not a supported type on " + c.launch->soc->name);
    }
    c.atomic_mode = mode;
    c.atomic_type = TypeName<T>();
}
template <typename T>
inline void SetAtomicMax(recsdk::sim::SrcLoc loc = {}) {
    SetAtomicMaxMin<T>(2, "SetAtomicMax", loc);
}
template <typename T>
inline void SetAtomicMin(recsdk::sim::SrcLoc loc = {}) {
    SetAtomicMaxMin<T>(3, "SetAtomicMin", loc);
}

inline void SetAtomicNone() {
    auto& c = recsdk::sim::Core();
    c.atomic_mode = 0;
    c.atomic_type = nullptr;
}
inline void DisableDmaAtomic() {
    SetAtomicNone();
}

template <typename T, CacheLine entireType = CacheLine::SINGLE_CACHE_LINE,
          DcciDst dcciDst = DcciDst::CACHELINE_OUT>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&) {
    recsdk::sim::Core();
}
template <typename T, CacheLine entireType = CacheLine::SINGLE_CACHE_LINE,
          DcciDst dcciDst = DcciDst::CACHELINE_OUT>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>&) {
    recsdk::sim::Core();  // as for global memory: the emulation has no data cache to clean
}

inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    return workspace == nullptr ? nullptr : workspace + recsdk::sim::Core().launch->sys_workspace;
}

inline void Trap(recsdk::sim::SrcLoc loc = {}) {
    throw recsdk::sim::CheckError(
        recsdk::sim::Where("Trap", loc) + ": the kernel trapped (device-side assert)",
        RECSDK_SIM_TRAP);
}

}  // namespace AscendC

namespace recsdk::sim {

// GET_TILING_DATA: copy the tiling struct out of global memory (a real read of the tiling tensor).
// The tiling argument may be a `const GM_ADDR` (const __gm__ uint8_t*).
template <typename TD>
inline void LoadTiling(TD* out, const uint8_t* tiling, SrcLoc loc = {}) {
    static_assert(std::is_trivially_copyable_v<TD>, "tiling data must be a POD struct");
    CheckGm(tiling, sizeof(TD), false, "GET_TILING_DATA", loc);
    std::memcpy(out, tiling, sizeof(TD));
    Stats().gm_read_bytes += sizeof(TD);
}

}  // namespace recsdk::sim

#define REGISTER_TILING_DEFAULT(TYPE) using RecsdkSimTilingDefault = TYPE
#define GET_TILING_DATA(VAR, TILING) \
    RecsdkSimTilingDefault VAR;      \
    ::recsdk::sim::LoadTiling(&VAR, TILING)
#define GET_TILING_DATA_WITH_STRUCT(TYPE, VAR, TILING) \
    TYPE VAR;                                          \
    ::recsdk::sim::LoadTiling(&VAR, TILING)
#define TILING_KEY_IS(KEY) (::recsdk::sim::Core().launch->tiling_key == static_cast<uint64_t>(KEY))

#endif  // RECSDK_SIM_SYNC_H
