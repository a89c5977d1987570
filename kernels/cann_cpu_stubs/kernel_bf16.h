// Declaration-only stand-in (README.md): the CPU library's bfloat16 type.
#ifndef RECSDK_CANN_CPU_STUBS_KERNEL_BF16_H
#define RECSDK_CANN_CPU_STUBS_KERNEL_BF16_H

#include <cstdint>

#include "recsdk_cpu_scalar.h"

using bfloat16_t = recsdk_cpu_stub::Scalar16<1>;

#endif  // RECSDK_CANN_CPU_STUBS_KERNEL_BF16_H
