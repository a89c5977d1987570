// Cube (AIC) and vector (AIV) cores in one launch: kernel types, core indices and cross-core
// flags.
//
// Semantics (docs/api/SIMD-API/基础API/ and docs/guide/):
// - Kernel-Tiling/设置Kernel类型.md, KERNEL_TASK_TYPE_DEFAULT: the kernel's type decides which
//   cores run it. KERNEL_TYPE_MIX_AIC_1_2 runs, per logical AI core, one AIC and two AIV; blockDim
//   counts AI cores (= AICs). AIV_ONLY / MIX_AIV_1_0 run blockDim AIVs, AIC_ONLY / MIX_AIC_1_0
//   blockDim AICs, MIX_AIC_1_1 one of each.
// - 工具接口/系统资源与变量/GetBlockIdx.md: with AIC and AIV launched together at 1:2 the index is
// in
//   [0, blockDim) on an AIC and in [0, 2 * blockDim) on an AIV (asc-devkit impl dav_c220:
//   block * GetTaskRatio() + GetSubBlockIdx()); GetBlockNum() is blockDim in both.
// - GetSubBlockIdx_ISASI.md, GetSubBlockNum_ISASI.md: 0/1 tells the two AIVs of an AI core apart;
//   GetTaskRatio.md (GetTaskRation is the older spelling the impl keeps): 2 on an AIV of a 1:2
//   launch, 1 on an AIC and in every other case.
// - 同步控制/核间同步/CrossCoreSetFlag_ISASI.md, CrossCoreWaitFlag_ISASI.md, and guide
//   NPU架构版本2201.md "核间同步": each core has 16 flag counters (flagId 0-15). Mode 0: once every
//   AIC (or every AIV) of the launch has set a flag, each of them may pass one wait on it. Mode 1:
//   once both AIVs of an AI core have set it, both may pass. Mode 2: an AIC's set lets each AIV of
//   its AI core pass one wait; once both AIVs have set it, the AIC may pass one. A wait with the
//   counter at 0 blocks; a counter above 15 is a hardware error. A2/A3 support modes 0-2 (mode 4 is
//   Ascend 950), pipe PIPE_S/PIPE_ALL are not allowed for the set, and AIV_ONLY/AIC_ONLY kernels
//   have no scheduler to deliver flags. The Matmul API in MIX mode uses flagIds [0, 2N-1] for its N
//   objects, SyncAll 11-14 (both pages warn against sharing them).
//
// Checks: all the rules above; a wait nobody can satisfy is reported as a deadlock (BlockUntil).
#ifndef RECSDK_SIM_MIX_H
#define RECSDK_SIM_MIX_H

#include <array>
#include <mutex>
#include <string>
#include <vector>

#include "recsdk_sim/runtime.h"
#include "recsdk_sim/sync.h"

// Kernel-Tiling/设置Kernel类型.md; the numbering of asc-devkit's KernelMetaType.
enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX,
};

