// Declaration-only stand-in (README.md): the SIMT API's CPU declarations. Our kernels use no
// SIMT code, so nothing is declared.
#ifndef RECSDK_CANN_CPU_STUBS_SIMT_STUB_H
#define RECSDK_CANN_CPU_STUBS_SIMT_STUB_H
#endif  // RECSDK_CANN_CPU_STUBS_SIMT_STUB_H
