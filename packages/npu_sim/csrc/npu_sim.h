#pragma once
// Shared declarations of the simulated npu device (host-memory PrivateUse1).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <map>
#include <string>

namespace npu_sim {

// A CPU tensor aliasing an npu tensor's memory (the device memory is host memory), so CPU
// kernels and gloo can read and write npu tensors without copies. CPU tensors pass through.
at::Tensor host_view(const at::Tensor& t);

// The CPU fallback of both npu dispatch keys: runs an aten operator's kernel of `cpu_key`
// (CPU, or SparseCPU for sparse arguments) on npu tensors and counts it (a sparse one under its
// name + " (sparse)"); any other library's operator is refused.
void run_aten_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                     c10::DispatchKey cpu_key);
// What run_aten_on_cpu ran, per operator.
std::map<std::string, int64_t> fallback_stats();
void reset_fallback_stats();
std::map<std::string, int64_t> memory_stats(int64_t device);
void reset_peak_memory_stats(int64_t device);
int64_t device_count();
int64_t current_device();
void set_device(int64_t index);
void register_hooks();

}  // namespace npu_sim
