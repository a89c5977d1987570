// The multi-device merges on the npu: fbgemm's merge_pooled_embeddings, all_to_one_device and
// sum_reduce_to_one, which torchrec's inference sharding (EmbeddingsAllToOne,
// EmbeddingsAllToOneReduce) and tensor pools call to gather several devices' outputs on one.
//
// fbgemm's CUDA kernels (merge_pooled_embedding_ops_gpu.cpp, 1.1.0) move every input held by
// another device with a peer-to-peer memcpy and combine on the target device. Here the moves are
// the runtime's device-to-device copies (Tensor::copy_ between npu devices: in the simulation,
// npu_sim's copy path), and the combines are AscendC operators launched on the target device:
// concat_slab writes each input's slab of the concatenation (one launch per input, no overlap),
// sum_stacked adds the K inputs, which the copies stack into one [K, ...] tensor.
//
// Dispatch: PrivateUse1, where fbgemm registers CPU and CUDA kernels; like fbgemm, no autograd.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

constexpr c10::DeviceType kNpu = c10::DeviceType::PrivateUse1;

// The npu device a call gathers on: fbgemm's CUDA kernels take the current device when the
// target has no index, and refuse an index past the device count.
at::Device npu_target(const char* op, const at::Device& target) {
    TORCH_CHECK(target.type() == kNpu, op, ": target_device must be an npu device, got ", target);
    c10::impl::VirtualGuardImpl impl(kNpu);
    const at::Device device = target.has_index() ? target : impl.getDevice();
    TORCH_CHECK(device.index() >= 0 && device.index() < impl.deviceCount(), op,
                ": target_device_index=", static_cast<int>(device.index()),
                ", num_devices=", static_cast<int>(impl.deviceCount()));
    return device;
}

// `t` on `device` with `dtype`, contiguous: the tensor itself when it already is, else a
// runtime copy (between devices, the device-to-device copy).
at::Tensor moved(const at::Tensor& t, const at::Device& device, at::ScalarType dtype) {
    if (t.device() == device && t.scalar_type() == dtype && t.is_contiguous())
        return t;
    at::Tensor out = at::empty(t.sizes(), t.options().device(device).dtype(dtype));
    out.copy_(t);
    return out;
}

// The C++ signatures are those of fbgemm's CPU kernels: the dispatcher refuses a second kernel
// whose unboxed signature differs from the first's.
at::Tensor merge_pooled_embeddings(std::vector<at::Tensor> pooled_embeddings,
                                   int64_t uncat_dim_size, at::Device target_device,
                                   int64_t cat_dim) {
    const char* op = "merge_pooled_embeddings";
    TORCH_CHECK_VALUE(!pooled_embeddings.empty(), op, ": pooled_embeddings is empty");
    // fbgemm's cat_dim_2d_output_shape: 2-D tensors only, cat along dim 0 or 1, the other dim
    // uncat_dim_size everywhere (its message).
    TORCH_CHECK_VALUE(cat_dim >= 0 && cat_dim <= 1, op, ": cat_dim must be 0 or 1, got ", cat_dim);
    const at::Tensor& first = pooled_embeddings[0];
    check_dtype(op, "pooled_embeddings[0]", first, kValueTypes);
    int64_t total = 0;
    for (size_t i = 0; i < pooled_embeddings.size(); ++i) {
        const at::Tensor& t = pooled_embeddings[i];
        const std::string name = "pooled_embeddings[" + std::to_string(i) + "]";
        TORCH_CHECK_VALUE(t.defined(), op, ": ", name, " is an undefined tensor");
        check_dim(op, name.c_str(), t, 2, 2);
        TORCH_CHECK_VALUE(t.size(1 - cat_dim) == uncat_dim_size,
                          "cat dim does not match, compare tensor dim = ", 1 - cat_dim,
                          ", expect size = ", uncat_dim_size,
                          ", but got size = ", t.size(1 - cat_dim), " on device ", t.device());
        total += t.size(cat_dim);
    }
    const at::ScalarType dtype = first.scalar_type();
    const std::vector<int64_t> shape = cat_dim == 0 ? std::vector<int64_t>{total, uncat_dim_size}
                                                    : std::vector<int64_t>{uncat_dim_size, total};
    if (target_device.is_cpu()) {
        // fbgemm copies to a host target too (its all_to_one_target_cpu); nothing to launch.
        std::vector<at::Tensor> host;
        for (const at::Tensor& t : pooled_embeddings)
            host.push_back(t.to(at::kCPU, dtype));
        return at::cat(host, cat_dim);
    }
    const at::Device device = npu_target(op, target_device);
    c10::DeviceGuard guard(device);
    at::Tensor out = at::empty(shape, first.options().device(device).dtype(dtype));
    int64_t offset = 0;
    for (const at::Tensor& t : pooled_embeddings) {
        const int64_t n = t.size(cat_dim);
        if (n > 0 && t.size(1 - cat_dim) > 0)
            backend::concat_slab(moved(t, device, dtype), out, cat_dim, offset);
        offset += n;
    }
    return out;
}

