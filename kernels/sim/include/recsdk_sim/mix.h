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
#include <deque>
#include <map>
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

// The Cube's memories that the low-level Cube API's queues live in (recsdk_sim/cube_basic.h,
// TPipe::CarveCube): the AI core's L1 (A1/B1/C1), and the AIC's L0A (A2), L0B (B2) and L0C (CO1).
// A core's L1 store (CoreState::tscm) holds the L1 and, after it, L0A, L0B and L0C.
enum class CubeMem : uint8_t { kNone, kL1, kL0A, kL0B, kL0C };

inline CubeMem CubeMemOf(AscendC::TPosition p) {
    using AscendC::TPosition;
    switch (p) {
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1:
            return CubeMem::kL1;
        case TPosition::A2:
            return CubeMem::kL0A;
        case TPosition::B2:
            return CubeMem::kL0B;
        case TPosition::CO1:
            return CubeMem::kL0C;
        default:
            return CubeMem::kNone;
    }
}

inline const char* CubeMemName(CubeMem m) {
    static const char* const names[] = {"?", "L1", "L0A", "L0B", "L0C"};
    return names[static_cast<int>(m)];
}

inline const char* CubePosName(AscendC::TPosition p) {
    using AscendC::TPosition;
    switch (p) {
        case TPosition::A1:
            return "A1";
        case TPosition::B1:
            return "B1";
        case TPosition::C1:
            return "C1";
        case TPosition::A2:
            return "A2";
        case TPosition::B2:
            return "B2";
        case TPosition::CO1:
            return "CO1";
        case TPosition::CO2:
            return "CO2";
        case TPosition::TSCM:
            return "TSCM";
        case TPosition::GM:
            return "GM";
        default:
            return "VECIN/VECOUT/VECCALC";
    }
}

inline uint64_t CubeMemBytes(const SocInfo& s, CubeMem m) {
    switch (m) {
        case CubeMem::kL1:
            return s.l1_bytes;
        case CubeMem::kL0A:
            return s.l0a_bytes;
        case CubeMem::kL0B:
            return s.l0b_bytes;
        case CubeMem::kL0C:
            return s.l0c_bytes;
        default:
            return 0;
    }
}

// Where a memory starts in the core's L1 store.
inline uint64_t CubeMemBase(const SocInfo& s, CubeMem m) {
    uint64_t at = 0;
    for (CubeMem k : {CubeMem::kL1, CubeMem::kL0A, CubeMem::kL0B, CubeMem::kL0C}) {
        if (k == m)
            return at;
        at += CubeMemBytes(s, k);
    }
    return at;
}

inline uint64_t CubeStoreBytes(const SocInfo& s) {
    return CubeMemBase(s, CubeMem::kNone);
}

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

// What a core knows of the others' Cube results in global memory: by writer slot, the newest
// write of that core known to have landed (a vector clock; see XcoreGmAccess below).
using XClock = std::vector<uint32_t>;

// A Cube result in global memory [begin, end): the core whose call wrote it, that core's write
// number, the SyncAll generation then, the call, and whether the caller has yet to wait for it
// (asynchronous IterateAll before WaitIterateAll).
struct XWrite {
    uintptr_t end = 0;
    uint32_t writer = 0;
    uint32_t seq = 0;
    uint64_t generation = 0;
    std::string site;
    bool pending = false;
};

struct CubeLaunchState {
    explicit CubeLaunchState(uint32_t slots, uint32_t aics)
        : counter(slots),
          pending(slots),
          active(slots, nullptr),
          cubes(aics),
          know(slots, XClock(slots, 0)),
          seq(slots, 0),
          setSnaps(slots),
          inbox(slots) {}
    std::vector<std::array<int32_t, 16>> counter;  // by slot: the counter CrossCoreWaitFlag reads
    std::vector<std::array<int32_t, 16>> pending;  // by slot: sets still waiting for the partners
    std::vector<const void*> active;               // by slot: the Matmul object in use until End()
    std::vector<CubeCore> cubes;                   // by AIC
    // Cross-core ordering of Cube results in global memory, guarded by xmu (taken after
    // LaunchState::mu where both are held).
    std::mutex xmu;
    std::map<uintptr_t, XWrite> writes;  // by first byte, disjoint
    std::vector<XClock> know;            // by slot
    std::vector<uint32_t> seq;           // by slot: Cube results its calls wrote
    // The clocks travelling with cross-core flags: by slot and flagId, those of the sets still
    // waiting for their partners, and those delivered and not yet consumed by a wait.
    std::vector<std::array<std::deque<XClock>, 16>> setSnaps;
    std::vector<std::array<std::deque<XClock>, 16>> inbox;
};

