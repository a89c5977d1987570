// The machine the emulated kernels run on: SoC table, per-launch state (global-memory tensors,
// barrier, tiling key, counters) and per-core state (unified buffer arena, atomic mode, queues).
//
// Every check that fires throws CheckError with the kernel, the core and the API call named;
// the launcher turns the first one into the report's message. Other cores stop at their next
// API call (Abort), so a failing launch ends quickly and deterministically reports one error.
//
// The state that must exist once per process (the current core of each thread, the launch
// itself, the core threads) lives in the sim runtime library, libmxrec_sim_runtime.so
// (kernels/sim/runtime/), which every operator library links, as every kernel binary on a
// device shares one driver runtime. Were it compiled into each operator library, the dynamic
// linker would bind the vague-linkage symbols of one library (std::thread's state for the
// launch lambda, the thread-local current core) to another's copy, and a kernel would find no
// current core once two operator libraries are loaded into one process.
#ifndef RECSDK_SIM_RUNTIME_H
#define RECSDK_SIM_RUNTIME_H

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "recsdk_sim/api.h"
#include "recsdk_sim/types.h"

// Symbols of the sim runtime library: everything else in an operator library stays private to
// it (kernels/sim/oplib.map exports only its recsdk_sim_* C entry points).
#define RECSDK_SIM_RUNTIME_API __attribute__((visibility("default")))

