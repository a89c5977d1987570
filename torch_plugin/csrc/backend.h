// The one interface between the torch registrations and the operators.
//
// The operators' entry points are generated from their specs (kernels/ops/<op>/op.toml) by
// recsdk-build (recsdk_build/ops/codegen.py) into backend_ops.h: one function per operator,
// taking inputs, attributes, outputs in op.toml order, as the aclnn API and the generated sim
// wrappers take them. Their definitions are generated too, once per variant:
// backend_sim_ops.cpp (the simulated npu device, helpers in backend_sim_common.h) and
// backend_npu_ops.cpp (aclnn on torch_npu's current stream, helpers in backend_npu_common.h);
// exactly one variant is compiled into the extension. Neither is in the checkout: the plugin
// stage writes them into the copy of torch_plugin it builds.
//
// Callers (jagged.cpp, sparse.cpp, mxrec.cpp, tbe.cpp) have checked every argument and
// allocated the outputs; tensors are contiguous npu tensors, and an absent optional tensor is
// an undefined at::Tensor.
#pragma once

#include <ATen/ATen.h>

#include "backend_ops.h"

namespace fbgemm_npu::backend {

// "sim" or "npu": reported by fbgemm_npu_api.backend() so nobody mistakes one for the other.
const char* name();

}  // namespace fbgemm_npu::backend