std::vector<at::Tensor> all_to_one_device(std::vector<at::Tensor> input_tensors,
                                          at::Device target_device) {
    const char* op = "all_to_one_device";
    const at::Device device = npu_target(op, target_device);
    for (size_t i = 0; i < input_tensors.size(); ++i) {
        const std::string name = "input_tensors[" + std::to_string(i) + "]";
        check_npu(op, name.c_str(), input_tensors[i]);  // fbgemm: TORCH_CHECK(is_cuda())
    }
    c10::DeviceGuard guard(device);
    std::vector<at::Tensor> outputs;
    outputs.reserve(input_tensors.size());
    for (const at::Tensor& t : input_tensors) {
        if (t.device() == device) {
            outputs.push_back(t);  // fbgemm returns the input itself (skip_if_same_device)
        } else {
            at::Tensor out = at::empty(t.sizes(), t.options().device(device));
            out.copy_(t);
            outputs.push_back(out);
        }
    }
    return outputs;
}

// A new tensor on the target device, as fbgemm's CPU kernel returns (its CUDA kernel adds into
// the inputs themselves and may return one of them).
at::Tensor sum_reduce_to_one(std::vector<at::Tensor> input_tensors, at::Device target_device) {
    const char* op = "sum_reduce_to_one";
    TORCH_CHECK_VALUE(!input_tensors.empty(), op, ": reducing no tensor is undefined");
    const at::Device device = npu_target(op, target_device);
    const at::Tensor& first = input_tensors[0];
    for (size_t i = 0; i < input_tensors.size(); ++i) {
        const at::Tensor& t = input_tensors[i];
        const std::string name = "input_tensors[" + std::to_string(i) + "]";
        check_npu(op, name.c_str(), t);
        check_dtype(op, name.c_str(), t, {at::kFloat, at::kHalf, at::kBFloat16});
        check_dim(op, name.c_str(), t, 0, 7);  // the kernel's stack has at most 8 dims
        TORCH_CHECK_TYPE(t.scalar_type() == first.scalar_type(), op, ": ", name,
                         " must have the dtype of input_tensors[0] (", first.scalar_type(),
                         "), got ", t.scalar_type());
        TORCH_CHECK_VALUE(t.sizes() == first.sizes(), op, ": ", name,
                          " must have the shape of input_tensors[0] ", first.sizes(), ", got ",
                          t.sizes());
    }
    c10::DeviceGuard guard(device);
    at::Tensor out = at::empty(first.sizes(), first.options().device(device));
    if (out.numel() == 0)
        return out;
    // One launch reads all K: each input is copied into its row of the stack on the target.
    std::vector<int64_t> stacked{static_cast<int64_t>(input_tensors.size())};
    stacked.insert(stacked.end(), first.sizes().begin(), first.sizes().end());
    at::Tensor stack = at::empty(stacked, first.options().device(device));
    for (size_t i = 0; i < input_tensors.size(); ++i)
        stack.select(0, static_cast<int64_t>(i)).copy_(input_tensors[i]);
    backend::sum_stacked(stack.dim() == 1 ? stack.unsqueeze(1) : stack,
                         out.dim() == 0 ? out.unsqueeze(0) : out);
    return out;
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("merge_pooled_embeddings", &fbgemm_npu::merge_pooled_embeddings);
    m.impl("all_to_one_device", &fbgemm_npu::all_to_one_device);
    m.impl("sum_reduce_to_one", &fbgemm_npu::sum_reduce_to_one);
}
