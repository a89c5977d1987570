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
#include "recsdk_sim/model.h"

namespace recsdk::sim {

thread_local CoreState* g_core = nullptr;

CheckError::~CheckError() = default;
Abort::~Abort() = default;

namespace {

// RECSDK_SIM_CCE_AUTO_SYNC=off: check every launch as if its kernel had been compiled with
// --cce-auto-sync=off (every pipe pair needs the kernel's own synchronisation; hazard.h).
bool AutoSyncOffInEnvironment() {
    const char* v = std::getenv("RECSDK_SIM_CCE_AUTO_SYNC");
    return v != nullptr && (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0);
}

// Called when a core leaves the kernel body (normally or not): a core that returns while others
// wait for it in SyncAll would hang the device. (An AIC leaving while AIVs wait in SyncAll<true>
// is fine: that barrier is the AIVs'. Other waits notice a core gone through BlockUntil.)
void CoreFinished(LaunchState& l, const CoreState& c, bool normally) {
    std::unique_lock<std::mutex> lock(l.mu);
    ++l.finished;
    if (c.core_type == kAic)
        ++l.finished_aic;
    const bool party = !(l.sync_aiv_only && c.core_type == kAic && l.aiv_per_block > 0);
    if (normally && party && l.waiting > 0 && !l.aborted) {
        const uint32_t waiting = l.waiting;
        const std::string where = l.waiting_at;
        lock.unlock();
        l.Record(RECSDK_SIM_CHECK_FAILED,
                 "kernel '" + l.kernel + "', " + CoreName(c) + ": returned from the kernel while " +
                     std::to_string(waiting) + " core(s) wait in SyncAll at " + where +
                     "; the device would hang");
        return;
    }
    l.cv.notify_all();
}

// Slot s: AICs first, then the AIVs in GetBlockIdx() order (recsdk_sim/mix.h).
void Identify(const LaunchState& l, uint32_t s, CoreState* c) {
    const uint32_t aics = l.block_dim * l.aic_per_block;
    c->slot = s;
    if (s < aics) {
        c->core_type = kAic;
        c->idx = c->block = s;
        c->sub_idx = 0;
    } else {
        const uint32_t j = s - aics;
        c->core_type = kAiv;
        c->idx = j;
        c->block = j / l.aiv_per_block;
        c->sub_idx = j % l.aiv_per_block;
    }
}

void RunCore(const KernelRun& run, LaunchState& l, const std::function<void()>& body,
             uint32_t slot) {
    CoreState core;
    core.launch = &l;
    Identify(l, slot, &core);
    core.stats = &l.stats[slot];
    core.stats->core_type = core.core_type;
    // An AIC has no unified buffer (its L1/L0 budget is checked by the Matmul emulation).
    core.ub_size =
        core.core_type == kAic ? 0 : (run.ub_bytes != 0 ? run.ub_bytes : run.soc->ub_bytes);
    void* ub = core.ub_size != 0 ? std::aligned_alloc(64, core.ub_size) : nullptr;
    core.ub = static_cast<uint8_t*>(ub);
    if (run.poison_ub && ub != nullptr)
        std::memset(core.ub, kPoison, core.ub_size);
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
        l.Record(RECSDK_SIM_INTERNAL, std::string("kernel '") + l.kernel + "', " + CoreName(core) +
                                          ": unexpected exception: " + e.what());
    } catch (...) {
        l.Record(RECSDK_SIM_INTERNAL, std::string("kernel '") + l.kernel + "', " + CoreName(core) +
                                          ": unexpected exception of unknown type");
    }
    CoreFinished(l, core, normally);
    g_core = outer;
    core.queues.clear();
    std::free(ub);
}

}  // namespace

int32_t RunKernel(const KernelRun& run, const std::function<void()>& body,
                  RecsdkSimReport* report) {
    LaunchState l;
    static_cast<LaunchDesc&>(l) = run;
    l.cce_auto_sync = run.cce_auto_sync && !AutoSyncOffInEnvironment();
    auto refuse = [&](const std::string& why) {
        if (report != nullptr) {
            report->status = RECSDK_SIM_INTERNAL;
            SetMessage(report, "kernel '" + run.kernel + "': " + why);
        }
        return RECSDK_SIM_INTERNAL;
    };
    if (!KernelShape(run.kernel_type, &l.aic_per_block, &l.aiv_per_block)) {
        return refuse(std::string("launched as ") + KernelTypeName(run.kernel_type) +
                      ", which the emulation does not run");
    }
    if (l.aic_per_block > 0 && run.soc->cube_cores == 0) {
        return refuse(std::string(KernelTypeName(run.kernel_type)) +
                      " needs cube cores, which are not emulated on " + run.soc->name);
    }
    if (l.aic_per_block > 0 && run.block_dim > run.soc->cube_cores) {
        return refuse("blockDim " + std::to_string(run.block_dim) + " of a " +
                      KernelTypeName(run.kernel_type) + " launch exceeds the " +
                      std::to_string(run.soc->cube_cores) + " AI cores (AIC) of " + run.soc->name);
    }
    l.cores_total = run.block_dim * (l.aic_per_block + l.aiv_per_block);
    if (l.cores_total > RECSDK_SIM_MAX_CORES) {
        return refuse(std::to_string(l.cores_total) + " cores exceed RECSDK_SIM_MAX_CORES");
    }
    l.stats.assign(l.cores_total, RecsdkSimCoreStats{});
    l.cube = std::make_shared<CubeLaunchState>(l.cores_total, run.block_dim * l.aic_per_block);

    if (l.cores_total == 1) {
        RunCore(run, l, body, 0);
    } else {
        std::vector<std::thread> threads;
        threads.reserve(l.cores_total);
        for (uint32_t i = 0; i < l.cores_total; ++i) {
            threads.emplace_back([&run, &l, &body, i] { RunCore(run, l, body, i); });
        }
        for (auto& t : threads)
            t.join();
    }
    MergeServed(l);

    if (report != nullptr) {
        report->block_dim = static_cast<int32_t>(run.block_dim);
        report->tiling_key = run.tiling_key;
        report->num_cores = static_cast<int32_t>(l.cores_total);
        for (int32_t i = 0; i < report->num_cores; ++i)
            report->cores[i] = l.stats[i];
        FillModel(*run.soc, report);
        report->status = l.has_error ? l.status : RECSDK_SIM_OK;
        SetMessage(report, l.has_error ? l.error : std::string());
    }
    return l.has_error ? l.status : RECSDK_SIM_OK;
}

}  // namespace recsdk::sim

extern "C" RECSDK_SIM_RUNTIME_API uint64_t recsdk_sim_runtime_layout(void) {
    return recsdk::sim::kRuntimeLayout;
}