namespace recsdk::sim {

inline const char* KernelTypeName(int32_t t) {
    switch (t) {
        case KERNEL_TYPE_AIV_ONLY:
            return "KERNEL_TYPE_AIV_ONLY";
        case KERNEL_TYPE_AIC_ONLY:
            return "KERNEL_TYPE_AIC_ONLY";
        case KERNEL_TYPE_MIX_AIV_1_0:
            return "KERNEL_TYPE_MIX_AIV_1_0";
        case KERNEL_TYPE_MIX_AIC_1_0:
            return "KERNEL_TYPE_MIX_AIC_1_0";
        case KERNEL_TYPE_MIX_AIC_1_1:
            return "KERNEL_TYPE_MIX_AIC_1_1";
        case KERNEL_TYPE_MIX_AIC_1_2:
            return "KERNEL_TYPE_MIX_AIC_1_2";
        default:
            return "an unsupported kernel type";
    }
}

// AICs and AIVs per logical AI core; false for the types of coupled architectures (not emulated).
inline bool KernelShape(int32_t type, uint32_t* aic, uint32_t* aiv) {
    switch (type) {
        case KERNEL_TYPE_AIV_ONLY:
        case KERNEL_TYPE_MIX_AIV_1_0:
            *aic = 0;
            *aiv = 1;
            return true;
        case KERNEL_TYPE_AIC_ONLY:
        case KERNEL_TYPE_MIX_AIC_1_0:
            *aic = 1;
            *aiv = 0;
            return true;
        case KERNEL_TYPE_MIX_AIC_1_1:
            *aic = 1;
            *aiv = 1;
            return true;
        case KERNEL_TYPE_MIX_AIC_1_2:
            *aic = 1;
            *aiv = 2;
            return true;
        default:
            return false;
    }
}

// Cross-core state of a launch (forward-declared in runtime.h): the flag counters of every core and
// the sets still waiting for their partners, and one record per AIC (recsdk_sim/cube.h) for the
// Matmul requests it serves.
struct CubeCore {
    std::mutex mu;                // an AIC runs one Matmul request at a time (one KFC server loop)
    RecsdkSimCoreStats served{};  // what its Cube did (merged into the AIC's entry at the end)
    // L1 bytes held by TSCM buffers, by core of the AI core (the AIC, or its AIVs by sub-block;
    // pipe.h), guarded by mu: what is left is the Matmul API's.
    std::array<uint64_t, 4> tscm{};
    // The core's entry in tscm: the AIC 0, its AIVs 1 + sub-block.
    static size_t TscmSlot(const CoreState& c) { return c.core_type == kAic ? 0 : 1 + c.sub_idx; }
    uint64_t TscmBytes() const {
        uint64_t n = 0;
        for (uint64_t b : tscm)
            n += b;
        return n;
    }
};

struct CubeLaunchState {
    explicit CubeLaunchState(uint32_t slots, uint32_t aics)
        : counter(slots), pending(slots), active(slots, nullptr), cubes(aics) {}
    std::vector<std::array<int32_t, 16>> counter;  // by slot: the counter CrossCoreWaitFlag reads
    std::vector<std::array<int32_t, 16>> pending;  // by slot: sets still waiting for the partners
    std::vector<const void*> active;               // by slot: the Matmul object in use until End()
    std::vector<CubeCore> cubes;                   // by AIC
};

// The counters a Cube call adds to (CubeExec::stats), merged into the AIC's report entry.
using StatsField = uint64_t RecsdkSimCoreStats::*;
inline constexpr StatsField kServedStats[] = {
    &RecsdkSimCoreStats::gm_read_bytes,
    &RecsdkSimCoreStats::gm_write_bytes,
    &RecsdkSimCoreStats::gm_workspace_read_bytes,
    &RecsdkSimCoreStats::gm_workspace_write_bytes,
    &RecsdkSimCoreStats::dma_transfers,
    &RecsdkSimCoreStats::atomic_write_bytes,
    &RecsdkSimCoreStats::cube_macs,
    &RecsdkSimCoreStats::cube_useful_macs,
    &RecsdkSimCoreStats::cube_cycles,
    &RecsdkSimCoreStats::gm_to_l1_bytes,
    &RecsdkSimCoreStats::l1_to_l0_bytes,
    &RecsdkSimCoreStats::l0c_out_bytes,
};

// The served counters of each AIC into its report entry (after the launch's threads have joined).
inline void MergeServed(LaunchState& l) {
    if (!l.cube)
        return;
    for (uint32_t i = 0; i < l.cube->cubes.size() && i < l.stats.size(); ++i) {
        for (const StatsField field : kServedStats)
            l.stats[i].*field += l.cube->cubes[i].served.*field;
    }
}

// Slots: AICs first ([0, blockDim)), then AIVs by GetBlockIdx().
inline uint32_t AicSlot(const LaunchState& l, uint32_t block) {
    return block;
}
inline uint32_t AivSlot(const LaunchState& l, uint32_t block, uint32_t sub) {
    return l.block_dim * l.aic_per_block + block * l.aiv_per_block + sub;
}

inline const char* CoreTypeName(uint8_t t) {
    return t == kAic ? "AIC" : "AIV";
}

}  // namespace recsdk::sim

