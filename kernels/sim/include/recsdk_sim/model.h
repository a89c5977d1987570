// The modelled time of a launch: a roofline estimate from the per-core counters and the SoC's peak
// figures (runtime.h SocTable), not a simulation of time.
//
// Each core's time is the largest of its Cube cycles (MACs issued / MACs per cycle of the input
// dtype), its vector cycles (256-byte repeats at the SoC's vector bytes per cycle) and its
// global-memory bytes over its share of the HBM bandwidth (hbm / vector_cores: no per-core DMA
// limit is documented, so every core gets the share it would have if all vector cores streamed at
// once). The launch's time is the largest core time, or all cores' bytes over the whole HBM
// bandwidth if that is larger. The pipes of a core overlap perfectly; there is no latency, no
// scalar cost, no bank conflict, no cache (L2 hits cost as much as HBM), no launch overhead.
#ifndef RECSDK_SIM_MODEL_H
#define RECSDK_SIM_MODEL_H

#include "recsdk_sim/api.h"
#include "recsdk_sim/runtime.h"

namespace recsdk::sim {

inline void FillModel(const SocInfo& soc, RecsdkSimReport* r) {
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