namespace recsdk::sim {

// ---- SoC table ------------------------------------------------------------------------------
// The emulated platform: core counts, on-chip buffers and peak rates of each product. On hardware
// the tiling function reads the sizes from the platform (PlatformAscendC::GetCoreNumAiv/Aic,
// GetCoreMemSize); here they are the emulated platform. This is the one table every capacity
// check and the modelled time read.
//
// Sources, column by column (docs = mirror-cann/asc-devkit 9.1.0, docs/api/ and docs/guide/):
// - vector_cores, ub_bytes, sys_workspace, has_datacopy_pad, atomic_add_bf16, que_events: the
//   AscendC API reference's product-support tables (DataCopyPad_GMToUB.md "Atlas 推理系列产品AI
//   Core：不支持", SetAtomicAdd.md data types, TQue简介.md "TQue Buffer限制").
// - cube_cores: arch 2201 (Atlas A2/A3) splits each AI core into one AIC and two AIV
//   (NPU架构版本2201.md; GetTaskRatio.md: 2 on an AIV of a KERNEL_TYPE_MIX_AIC_1_2 launch), so the
//   AIC count is half the AIV count. 0: the Cube unit is not emulated on that SoC (Ascend310P's AI
//   cores are coupled, not modelled).
// - l1/l0a/l0b/l0c/bt bytes (per AIC): asc-devkit impl/adv_api/tiling/conv/conv3d_tiling_util.h
//   (L0A 65536, L0B 65536, L0C 131072),
//   impl/adv_api/tiling/conv_backprop/conv3d_bp_input_tiling.cpp (L1 512 KiB;
//   GetMatmulApiTiling.md's example passes 524288), impl/adv_api/detail/matmul/resource/
//   bias_buffer/c2_buffer/c2_buffer.h (BIAS_TABLE_SIZE 1024 outside arch 3510).
// - cube MACs per cycle per AIC: Cube指令理论性能汇总.md table 1, cube_m x cube_n x cube_k:
//   half/bfloat16 16x16x16 = 4096, float 16x16x4 = 1024, int8 16x16x32 = 8192.
// - vector bytes per cycle per AIV: Vector指令理论性能汇总.md, Add/Mul/Max on half 128 and on float
//   64 elements per cycle = 256 bytes. Exp, Ln, Sqrt and Div issue at 32 elements per cycle;
//   the timeline model charges them so (model.h, kSlowVectorElementsPerCycle).
// - clock_hz: 1.8 GHz for arch 2201 (Atlas A2/A3): asc-devkit tests/perf/mmad_perf/
//   generate_roofline.py and fixpipe_perf/generate_roofline.py ("硬件规格（2201 主频 1800 MHz）",
//   freq 1800 in every dav-2201 scenario). Ascend310P3: 1.0 GHz, a placeholder.
// - hbm_bytes_per_s: 1.6 TB/s for Atlas A2/A3, docs/zh/guide/.../内存访问/L2-Cache切分.md
//   ("而GM的带宽约为1.6TB/s"; GetCoreMemBw reads the real value on a device). Ascend310P3:
//   204.8 GB/s LPDDR4X, an estimate (no cube kernel runs there).
// No per-core DMA limit is documented; the model (recsdk_sim/model.h) gives each core an equal
// share of hbm_bytes_per_s over vector_cores, as if every vector core streamed at once.
struct SocInfo {
    const char* name;
    const char* compute_unit;  // ASCEND_COMPUTE_UNIT / OpDef AddConfig name
    uint32_t vector_cores;
    uint32_t ub_bytes;       // unified buffer per vector core
    uint64_t sys_workspace;  // GetLibApiWorkSpaceSize(): system part in front of the user workspace
    bool has_datacopy_pad;
    bool atomic_add_bf16;  // SetAtomicAdd<bfloat16_t> / <int8_t>
    uint32_t que_events;   // tensors concurrently allocated per TPosition (eventID count)
    uint32_t cube_cores;   // AIC; 0: no Cube emulation on this SoC
    uint32_t l1_bytes;     // per AIC
    uint32_t l0a_bytes;
    uint32_t l0b_bytes;
    uint32_t l0c_bytes;
    uint32_t bt_bytes;                // BiasTable
    uint32_t cube_macs_b16;           // MACs per cycle per AIC, half/bfloat16 inputs
    uint32_t cube_macs_f32;           // float inputs
    uint32_t cube_macs_b8;            // int8 inputs
    uint32_t vector_bytes_per_cycle;  // per AIV
    double clock_hz;                  // see above
    double hbm_bytes_per_s;           // see above
};

inline const SocInfo* SocTable(size_t* count) {
    constexpr uint32_t KiB = 1024;
    // clang-format off: one SoC a row, aligned as the header comment reads
    // The Atlas A2/A3 training parts share everything but their core counts (AIV, AIC).
    const auto atlas_a2 = [](const char* name, const char* unit, uint32_t aiv, uint32_t aic) {
        return SocInfo{name, unit, aiv, 192 * KiB, 16u << 20, true, true, 8,
                       aic, 512 * KiB, 64 * KiB, 64 * KiB, 128 * KiB, 1 * KiB,
                       4096, 1024, 8192, 256, 1.8e9, 1.6e12};
    };
    static const SocInfo table[] = {
        atlas_a2("Ascend910B1", "ascend910b", 48, 24),
        atlas_a2("Ascend910B2", "ascend910b", 48, 24),
        atlas_a2("Ascend910B3", "ascend910b", 40, 20),
        atlas_a2("Ascend910B4", "ascend910b", 40, 20),
        atlas_a2("Ascend910_9391", "ascend910_93", 48, 24),
        atlas_a2("Ascend910_9392", "ascend910_93", 48, 24),
        // name, unit, AIV, UB, sys ws, pad, bf16 atomic, events,
        //   AIC, L1, L0A, L0B, L0C, BT, MACs b16/f32/b8, vector B/cycle, clock, HBM B/s
        {"Ascend310P3", "ascend310p", 8, 256 * KiB, 2u << 20, false, false, 8,
         0, 0, 0, 0, 0, 0, 0, 0, 0, 256, 1.0e9, 204.8e9},
    };
    // clang-format on
    *count = sizeof(table) / sizeof(table[0]);
    return table;
}

inline const SocInfo* FindSoc(const char* name) {
    size_t n = 0;
    const SocInfo* t = SocTable(&n);
    if (name == nullptr || *name == '\0')
        return &t[0];
    for (size_t i = 0; i < n; ++i) {
        if (std::strcmp(t[i].name, name) == 0)
            return &t[i];
    }
    return nullptr;
}

// ---- errors ---------------------------------------------------------------------------------
struct SrcLoc {
    const char* file;
    int line;
    // Default arguments are evaluated at the call site, so an API taking `SrcLoc loc = {}` learns
    // the kernel line that called it.
    SrcLoc(const char* f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
    std::string str() const {
        const char* base = std::strrchr(file, '/');
        const std::string name = base ? base + 1 : file;
        return line > 0 ? name + ":" + std::to_string(line) : name;
    }
};

// Thrown in an operator library and caught by the runtime's core threads: the key functions are
// defined in the runtime library, so each exception type has one type_info in the process.
class RECSDK_SIM_RUNTIME_API CheckError : public std::exception {
public:
    explicit CheckError(std::string m, int32_t status = RECSDK_SIM_CHECK_FAILED)
        : msg_(std::move(m)), status_(status) {}
    ~CheckError() override;
    const char* what() const noexcept override { return msg_.c_str(); }
    int32_t status() const { return status_; }

private:
    std::string msg_;
    int32_t status_;
};

// Thrown in cores other than the failing one; never reported.
struct RECSDK_SIM_RUNTIME_API Abort {
    virtual ~Abort();
};

// ---- launch and core state --------------------------------------------------------------------
struct GmRegion {
    const uint8_t* base;
    uint64_t bytes;
    bool writable;
    std::string name;
    bool workspace = false;  // the user workspace (its traffic is also counted apart)
};

struct QueueState;
// recsdk_sim/hazard.h: a core's pipe clocks and flags, created (and freed) by the operator
// library that runs the kernel, so the runtime never needs its layout.
struct HazardState;
using HazardPtr = std::unique_ptr<HazardState, void (*)(HazardState*)>;
struct CubeLaunchState;  // recsdk_sim/cube.h: per-AIC buffers, cross-core flags

// Core types of a launch (RecsdkSimCoreStats::core_type).
constexpr uint8_t kAiv = 0;
constexpr uint8_t kAic = 1;

// A core blocked in a cross-core wait (SyncAll, CrossCoreWaitFlag, ...): what it waits for, and
// whether that has happened. See BlockUntil.
struct Waiter {
    std::string who;  // CoreName of the waiting core
    const std::function<bool()>* ready;
    std::string what;
};

// What a launch is: the kernel, the SoC, its grid and tiling key, the global memory it may touch.
// The launcher fills it (KernelRun, launch.h) and the running launch keeps it (LaunchState).
struct LaunchDesc {
    std::string kernel;
    const SocInfo* soc = nullptr;
    uint32_t block_dim = 1;
    uint64_t tiling_key = 0;
    uint64_t sys_workspace = 0;
    std::vector<GmRegion> regions;
    // The kernel was compiled with the compiler's automatic synchronisation (--cce-auto-sync,
    // the default): the pipe-hazard checker does not flag what it synchronises (hazard.h). The
    // environment variable RECSDK_SIM_CCE_AUTO_SYNC=off turns it off for every launch.
    bool cce_auto_sync = true;
    // KERNEL_TYPE_* (recsdk_sim/mix.h): with cube cores, block_dim counts AI cores and each runs
    // its AIC and AIVs as threads (KERNEL_TYPE_MIX_AIC_1_2: 1 + 2). AIV-only launches: block_dim
    // AIVs.
    int32_t kernel_type = 0;
    uint8_t* sys_workspace_ptr = nullptr;  // what GetSysWorkSpacePtr() returns
};

struct LaunchState : LaunchDesc {
    std::vector<RecsdkSimCoreStats> stats;  // by slot: AICs first, then AIVs by GetBlockIdx
    // How many AIC and AIV each of the block_dim logical cores has (from kernel_type).
    uint32_t aic_per_block = 0;
    uint32_t aiv_per_block = 1;
    uint32_t cores_total = 1;  // threads: block_dim * (aic_per_block + aiv_per_block)
    uint32_t finished_aic = 0;
    std::shared_ptr<CubeLaunchState> cube;
    std::vector<Waiter*> waiters;  // cores in BlockUntil (under mu)
    bool sync_aiv_only = true;     // the SyncAll barrier being filled counts AIVs only
    // Cross-core ordering of global memory a Cube wrote (recsdk_sim/mix.h XcoreGmAccess): set by
    // the first such write, then CheckGm hands it every access of a core.
    std::atomic<void (*)(const void*, uint64_t, bool, const char*, const SrcLoc&)> gm_hook{nullptr};