namespace AscendC {

// impl/utils/sys_constants.h: the values g_coreType compares against.
constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

inline int64_t GetSubBlockIdx() {
    return recsdk::sim::Core().sub_idx;
}
inline int64_t GetSubBlockNum() {
    const auto& c = recsdk::sim::Core();
    return c.core_type == recsdk::sim::kAic ? 1 : c.launch->aiv_per_block;
}
inline int64_t GetTaskRatio() {
    return GetSubBlockNum();
}
inline int64_t GetTaskRation() {
    return GetTaskRatio();
}

// 资源管理/workspace/GetSysWorkSpacePtr.md: the system workspace (the start of the workspace the
// framework passes), which the Matmul API uses for its AIC/AIV messages. The emulation's Matmul
// passes no messages through it, and the launcher backs only the user part.
inline __gm__ uint8_t* GetSysWorkSpacePtr() {
    return recsdk::sim::Core().launch->sys_workspace_ptr;
}
inline void SetSysWorkspace(GM_ADDR) {
    recsdk::sim::Core();
}

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "CrossCoreSetFlag";
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    static_assert(
        pipe != PIPE_S && pipe != PIPE_ALL,
        "CrossCoreSetFlag: modes 0-2 take PIPE_V/M/MTE1/MTE2/MTE3/FIX, not PIPE_S or PIPE_ALL");
    if constexpr (modeId > 2) {
        Fail(call, loc,
             "mode " + std::to_string(modeId) + " is not supported on " + l.soc->name +
                 " (Atlas A2/A3 have modes 0, 1 and 2)");
    }
    if (flagId > 15) {
        Fail(call, loc,
             "flagId " + std::to_string(flagId) +
                 " is outside 0-15 (the hardware would silently use its low 4 bits)");
    }
    if (l.kernel_type == KERNEL_TYPE_AIV_ONLY || l.kernel_type == KERNEL_TYPE_AIC_ONLY) {
        Fail(call, loc,
             std::string("the kernel runs as ") + KernelTypeName(l.kernel_type) +
                 ": the hardware starts no scheduler to deliver cross-core flags (use a "
                 "KERNEL_TYPE_MIX_* type)");
    }
    if ((modeId == 1 || modeId == 2) && l.kernel_type != KERNEL_TYPE_MIX_AIC_1_1 &&
        l.kernel_type != KERNEL_TYPE_MIX_AIC_1_2) {
        Fail(call, loc,
             "mode " + std::to_string(modeId) +
                 " needs KERNEL_TYPE_MIX_AIC_1_1 or _1_2, the kernel runs as " +
                 KernelTypeName(l.kernel_type));
    }
    if (modeId == 1 && c.core_type == kAic)
        Fail(call, loc, "mode 1 synchronises the AIVs of an AI core; an AIC called it");
    if (c.matmul_kfc && flagId < 2 * c.matmul_objects) {
        Fail(call, loc,
             "flagId " + std::to_string(flagId) + " is one the Matmul API uses: with " +
                 std::to_string(c.matmul_objects) + " Matmul object(s) it owns flagIds [0, " +
                 std::to_string(2 * c.matmul_objects - 1) + "] (CrossCoreSetFlag_ISASI.md)");
    }
    if (c.sync_count > 0 && flagId >= 11 && flagId <= 14) {
        Fail(call, loc,
             "flagId " + std::to_string(flagId) +
                 " is one SyncAll uses (11-14), and this kernel calls SyncAll");
    }
    ++c.stats->cross_core_flags;
    std::unique_lock<std::mutex> lock(l.mu);
    if (l.aborted)
        throw Abort{};
    CubeLaunchState& x = *l.cube;
    // The cores that must all have set the flag before it is delivered, and who receives it.
    std::vector<uint32_t> partners;
    std::vector<uint32_t> receivers;
    if (modeId == 0) {
        const uint32_t per = c.core_type == kAic ? l.aic_per_block : l.aiv_per_block;
        for (uint32_t b = 0; b < l.block_dim; ++b) {
            for (uint32_t s = 0; s < per; ++s) {
                partners.push_back(c.core_type == kAic ? AicSlot(l, b) : AivSlot(l, b, s));
            }
        }
        receivers = partners;
    } else if (modeId == 1 || c.core_type == kAiv) {
        for (uint32_t s = 0; s < l.aiv_per_block; ++s)
            partners.push_back(AivSlot(l, c.block, s));
        if (modeId == 1) {
            receivers = partners;
        } else {
            receivers.push_back(AicSlot(l, c.block));
        }
    } else {  // mode 2 from the AIC: every AIV of its AI core may pass one wait
        partners.push_back(c.slot);
        for (uint32_t s = 0; s < l.aiv_per_block; ++s)
            receivers.push_back(AivSlot(l, c.block, s));
    }
    ++x.pending[c.slot][flagId];
    bool all = true;
    for (uint32_t p : partners)
        all = all && x.pending[p][flagId] > 0;
    if (!all)
        return;
    for (uint32_t p : partners)
        --x.pending[p][flagId];
    for (uint32_t r : receivers) {
        if (++x.counter[r][flagId] > 15) {
            lock.unlock();
            Fail(call, loc,
                 "the counter of flagId " + std::to_string(flagId) + " on core slot " +
                     std::to_string(r) + " exceeds 15 (more sets than waits): a hardware error");
        }
    }
    l.cv.notify_all();
}

