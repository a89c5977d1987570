// Declaration-only stand-in for stub_def.h of CANN's closed CPU debug library (tikicpulib):
// see README.md. Names and kinds come from what asc-devkit's headers use in CPU debug mode
// (ASCENDC_CPU_DEBUG=1); nothing here runs.
#ifndef RECSDK_CANN_CPU_STUBS_STUB_DEF_H
#define RECSDK_CANN_CPU_STUBS_STUB_DEF_H

#include <array>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "kernel_bf16.h"
#include "kernel_fp16.h"
#include "kernel_fp8.h"

// The device compiler's address-space and function qualifiers mean nothing on the host.
#define __global__
#define __WORKGROUP_LOCAL__
#define __BLOCK_LOCAL__
#define __VEC_SCOPE__
#define __aicore__
#define __host_aicore__
#define __host__
#define __gm__
#define __cbuf__
#define __ubuf__
#define __cc__
#define __ca__
#define __cb__
#define __fbuf__
#define __ssbuf__
#define __sync_noalias__
#define __sync_alias__
#define __check_sync_alias__
#define __sync_out__
#define __sync_in__
#define __inout_pipe__(...)
#define __in_pipe__(...)
#define __out_pipe__(...)
#define __simt_callee__
#define __simt_vf__
#define __simd_callee__
#define __simd_vf__
#define __no_simd_vf_fusion__
#define __disable_kernel_type_autoinfer__
#define LAUNCH_BOUND(x)
#define ASCENDC_HOST_AICORE
#define __vector__

// The pipes and event ids the device compiler predefines.
enum pipe_t {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_MTE4,
    PIPE_MTE5,
    PIPE_V2,
    PIPE_FIX,
};
enum event_t {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
};

// Vector register types of the register-based (SIMD) API: sized arrays on the host.
namespace recsdk_cpu_stub {
constexpr uint16_t kVecBytes = 256;
}
using vector_u8 = std::array<uint8_t, recsdk_cpu_stub::kVecBytes>;
using vector_s8 = std::array<int8_t, recsdk_cpu_stub::kVecBytes>;
using vector_u16 = std::array<uint16_t, recsdk_cpu_stub::kVecBytes / 2>;
using vector_s16 = std::array<int16_t, recsdk_cpu_stub::kVecBytes / 2>;
using vector_u32 = std::array<uint32_t, recsdk_cpu_stub::kVecBytes / 4>;
using vector_s32 = std::array<int32_t, recsdk_cpu_stub::kVecBytes / 4>;
using vector_u64 = std::array<uint64_t, recsdk_cpu_stub::kVecBytes / 8>;
using vector_s64 = std::array<int64_t, recsdk_cpu_stub::kVecBytes / 8>;
using vector_2xvl_u64 = vector_u64;
using vector_2xvl_s64 = vector_s64;
using vector_f16 = std::array<half, recsdk_cpu_stub::kVecBytes / 2>;
using vector_bf16 = std::array<bfloat16_t, recsdk_cpu_stub::kVecBytes / 2>;
using vector_f32 = std::array<float, recsdk_cpu_stub::kVecBytes / 4>;
using vector_f8e5m2 = std::array<fp8_e5m2_t, recsdk_cpu_stub::kVecBytes>;
using vector_f8e4m3 = std::array<fp8_e4m3fn_t, recsdk_cpu_stub::kVecBytes>;
using vector_f8e8m0 = std::array<fp8_e8m0_t, recsdk_cpu_stub::kVecBytes>;
using vector_hif8 = std::array<hifloat8_t, recsdk_cpu_stub::kVecBytes>;
using vector_f4e2m1x2 = std::array<fp4x2_e2m1_t, recsdk_cpu_stub::kVecBytes>;
using vector_f4e1m2x2 = std::array<fp4x2_e1m2_t, recsdk_cpu_stub::kVecBytes>;
using vector_s4x2 = std::array<int4x2_t, recsdk_cpu_stub::kVecBytes>;
using vector_bool = uint16_t;
using vector_align = std::array<int8_t, 32>;
struct vector_address {
    vector_address();
    explicit vector_address(int64_t);
    operator int64_t&();
    int64_t value;
};

#define Mode_Zeroing_Type Literal

// The CPU library's per-core state.
extern int64_t block_idx;
extern int64_t block_num;
extern int64_t g_ubBase;
extern uint64_t g_tilingKey;
extern int32_t g_matmulCount;
extern int32_t g_coreType;
extern int32_t g_taskRation;
extern int32_t sub_block_idx;
extern uint64_t* g_workspaceSharedPtr;
extern uint64_t g_fullSizeOfWorkspace;
extern uint64_t g_fixpipeNdNzParam;
extern uint32_t g_threadDimX;
extern uint32_t g_threadDimY;
extern uint32_t g_threadDimZ;
extern thread_local uint32_t g_threadIdxX;
extern thread_local uint32_t g_threadIdxY;
extern thread_local uint32_t g_threadIdxZ;
std::string& GetStrCoreType();

enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };
enum class SocVersion {
    VER_100 = 100,
    VER_200 = 200,
    VER_220 = 220,
    VER_310 = 310,
    VER_510 = 510,
    VER_MAX = 0xFFFFFF
};
extern KernelMode g_kernelMode;
extern SocVersion g_socVersion;

namespace AscendC {
extern const int MIX_TYPE;
extern const int AIC_TYPE;
extern const int AIV_TYPE;
extern bool g_isVdeq;
constexpr int32_t FLAG_NUM = 16;
constexpr int32_t MAX_CORE_NUM_V220 = 25;
constexpr int32_t MIX_IN_GROUP_CORE_NUM = 3;
constexpr int32_t AIV_IN_GROUP_CORE_NUM = 2;
void* GmAlloc(size_t size);
void GmFree(void* ptr);
void SetGCoreType(int type);
void SetKernelMode(KernelMode mode);
void CheckSyncState();
inline constexpr int32_t GetMaxCoreNum() {
    return MAX_CORE_NUM_V220;
}
}  // namespace AscendC

#endif  // RECSDK_CANN_CPU_STUBS_STUB_DEF_H