// A completed SyncAll barrier: afterwards each party knows what any party knew before it (the AIVs
// for SyncAll<true>, every core for SyncAll<false>). Called by the core completing the barrier,
// with LaunchState::mu held.
inline void XcoreSyncAllMerge(LaunchState& l, bool aiv_only) {
    CubeLaunchState& x = *l.cube;
    std::lock_guard<std::mutex> hold(x.xmu);
    const size_t first = aiv_only ? size_t(l.block_dim) * l.aic_per_block : 0;
    XClock merged(x.know.size(), 0);
    for (size_t s = first; s < x.know.size(); ++s)
        for (size_t w = 0; w < merged.size(); ++w)
            merged[w] = std::max(merged[w], x.know[s][w]);
    for (size_t s = first; s < x.know.size(); ++s)
        x.know[s] = merged;
}

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

// ---- Cross-core ordering of Cube results in global memory ----------------------------------
// A Cube result (Matmul IterateAll / GetTensorC into GM, Fixpipe L0C -> GM) lands in global
// memory through the AIC's FIX pipe; another core that reads it needs an ordering between the two
// cores, or it may read the old contents: CrossCoreSetFlag after the write and CrossCoreWaitFlag
// before the read (CrossCoreSetFlag_ISASI.md: the set waits for the named pipe's earlier
// instructions), or a SyncAll both pass (SyncAll.md), or, for the core whose synchronous Matmul
// call wrote it, the call's return (the Matmul client waits for the AIC's message). An
// asynchronous IterateAll<false>(..., waitIterateAll = true) is complete only at WaitIterateAll
// (WaitIterateAll.md). Model: a vector clock per core (XClock: the newest Cube write of each core
// known to have landed), carried by the cross-core flags from set to wait; a read of a recorded
// Cube result is ordered when the reader's clock covers it, or when a SyncAll completed after the
// write (a core cannot write while it waits in SyncAll, so the writer met the reader there after
// the write). Writes are recorded by row (a tile of C is rows apart in a wider matrix), and
// overwritten by later writes to the same bytes. The Cube's own operand reads are the API's
// (CubeGmScope), not checked.
inline thread_local int tl_cube_gm = 0;

// " (byte N of 'tensor')" for an address in the tensors passed to the kernel.
inline std::string DescribeGm(const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& r : Core().launch->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (a >= b && a < b + r.bytes)
            return " (byte " + std::to_string(a - b) + " of '" + r.name + "')";
    }
    return "";
}

struct CubeGmScope {
    CubeGmScope() { ++tl_cube_gm; }
    ~CubeGmScope() { --tl_cube_gm; }
    CubeGmScope(const CubeGmScope&) = delete;
    CubeGmScope& operator=(const CubeGmScope&) = delete;
};

inline void XMerge(XClock& into, const XClock& from) {
    for (size_t i = 0; i < into.size() && i < from.size(); ++i)
        into[i] = into[i] < from[i] ? from[i] : into[i];
}

// Removes [a, b) from the records (under xmu).
inline void XCarve(std::map<uintptr_t, XWrite>& w, uintptr_t a, uintptr_t b) {
    auto it = w.upper_bound(a);
    if (it != w.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > a) {
            if (prev->second.end > b) {  // [a, b) inside one record: split it
                XWrite right = prev->second;
                w.emplace(b, right);
            }
            prev->second.end = a;
        }
    }
    it = w.lower_bound(a);
    while (it != w.end() && it->first < b) {
        if (it->second.end > b) {
            XWrite rest = it->second;
            w.emplace(b, rest);
            w.erase(it);
            break;
        }
        it = w.erase(it);
    }
}

