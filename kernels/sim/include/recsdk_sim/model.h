// The cost model of a launch: per-core pipe timelines built while the kernel runs, and a roofline
// estimate from the counters, both with the SoC's figures (runtime.h SocTable) and the vendor
// constants below.
//
// ---- Timelines -------------------------------------------------------------------------------
// Each core has one clock per pipe (S, V, M, MTE1, MTE2, MTE3, FIX; hazard.h HazardState::t). The
// scalar unit issues every instruction in program order (one cycle each, kIssueCycles); an
// instruction on pipe P starts when P has finished its previous instruction and the scalar unit
// has issued it, and keeps P busy for its cost:
//   - a DMA (MTE2 GM->UB/L1, MTE3 UB->GM): kDmaHeadCycles, plus each block's bytes rounded up to
//     32-byte bursts over the core's share of the bandwidth of the level it touches: HBM, or the
//     L2 cache for the user workspace when it fits the L2 (the scratch a kernel writes and reads
//     back at once, e.g. between Cube and vector cores);
//   - a vector instruction: one cycle per 256-byte repeat (kVectorCyclesPerRepeat), more for
//     the instructions the vendor lists at a lower rate (VectorRepeatCycles: Exp, Ln, Sqrt, Div);
//   - a scalar global-memory access: kScalarGmCycles on S.
// MTE2 and MTE3 share the core's bandwidth, so the core's time is also at least the sum of its
// transfers (its GM link, model_busy_gm).
// Pipes wait for one another only where the kernel's synchronisation says so: SetFlag/WaitFlag
// (queues' EnQue/DeQue and AllocTensor/FreeTensor use them), PipeBarrier<PIPE_ALL>, and the
// compiler's automatic S<->V/MTE synchronisation where instructions depend on each other
// (hazard.h does the bookkeeping and carries the times along with its knowledge). So a double-
// buffered pipeline overlaps its copies with its compute, and a single-buffered one does not.
// A core's time is the latest end of any of its pipes, or its GM link's busy time if larger.
//
// ---- After the launch (FillModel) ------------------------------------------------------------
// The work of the Matmul API (matmul.h, which serves AIVs' calls on their AIC) is counted, not
// timed: its AIC gets, per pipe, its counters over the pipe's rate (M: cube cycles; MTE1: L1->L0
// bytes at the L0B rate; FIX: L0C bytes at the float rate; MTE2/MTE3: GM bytes as above) and its
// time is at least the busiest of these. The launch's floor is all cores' GM bytes over the HBM
// bandwidth (workspace bytes in the L2 excepted) and over the L2 bandwidth. The modelled time is
// the largest core time or the floor (kernels/bench/costmodel.py).
//
// ---- Not modelled (each one makes the model optimistic) --------------------------------------
// Cross-core waits (SyncAll, CrossCoreSetFlag/WaitFlag, a synchronous Matmul call's wait for its
// AIC) do not move clocks between cores; bank conflicts; the 512-byte GM alignment effect; the
// lower rates of the vector instructions other than Exp, Ln, Sqrt and Div (MulAddDst, GatherMask,
// the reductions); contention of cores for bandwidth beyond their equal share; launch overhead.
//
// ---- Sources (asc-devkit = mirror-cann/asc-devkit; docs = its docs/zh) -----------------------
// Every constant below names its source. Where the vendor publishes no figure the constant says
// PROXY and which documented figure stands in for it (kernels/bench/README.md lists them all).
#ifndef RECSDK_SIM_MODEL_H
#define RECSDK_SIM_MODEL_H

#include <algorithm>
#include <cmath>
#include <string_view>

#include "recsdk_sim/api.h"
#include "recsdk_sim/hazard.h"
#include "recsdk_sim/runtime.h"

