// Cores, synchronisation, atomics, workspace, tiling macros and Trap.
//
// Semantics:
// - 工具接口/系统资源与变量/GetBlockIdx.md, GetBlockNum.md: the logical core index in
//   [0, blockDim) and blockDim.
// - 同步控制/核间同步/SyncAll.md: all cores of the launch meet; a core that has returned from
//   the kernel never arrives, so the others would hang (reported here as a deadlock).
// - 同步控制/核内同步/PipeBarrier_ISASI.md, SetFlag-WaitFlag.md: ordering between the pipes of
//   one core. The emulator executes a core's instructions in program order, so these are
//   no-ops, except that a WaitFlag with no SetFlag before it would hang and is reported.
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

#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"

enum pipe_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_V2, PIPE_FIX };
enum event_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

// KERNEL_TYPE_* and KERNEL_TASK_TYPE_DEFAULT: recsdk_sim/mix.h.

namespace AscendC {

enum class HardEvent : uint8_t {
    MTE2_V = 0,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    MTE2_MTE3,
    MTE3_MTE2,
    S_V,
    V_S,
    MTE2_S,
    S_MTE2,
    MTE3_S,
    S_MTE3,
    MAX,
};

enum class CacheLine { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

inline int64_t GetBlockIdx() { return recsdk::sim::Core().idx; }
inline int64_t GetBlockNum() { return recsdk::sim::Core().launch->block_dim; }

inline void InitSocState() {}

template <bool isAIVOnly = true>
inline void SyncAll(recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    ++c.stats->sync_all;
    const uint32_t nth = ++c.sync_count;
    // With cube cores in the launch, SyncAll<true> meets the AIVs only (an AIC passes through, as
    // asc-devkit's SoftSyncAllImpl returns on AIC) and SyncAll<false> every core.
    const bool aiv_only = isAIVOnly && l.aiv_per_block > 0;
    if (aiv_only && c.core_type == kAic) return;
    const uint32_t parties = aiv_only ? l.block_dim * l.aiv_per_block : l.cores_total;
    std::unique_lock<std::mutex> lock(l.mu);
    if (l.aborted) throw Abort{};
    auto gone = [&l, aiv_only] { return aiv_only ? l.finished - l.finished_aic : l.finished; };
    if (gone() > 0) {
        lock.unlock();
        Fail("SyncAll", loc,
             "SyncAll #" + std::to_string(nth) + " after another core returned from the kernel: the remaining "
             "cores would wait forever (every core must call SyncAll the same number of times)");
    }
    const uint64_t gen = l.generation;
    if (l.waiting == 0) {
        l.waiting_at = loc.str();
        l.sync_aiv_only = aiv_only;
    }
    if (++l.waiting == parties) {
        l.waiting = 0;
        ++l.generation;
        l.cv.notify_all();
        return;
    }
    // BlockUntil also reports the deadlock of a SyncAll waiting for a core stuck in another wait.
    const std::function<bool()> ready = [&] { return l.generation != gen || gone() > 0; };
    BlockUntil(lock, ready, "SyncAll #" + std::to_string(nth) + " at " + loc.str() + " waits for the other cores", "SyncAll",
               loc);
    if (l.generation != gen) return;
    lock.unlock();
    Fail("SyncAll", loc,
         "waiting in SyncAll #" + std::to_string(nth) + " while another core returned from the kernel: the device "
         "would hang");
}

template <pipe_t pipe>
inline void PipeBarrier() {
    recsdk::sim::Core();
}
inline void pipe_barrier(pipe_t) { recsdk::sim::Core(); }

template <HardEvent event>
inline void SetFlag(int32_t eventID, recsdk::sim::SrcLoc loc = {}) {
    auto& c = recsdk::sim::Core();
    if (eventID < 0 || eventID > 7) recsdk::sim::Fail("SetFlag", loc, "event id out of range");
    ++c.flags[static_cast<int>(event)][eventID];
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID, recsdk::sim::SrcLoc loc = {}) {
    auto& c = recsdk::sim::Core();
    if (eventID < 0 || eventID > 7) recsdk::sim::Fail("WaitFlag", loc, "event id out of range");
    int32_t& n = c.flags[static_cast<int>(event)][eventID];
    if (n <= 0) {
        recsdk::sim::Fail("WaitFlag", loc,
                          "WaitFlag for event id " + std::to_string(eventID) +
                              " with no SetFlag before it: the pipe would wait forever");
    }
    --n;
}

template <typename T>
inline void SetAtomicAdd(recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    auto& c = Core();
    constexpr bool a2_type = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, int32_t> ||
                             std::is_same_v<T, int16_t> || std::is_same_v<T, int8_t> ||
                             std::is_same_v<T, bfloat16_t>;
    const bool needs_bf16 = std::is_same_v<T, bfloat16_t> || std::is_same_v<T, int8_t>;
    if (!a2_type || (needs_bf16 && !c.launch->soc->atomic_add_bf16)) {
        Fail("SetAtomicAdd", loc,
             std::string("atomic add of ") + TypeName<T>() + " is not supported on " + c.launch->soc->name);
    }
    c.atomic_mode = 1;
    c.atomic_type = TypeName<T>();
}

inline void SetAtomicNone() {
    auto& c = recsdk::sim::Core();
    c.atomic_mode = 0;
    c.atomic_type = nullptr;
}
inline void DisableDmaAtomic() { SetAtomicNone(); }

template <typename T, CacheLine entireType = CacheLine::SINGLE_CACHE_LINE, DcciDst dcciDst = DcciDst::CACHELINE_OUT>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&) {
    recsdk::sim::Core();
}

inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    return workspace == nullptr ? nullptr : workspace + recsdk::sim::Core().launch->sys_workspace;
}

inline void Trap(recsdk::sim::SrcLoc loc = {}) {
    throw recsdk::sim::CheckError(recsdk::sim::Where("Trap", loc) + ": the kernel trapped (device-side assert)",
                                  RECSDK_SIM_TRAP);
}

}  // namespace AscendC

namespace recsdk::sim {

// GET_TILING_DATA: copy the tiling struct out of global memory (a real read of the tiling tensor).
template <typename TD>
inline void LoadTiling(TD* out, GM_ADDR tiling, SrcLoc loc = {}) {
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
