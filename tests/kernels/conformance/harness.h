// The conformance harness: runs a vendor kernel compiled unchanged against the emulation, with
// the global-memory tensors, tiling bytes, blockDim and tiling key the Python driver computed.
// What aclnn's launch does on a device, on host buffers: the tensors are the only global memory
// the kernel may touch, the workspace is the system part (GetSysWorkSpacePtr) then the user part,
// and the cores run through the emulation's runtime (RunKernel) as our own operators do.
//
// The generated source includes this header, then the kernel's .cpp, then defines
// RecsdkConfCall (which calls the kernel entry with the pointers in order) and expands
// RECSDK_CONF_ENTRY.
#ifndef RECSDK_CONF_HARNESS_H
#define RECSDK_CONF_HARNESS_H

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "recsdk_sim/api.h"
#include "recsdk_sim/launch.h"

namespace recsdk::conf {

inline int32_t Launch(const char* kernel, void* const* gm, const uint64_t* bytes,
                      const int32_t* writable, int32_t n, const void* tiling, uint64_t tiling_bytes,
                      int32_t block_dim, uint64_t tiling_key, uint64_t user_workspace,
                      const char* soc_name, RecsdkSimReport* report,
                      void (*call)(GM_ADDR*, GM_ADDR, GM_ADDR)) {
    using namespace recsdk::sim;
    std::memset(report, 0, sizeof(*report));
    const SocInfo* soc = FindSoc(soc_name);
    if (soc == nullptr || block_dim <= 0 || static_cast<uint32_t>(block_dim) > soc->vector_cores) {
        report->status = RECSDK_SIM_INVALID_ARGUMENT;
        SetMessage(report, std::string(kernel) + ": unknown SoC or blockDim out of range");
        return report->status;
    }
    KernelRun run;
    run.kernel = kernel;
    run.soc = soc;
    run.block_dim = static_cast<uint32_t>(block_dim);
    run.tiling_key = tiling_key;
    run.sys_workspace = soc->sys_workspace;
    run.ub_bytes = soc->ub_bytes;
    std::vector<GM_ADDR> ptrs(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        ptrs[i] = static_cast<GM_ADDR>(gm[i]);
        if (ptrs[i] != nullptr && bytes[i] > 0) {
            run.regions.push_back(
                GmRegion{ptrs[i], bytes[i], writable[i] != 0, "argument " + std::to_string(i)});
        }
    }
    // System part then user part, both backed; the poison makes a kernel that reads workspace
    // it never wrote fail the comparison.
    const uint64_t ws_bytes = soc->sys_workspace + user_workspace;
    std::unique_ptr<uint8_t[]> ws(new uint8_t[ws_bytes + 64]);
    uint8_t* base = ws.get() + (64 - reinterpret_cast<uintptr_t>(ws.get()) % 64) % 64;
    std::memset(base, kPoison, ws_bytes);
    run.regions.push_back(GmRegion{base, soc->sys_workspace, true, "system workspace"});
    if (user_workspace > 0)
        run.regions.push_back(
            GmRegion{base + soc->sys_workspace, user_workspace, true, "workspace", true});
    run.sys_workspace_ptr = base;
    std::unique_ptr<uint8_t[]> td(new uint8_t[tiling_bytes + 64]);
    uint8_t* tp = td.get() + (64 - reinterpret_cast<uintptr_t>(td.get()) % 64) % 64;
    std::memcpy(tp, tiling, tiling_bytes);
    run.regions.push_back(GmRegion{tp, tiling_bytes, false, "tiling"});
    GM_ADDR* p = ptrs.data();
    const int32_t status = RunKernel(run, [&] { call(p, base, tp); }, report);
    report->workspace_bytes = user_workspace;
    report->tiling_bytes = tiling_bytes;
    return status;
}

}  // namespace recsdk::conf

#define RECSDK_CONF_ENTRY(NAME, CALL)                                                            \
    extern "C" __attribute__((visibility("default"))) int32_t recsdk_sim_conformance(            \
        void* const* gm, const uint64_t* bytes, const int32_t* writable, int32_t n,              \
        const void* tiling, uint64_t tiling_bytes, int32_t block_dim, uint64_t tiling_key,       \
        uint64_t user_workspace, const char* soc, RecsdkSimReport* report) {                     \
        return ::recsdk::conf::Launch(NAME, gm, bytes, writable, n, tiling, tiling_bytes,        \
                                      block_dim, tiling_key, user_workspace, soc, report, CALL); \
    }

#endif  // RECSDK_CONF_HARNESS_H
