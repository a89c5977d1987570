/*
 * C ABI of the sim operator libraries (mxrec_opp_<op>_sim.so).
 *
 * One entry point per operator, recsdk_sim_<op>(), takes raw host pointers with shapes and
 * dtypes (inputs in op.toml order, then outputs), the attributes in op.toml order, and fills a
 * report: status, the tiling the operator's own tiling function chose, and per-core counters.
 * The caller allocates outputs (as it would for aclnn<Op>); the launcher allocates the
 * workspace. Plain C so that ctypes (tests, bench) and the torch adapter can both call it.
 */
#ifndef RECSDK_SIM_API_H
#define RECSDK_SIM_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RECSDK_SIM_ABI_VERSION 3
#define RECSDK_SIM_MAX_DIMS 8
#define RECSDK_SIM_MAX_CORES 128
#define RECSDK_SIM_MESSAGE_BYTES 2048

/* Element types; the numbering is part of the ABI. */
enum RecsdkSimDType {
    RECSDK_DT_FLOAT32 = 0,
    RECSDK_DT_FLOAT16 = 1,
    RECSDK_DT_BFLOAT16 = 2,
    RECSDK_DT_INT32 = 3,
    RECSDK_DT_INT64 = 4,
    RECSDK_DT_INT8 = 5,
    RECSDK_DT_UINT8 = 6,
    RECSDK_DT_INT16 = 7,
    RECSDK_DT_BOOL = 8,
    RECSDK_DT_FLOAT64 = 9,
};

/* A contiguous tensor on host memory. An absent optional tensor has data == NULL and ndim < 0. */
typedef struct RecsdkSimTensor {
    void* data;
    int32_t dtype;
    int32_t ndim;
    int64_t shape[RECSDK_SIM_MAX_DIMS];
} RecsdkSimTensor;

enum RecsdkSimAttrKind {
    RECSDK_ATTR_INT = 0,
    RECSDK_ATTR_FLOAT = 1,
    RECSDK_ATTR_BOOL = 2,
    RECSDK_ATTR_INT_LIST = 3,
};

typedef struct RecsdkSimAttr {
    int32_t kind;
    int32_t count;       /* number of elements of an int list */
    int64_t i;           /* int and bool */
    double f;            /* float */
    const int64_t* ints; /* int list */
} RecsdkSimAttr;

typedef struct RecsdkSimOptions {
    const char* soc;   /* NULL: Ascend910B1 */
    int32_t max_cores; /* <= 0: the SoC's vector core count; otherwise a smaller platform */
    int32_t no_poison; /* nonzero: do not fill outputs/workspace/UB with poison first */
    int32_t reserved;
    int64_t min_core_bytes; /* > 0: work worth one more core (tiling grain); tests use 1 to
                               spread tiny inputs over every core */
    int64_t ub_bytes;       /* > 0: a smaller unified buffer than the SoC's (the tiling sizes
                               its buffers from it; tests use it to exercise chunk loops) */
} RecsdkSimOptions;

typedef struct RecsdkSimCoreStats {
    uint64_t gm_read_bytes;      /* DMA + scalar reads of global memory */
    uint64_t gm_write_bytes;     /* DMA + scalar writes (atomic adds included) */
    uint64_t dma_transfers;      /* DataCopy / DataCopyPad calls that touch global memory */
    uint64_t scalar_gm_reads;    /* GlobalTensor::GetValue */
    uint64_t scalar_gm_writes;   /* GlobalTensor::SetValue */
    uint64_t vector_elements;    /* elements processed by vector instructions */
    uint64_t vector_instrs;      /* vector instruction calls */
    uint64_t scalar_ub_accesses; /* LocalTensor::GetValue / SetValue */
    uint64_t ub_peak_bytes;      /* high-water mark of unified buffer allocations */
    uint64_t sync_all;           /* SyncAll calls */
    /* part of gm_write_bytes done with SetAtomicAdd or a Matmul enAtomic */
    uint64_t atomic_write_bytes;
    uint64_t core_type; /* 0: vector core (AIV), 1: cube core (AIC) */
    /* 256-byte repeats of vector instructions (per instruction, rounded up) */
    uint64_t vector_repeats;
    uint64_t cube_macs;        /* MACs the Cube issued: m, n padded to 16, k to the fractal's k0 */
    uint64_t cube_useful_macs; /* m * n * k of the products asked for (no padding) */
    uint64_t cube_cycles;      /* cube_macs / the SoC's MACs per cycle for the input dtype */
    uint64_t gm_to_l1_bytes;   /* MTE2 global memory -> L1 (also counted in gm_read_bytes) */
    uint64_t l1_to_l0_bytes;   /* MTE1 L1 -> L0A/L0B, fractal padded */
    /* FIX L0C -> global memory (also in gm_write_bytes) or unified buffer */
    uint64_t l0c_out_bytes;
    uint64_t cross_core_flags; /* CrossCoreSetFlag calls */
    /* parts of gm_read_bytes / gm_write_bytes that were the user workspace: a kernel's scratch
       between its own phases (HSTU's score blocks), L2-resident on a device */
    uint64_t gm_workspace_read_bytes;
    uint64_t gm_workspace_write_bytes;
    /* bytes a GM->UB DataCopy read past the end of a tensor within its last 32-byte block (the
       hardware's burst allows it; a warning, the bytes land as poison) */
    uint64_t gm_overread_bytes;
    /* The cost model (recsdk_sim/model.h), in thousandths of a cycle of the SoC clock. busy_*: how
       long each pipe of the core worked; end_*: when its last instruction on that pipe completed,
       waits included (pipes in hazard.h order: S, V, M, MTE1, MTE2, MTE3, FIX). */
    uint64_t model_busy_s;
    uint64_t model_busy_v;
    uint64_t model_busy_m;
    uint64_t model_busy_mte1;
    uint64_t model_busy_mte2;
    uint64_t model_busy_mte3;
    uint64_t model_busy_fix;
    uint64_t model_end_s;
    uint64_t model_end_v;
    uint64_t model_end_m;
    uint64_t model_end_mte1;
    uint64_t model_end_mte2;
    uint64_t model_end_mte3;
    uint64_t model_end_fix;
    /* Filled after the launch: the core's modelled time (its critical path, at least its busiest
       pipe or its GM link), and the launch's memory floor (all cores' bytes over the HBM and L2
       bandwidths; the same in every entry). */
    uint64_t model_busy_gm; /* transfers over the core's GM link, which MTE2 and MTE3 share */
    uint64_t model_core;
    uint64_t model_floor;
} RecsdkSimCoreStats;

