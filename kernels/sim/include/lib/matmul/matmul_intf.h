// Matmul使用说明.md's include path for the Matmul API; the same as lib/matmul_intf.h.
#include "lib/matmul_intf.h"