    // SyncAll barrier and failure propagation.
    std::mutex mu;
    std::condition_variable cv;
    uint32_t waiting = 0;
    std::string waiting_at;  // source location of the SyncAll the waiting cores are in
    uint64_t generation = 0;
    uint32_t finished = 0;
    bool aborted = false;
    bool has_error = false;
    int32_t status = RECSDK_SIM_OK;
    std::string error;

    void Record(int32_t st, const std::string& msg) {
        std::lock_guard<std::mutex> lock(mu);
        if (!has_error) {
            has_error = true;
            status = st;
            error = msg;
        }
        aborted = true;
        cv.notify_all();
    }
};

// The vector unit's mask registers (SetVectorMask, SetMaskCount/SetMaskNorm; vector_masked.h):
// reset to normal mode with every lane on.
struct MaskState {
    bool counter = false;
    uint64_t hi = ~uint64_t{0};
    uint64_t lo = ~uint64_t{0};
};

// The CmpMask register (Compare into the register, SetCmpMask/GetCmpMask; vector_cmpsel.h).
struct CmpMaskState {
    uint8_t bytes[16] = {};
};

// The move-pad register SetPadValue writes (datacopy.h): DataCopyPad with isPad = false pads
// with it once set; unset, the padding is undefined.
struct PadRegister {
    bool set = false;
    uint8_t bits[8] = {};
};

// The DEQSCALE register (SetDeqScale.md, vector_deq.h): what the last SetDeqScale put there.
struct DeqRegister {
    enum Kind : uint8_t { kUnset = 0, kHalfScale, kScaleOffsetSign, kVectorAddress };
    Kind kind = kUnset;
    uint64_t bits = 0;  // kHalfScale: the half in bits 0-15; kScaleOffsetSign: the packed word
};

struct CoreState {
    LaunchState* launch = nullptr;
    uint32_t idx = 0;  // GetBlockIdx(): on an AIV of a mixed launch block * ratio + sub-block
    uint8_t core_type = kAiv;
    uint32_t block = 0;           // logical AI core (the AIC index in a mixed launch)
    uint32_t sub_idx = 0;         // GetSubBlockIdx()
    uint32_t slot = 0;            // index into LaunchState::stats and the report's cores[]
    uint32_t matmul_objects = 0;  // REGIST_MATMUL_OBJ registrations (at most 4)
    bool matmul_kfc = false;  // they are served by the AIC (MIX mode): flagIds [0, 2N-1] are taken
    bool matmul_cube_only = false;  // REGIST_MATMUL_OBJ saw ASCENDC_CUBE_ONLY
    RecsdkSimCoreStats* stats = nullptr;
    uint8_t* ub = nullptr;
    uint32_t ub_size = 0;
    uint32_t ub_top = 0;   // bump allocator shared by the core's TPipe objects
    uint32_t buffers = 0;  // InitBuffer blocks handed out (the API allows 64 per kernel)
    // TSCM buffers (pipe.h): this AIV's part of its AI core's L1, allocated on first use.
    std::vector<uint8_t> tscm_store;
    uint8_t* tscm = nullptr;  // 64-byte aligned in tscm_store, as the unified buffer is
    uint32_t tscm_top = 0;
    int atomic_mode = 0;  // 0 none, 1 add
    const char* atomic_type = nullptr;
    uint32_t sync_count = 0;
    std::vector<std::shared_ptr<QueueState>> queues;
    HazardPtr hazard{nullptr, nullptr};  // pipe clocks, flags, event ids (hazard.h)
    std::string leak;                    // set when a TPipe goes away with tensors still held
    void* pipe = nullptr;                // the TPipe GetTPipePtr() returns
    // The ReduceSum register (GetReduceRepeatSumSpr): the type of the last ReduceSum count form
    // (null: nothing readable) and its result, exact in float for half and float.
    const char* reduce_sum_type = nullptr;
    float reduce_sum_value = 0.0f;
    // The registers a kernel sets and later instructions read. They belong to the core's state of
    // one launch: a launch starts with them reset, whatever the thread ran before (keeping them
    // per thread let a kernel start with the mask the previous launch on that thread left).
    MaskState mask;
    CmpMaskState cmp_mask;
    PadRegister pad;
    DeqRegister deq;
    // The count of elements the last GatherMask kept (GetGatherMaskRemainCount); -1: none ran.
    int64_t gather_mask_kept = -1;
};

// The core the calling thread emulates, set by the runtime for the duration of a kernel body.
// Defined in the runtime library: one per thread of the process, whichever library asks.
extern RECSDK_SIM_RUNTIME_API thread_local CoreState* g_core;

// The layout of the structures operator libraries and the runtime share. An operator library
// built against other headers than the runtime it finds is refused at launch instead of
// misreading the runtime's structures (see LaunchOp).
constexpr uint64_t kRuntimeLayout = (uint64_t{7} << 56) ^ (uint64_t{sizeof(LaunchState)} << 40) ^
                                    (uint64_t{sizeof(CoreState)} << 24) ^
                                    (uint64_t{sizeof(GmRegion)} << 12) ^
                                    uint64_t { sizeof(RecsdkSimReport) };

inline CoreState& Core() {
    if (g_core == nullptr) {
        throw CheckError("AscendC API called outside a kernel launch", RECSDK_SIM_INTERNAL);
    }
    if (g_core->launch->aborted)
        throw Abort{};
    return *g_core;
}

// "core 3 of 48"; in a launch with cube cores "AIC core 1 of 24" or "AIV core 3 of 48 (AI core 1,
// sub-block 1)", GetBlockIdx() being the first number.
inline std::string CoreName(const CoreState& c) {
    const LaunchState& l = *c.launch;
    if (l.aic_per_block == 0)
        return "core " + std::to_string(c.idx) + " of " + std::to_string(l.block_dim);
    if (c.core_type == kAic)
        return "AIC core " + std::to_string(c.idx) + " of " + std::to_string(l.block_dim);
    return "AIV core " + std::to_string(c.idx) + " of " +
           std::to_string(l.block_dim * l.aiv_per_block) + " (AI core " + std::to_string(c.block) +
           ", sub-block " + std::to_string(c.sub_idx) + ")";
}

inline std::string Where(const char* call, const SrcLoc& loc) {
    CoreState* c = g_core;
    std::string s = "kernel '" + (c ? c->launch->kernel : std::string("?")) + "'";
    if (c)
        s += ", " + CoreName(*c);
    s += ", ";
    s += call;
    s += (loc.line > 0 ? " at " : " ") + loc.str();
    return s;
}

[[noreturn]] inline void Fail(const char* call, const SrcLoc& loc, const std::string& detail) {
    throw CheckError(Where(call, loc) + ": " + detail);
}

inline RecsdkSimCoreStats& Stats() {
    return *Core().stats;
}

// ---- cross-core waits ---------------------------------------------------------------------------
// Blocks the calling core (holding l.mu through `lock`) until ready() holds. The device has no
// timeout: a core that waits while every other core of the launch has returned or waits as well,
// none of them able to go on, hangs it. That is reported here as a deadlock, naming what each core
// waits for, instead of hanging the host. Whoever changes what a waiter waits for notifies l.cv.
inline void BlockUntil(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready,
                       const std::string& what, const char* call, const SrcLoc& loc) {
    CoreState& c = *g_core;
    LaunchState& l = *c.launch;
    if (ready())
        return;
    Waiter me{CoreName(c), &ready, what};
    l.waiters.push_back(&me);
    auto stuck = [&l] {
        if (l.finished + l.waiters.size() < l.cores_total)
            return false;
        for (const Waiter* w : l.waiters) {
            if ((*w->ready)())
                return false;
        }
        return true;
    };
    l.cv.notify_all();  // the others re-check: this core may have been the last one running
    l.cv.wait(lock, [&] { return ready() || l.aborted || stuck(); });
    std::string others;
    for (const Waiter* w : l.waiters) {
        if (w != &me)
            others += (others.empty() ? "" : "; ") + w->who + ": " + w->what;
    }
    l.waiters.erase(std::find(l.waiters.begin(), l.waiters.end(), &me));
    if (ready())
        return;
    if (l.aborted)
        throw Abort{};
    const uint32_t done = l.finished;
    lock.unlock();
    Fail(call, loc,
         what + ", but no core can make it happen: " + std::to_string(done) +
             " core(s) returned from the kernel" +
             (others.empty() ? std::string() : ", the others wait too (" + others + ")") +
             "; the device would hang (deadlock)");
}

// ---- global memory ---------------------------------------------------------------------------
inline std::string DescribeAddress(const void* p) {
    const LaunchState* l = g_core ? g_core->launch : nullptr;
    if (l == nullptr)
        return "";
    const auto a = reinterpret_cast<uintptr_t>(p);
    const GmRegion* best = nullptr;
    uint64_t best_dist = UINT64_MAX;
    for (const auto& r : l->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        const uint64_t dist = a < b ? b - a : (a >= b + r.bytes ? a - (b + r.bytes) : 0);
        if (dist < best_dist) {
            best_dist = dist;
            best = &r;
        }
    }
    if (best == nullptr)
        return " (no tensors were passed to the kernel)";
    const auto b = reinterpret_cast<intptr_t>(best->base);
    const intptr_t off = static_cast<intptr_t>(a) - b;
    if (off >= 0 && static_cast<uint64_t>(off) < best->bytes) {
        return " (it starts at byte " + std::to_string(off) + " of '" + best->name + "', " +
               std::to_string(best->bytes) + " bytes, and runs past its end)";
    }
    return " (nearest tensor '" + best->name + "' of " + std::to_string(best->bytes) +
           " bytes; offset " + std::to_string(off) + ")";
}

// Every global-memory access goes through here: the bytes must lie inside one tensor that was
// passed to the kernel (inputs, outputs, workspace, tiling), and writes need a writable one.
inline void CheckGm(const void* p, uint64_t bytes, bool write, const char* call,
                    const SrcLoc& loc) {
    if (bytes == 0)
        return;
    const LaunchState* l = Core().launch;
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& r : l->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (a >= b && a + bytes <= b + r.bytes) {
            if (write && !r.writable) {
                Fail(call, loc,
                     "global-memory write of " + std::to_string(bytes) +
                         " bytes into read-only input '" + r.name + "' at offset " +
                         std::to_string(a - b));
            }
            if (auto hook = l->gm_hook.load(std::memory_order_acquire))
                hook(p, bytes, write, call, loc);
            return;
        }
    }
    Fail(call, loc,
         std::string("global-memory ") + (write ? "write" : "read") + " of " +
             std::to_string(bytes) + " bytes outside the tensors passed to the kernel" +
             DescribeAddress(p));
}

// Global-memory traffic into a core's counters: all of it in gm_read/write_bytes, and what falls in
// the user workspace in gm_workspace_read/write_bytes as well, so that a benchmark can tell the
// HBM traffic of inputs and outputs from a kernel's scratch round trips (L2 on a device).
inline bool InWorkspace(const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& r : Core().launch->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (r.workspace && a >= b && a < b + r.bytes)
            return true;
    }
    return false;
}

inline void CountGmRead(RecsdkSimCoreStats& s, const void* p, uint64_t bytes) {
    s.gm_read_bytes += bytes;
    if (InWorkspace(p))
        s.gm_workspace_read_bytes += bytes;
}

inline void CountGmWrite(RecsdkSimCoreStats& s, const void* p, uint64_t bytes) {
    s.gm_write_bytes += bytes;
    if (InWorkspace(p))
        s.gm_workspace_write_bytes += bytes;
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_RUNTIME_H