inline void XcoreGmAccess(const void* p, uint64_t bytes, bool write, const char* call,
                          const SrcLoc& loc) {
    if (tl_cube_gm > 0)
        return;
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    CubeLaunchState& x = *l.cube;
    const auto a = reinterpret_cast<uintptr_t>(p);
    const uintptr_t b = a + bytes;
    XWrite hit;
    uintptr_t hitBegin = 0;
    bool found = false;
    {
        std::lock_guard<std::mutex> hold(x.xmu);
        if (x.writes.empty())
            return;
        if (write) {  // the bytes are this core's now (a race with the Cube's write is not checked)
            XCarve(x.writes, a, b);
            return;
        }
        auto it = x.writes.upper_bound(a);
        if (it != x.writes.begin() && std::prev(it)->second.end > a)
            --it;
        const XClock& k = x.know[c.slot];
        for (; it != x.writes.end() && it->first < b; ++it) {
            const XWrite& w = it->second;
            if (w.pending || k[w.writer] < w.seq) {
                hit = w;
                hitBegin = it->first;
                found = true;
                break;
            }
        }
    }
    if (!found)
        return;
    uint64_t generation = 0;
    {
        std::lock_guard<std::mutex> hold(l.mu);
        generation = l.generation;
    }
    const std::string what = "global memory" + DescribeGm(reinterpret_cast<const void*>(hitBegin));
    if (hit.pending) {
        Fail(call, loc,
             "reads " + what + " that the asynchronous " + hit.site +
                 " is still writing: IterateAll<false>(..., waitIterateAll = true) has finished "
                 "only after WaitIterateAll (IterateAll.md, WaitIterateAll.md), and with "
                 "waitIterateAll = false the caller must wait by its own means (a later "
                 "synchronous IterateAll or a WaitIterateAll of the same object orders it); the "
                 "read may see the old contents");
    }
    // A SyncAll completed since the write orders it; one of the AIVs only (SyncAll<true>) does not
    // involve an AIC that wrote it (Fixpipe, a Cube-driven Matmul): that write is ordered only if
    // an AIV knew of it at the barrier (XcoreSyncAllMerge, through the reader's clock above).
    const bool aic_writer = hit.writer < l.block_dim * l.aic_per_block;
    if (aic_writer ? generation / kSyncAllCoresStep > hit.generation / kSyncAllCoresStep
                   : generation > hit.generation)
        return;
    Fail(call, loc,
         "reads " + what + " that " + hit.site +
             " wrote as a Cube result (through the AIC's FIX pipe), and nothing orders that write "
             "before this read on another core: set a flag after the write and wait for it "
             "before the read (CrossCoreSetFlag<mode, PIPE_FIX> / CrossCoreWaitFlag, "
             "CrossCoreSetFlag_ISASI.md), or meet in SyncAll (SyncAll<false> when an AIC wrote "
             "it: SyncAll<true> meets the AIVs only); without it the core may read the "
             "old contents");
}

// Records a Cube result in global memory: `rows` rows of `rowBytes` bytes, `ld` bytes apart,
// written by the calling core's call (known to it at once unless `pending`). Returns the write's
// number.
inline uint32_t XcoreCubeWrote(const void* p, int64_t rows, uint64_t rowBytes, uint64_t ld,
                               bool pending, const char* call, const SrcLoc& loc) {
    CoreState& c = Core();
    LaunchState& l = *c.launch;
    CubeLaunchState& x = *l.cube;
    if (rows <= 0 || rowBytes == 0)
        return 0;
    uint64_t generation = 0;
    {
        std::lock_guard<std::mutex> hold(l.mu);
        generation = l.generation;
    }
    std::lock_guard<std::mutex> hold(x.xmu);
    XWrite w;
    w.writer = c.slot;
    w.seq = ++x.seq[c.slot];
    w.generation = generation;
    w.site = std::string(call) + " at " + loc.str() + " (" + CoreName(c) + ")";
    w.pending = pending;
    const auto base = reinterpret_cast<uintptr_t>(p);
    if (ld == rowBytes) {
        rowBytes *= uint64_t(rows);
        rows = 1;
    }
    for (int64_t r = 0; r < rows; ++r) {
        const uintptr_t a = base + uintptr_t(r) * ld;
        XCarve(x.writes, a, a + rowBytes);
        w.end = a + rowBytes;
        x.writes.emplace(a, w);
    }
    if (!pending)
        x.know[c.slot][c.slot] = w.seq;
    l.gm_hook.store(&XcoreGmAccess, std::memory_order_release);
    return w.seq;
}

