// Declaration-only stand-in (README.md): the CPU library's 8- and 4-bit float types (A2/A3
// kernels never compute with them; the headers name them in type lists).
#ifndef RECSDK_CANN_CPU_STUBS_KERNEL_FP8_H
#define RECSDK_CANN_CPU_STUBS_KERNEL_FP8_H

#include <cstdint>

#include "recsdk_cpu_scalar.h"

using fp8_e4m3fn_t = recsdk_cpu_stub::Scalar8<0>;
using fp8_e5m2_t = recsdk_cpu_stub::Scalar8<1>;
using fp8_e8m0_t = recsdk_cpu_stub::Scalar8<2>;
using hifloat8_t = recsdk_cpu_stub::Scalar8<3>;
using fp4x2_e2m1_t = recsdk_cpu_stub::Scalar8<4>;
using fp4x2_e1m2_t = recsdk_cpu_stub::Scalar8<5>;
using int4x2_t = recsdk_cpu_stub::Scalar8<6>;

#endif  // RECSDK_CANN_CPU_STUBS_KERNEL_FP8_H
