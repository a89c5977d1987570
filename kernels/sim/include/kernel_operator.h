// Host emulation of the AscendC kernel API (the subset the mxrec kernels use), with the real
// names and signatures. Kernels include "kernel_operator.h" exactly as they do for the CANN
// toolkit; the sim target puts this directory first on the include path.
//
// The contract is the AscendC API reference (mirror-cann/asc-devkit, docs/api/SIMD-API/); each
// header cites the pages whose semantics it implements. Calls take a trailing defaulted
// recsdk::sim::SrcLoc so that failed checks name the kernel line.
#ifndef RECSDK_SIM_KERNEL_OPERATOR_H
#define RECSDK_SIM_KERNEL_OPERATOR_H

#define RECSDK_SIM 1

#include "recsdk_sim/types.h"
#include "recsdk_sim/runtime.h"
#include "recsdk_sim/tensor.h"
#include "recsdk_sim/pipe.h"
#include "recsdk_sim/datacopy.h"
#include "recsdk_sim/vector.h"
#include "recsdk_sim/sync.h"
#include "recsdk_sim/vector_masked.h"
#include "recsdk_sim/vector_cmpsel.h"
#include "recsdk_sim/vector_reduce.h"
#include "recsdk_sim/vector_fused.h"
#include "recsdk_sim/vector_shift.h"
#include "recsdk_sim/vector_cast.h"
#include "recsdk_sim/vector_deq.h"
#include "recsdk_sim/vector_layout.h"
#include "kernel_log.h"
#include "recsdk_sim/mix.h"
#include "recsdk_sim/cube_basic.h"
#include "recsdk_sim/debug.h"
#include "recsdk_sim/init_global_memory.h"
// Last: the entry points CANN declares that the emulation refuses by name.
#include "recsdk_sim/refused.h"

#endif  // RECSDK_SIM_KERNEL_OPERATOR_H
