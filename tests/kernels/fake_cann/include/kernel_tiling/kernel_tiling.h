// Stand-in for the CANN toolkit's kernel_tiling/kernel_tiling.h (the POD tiling structs of the
// high-level APIs, which a standard C++ tiling struct includes on the host as on the device:
// 如何使用Tiling依赖的头文件.md): the emulation's copy has the toolkit's field names and layout.
#include "../../../../../kernels/sim/include/kernel_tiling/kernel_tiling.h"
