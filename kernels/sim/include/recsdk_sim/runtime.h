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
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
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
// Figures for the vector cores (AIV) of each product. On hardware the tiling function reads
// them from the platform (PlatformAscendC::GetCoreNumAiv / GetCoreMemSize(UB)); here they are
// the emulated platform. Feature flags follow the AscendC API reference's product-support
// tables (docs/api/SIMD-API/基础API/...: DataCopyPad_GMToUB.md "Atlas 推理系列产品AI Core：不支持",
// SetAtomicAdd.md data types, TQue简介.md "TQue Buffer限制").
struct SocInfo {
    const char* name;
    const char* compute_unit;   // ASCEND_COMPUTE_UNIT / OpDef AddConfig name
    uint32_t vector_cores;
    uint32_t ub_bytes;          // unified buffer per vector core
    uint64_t sys_workspace;     // GetLibApiWorkSpaceSize(): system part in front of the user workspace
    bool has_datacopy_pad;
    bool atomic_add_bf16;       // SetAtomicAdd<bfloat16_t> / <int8_t>
    uint32_t que_events;        // tensors concurrently allocated per TPosition (eventID count)
};

inline const SocInfo* SocTable(size_t* count) {
    static const SocInfo table[] = {
        {"Ascend910B1", "ascend910b", 48, 192 * 1024, 16u << 20, true, true, 8},
        {"Ascend910B2", "ascend910b", 48, 192 * 1024, 16u << 20, true, true, 8},
        {"Ascend910B3", "ascend910b", 40, 192 * 1024, 16u << 20, true, true, 8},
        {"Ascend910B4", "ascend910b", 40, 192 * 1024, 16u << 20, true, true, 8},
        {"Ascend910_9391", "ascend910_93", 48, 192 * 1024, 16u << 20, true, true, 8},
        {"Ascend910_9392", "ascend910_93", 48, 192 * 1024, 16u << 20, true, true, 8},
        {"Ascend310P3", "ascend310p", 8, 256 * 1024, 2u << 20, false, false, 8},
    };
    *count = sizeof(table) / sizeof(table[0]);
    return table;
}

inline const SocInfo* FindSoc(const char* name) {
    size_t n = 0;
    const SocInfo* t = SocTable(&n);
    if (name == nullptr || *name == '\0') return &t[0];
    for (size_t i = 0; i < n; ++i) {
        if (std::strcmp(t[i].name, name) == 0) return &t[i];
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
};

struct QueueState;

struct LaunchState {
    std::string kernel;
    const SocInfo* soc = nullptr;
    uint32_t block_dim = 1;
    uint64_t tiling_key = 0;
    uint64_t sys_workspace = 0;
    std::vector<GmRegion> regions;
    std::vector<RecsdkSimCoreStats> stats;

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

struct CoreState {
    LaunchState* launch = nullptr;
    uint32_t idx = 0;
    RecsdkSimCoreStats* stats = nullptr;
    uint8_t* ub = nullptr;
    uint32_t ub_size = 0;
    uint32_t ub_top = 0;          // bump allocator shared by the core's TPipe objects
    uint32_t buffers = 0;         // InitBuffer blocks handed out (the API allows 64 per kernel)
    int atomic_mode = 0;          // 0 none, 1 add
    const char* atomic_type = nullptr;
    uint32_t sync_count = 0;
    std::vector<std::shared_ptr<QueueState>> queues;
    int32_t flags[16][8] = {};    // SetFlag/WaitFlag balance per HardEvent and event id
    std::string leak;             // set when a TPipe goes away with tensors still held
    void* pipe = nullptr;         // the TPipe GetTPipePtr() returns
};

// The core the calling thread emulates, set by the runtime for the duration of a kernel body.
// Defined in the runtime library: one per thread of the process, whichever library asks.
extern RECSDK_SIM_RUNTIME_API thread_local CoreState* g_core;

// The layout of the structures operator libraries and the runtime share. An operator library
// built against other headers than the runtime it finds is refused at launch instead of
// misreading the runtime's structures (see LaunchOp).
constexpr uint64_t kRuntimeLayout =
    (uint64_t{2} << 56) ^ (uint64_t{sizeof(LaunchState)} << 40) ^ (uint64_t{sizeof(CoreState)} << 24) ^
    (uint64_t{sizeof(GmRegion)} << 12) ^ uint64_t{sizeof(RecsdkSimReport)};

inline CoreState& Core() {
    if (g_core == nullptr) {
        throw CheckError("AscendC API called outside a kernel launch", RECSDK_SIM_INTERNAL);
    }
    if (g_core->launch->aborted) throw Abort{};
    return *g_core;
}

inline std::string Where(const char* call, const SrcLoc& loc) {
    CoreState* c = g_core;
    std::string s = "kernel '" + (c ? c->launch->kernel : std::string("?")) + "'";
    if (c) s += ", core " + std::to_string(c->idx) + " of " + std::to_string(c->launch->block_dim);
    s += ", ";
    s += call;
    s += (loc.line > 0 ? " at " : " ") + loc.str();
    return s;
}

[[noreturn]] inline void Fail(const char* call, const SrcLoc& loc, const std::string& detail) {
    throw CheckError(Where(call, loc) + ": " + detail);
}

inline RecsdkSimCoreStats& Stats() { return *Core().stats; }

// ---- global memory ---------------------------------------------------------------------------
inline std::string DescribeAddress(const void* p) {
    const LaunchState* l = g_core ? g_core->launch : nullptr;
    if (l == nullptr) return "";
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
    if (best == nullptr) return " (no tensors were passed to the kernel)";
    const auto b = reinterpret_cast<intptr_t>(best->base);
    const intptr_t off = static_cast<intptr_t>(a) - b;
    if (off >= 0 && static_cast<uint64_t>(off) < best->bytes) {
        return " (it starts at byte " + std::to_string(off) + " of '" + best->name + "', " +
               std::to_string(best->bytes) + " bytes, and runs past its end)";
    }
    return " (nearest tensor '" + best->name + "' of " + std::to_string(best->bytes) + " bytes; offset " +
           std::to_string(off) + ")";
}

// Every global-memory access goes through here: the bytes must lie inside one tensor that was
// passed to the kernel (inputs, outputs, workspace, tiling), and writes need a writable one.
inline void CheckGm(const void* p, uint64_t bytes, bool write, const char* call, const SrcLoc& loc) {
    if (bytes == 0) return;
    const LaunchState* l = Core().launch;
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const auto& r : l->regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (a >= b && a + bytes <= b + r.bytes) {
            if (write && !r.writable) {
                Fail(call, loc, "global-memory write of " + std::to_string(bytes) +
                                    " bytes into read-only input '" + r.name + "' at offset " +
                                    std::to_string(a - b));
            }
            return;
        }
    }
    Fail(call, loc, std::string("global-memory ") + (write ? "write" : "read") + " of " +
                        std::to_string(bytes) + " bytes outside the tensors passed to the kernel" +
                        DescribeAddress(p));
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_RUNTIME_H
