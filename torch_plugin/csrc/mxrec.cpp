// mxrec's rank-1 gather on the npu: mxrec::gather_for_rank1 and its backward,
// index_select_for_rank1_backward.
//
// The operators are ours: their schemas are defined here (TORCH_LIBRARY_FRAGMENT, so other
// libraries extending mxrec still load next to us), with npu kernels for PrivateUse1 and the
// gather's autograd kernel for AutogradPrivateUse1.
#include <torch/autograd.h>
#include <torch/library.h>

#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

at::Tensor gather_for_rank1(const at::Tensor& x, const at::Tensor& index) {
    const char* op = "gather_for_rank1";
    check_npu(op, "x", x);
    check_npu(op, "index", index);
    check_same_device(op, x, {&index});
    check_dtype(op, "x", x, kValueTypes);
    check_dtype(op, "index", index, kIndexTypes);
    check_dim(op, "x", x, 1, 1);
    check_dim(op, "index", index, 1, 1);
    at::Tensor out = at::empty({index.size(0)}, x.options());
    backend::gather_for_rank1(x.contiguous(), index.contiguous(), out);
    return out;
}

std::vector<at::Tensor> index_select_for_rank1_backward(const at::Tensor& grad, const at::Tensor& x,
                                                        const at::Tensor& index) {
    const char* op = "index_select_for_rank1_backward";
    check_npu(op, "grad", grad);
    check_npu(op, "x", x);
    check_npu(op, "index", index);
    check_same_device(op, grad, {&x, &index});
    check_dtype(op, "grad", grad, {at::kFloat, at::kHalf, at::kBFloat16});
    TORCH_CHECK_TYPE(x.scalar_type() == grad.scalar_type(), op, ": x must have grad's dtype ",
                     grad.scalar_type(), ", got ", x.scalar_type());
    check_dtype(op, "index", index, kIndexTypes);
    check_dim(op, "grad", grad, 1, 1);
    check_dim(op, "x", x, 1, 1);
    check_dim(op, "index", index, 1, 1);
    TORCH_CHECK_VALUE(grad.size(0) == index.size(0), op, ": grad (", grad.size(0),
                      " entries) and index (", index.size(0), ") must have the same length");
    at::Tensor out = at::empty({x.size(0)}, grad.options());
    // The kernel only reads x's length; its data need not be contiguous or even valid.
    backend::index_select_for_rank1_backward(grad.contiguous(), x.contiguous(), index.contiguous(),
                                             out);
    return {out};
}

class GatherForRank1Function : public torch::autograd::Function<GatherForRank1Function> {
public:
    static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                              const at::Tensor& index) {
        // Below autograd, so the call reaches the PrivateUse1 kernel instead of this one.
        at::AutoDispatchBelowADInplaceOrView guard;
        static auto fwd = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("mxrec::gather_for_rank1", "")
                              .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
        ctx->save_for_backward({x, index});
        return fwd.call(x, index);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        static auto bwd = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("mxrec::index_select_for_rank1_backward", "")
                              .typed<std::vector<at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                             const at::Tensor&)>();
        const auto saved = ctx->get_saved_variables();
        std::vector<at::Tensor> grad_x = bwd.call(grads[0].contiguous(), saved[0], saved[1]);
        return {grad_x[0], at::Tensor()};
    }
};

at::Tensor gather_for_rank1_autograd(const at::Tensor& x, const at::Tensor& index) {
    return GatherForRank1Function::apply(x, index);
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_FRAGMENT(mxrec, m) {
    m.def("gather_for_rank1(Tensor x, Tensor index) -> Tensor");
    m.def("index_select_for_rank1_backward(Tensor grad, Tensor x, Tensor index) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(mxrec, PrivateUse1, m) {
    m.impl("gather_for_rank1", &fbgemm_npu::gather_for_rank1);
    m.impl("index_select_for_rank1_backward", &fbgemm_npu::index_select_for_rank1_backward);
}

TORCH_LIBRARY_IMPL(mxrec, AutogradPrivateUse1, m) {
    m.impl("gather_for_rank1", &fbgemm_npu::gather_for_rank1_autograd);
}
