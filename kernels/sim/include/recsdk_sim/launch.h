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
};

inline void SetMessage(RecsdkSimReport* report, const std::string& msg) {
    if (report == nullptr) return;
    std::snprintf(report->message, sizeof(report->message), "%s", msg.c_str());
}

// Called when a core leaves the kernel body (normally or not): a core that returns while others
// wait in SyncAll would hang the device.
inline void CoreFinished(LaunchState& l, uint32_t idx, bool normally) {
    std::unique_lock<std::mutex> lock(l.mu);
    ++l.finished;
    if (normally && l.waiting > 0 && !l.aborted) {
        const uint32_t waiting = l.waiting;
        const std::string where = l.waiting_at;
        lock.unlock();
        l.Record(RECSDK_SIM_CHECK_FAILED,
                 "kernel '" + l.kernel + "', core " + std::to_string(idx) + " of " + std::to_string(l.block_dim) +
                     ": returned from the kernel while " + std::to_string(waiting) + " core(s) wait in SyncAll at " +
                     where + "; the device would hang");
        return;
    }
    l.cv.notify_all();
}

// Runs body() once per core, each on its own thread with its own unified buffer. Returns the
// status; the report gets the message and per-core counters.
inline int32_t RunKernel(const KernelRun& run, const std::function<void()>& body, RecsdkSimReport* report) {
    LaunchState l;
    l.kernel = run.kernel;
    l.soc = run.soc;
    l.block_dim = run.block_dim;
    l.tiling_key = run.tiling_key;
    l.sys_workspace = run.sys_workspace;
    l.regions = run.regions;
    l.stats.assign(run.block_dim, RecsdkSimCoreStats{});

    auto core_main = [&](uint32_t idx) {
        CoreState core;
        core.launch = &l;
        core.idx = idx;
        core.stats = &l.stats[idx];
        core.ub_size = run.ub_bytes != 0 ? run.ub_bytes : run.soc->ub_bytes;
        void* ub = std::aligned_alloc(64, core.ub_size);
        core.ub = static_cast<uint8_t*>(ub);
        if (run.poison_ub) std::memset(core.ub, kPoison, core.ub_size);
        g_core = &core;
        bool normally = false;
        try {
            body();
            CheckQueuesAtExit(core);
            normally = true;
        } catch (const CheckError& e) {
            l.Record(e.status(), e.what());
        } catch (const Abort&) {
        } catch (const std::exception& e) {
            l.Record(RECSDK_SIM_INTERNAL, std::string("kernel '") + l.kernel + "', core " + std::to_string(idx) +
                                              ": unexpected exception: " + e.what());
        }
        CoreFinished(l, idx, normally);
        g_core = nullptr;
        core.queues.clear();
        std::free(ub);
    };

    if (run.block_dim == 1) {
        core_main(0);
    } else {
        std::vector<std::thread> threads;
        threads.reserve(run.block_dim);
        for (uint32_t i = 0; i < run.block_dim; ++i) threads.emplace_back(core_main, i);
        for (auto& t : threads) t.join();
    }

    if (report != nullptr) {
        report->block_dim = static_cast<int32_t>(run.block_dim);
        report->tiling_key = run.tiling_key;
        report->num_cores = static_cast<int32_t>(std::min<uint32_t>(run.block_dim, RECSDK_SIM_MAX_CORES));
        for (int32_t i = 0; i < report->num_cores; ++i) report->cores[i] = l.stats[i];
        report->status = l.has_error ? l.status : RECSDK_SIM_OK;
        SetMessage(report, l.has_error ? l.error : std::string());
    }
    return l.has_error ? l.status : RECSDK_SIM_OK;
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_LAUNCH_H
