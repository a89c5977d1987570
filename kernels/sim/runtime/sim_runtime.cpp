// The sim runtime library, libmxrec_sim_runtime.so: the part of the AscendC emulation that exists
// once per process, as a device's driver runtime does. Every operator library links it; see
// recsdk_sim/runtime.h for why this state cannot live in the operator libraries themselves.
//
// It owns the calling thread's current core (g_core), runs a launch's cores as threads, and
// defines the key functions of the exception types kernels throw, so that an error raised in any
// operator library is caught here by type.
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernel_operator.h"
#include "recsdk_sim/launch.h"

namespace recsdk::sim {

thread_local CoreState* g_core = nullptr;

CheckError::~CheckError() = default;
Abort::~Abort() = default;

namespace {

// Called when a core leaves the kernel body (normally or not): a core that returns while others
// wait in SyncAll would hang the device.
void CoreFinished(LaunchState& l, uint32_t idx, bool normally) {
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

void RunCore(const KernelRun& run, LaunchState& l, const std::function<void()>& body, uint32_t idx) {
    CoreState core;
    core.launch = &l;
    core.idx = idx;
    core.stats = &l.stats[idx];
    core.ub_size = run.ub_bytes != 0 ? run.ub_bytes : run.soc->ub_bytes;
    void* ub = std::aligned_alloc(64, core.ub_size);
    core.ub = static_cast<uint8_t*>(ub);
    if (run.poison_ub) std::memset(core.ub, kPoison, core.ub_size);
    CoreState* const outer = g_core;  // a launch from inside a kernel is a bug, but restore anyway
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
    } catch (...) {
        l.Record(RECSDK_SIM_INTERNAL, std::string("kernel '") + l.kernel + "', core " + std::to_string(idx) +
                                          ": unexpected exception of unknown type");
    }
    CoreFinished(l, idx, normally);
    g_core = outer;
    core.queues.clear();
    std::free(ub);
}

}  // namespace

int32_t RunKernel(const KernelRun& run, const std::function<void()>& body, RecsdkSimReport* report) {
    LaunchState l;
    l.kernel = run.kernel;
    l.soc = run.soc;
    l.block_dim = run.block_dim;
    l.tiling_key = run.tiling_key;
    l.sys_workspace = run.sys_workspace;
    l.regions = run.regions;
    l.stats.assign(run.block_dim, RecsdkSimCoreStats{});

    if (run.block_dim == 1) {
        RunCore(run, l, body, 0);
    } else {
        std::vector<std::thread> threads;
        threads.reserve(run.block_dim);
        for (uint32_t i = 0; i < run.block_dim; ++i) {
            threads.emplace_back([&run, &l, &body, i] { RunCore(run, l, body, i); });
        }
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

extern "C" RECSDK_SIM_RUNTIME_API uint64_t recsdk_sim_runtime_layout(void) { return recsdk::sim::kRuntimeLayout; }
