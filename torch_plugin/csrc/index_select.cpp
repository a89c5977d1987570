// Batched row selection on the npu: fbgemm's batch_index_select_dim0, forward and backward.
//
// fbgemm 1.1.0 registers this operator for AutogradCPU only (its CPU autograd function does the
// work), so the npu gets both keys here: PrivateUse1 (the forward, reached below autograd) and
// AutogradPrivateUse1 (an autograd function whose backward adds every output row's gradient into
// the table row it came from). The argument checks and their messages are fbgemm's. The tables'
// layout comes from fbgemm's host lists (no device read): one [T, 8] descriptor tensor per call.
#include <torch/autograd.h>
#include <torch/library.h>

#include <cstdint>
#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

constexpr const char* kOp = "batch_index_select_dim0";

struct Layout {
    at::Tensor tables;  // [T, 8] int64 on the device
    int64_t input_len = 0;
    int64_t output_len = 0;
};

// fbgemm's checks (forward_impl of its CPU autograd function), in its order and words.
void check_lists(const at::Tensor& inputs, at::IntArrayRef num, at::IntArrayRef rows,
                 at::IntArrayRef cols, bool permute) {
    TORCH_CHECK(num.size() == rows.size(),
                "[batch_index_select_dim0] input_rows must have the same length as "
                "input_num_indices.");
    TORCH_CHECK(num.size() == cols.size(),
                "[batch_index_select_dim0] input_columns must have the same length as "
                "input_num_indices.");
    TORCH_CHECK(reinterpret_cast<uint64_t>(inputs.data_ptr()) % 16 == 0,
                "Currently batch_index_select only supports 16-byte align input tensors");
    if (inputs.numel() == 0)
        return;
    for (int64_t c : cols)
        TORCH_CHECK(c > 0, "[batch_index_select_dim0] All input_columns must be the same.");
    for (int64_t r : rows)
        TORCH_CHECK(r > 0, "[batch_index_select_dim0] All input_rows must be the same.");
    if (permute) {
        TORCH_CHECK(!num.empty() && num[0] > 0);
        for (int64_t n : num) {
            TORCH_CHECK(n == num[0],
                        "[batch_index_select_dim0] All input_num_indices must be the same if "
                        "permute_output_dim_0_1 is true.");
        }
    } else {
        for (int64_t n : num) {
            TORCH_CHECK(n > 0,
                        "[batch_index_select_dim0] All input_num_indices must be greater than "
                        "zero.");
        }
    }
}

Layout layout(const at::Tensor& inputs, const at::Tensor& indices, at::IntArrayRef num,
              at::IntArrayRef rows, at::IntArrayRef cols, bool permute) {
    const int64_t t = static_cast<int64_t>(num.size());
    int64_t total_cols = 0;
    for (int64_t c : cols)
        total_cols += c;
    at::Tensor host = at::empty({t, 8}, at::kLong);
    int64_t* d = host.data_ptr<int64_t>();
    Layout out;
    int64_t idx_off = 0;
    int64_t col_off = 0;
    for (int64_t i = 0; i < t; ++i) {
        int64_t* row = d + 8 * i;
        row[0] = out.input_len;
        row[1] = rows[i];
        row[2] = cols[i];
        row[3] = idx_off;
        row[4] = num[i];
        // Interleaved (permute_output_dim_0_1): output row k is [table 0's k-th row, table 1's,
        // ...], so table i starts at its column offset and strides by all the columns.
        row[5] = permute ? col_off : out.output_len;
        row[6] = permute ? total_cols : cols[i];
        row[7] = 0;
        out.input_len += rows[i] * cols[i];
        out.output_len += num[i] * cols[i];
        idx_off += num[i];
        col_off += cols[i];
    }
    // at::split_with_sizes' own conditions, which fbgemm's CPU op meets when splitting.
    TORCH_CHECK_VALUE(out.input_len == inputs.numel(), kOp,
                      ": inputs must hold sum(input_rows * input_columns) = ", out.input_len,
                      " elements, got ", inputs.numel());
    TORCH_CHECK_VALUE(idx_off == indices.numel(), kOp,
                      ": indices must hold sum(input_num_indices) = ", idx_off, " entries, got ",
                      indices.numel());
    out.tables = host.to(inputs.device());
    return out;
}

