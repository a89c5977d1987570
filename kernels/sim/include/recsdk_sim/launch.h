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

// A launch request: the launch (LaunchDesc) and how the cores are set up.
struct KernelRun : LaunchDesc {
    bool poison_ub = true;
    uint32_t ub_bytes = 0;  // 0: the SoC's
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
