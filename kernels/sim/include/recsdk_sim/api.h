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

#define RECSDK_SIM_ABI_VERSION 1
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
    const char* soc;    /* NULL: Ascend910B1 */
    int32_t max_cores;  /* <= 0: the SoC's vector core count; otherwise a smaller platform */
    int32_t no_poison;  /* nonzero: do not fill outputs/workspace/UB with poison first */
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
    uint64_t atomic_write_bytes; /* part of gm_write_bytes done with SetAtomicAdd */
} RecsdkSimCoreStats;

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
    int32_t num_cores;        /* entries of cores[] filled (== block_dim) */
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