void check_tensors(const at::Tensor& inputs, const at::Tensor& indices) {
    check_npu(kOp, "inputs", inputs);
    check_npu(kOp, "indices", indices);
    check_same_device(kOp, inputs, {&indices});
    check_dtype(kOp, "inputs", inputs, {at::kFloat, at::kHalf, at::kBFloat16});
    check_dtype(kOp, "indices", indices, kIndexTypes);
    check_dim(kOp, "inputs", inputs, 1, 1);
    check_dim(kOp, "indices", indices, 1, 1);
}

at::Tensor batch_index_select_dim0(const at::Tensor& inputs, const at::Tensor& indices,
                                   at::IntArrayRef num, at::IntArrayRef rows, at::IntArrayRef cols,
                                   bool permute) {
    check_tensors(inputs, indices);
    check_lists(inputs, num, rows, cols, permute);
    if (inputs.numel() == 0)
        return at::empty({0}, inputs.options());
    const Layout l = layout(inputs, indices, num, rows, cols, permute);
    at::Tensor output = at::empty({l.output_len}, inputs.options());
    if (l.output_len > 0) {
        backend::batch_index_select_dim0(inputs.contiguous(), indices.contiguous(), l.tables,
                                         l.output_len, output);
    }
    return output;
}

class BatchIndexSelectDim0Function
    : public torch::autograd::Function<BatchIndexSelectDim0Function> {
public:
    static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& inputs,
                              const at::Tensor& indices, at::IntArrayRef num, at::IntArrayRef rows,
                              at::IntArrayRef cols, bool permute) {
        at::AutoDispatchBelowADInplaceOrView guard;
        at::Tensor output = batch_index_select_dim0(inputs, indices, num, rows, cols, permute);
        ctx->save_for_backward({indices});
        ctx->saved_data["num"] = num.vec();
        ctx->saved_data["rows"] = rows.vec();
        ctx->saved_data["cols"] = cols.vec();
        ctx->saved_data["permute"] = permute;
        ctx->saved_data["input_numel"] = inputs.numel();
        return output;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const at::Tensor indices = ctx->get_saved_variables()[0];
        const std::vector<int64_t> num = ctx->saved_data["num"].toIntVector();
        const std::vector<int64_t> rows = ctx->saved_data["rows"].toIntVector();
        const std::vector<int64_t> cols = ctx->saved_data["cols"].toIntVector();
        const bool permute = ctx->saved_data["permute"].toBool();
        const int64_t input_numel = ctx->saved_data["input_numel"].toInt();
        const at::Tensor grad = grads[0].contiguous();
        at::Tensor grad_inputs = at::zeros({input_numel}, grad.options());
        if (input_numel > 0 && grad.numel() > 0) {
            const Layout l = layout(grad_inputs, indices, num, rows, cols, permute);
            TORCH_CHECK_VALUE(grad.numel() == l.output_len, kOp, ": the gradient has ",
                              grad.numel(), " elements, the output had ", l.output_len);
            backend::batch_index_select_dim0_backward(grad, indices.contiguous(), l.tables,
                                                      grad_inputs);
        }
        return {grad_inputs, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

at::Tensor batch_index_select_dim0_autograd(const at::Tensor& inputs, const at::Tensor& indices,
                                            at::IntArrayRef num, at::IntArrayRef rows,
                                            at::IntArrayRef cols, bool permute) {
    return BatchIndexSelectDim0Function::apply(inputs, indices, num, rows, cols, permute);
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("batch_index_select_dim0", &fbgemm_npu::batch_index_select_dim0);
}

TORCH_LIBRARY_IMPL(fbgemm, AutogradPrivateUse1, m) {
    m.impl("batch_index_select_dim0", &fbgemm_npu::batch_index_select_dim0_autograd);
}