// WaitIterateAll: the asynchronous write `seq` of the calling core has landed.
inline void XcoreCubeLanded(uint32_t seq) {
    CoreState& c = Core();
    CubeLaunchState& x = *c.launch->cube;
    std::lock_guard<std::mutex> hold(x.xmu);
    for (auto& [begin, w] : x.writes) {
        if (w.writer == c.slot && w.seq == seq)
            w.pending = false;
    }
    if (x.know[c.slot][c.slot] < seq)
        x.know[c.slot][c.slot] = seq;
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

// SyncAll.md, the software form: every AIV marks its slot of gmWorkspace and polls the others'.
// The workspaces are checked against the page's sizes (GetBlockNum() * 32 bytes each) and the
// barrier is SyncAll<true>'s among the launch's AIVs; usedCores (0: all) must count them all,
// since a barrier among a subset of the AIVs is not emulated. On an AIC it returns, as
// dav_c220's implementation does (the page: pure vector operators only).
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace,
                    const LocalTensor<int32_t>& ubWorkspace, const int32_t usedCores = 0,
                    recsdk::sim::SrcLoc loc = {}) {
    using namespace recsdk::sim;
    static_assert(isAIVOnly, "SyncAll's software form synchronises AIVs only (isAIVOnly = true)");
    CoreState& c = Core();
    if (c.core_type == kAic)
        return;
    const uint64_t need = uint64_t(GetBlockNum()) * 32;
    if (uint64_t(gmWorkspace.GetSize()) * sizeof(int32_t) < need) {
        Fail("SyncAll", loc,
             "gmWorkspace holds " + std::to_string(gmWorkspace.GetSize() * sizeof(int32_t)) +
                 " bytes; the software SyncAll needs GetBlockNum() * 32 = " + std::to_string(need));
    }
    ubWorkspace.Validate("SyncAll", loc);
    ubWorkspace.InUb("SyncAll", loc);
    ubWorkspace.CheckSpan(need / sizeof(int32_t), "SyncAll", loc);
    const int64_t aivs = int64_t(c.launch->block_dim) * GetTaskRatio();
    if (usedCores < 0 || usedCores > aivs) {
        Fail("SyncAll", loc,
             "usedCores " + std::to_string(usedCores) + " is outside [0, " + std::to_string(aivs) +
                 "] (GetBlockNum() * GetTaskRatio())");
    }
    if (usedCores != 0 && usedCores != aivs) {
        Fail("SyncAll", loc,
             "a software SyncAll among " + std::to_string(usedCores) + " of the " +
                 std::to_string(aivs) + " AIVs is not emulated (only all of them)");
    }
    SyncAll<true>(loc);
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

// kernel_operator_sys_var_intf.h: the 32-byte data block.
inline constexpr int16_t GetDataBlockSizeInBytes() {
    return 32;
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
    std::lock_guard<std::mutex> xhold(x.xmu);
    x.setSnaps[c.slot][flagId].push_back(x.know[c.slot]);
    bool all = true;
    for (uint32_t p : partners)
        all = all && x.pending[p][flagId] > 0;
    if (!all)
        return;
    XClock carried(x.know.size(), 0);
    for (uint32_t p : partners) {
        --x.pending[p][flagId];
        XMerge(carried, x.setSnaps[p][flagId].front());
        x.setSnaps[p][flagId].pop_front();
    }
    for (uint32_t r : receivers)
        x.inbox[r][flagId].push_back(carried);
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
    // What the setting cores knew of Cube results in global memory is now known here.
    CubeLaunchState& x = *l.cube;
    std::lock_guard<std::mutex> xhold(x.xmu);
    auto& box = x.inbox[c.slot][flagId];
    if (!box.empty()) {
        XMerge(x.know[c.slot], box.front());
        box.pop_front();
    }
}

}  // namespace AscendC

// CANN declares the system-workspace pointer in the global namespace
// (kernel_operator_swap_mem_intf.h); AscendC:: keeps it for kernels that qualify it.
using AscendC::GetSysWorkSpacePtr;

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

// The kernel-launch qualifiers of the official samples (`__global__ __mix__(1, 2) void k(...,
// __kfc_workspace__ __gm__ uint8_t* workspace, ...)`): the emulation takes the core layout from the
// launch (KernelRun::kernel_type), so they mark nothing here.
#ifndef __mix__
#define __mix__(aic, aiv)
#endif
#ifndef __kfc_workspace__
#define __kfc_workspace__
#endif

#endif  // RECSDK_SIM_MIX_H