namespace recsdk::sim {

namespace cost {
// Scalar instructions: 1 cycle per instruction (docs/api/附录/Vector指令理论性能汇总.md table 4,
// 标量计算类 "理论并行度（cycle/instruction）" 1); charged to S for every instruction it issues.
constexpr double kIssueCycles = 1.0;
// DMA data unit: 32-byte blocks (DataCopy: "搬运的单位为DataBlock(32Byte)", docs best practice
// 高效的使用搬运API; UB addresses 32-byte aligned, SIMD计算说明).
constexpr double kBurstBytes = 32.0;
// PROXY: no fixed cost of a GM<->UB DMA is published (the GM<->UB bandwidth-vs-size curves of
// docs 尽量一次搬运较大的数据块.md are figures only: "单次搬运数据16KB以上时,可以较好的发挥带宽").
// Stand-in: the fixed latency the vendor's own roofline uses for the L1->L0A/L0B DMA of the same
// core, 28 cycles (asc-devkit tests/perf/load_data_perf/README.md, dav-2201 scenarios 1-4,
// "Bandwidth Latency (cycle)" 28).
constexpr double kDmaHeadCycles = 28.0;
// PROXY: no scalar GM access latency is published; the DMA head above stands in for it.
constexpr double kScalarGmCycles = kDmaHeadCycles;
// Vector: Add/Sub/Mul/Max/Relu... 128 half or 64 float/int32 elements per cycle = one 256-byte
// repeat per cycle (docs/api/附录/Vector指令理论性能汇总.md, 表3 基础算术类指令理论性能汇总).
constexpr double kVectorCyclesPerRepeat = 1.0;
// Exp, Ln, Sqrt, Div: 32 elements per cycle in half and in float (docs/api/附录/
// Vector指令理论性能汇总.md, 表3 基础算术类指令理论性能汇总, "硬件并行度（单位：element/cycle）":
// Exp/Ln/Sqrt/Div half 32, float 32, where Add/Mul are half 128, float 64; Reciprocal and Rsqrt
// keep the full rate, 128 / 64). A 256-byte repeat of them takes 2 cycles in float, 4 in half.
constexpr double kSlowVectorElementsPerCycle = 32.0;
// UB->UB DataCopy: 256 bytes per cycle (same page, table 3).
constexpr double kUbToUbBytesPerCycle = 256.0;
// L2 cache: 192 MB, read/write mixed bandwidth about 7 TB/s (docs/guide/.../内存访问/
// L2-Cache切分.md: "L2 Cache大小为192MB，L2 Cache读写混合带宽约为7TB/s，而GM的带宽约为1.6TB/s").
constexpr double kL2Bytes = 192.0 * 1024 * 1024;
constexpr double kL2BytesPerS = 7.0e12;
// Cube (dav-2201): MACs per cycle in SocTable (Cube指令理论性能汇总.md). The fixed cost
// of one Mmad, 21 cycles (asc-devkit tests/perf/mmad_perf/generate_roofline.py, "dav-2201=21"),
// is not charged: the Matmul API's counters do not say how many Mmad it issued.
// MTE1 L1->L0B: 128 bytes per cycle (L0A: 256), latency 28 (load_data_perf/README.md scenarios 1,
// 2). The Matmul counters do not split A from B, so all of it goes at the slower L0B rate.
constexpr double kMte1BytesPerCycle = 128.0;
// FIX L0C out: 64 elements per cycle, float without conversion limited to 32 (128 bytes), head 20
// (asc-devkit tests/perf/fixpipe_perf/generate_roofline.py, dav-2201).
constexpr double kFixBytesPerCycle = 128.0;
}  // namespace cost

constexpr int kPipeS = static_cast<int>(Pipe::S);

inline uint64_t* ModelBusyField(RecsdkSimCoreStats& s, int pipe) {
    return &s.model_busy_s + pipe;
}
inline uint64_t* ModelEndField(RecsdkSimCoreStats& s, int pipe) {
    return &s.model_end_s + pipe;
}

inline uint64_t MilliCycles(double cycles) {
    return static_cast<uint64_t>(std::llround(cycles * 1000.0));
}

// An instruction of `cycles` on pipe `p` of the calling core, issued now by the scalar unit.
inline void ModelIssue(CoreState& c, Pipe p, double cycles) {
    HazardState& h = Hz(c);
    RecsdkSimCoreStats& st = *c.stats;
    const int pi = static_cast<int>(p);
    double& s = h.t[kPipeS];
    double busy_s = cost::kIssueCycles;
    if (p == Pipe::S) {
        busy_s += cycles;
        s += busy_s;
    } else {
        s += busy_s;
        h.t[pi] = std::max(h.t[pi], s) + cycles;
        *ModelBusyField(st, pi) += MilliCycles(cycles);
        *ModelEndField(st, pi) = MilliCycles(h.t[pi]);
    }
    *ModelBusyField(st, kPipeS) += MilliCycles(busy_s);
    *ModelEndField(st, kPipeS) = MilliCycles(s);
}

// Bytes per cycle of one core's share of the bandwidth that serves global memory at `gm`.
inline double GmBytesPerCycle(const CoreState& c, const void* gm) {
    const LaunchState& l = *c.launch;
    const SocInfo& soc = *l.soc;
    const double cores = soc.vector_cores > 0 ? soc.vector_cores : 1;
    const auto a = reinterpret_cast<uintptr_t>(gm);
    for (const auto& r : l.regions) {
        const auto b = reinterpret_cast<uintptr_t>(r.base);
        if (r.workspace && a >= b && a < b + r.bytes && double(r.bytes) <= cost::kL2Bytes)
            return cost::kL2BytesPerS / cores / soc.clock_hz;
    }
    return soc.hbm_bytes_per_s / cores / soc.clock_hz;
}

// One DMA between global memory at `gm` and local memory: `blocks` blocks of `block_bytes` each.
inline void ModelDma(Pipe p, const void* gm, uint64_t block_bytes, uint64_t blocks) {
    CoreState& c = Core();
    const double burst = std::ceil(double(block_bytes) / cost::kBurstBytes) * cost::kBurstBytes;
    const double transfer = double(blocks) * burst / GmBytesPerCycle(c, gm);
    ModelIssue(c, p, cost::kDmaHeadCycles + transfer);
    // MTE2 and MTE3 share the core's bandwidth ("当MTE2/MTE3同时进行GM读写时，搬运流水线的耗时应该
    // 是（MTE2搬运量 + MTE3搬运量）/ GM带宽", docs 性能分析/分析性能数据.md): the core's time is at
    // least the sum of its transfers (FillTimeline).
    c.stats->model_busy_gm += MilliCycles(transfer);
}

// A local-to-local DataCopy of `bytes` (UB->UB on the vector pipe's data path).
inline void ModelLocalCopy(Pipe p, uint64_t bytes) {
    ModelIssue(Core(), p, std::ceil(double(bytes) / cost::kUbToUbBytesPerCycle));
}

// Cycles of one 256-byte repeat of vector instruction `instr` (its API name; null: one at the full
// rate) over elements of `elem_bytes`: the slow ones of 表3 issue 32 elements a cycle, the others
// a whole repeat.
inline double VectorRepeatCycles(const char* instr, uint64_t elem_bytes) {
    if (instr == nullptr || elem_bytes == 0)
        return cost::kVectorCyclesPerRepeat;
    const std::string_view name(instr);
    if (name == "Exp" || name == "Ln" || name == "Sqrt" || name == "Div") {
        const double elems = 256.0 / double(elem_bytes);
        return std::max(cost::kVectorCyclesPerRepeat, elems / cost::kSlowVectorElementsPerCycle);
    }
    return cost::kVectorCyclesPerRepeat;
}

// A vector instruction of `repeats` 256-byte repeats, `cycles` each.
inline void ModelVector(uint64_t repeats, double cycles = cost::kVectorCyclesPerRepeat) {
    ModelIssue(Core(), Pipe::V, double(repeats) * cycles);
}

// A scalar read or write of global memory (GlobalTensor::GetValue/SetValue).
inline void ModelScalarGm() {
    ModelIssue(Core(), Pipe::S, cost::kScalarGmCycles);
}

// After the launch: each core's modelled time (model_core) and the launch's floor (model_floor),
// plus the roofline fields of the report.
inline void FillTimeline(const SocInfo& soc, RecsdkSimReport* r) {
    const double cores = soc.vector_cores > 0 ? soc.vector_cores : 1;
    const double hbm_share = soc.hbm_bytes_per_s / cores / soc.clock_hz;
    const double l2_share = cost::kL2BytesPerS / cores / soc.clock_hz;
    const bool ws_in_l2 = double(r->workspace_bytes) <= cost::kL2Bytes;
    double hbm_bytes = 0, all_bytes = 0;
    for (int32_t i = 0; i < r->num_cores; ++i) {
        RecsdkSimCoreStats& s = r->cores[i];
        const double ws_read = ws_in_l2 ? double(s.gm_workspace_read_bytes) : 0.0;
        const double ws_write = ws_in_l2 ? double(s.gm_workspace_write_bytes) : 0.0;
        const double reads = double(s.gm_read_bytes), writes = double(s.gm_write_bytes);
        hbm_bytes += reads + writes - ws_read - ws_write;
        all_bytes += reads + writes;
        if (s.core_type == kAic) {
            // The Matmul API's work, counted on the AIC (see the top): per pipe, its counters over
            // the pipe's rate, where the timeline has less.
            const double pipes[kPipes] = {
                0.0,
                0.0,
                double(s.cube_cycles),
                double(s.l1_to_l0_bytes) / cost::kMte1BytesPerCycle,
                double(s.dma_transfers) * cost::kDmaHeadCycles + (reads - ws_read) / hbm_share +
                    ws_read / l2_share,
                0.0,
                double(s.l0c_out_bytes) / cost::kFixBytesPerCycle +
                    (writes - ws_write) / hbm_share + ws_write / l2_share,
            };
            const double link =
                (reads - ws_read + writes - ws_write) / hbm_share + (ws_read + ws_write) / l2_share;
            s.model_busy_gm = std::max(s.model_busy_gm, MilliCycles(link));
            for (int p = 0; p < kPipes; ++p) {
                uint64_t& busy = *ModelBusyField(s, p);
                busy = std::max(busy, MilliCycles(pipes[p]));
                uint64_t& end = *ModelEndField(s, p);
                end = std::max(end, busy);
            }
        }
        uint64_t core = s.model_busy_gm;
        for (int p = 0; p < kPipes; ++p)
            core = std::max({core, *ModelEndField(s, p), *ModelBusyField(s, p)});
        s.model_core = core;
    }
    const double floor_s =
        std::max(hbm_bytes / soc.hbm_bytes_per_s, all_bytes / cost::kL2BytesPerS);
    for (int32_t i = 0; i < r->num_cores; ++i)
        r->cores[i].model_floor = MilliCycles(floor_s * soc.clock_hz);
}

// The roofline estimate (the report's modelled_* fields): each core's time is the largest of its
// Cube cycles (MACs issued / MACs per cycle of the input dtype), its vector cycles (256-byte
// repeats at the SoC's vector bytes per cycle) and its global-memory bytes over its share of the
// HBM bandwidth (hbm / vector_cores); the launch's is the largest core time, or all cores' bytes
// over the whole HBM bandwidth if that is larger. The pipes of a core overlap perfectly, with no
// latency or issue cost, and L2 hits cost as much as HBM. The timelines are filled first.
inline void FillModel(const SocInfo& soc, RecsdkSimReport* r) {
    FillTimeline(soc, r);
    RecsdkSimPeak& p = r->peak;
    p.clock_hz = soc.clock_hz;
    p.hbm_bytes_per_s = soc.hbm_bytes_per_s;
    p.core_dma_bytes_per_s = soc.hbm_bytes_per_s / (soc.vector_cores > 0 ? soc.vector_cores : 1);
    p.vector_cores = soc.vector_cores;
    p.cube_cores = soc.cube_cores;
    p.cube_macs_b16 = soc.cube_macs_b16;
    p.cube_macs_f32 = soc.cube_macs_f32;
    p.cube_macs_b8 = soc.cube_macs_b8;
    p.vector_bytes_per_cycle = soc.vector_bytes_per_cycle;

    double best = 0.0;
    int32_t bound = RECSDK_SIM_BOUND_DMA;
    int32_t core = -1;
    double total_bytes = 0.0;
    r->modelled_cube_seconds = r->modelled_vector_seconds = r->modelled_dma_seconds = 0.0;
    for (int32_t i = 0; i < r->num_cores; ++i) {
        const RecsdkSimCoreStats& s = r->cores[i];
        const double bytes = static_cast<double>(s.gm_read_bytes + s.gm_write_bytes);
        total_bytes += bytes;
        const double terms[3] = {
            static_cast<double>(s.cube_cycles) / soc.clock_hz,
            static_cast<double>(s.vector_repeats) * 256.0 / soc.vector_bytes_per_cycle /
                soc.clock_hz,
            bytes / p.core_dma_bytes_per_s,
        };
        r->modelled_cube_seconds = std::max(r->modelled_cube_seconds, terms[0]);
        r->modelled_vector_seconds = std::max(r->modelled_vector_seconds, terms[1]);
        r->modelled_dma_seconds = std::max(r->modelled_dma_seconds, terms[2]);
        for (int32_t k = 0; k < 3; ++k) {
            if (terms[k] > best) {
                best = terms[k];
                bound = k;
                core = i;
            }
        }
    }
    r->modelled_hbm_seconds = total_bytes / soc.hbm_bytes_per_s;
    if (r->modelled_hbm_seconds > best) {
        best = r->modelled_hbm_seconds;
        bound = RECSDK_SIM_BOUND_HBM;
        core = -1;
    }
    r->modelled_seconds = best;
    r->modelled_bound = bound;
    r->modelled_core = core;
}

}  // namespace recsdk::sim

#endif  // RECSDK_SIM_MODEL_H
