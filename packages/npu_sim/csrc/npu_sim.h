#pragma once
// Shared declarations of the simulated npu device (host-memory PrivateUse1).
#include <ATen/ATen.h>

#include <map>
#include <string>

namespace npu_sim {

// A CPU tensor aliasing an npu tensor's memory (the device memory is host memory), so CPU
// kernels and gloo can read and write npu tensors without copies. CPU tensors pass through.
at::Tensor host_view(const at::Tensor& t);

// aten operators run through the CPU fallbacks, dense and sparse (the sparse ones' names end
// in " (sparse)"), with counts.
std::map<std::string, int64_t> fallback_stats();
void reset_fallback_stats();
std::map<std::string, int64_t> sparse_fallback_stats();
void reset_sparse_fallback_stats();
std::map<std::string, int64_t> memory_stats(int64_t device);
void reset_peak_memory_stats(int64_t device);
int64_t device_count();
int64_t current_device();
void set_device(int64_t index);
void register_hooks();

}  // namespace npu_sim