// On A2/A3 the template parameters have no effect (CrossCoreWaitFlag_ISASI.md): the wait blocks all
// pipes of the core until its counter for flagId is positive.
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId, recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    const char* call = "CrossCoreWaitFlag";
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    if (flagId > 15) {
        Fail(call, loc, "flagId " + std::to_string(flagId) + " is outside 0-15");
    }
    if (l.kernel_type == KERNEL_TYPE_AIV_ONLY || l.kernel_type == KERNEL_TYPE_AIC_ONLY) {
        Fail(call, loc,
             std::string("the kernel runs as ") + KernelTypeName(l.kernel_type) +
                 ": no scheduler delivers cross-core flags, the wait would never end");
    }
    std::unique_lock<std::mutex> lock(l.mu);
    if (l.aborted)
        throw Abort{};
    int32_t& n = l.cube->counter[c.slot][flagId];
    const std::function<bool()> ready = [&n] { return n > 0; };
    BlockUntil(lock, ready,
               "CrossCoreWaitFlag(" + std::to_string(flagId) + ") at " + loc.str() +
                   " waits for a CrossCoreSetFlag",
               call, loc);
    --n;
}

}  // namespace AscendC

// impl/utils/sys_macros.h: `if ASCEND_IS_AIC { ... }` separates the code of the two core types. On
// a device each is compiled for its core; here they are runtime tests of the core running the
// thread.
#define ASCEND_IS_AIC (::recsdk::sim::Core().core_type == ::recsdk::sim::kAic)
#define ASCEND_IS_AIV (::recsdk::sim::Core().core_type == ::recsdk::sim::kAiv)
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)

namespace recsdk::sim {

// KERNEL_TASK_TYPE_DEFAULT: the launcher decides the core layout before the kernel runs (from the
// operator spec), so the kernel's own declaration must agree with it.
inline void CheckKernelType(int32_t declared, SrcLoc loc = {}) {
    CoreState& c = Core();
    if (declared != c.launch->kernel_type) {
        Fail("KERNEL_TASK_TYPE_DEFAULT", loc,
             std::string("the kernel declares ") + KernelTypeName(declared) +
                 " but was launched as " + KernelTypeName(c.launch->kernel_type) +
                 " (op.toml kernel_type / KernelRun::kernel_type)");
    }
}

}  // namespace recsdk::sim

#define KERNEL_TASK_TYPE_DEFAULT(TYPE) ::recsdk::sim::CheckKernelType(static_cast<int32_t>(TYPE))

#endif  // RECSDK_SIM_MIX_H
