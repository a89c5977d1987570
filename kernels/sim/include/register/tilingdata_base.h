// The emulation's register/tilingdata_base.h: the tiling-data macros of an operator's op_host
// tiling header, expanded as the CANN operator compiler's kernel-side tiling header has them
// (asc-devkit impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py): a POD struct packed to
// 8, fields in declaration order, scalars defaulting to 0 and arrays to zeros. The host-side
// accessors (set_<field>, SaveToBuffer, ...) of the toolkit's TilingDef class are not emulated:
// the sim target's tiling functions fill the struct directly.
//
// REGISTER_TILING_DATA_CLASS(op, cls) records cls as op's tiling struct; the struct the kernel's
// GET_TILING_DATA reads is named with REGISTER_TILING_DEFAULT (recsdk_sim/sync.h), which the
// compiler's generated header would imply from the operator being compiled.
#ifndef RECSDK_SIM_REGISTER_TILINGDATA_BASE_H
#define RECSDK_SIM_REGISTER_TILINGDATA_BASE_H

#include <cstdint>

#define BEGIN_TILING_DATA_DEF(CLASS) _Pragma("pack(push, 8)") struct CLASS {
#define TILING_DATA_FIELD_DEF(TYPE, NAME) TYPE NAME = 0
#define TILING_DATA_FIELD_DEF_ARR(TYPE, COUNT, NAME) TYPE NAME[COUNT] = {}
#define TILING_DATA_FIELD_DEF_STRUCT(TYPE, NAME) TYPE NAME
// The trailing static_assert takes the semicolon the op_host idiom writes after the macro.
#define END_TILING_DATA_DEF \
    }                       \
    ;                       \
    _Pragma("pack(pop)") static_assert(true, "")
#define REGISTER_TILING_DATA_CLASS(OP, CLASS) \
    struct RecsdkSimTilingClassOf##OP {       \
        using type = CLASS;                   \
    };

#endif  // RECSDK_SIM_REGISTER_TILINGDATA_BASE_H
