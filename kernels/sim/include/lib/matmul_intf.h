// The emulation's lib/matmul_intf.h (asc-devkit include/adv_api/matmul/matmul_intf.h;
// Matmul使用说明.md includes it as "lib/matmul/matmul_intf.h", kernels in the field as
// "lib/matmul_intf.h": both work). The Matmul API itself is recsdk_sim/matmul.h.
//
// ASCENDC_CUBE_ONLY decides where the Matmul object runs (Matmul使用说明.md). The toolkit reads it
// when this header is included; the emulation reads it where REGIST_MATMUL_OBJ expands, because the
// generated sim launcher includes a kernel's headers before the kernel's own #defines. The probe:
// defined empty (the documented form) or as a number below 100, ASCENDC_CUBE_ONLY - 100 is
// negative; not defined, the name is the constant below.
#ifndef RECSDK_SIM_LIB_MATMUL_INTF_H
#define RECSDK_SIM_LIB_MATMUL_INTF_H

#include "kernel_operator.h"
#include "recsdk_sim/matmul.h"

#ifndef ASCENDC_CUBE_ONLY
constexpr int ASCENDC_CUBE_ONLY = 1000;
#endif

#define REGIST_MATMUL_OBJ(tpipe, workspace, ...)                                        \
    if (::recsdk::sim::RegisterMatmuls((ASCENDC_CUBE_ONLY - 100) < 0, tpipe, workspace, \
                                       ::recsdk::sim::SrcLoc(), __VA_ARGS__))           \
    return
#define REGIST_MATMUL_OBJ_STATIC REGIST_MATMUL_OBJ
#define REGIST_CUBE_OBJ REGIST_MATMUL_OBJ

#endif  // RECSDK_SIM_LIB_MATMUL_INTF_H
