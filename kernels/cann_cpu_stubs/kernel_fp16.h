// Declaration-only stand-in (README.md): the CPU library's IEEE half-precision type.
#ifndef RECSDK_CANN_CPU_STUBS_KERNEL_FP16_H
#define RECSDK_CANN_CPU_STUBS_KERNEL_FP16_H

#include <cstdint>

#include "recsdk_cpu_scalar.h"

using half = recsdk_cpu_stub::Scalar16<0>;

#endif  // RECSDK_CANN_CPU_STUBS_KERNEL_FP16_H
