// Running a kernel: blockDim cores as threads over one LaunchState.
#ifndef RECSDK_SIM_LAUNCH_H
#define RECSDK_SIM_LAUNCH_H

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "recsdk_sim/api.h"
#include "recsdk_sim/datacopy.h"
#include "recsdk_sim/pipe.h"
#include "recsdk_sim/runtime.h"

extern "C" {
// The runtime library's kRuntimeLayout, for the launcher's compatibility check.
RECSDK_SIM_RUNTIME_API uint64_t recsdk_sim_runtime_layout(void);
}

namespace recsdk::sim {

struct KernelRun {
    std::string kernel;
    const SocInfo* soc = nullptr;
    uint32_t block_dim = 1;
    uint64_t tiling_key = 0;
    uint64_t sys_workspace = 0;
    std::vector<GmRegion> regions;
    bool poison_ub = true;
    uint32_t ub_bytes = 0;  // 0: the SoC's
    // Compiled with --cce-auto-sync (the default; see recsdk_sim/hazard.h). The environment
    // variable RECSDK_SIM_CCE_AUTO_SYNC=off turns it off for every launch.
    bool cce_auto_sync = true;
    // KERNEL_TYPE_* (recsdk_sim/mix.h): with cube cores, block_dim counts AI cores and each runs
    // its AIC and AIVs as threads (KERNEL_TYPE_MIX_AIC_1_2: 1 + 2).
    int32_t kernel_type = 0;
    uint8_t* sys_workspace_ptr = nullptr;  // what GetSysWorkSpacePtr() returns
};

inline void SetMessage(RecsdkSimReport* report, const std::string& msg) {
    if (report == nullptr)
        return;
    std::snprintf(report->message, sizeof(report->message), "%s", msg.c_str());
}

// Runs body() once per core, each on its own thread with its own unified buffer (AIVs) or L1/L0
// budget (AICs), and returns the status; the report gets the message, per-core counters and the
// modelled time. Implemented by the runtime
// library (kernels/sim/runtime/sim_runtime.cpp).
RECSDK_SIM_RUNTIME_API int32_t RunKernel(const KernelRun& run, const std::function<void()>& body,
                                         RecsdkSimReport* report);

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_LAUNCH_H