/* The SoC figures the modelled time used (recsdk_sim/runtime.h SocTable; clock and HBM bandwidth
   are estimates, see there). */
typedef struct RecsdkSimPeak {
    double clock_hz;
    double hbm_bytes_per_s;
    double core_dma_bytes_per_s; /* each core's share: hbm_bytes_per_s / vector_cores */
    uint32_t vector_cores;
    uint32_t cube_cores;
    uint32_t cube_macs_b16; /* per AIC per cycle */
    uint32_t cube_macs_f32;
    uint32_t cube_macs_b8;
    uint32_t vector_bytes_per_cycle;
} RecsdkSimPeak;

/* Which term bounds the modelled time. */
enum RecsdkSimBound {
    RECSDK_SIM_BOUND_CUBE = 0,   /* a core's cube_cycles */
    RECSDK_SIM_BOUND_VECTOR = 1, /* a core's vector_repeats */
    RECSDK_SIM_BOUND_DMA = 2,    /* a core's GM bytes over its share of the bandwidth */
    RECSDK_SIM_BOUND_HBM = 3,    /* all cores' GM bytes over the HBM bandwidth */
};

enum RecsdkSimStatus {
    RECSDK_SIM_OK = 0,
    RECSDK_SIM_INVALID_ARGUMENT = 1, /* rejected by the launcher or the tiling function */
    RECSDK_SIM_CHECK_FAILED = 2,     /* the kernel did something the hardware would reject */
    RECSDK_SIM_TRAP = 3,             /* the kernel called Trap() (a device-side assert) */
    RECSDK_SIM_INTERNAL = 4,
};

typedef struct RecsdkSimReport {
    int32_t status;
    int32_t block_dim;
    uint64_t tiling_key;
    uint64_t workspace_bytes; /* user workspace the tiling asked for */
    uint64_t tiling_bytes;
    int32_t num_cores;      /* entries of cores[] filled: block_dim, or with cube cores
                               block_dim AICs then the AIVs by GetBlockIdx() */
    int32_t modelled_bound; /* RecsdkSimBound of modelled_seconds */
    int32_t modelled_core;  /* the cores[] entry that bounds it (-1 for RECSDK_SIM_BOUND_HBM) */
    int32_t reserved;
    RecsdkSimPeak peak;
    /* A roofline estimate, not a simulation of time: the maximum over cores of max(cube cycles,
       vector repeats, GM bytes / the core's share of HBM bandwidth), and the launch's GM bytes over
       the HBM bandwidth. No latency, pipe stalls, bank conflicts or caches; the pipes of a core
       overlap perfectly. */
    double modelled_seconds;
    double modelled_cube_seconds; /* the largest term of each kind */
    double modelled_vector_seconds;
    double modelled_dma_seconds;
    double modelled_hbm_seconds;
    RecsdkSimCoreStats cores[RECSDK_SIM_MAX_CORES];
    char message[RECSDK_SIM_MESSAGE_BYTES];
} RecsdkSimReport;

typedef int32_t (*RecsdkSimLaunchFn)(const RecsdkSimTensor* tensors, int32_t num_tensors,
                                     const RecsdkSimAttr* attrs, int32_t num_attrs,
                                     const RecsdkSimOptions* options, RecsdkSimReport* report);

#ifdef __cplusplus
}
#endif

#endif /* RECSDK_SIM_API_H */
