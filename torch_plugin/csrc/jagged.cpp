// Jagged tensors on the npu: fbgemm's jagged_to_padded_dense and dense_to_jagged.
//
// fbgemm 1.1.0's jagged_to_padded_dense and dense_to_jagged are CompositeImplicitAutograd
// wrappers around autograd functions that call jagged_to_padded_dense_forward,
// dense_to_jagged_forward and jagged_to_padded_dense_backward: those inner ops get the npu
// kernels, and autograd works without an npu autograd kernel of ours. The kernels are boxed
// (boxed.h explains why) and read their arguments by name.
#include <torch/autograd.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "backend.h"
#include "boxed.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

// The offsets of the single jagged dimension these operators support: an index tensor on the
// device of `data`.
const at::Tensor& device_offsets(const char* op, const at::Tensor& data, at::TensorList offsets) {
    const at::Tensor& off = single_offsets(op, offsets);
    check_npu(op, "offsets[0]", off);
    check_same_device(op, data, {&off});
    check_dtype(op, "offsets[0]", off, kIndexTypes);
    return off;
}

at::Tensor jagged_to_padded_dense_forward(const at::Tensor& values,
                                          const std::vector<at::Tensor>& offsets,
                                          const std::vector<int64_t>& max_lengths,
                                          double padding_value) {
    const char* op = "jagged_to_padded_dense";
    check_npu(op, "values", values);
    check_dtype(op, "values", values, kValueTypes);
    check_dim(op, "values", values, 1, 2);
    const at::Tensor& off = device_offsets(op, values, offsets);
    const at::Tensor host = check_offsets(op, "offsets[0]", off);
    // fbgemm's CPU kernel reads past the end of values here and returns whatever lies there.
    const int64_t last = host.data_ptr<int64_t>()[host.size(0) - 1];
    TORCH_CHECK_VALUE(last <= values.size(0), op, ": offsets[0][-1] = ", last,
                      " points past the end of values, which has ", values.size(0),
                      " row(s); the offsets must describe at most values.size(0) rows");
    TORCH_CHECK_VALUE(max_lengths.size() == 1, op,
                      ": max_lengths must have one entry per "
                      "jagged dimension (1), got ",
                      max_lengths.size());
    const int64_t max_length = max_lengths[0];
    TORCH_CHECK_VALUE(max_length >= 0, op, ": max_lengths[0] must be >= 0, got ", max_length);
    at::Tensor v = values.contiguous();
    const int64_t batch = off.size(0) - 1;
    std::vector<int64_t> shape{batch, max_length};
    if (v.dim() == 2)
        shape.push_back(v.size(1));
    at::Tensor out = at::empty(shape, v.options());
    // CANN float attributes are 32-bit: integer outputs take the exact int64 padding.
    backend::jagged_to_padded_dense(v, off.contiguous(), max_length, padding_value,
                                    static_cast<int64_t>(padding_value), out);
    return out;
}

// Shared by dense_to_jagged_forward and jagged_to_padded_dense_backward: dense [B, L(, D)] ->
// values [total_L(, D)].
at::Tensor dense_to_jagged_impl(const char* op, const at::Tensor& dense, at::TensorList offsets,
                                std::optional<int64_t> total_L) {
    check_npu(op, "dense", dense);
    check_dtype(op, "dense", dense, kValueTypes);
    check_dim(op, "dense", dense, 2, 3);
    const at::Tensor& off = device_offsets(op, dense, offsets);
    TORCH_CHECK_VALUE(off.dim() == 1 && off.size(0) == dense.size(0) + 1, op,
                      ": offsets[0] must have shape [B + 1] = [", dense.size(0) + 1,
                      "] for dense of shape ", dense.sizes(), ", got ", off.sizes());
    // The output length is data dependent: offsets[-1] unless the caller knows it.
    const at::Tensor host = check_offsets(op, "offsets[0]", off);
    const int64_t last = host.data_ptr<int64_t>()[host.size(0) - 1];
    const int64_t rows = total_L.has_value() ? *total_L : last;
    TORCH_CHECK_VALUE(rows >= 0, op, ": total_L must be >= 0, got ", rows);
    at::Tensor d = dense.contiguous();
    std::vector<int64_t> shape{rows};
    if (d.dim() == 3)
        shape.push_back(d.size(2));
    at::Tensor values = at::empty(shape, d.options());
    backend::dense_to_jagged(d, off.contiguous(), rows, values);
    return values;
}

// jagged_to_padded_dense_forward(Tensor values, Tensor[] offsets, SymInt[] max_lengths,
//                                float padding_value=0.) -> Tensor
void jagged_to_padded_dense_forward_boxed(const c10::OperatorHandle& handle,
                                          torch::jit::Stack* stack) {
    const Args a(handle, stack);
    at::Tensor out =
        jagged_to_padded_dense_forward(a.tensor("values"), a.tensor_list("offsets"),
                                       a.int_list("max_lengths"), a.real("padding_value"));
    torch::jit::drop(*stack, a.size());
    torch::jit::push(*stack, std::move(out));
}

// jagged_to_padded_dense_backward(Tensor grad_output, Tensor[] offsets, SymInt total_L)
//     -> Tensor
void jagged_to_padded_dense_backward_boxed(const c10::OperatorHandle& handle,
                                           torch::jit::Stack* stack) {
    const Args a(handle, stack);
    at::Tensor out =
        dense_to_jagged_impl("jagged_to_padded_dense_backward", a.tensor("grad_output"),
                             a.tensor_list("offsets"), a.integer("total_L"));
    torch::jit::drop(*stack, a.size());
    torch::jit::push(*stack, std::move(out));
}

// dense_to_jagged_forward(Tensor dense, Tensor[] x_offsets, SymInt? total_L=None) -> Tensor
void dense_to_jagged_forward_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    at::Tensor out =
        dense_to_jagged_impl("dense_to_jagged", a.tensor("dense"), a.tensor_list("x_offsets"),
                             a.optional_integer("total_L"));
    torch::jit::drop(*stack, a.size());
    torch::jit::push(*stack, std::move(out));
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("jagged_to_padded_dense_forward",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::jagged_to_padded_dense_forward_boxed>());
    m.impl("jagged_to_padded_dense_backward",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::jagged_to_padded_dense_backward_boxed>());
    m.impl("dense_to_jagged_forward",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::dense_to_jagged_forward_boxed>());
}
