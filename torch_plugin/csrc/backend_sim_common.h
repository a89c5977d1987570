// What the generated sim operator calls (backend_sim_ops.cpp) are made of: the view of an npu
// tensor the sim C ABI takes, and one launch's options and report, whose status becomes a torch
// error. Defined in backend_sim.cpp.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

#include "recsdk_sim/api.h"

namespace fbgemm_npu::backend {

// An npu tensor of the simulated device lives in host memory, so its data pointer goes to the
// kernel as is, like a device address to aclnn. An undefined tensor (an absent optional) has
// ndim -1.
RecsdkSimTensor sim_tensor(const at::Tensor& t);

// The report holds per-core counters for 128 cores (~13 KiB): heap, not stack.
struct Launch {
    RecsdkSimOptions options{};
    std::unique_ptr<RecsdkSimReport> report;

    Launch();

    // Raises for any status but RECSDK_SIM_OK, naming the operator `op`.
    void check(const char* op, int32_t status) const;
};

}  // namespace fbgemm_npu::backend
