// Sparse COO tensors on the simulated npu device (the SparsePrivateUse1 dispatch key).
//
// A sparse npu tensor is torch's own SparseTensorImpl whose indices and values are ordinary
// (dense) npu tensors, as on CUDA and on torch_npu. What only the device can do is registered
// here: making such tensors, reading and replacing their parts (these must alias, so they
// cannot go through a copying fallback), copies between devices and resizing. Every other
// aten operator on a sparse npu argument (coalesce, add, to_dense's add_, mul, sum, ...) runs
// through device.cpp's CPU fallback with torch's SparseCPU kernels, which copies the arguments
// to the CPU, runs the CPU kernel and copies results and mutated arguments back, and counts it.
#include <ATen/ATen.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "npu_sim.h"

namespace npu_sim {
namespace {

// The new tensor's SparseTensorImpl starts with empty indices and values on the *current* npu
// device before taking the given ones; the guard makes that the device of the values, so the
// parts and the whole agree when the values live on another npu. (torch moves the parts to the
// requested device before it gets here: parts elsewhere would make a tensor whose dispatch key
// and memory disagree.)
at::Tensor coo_from_parts(int64_t sparse_dim, int64_t dense_dim, c10::SymIntArrayRef size,
                          const at::Tensor& indices, const at::Tensor& values,
                          std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                          std::optional<at::Device> device, std::optional<bool> pin_memory,
                          std::optional<bool> is_coalesced) {
    TORCH_CHECK(indices.device() == values.device(), "npu_sim: a sparse tensor's indices (on ",
                indices.device(), ") and values (on ", values.device(),
                ") must be on the same device");
    TORCH_CHECK(values.device().is_privateuseone(),
                "npu_sim: a sparse npu tensor's indices and values must be npu tensors, got ",
                values.device(), "; move them with .to(\"npu\") first");
    c10::DeviceGuard guard(values.device());
    return at::native::new_with_dims_and_tensor_sparse_symint(sparse_dim, dense_dim, size, indices,
                                                              values, dtype, layout, device,
                                                              pin_memory, is_coalesced);
}

at::Tensor coo_with_dims(int64_t sparse_dim, int64_t dense_dim, at::IntArrayRef size,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
    c10::OptionalDeviceGuard guard(device);
    return at::native::new_with_dims_sparse(sparse_dim, dense_dim, size, dtype, layout, device,
                                            pin_memory);
}

at::Tensor empty_coo(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                     std::optional<at::Layout> layout, std::optional<at::Device> device,
                     std::optional<bool> pin_memory,
                     std::optional<at::MemoryFormat> memory_format) {
    c10::OptionalDeviceGuard guard(device);
    return at::native::empty_sparse(size, dtype, layout, device, pin_memory, memory_format);
}

// The CPU fallback writes a mutated sparse argument back through this: `dst` (on the npu)
// takes the shape, dimensions, coalesced flag and a copy of the indices and values of `self`.
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
    TORCH_CHECK(self.is_sparse() && dst.is_sparse(),
                "npu_sim: copying between a sparse and a dense tensor (", self.layout(), " to ",
                dst.layout(), ") is not supported; convert with to_dense() or to_sparse() first");
    c10::OptionalDeviceGuard guard(dst.device());
    auto* impl = at::sparse::get_sparse_impl(dst);
    impl->resize_and_clear_(self.sparse_dim(), self.dense_dim(), self.sizes());
    at::sparse::copy_into_sparse(dst, self._indices(), self._values(), /*non_blocking=*/false);
    impl->set_coalesced(self.is_coalesced());
    return dst;
}

void sparse_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    run_aten_on_cpu(op, stack, c10::DispatchKey::SparseCPU);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
    m.impl("_sparse_coo_tensor_with_dims_and_tensors", coo_from_parts);
    m.impl("_sparse_coo_tensor_with_dims", coo_with_dims);
    m.impl("empty.memory_format", empty_coo);
    m.impl("_copy_from_and_resize", copy_from_and_resize);
    m.impl("copy_", at::native::copy_sparse_wrapper_);
    m.impl("clone", at::native::clone_sparse);
    m.impl("zero_", at::native::zero_sparse_);
    m.impl("sparse_resize_", at::native::sparse_resize_);
    m.impl("sparse_resize_and_clear_", at::native::sparse_resize_and_clear_);
    // The parts and the metadata, read and written in place.
    m.impl("_indices", at::native::_indices_sparse);
    m.impl("_values", at::native::_values_sparse);
    m.impl("indices", at::native::indices_sparse);
    m.impl("values", at::native::values_sparse);
    m.impl("_nnz", at::native::_nnz_sparse);
    m.impl("sparse_dim", at::native::sparse_dim_sparse);
    m.impl("dense_dim", at::native::dense_dim_sparse);
    m.impl("_dimI", at::native::sparse_dim_sparse);
    m.impl("_dimV", at::native::dense_dim_sparse);
    m.impl("is_coalesced", at::native::is_coalesced_sparse);
    m.impl("_coalesced_", at::native::_coalesced_sparse_);
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_cpu_fallback>());
}

}  // namespace npu_sim
