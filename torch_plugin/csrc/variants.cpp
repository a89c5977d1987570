// fbgemm operators that are the computation of an operator the adapter already has, with other
// arguments: they run that operator's AscendC kernel (or its npu registration) and add no kernel.
//
// - permute_pooled_embs_split and permute_pooled_embs_auto_grad_split: permute_pooled_embs (the
//   split build of fbgemm differs only in its CUDA kernel); the autograd variant's backward is
//   the forward with the inverse lists, as fbgemm's PermutePooledEmbsFunctionSplit.
// - permute_duplicate_pooled_embs (+ _split, + _auto_grad[_split]): fbgemm splits the columns at
//   every entry of offset_dim_list (not only the first len(permute_list)), so permute_list may
//   name a block several times or not at all. The lists are rewritten on the host into the
//   permute_pooled_embs kernel's form (one block per permute_list entry, empty padding blocks).
//   fbgemm's non-split autograd variant refuses the backward with its message; the split one
//   runs the forward with the inverse lists, as fbgemm does.
// - batch_index_select_dim0_tensor: the list arguments as int64 tensors, read on the host.
// - jagged_2d_to_dense: jagged_to_padded_dense_forward with one jagged dimension, padding 0
//   (fbgemm's Autograd kernel already reaches the npu forward/backward with gradients).
// - group_index_select_dim0: fbgemm's own composition (its Autograd kernel of
//   group_index_select_dim0_gpu_impl), the per-group selection and its gradient on the
//   batch_index_select_dim0 kernels.
// - jagged_index_select_2d_forward: the row map (dense output row -> input row) is built on the
//   host from the offsets and indices, the rows moved by the batch_index_select_dim0 kernel;
//   fbgemm's CompositeExplicitAutograd jagged_index_select_2d_forward_v2 reaches it.
// - block_bucketize_sparse_features_inference: block_bucketize_sparse_features; the bucket
//   mapping (return_bucket_mapping=True) is refused.
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

using PooledOp = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const at::Tensor&);

at::Tensor permute_pooled_embs_op(const at::Tensor& pooled, const at::Tensor& off,
                                  const at::Tensor& perm, const at::Tensor& inv_off,
                                  const at::Tensor& inv_perm) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("fbgemm::permute_pooled_embs", "")
                         .typed<PooledOp>();
    return op.call(pooled, off, perm, inv_off, inv_perm);
}

at::Tensor host_longs(const char* op, const char* name, const at::Tensor& t) {
    TORCH_CHECK(t.scalar_type() == at::kLong, name, " needs to have long/int64 type");
    check_dim(op, name, t, 1, 1);
    return t.to(at::kCPU).contiguous();
}

// fbgemm's permute_duplicate_pooled_embs: the columns split at offset_dim_list[1..M-1] into M
// blocks (tensor_split), output = the blocks permute_list names, concatenated.
at::Tensor permute_duplicate_pooled_embs(const at::Tensor& pooled_embs,
                                         const at::Tensor& offset_dim_list,
                                         const at::Tensor& permute_list,
                                         const at::Tensor& /*inv_offset_dim_list*/,
                                         const at::Tensor& /*inv_permute_list*/) {
    const char* op = "permute_duplicate_pooled_embs";
    check_npu(op, "pooled_embs", pooled_embs);
    check_npu(op, "offset_dim_list", offset_dim_list);
    check_npu(op, "permute_list", permute_list);
    check_same_device(op, pooled_embs, {&offset_dim_list, &permute_list});
    const at::Tensor off_host = host_longs(op, "offset_dim_list", offset_dim_list);
    const at::Tensor perm_host = host_longs(op, "permute_list", permute_list);
    check_dtype(op, "pooled_embs", pooled_embs, kValueTypes);
    TORCH_CHECK_INDEX(pooled_embs.dim() >= 2, op,
                      ": pooled_embs must have a feature dimension (dim 1), got shape ",
                      pooled_embs.sizes());
    const int64_t blocks = off_host.numel();
    const int64_t n = perm_host.numel();
    TORCH_CHECK_VALUE(blocks > 0, op, ": offset_dim_list is empty");
    TORCH_CHECK_VALUE(n > 0, op, ": permute_list is empty");
    const int64_t* off = off_host.data_ptr<int64_t>();
    const int64_t* perm = perm_host.data_ptr<int64_t>();
    const int64_t cols = pooled_embs.size(1);
    // The kernel's form: padded = max(n, blocks) + 1 blocks, the first `blocks` fbgemm's, the
    // rest empty (they start and end at cols), and one permute entry per block.
    const int64_t padded = std::max(n, blocks) + 1;
    at::Tensor new_off = at::empty({padded + 1}, at::kLong);
    at::Tensor new_perm = at::empty({padded}, at::kLong);
    int64_t* o = new_off.data_ptr<int64_t>();
    int64_t* p = new_perm.data_ptr<int64_t>();
    o[0] = 0;
    for (int64_t k = 1; k <= padded; ++k) {
        if (k < blocks) {
            TORCH_CHECK_VALUE(off[k] >= 0, op, ": offset_dim_list[", k, "] = ", off[k],
                              " is negative");
            o[k] = off[k];
        } else {
            o[k] = cols;
        }
    }
    int64_t width = 0;
    for (int64_t i = 0; i < padded; ++i) {
        if (i < n) {
            TORCH_CHECK_VALUE(perm[i] >= 0 && perm[i] < blocks, op, ": permute_list[", i,
                              "] = ", perm[i], " is not a block (offset_dim_list splits the ",
                              "columns into ", blocks, " blocks)");
            p[i] = perm[i];
            const int64_t start = std::min(o[p[i]], cols);
            const int64_t end = std::min(o[p[i] + 1], cols);
            width += std::max<int64_t>(end - start, 0);
        } else {
            p[i] = blocks;  // an empty block
        }
    }
    std::vector<int64_t> shape(pooled_embs.sizes().begin(), pooled_embs.sizes().end());
    shape[1] = width;
    at::Tensor out =
        at::empty(shape, pooled_embs.options().memory_format(at::MemoryFormat::Contiguous));
    backend::permute_pooled_embs(pooled_embs.contiguous(), new_off.to(pooled_embs.device()),
                                 new_perm.to(pooled_embs.device()), width, out);
    return out;
}

// fbgemm's PermutePooledEmbsFunctionSplit: backward = forward with the inverse lists. With
// duplicates (the non-split build) fbgemm refuses the backward.
template <PooledOp* Forward, bool kRefuseBackward>
class PermuteFunction
    : public torch::autograd::Function<PermuteFunction<Forward, kRefuseBackward>> {
public:
    static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& pooled,
                              const at::Tensor& off, const at::Tensor& perm,
                              const at::Tensor& inv_off, const at::Tensor& inv_perm) {
        at::AutoDispatchBelowADInplaceOrView guard;
        ctx->saved_data["off"] = off;
        ctx->saved_data["perm"] = perm;
        ctx->saved_data["inv_off"] = inv_off;
        ctx->saved_data["inv_perm"] = inv_perm;
        TORCH_CHECK(off.scalar_type() == at::kLong,
                    "offset_dim_list needs to have long/int64 type");
        TORCH_CHECK(perm.scalar_type() == at::kLong, "permute_list needs to have long/int64 type");
        return Forward(pooled, off, perm, inv_off, inv_perm);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        TORCH_CHECK(!kRefuseBackward,
                    "permute_pooled_embs does not support allow_duplicates in backward!");
        at::Tensor grad = Forward(
            grads[0], ctx->saved_data["inv_off"].toTensor(), ctx->saved_data["inv_perm"].toTensor(),
            ctx->saved_data["off"].toTensor(), ctx->saved_data["perm"].toTensor());
        return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

at::Tensor permute_pooled_embs_auto_grad_split(const at::Tensor& pooled, const at::Tensor& off,
                                               const at::Tensor& perm, const at::Tensor& inv_off,
                                               const at::Tensor& inv_perm) {
    return PermuteFunction<&permute_pooled_embs_op, false>::apply(pooled, off, perm, inv_off,
                                                                  inv_perm);
}

at::Tensor permute_duplicate_pooled_embs_auto_grad(const at::Tensor& pooled, const at::Tensor& off,
                                                   const at::Tensor& perm,
                                                   const at::Tensor& inv_off,
                                                   const at::Tensor& inv_perm) {
    return PermuteFunction<&permute_duplicate_pooled_embs, true>::apply(pooled, off, perm, inv_off,
                                                                        inv_perm);
}

at::Tensor permute_duplicate_pooled_embs_auto_grad_split(const at::Tensor& pooled,
                                                         const at::Tensor& off,
                                                         const at::Tensor& perm,
                                                         const at::Tensor& inv_off,
                                                         const at::Tensor& inv_perm) {
    return PermuteFunction<&permute_duplicate_pooled_embs, false>::apply(pooled, off, perm, inv_off,
                                                                         inv_perm);
}

// --- batch_index_select_dim0_tensor ---------------------------------------------------------

std::vector<int64_t> host_list(const at::Tensor& t) {
    // fbgemm reads the lists with data_ptr<int64_t>(): other dtypes fail there.
    TORCH_CHECK(t.scalar_type() == at::kLong, "expected scalar type Long but found ",
                t.scalar_type());
    const at::Tensor host = t.to(at::kCPU).contiguous();
    const int64_t* d = host.data_ptr<int64_t>();
    return std::vector<int64_t>(d, d + host.numel());
}

// The operators called through the dispatcher are called boxed: fbgemm's kernels and the
// adapter's differ in their C++ signatures (by-value tensors, SymInt or int64_t), which a typed
// call would have to match.
at::Tensor call_boxed(const char* name, torch::jit::Stack stack) {
    const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
    op.callBoxed(&stack);
    return stack[0].toTensor();
}

at::Tensor batch_index_select_dim0_tensor(const at::Tensor& inputs, const at::Tensor& indices,
                                          const at::Tensor& input_num_indices,
                                          const at::Tensor& input_rows,
                                          const at::Tensor& input_columns, bool permute) {
    return call_boxed("fbgemm::batch_index_select_dim0",
                      {inputs, indices, host_list(input_num_indices), host_list(input_rows),
                       host_list(input_columns), permute});
}

// --- jagged_2d_to_dense ---------------------------------------------------------------------

// By-value tensors: fbgemm's kernels of this operator take them so, and the dispatcher requires
// one C++ signature per operator.
at::Tensor jagged_2d_to_dense(at::Tensor values, at::Tensor offsets,
                              c10::SymInt max_sequence_length) {
    return call_boxed("fbgemm::jagged_to_padded_dense_forward",
                      {values, std::vector<at::Tensor>{offsets},
                       std::vector<int64_t>{max_sequence_length.expect_int()}, 0.0});
}

// --- row gathers on the batch_index_select_dim0 kernels --------------------------------------

// The kernel moves float32/float16/bfloat16 rows; integer rows travel as float32 bit patterns
// (the kernel only copies, never computes on them).
at::Tensor as_movable(const at::Tensor& t2d) {
    if (t2d.scalar_type() == at::kInt || t2d.scalar_type() == at::kLong)
        return t2d.view(at::kFloat);
    return t2d;
}

// One table [rows, cols] (contiguous), `indices` selecting rows into out [num, cols].
at::Tensor one_table(int64_t rows, int64_t cols, int64_t num, const at::Device& device) {
    at::Tensor host = at::zeros({1, 8}, at::kLong);
    int64_t* d = host.data_ptr<int64_t>();
    d[1] = rows;
    d[2] = cols;
    d[4] = num;
    d[6] = cols;
    return host.to(device);
}

// rows of src (2-D, contiguous) selected by idx into a new [idx.numel(), cols] tensor.
at::Tensor gather_rows(const at::Tensor& src, const at::Tensor& idx) {
    const at::Tensor m = as_movable(src);
    const int64_t num = idx.numel();
    at::Tensor out = at::empty({num, m.size(1)}, m.options());
    if (num > 0 && m.size(1) > 0) {
        backend::batch_index_select_dim0(m.reshape({-1}), idx.contiguous(),
                                         one_table(m.size(0), m.size(1), num, src.device()),
                                         out.numel(), out.view({-1}));
    }
    return m.scalar_type() == src.scalar_type() ? out : out.view(src.scalar_type());
}

// --- group_index_select_dim0 ----------------------------------------------------------------

using TensorVec = std::vector<at::Tensor>;

void check_group(const char* op, const at::Tensor& input, const at::Tensor& index) {
    check_npu(op, "input", input);
    check_npu(op, "indices", index);
    check_same_device(op, input, {&index});
    check_dtype(op, "input", input, kValueTypes);
    check_dtype(op, "indices", index, kIndexTypes);
    check_dim(op, "input", input, 1, 8);
    check_dim(op, "indices", index, 1, 1);
    // at::index_select's refusal of an empty source.
    TORCH_CHECK_INDEX(input.size(0) > 0 || index.numel() == 0, "index out of range in self");
}

TensorVec group_index_select_dim0(at::TensorList input_group, at::TensorList indices_group) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("fbgemm::group_index_select_dim0_gpu_impl", "")
                         .typed<TensorVec(at::TensorList, int64_t)>();
    const int64_t group = static_cast<int64_t>(indices_group.size());
    if (group == 0)
        return {};
    TORCH_CHECK_VALUE(static_cast<int64_t>(input_group.size()) == group,
                      "group_index_select_dim0: ", input_group.size(), " inputs but ", group,
                      " index lists");
    TensorVec packed(indices_group.begin(), indices_group.end());
    packed.insert(packed.end(), input_group.begin(), input_group.end());
    TensorVec res = op.call(packed, group);
    TORCH_CHECK(static_cast<int64_t>(res.size()) == group + 2);
    res.resize(group);
    return res;
}

// [indices..., inputs...] -> [outputs..., two empty placeholders] (fbgemm's return format).
TensorVec group_index_select_dim0_forward(at::TensorList packed, int64_t group) {
    const char* op = "group_index_select_dim0";
    TensorVec out;
    out.reserve(group + 2);
    for (int64_t i = 0; i < group; ++i) {
        const at::Tensor& index = packed[i];
        const at::Tensor& input = packed[group + i];
        check_group(op, input, index);
        const at::Tensor flat = input.contiguous().reshape({input.size(0), -1});
        std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
        shape[0] = index.numel();
        out.push_back(gather_rows(flat, index).view(shape));
    }
    const at::TensorOptions longs = at::TensorOptions().dtype(at::kLong).device(packed[0].device());
    out.push_back(at::empty({0}, longs));
    out.push_back(at::empty({0}, longs));
    return out;
}

// [grads..., indices..., args, saved, first input] and the inputs' shapes ->
// [group placeholders, group input gradients].
TensorVec group_index_select_dim0_backward(at::TensorList all, c10::SymIntArrayRef shapes) {
    TORCH_CHECK(all.size() > 2);
    const int64_t group = (static_cast<int64_t>(all.size()) - 3) / 2;
    const at::Tensor& first = all[2 * group + 2];
    const int64_t dim = first.dim();
    TORCH_CHECK(static_cast<int64_t>(shapes.size()) == group * dim);
    TensorVec out;
    out.reserve(2 * group);
    const at::TensorOptions longs = at::TensorOptions().dtype(at::kLong).device(first.device());
    for (int64_t i = 0; i < group; ++i)
        out.push_back(at::empty({0}, longs));
    for (int64_t i = 0; i < group; ++i) {
        std::vector<int64_t> shape;
        for (int64_t k = 0; k < dim; ++k)
            shape.push_back(shapes[i * dim + k].expect_int());
        at::Tensor grad_input = at::zeros(shape, first.options());
        const at::Tensor& grad = all[i];
        const at::Tensor& index = all[group + i];
        if (grad.defined() && grad.numel() > 0 && grad_input.numel() > 0) {
            check_dtype("group_index_select_dim0 backward", "grad", grad,
                        {at::kFloat, at::kHalf, at::kBFloat16});
            const int64_t rows = shape[0];
            const int64_t cols = grad_input.numel() / rows;
            at::Tensor g = grad.to(first.scalar_type()).contiguous();
            backend::batch_index_select_dim0_backward(
                g.view({-1}), index.contiguous(), one_table(rows, cols, index.numel(), g.device()),
                grad_input.view({-1}));
        }
        out.push_back(grad_input);
    }
    return out;
}

// --- jagged_index_select_2d_forward ---------------------------------------------------------

// fbgemm's jagged_index_select_2d_kernel: dense output row r lies in output segment k
// (output_offsets is the inclusive cumulative sum of the output lengths) and copies input row
// input_offsets[indices[k] - 1] + (r - output_offsets[k - 1]).
at::Tensor jagged_index_select_2d_forward(const at::Tensor& values, const at::Tensor& indices,
                                          const at::Tensor& input_offsets,
                                          const at::Tensor& output_offsets,
                                          int64_t num_dense_output_rows) {
    const char* op = "jagged_index_select_2d_forward";
    check_npu(op, "values", values);
    check_npu(op, "indices", indices);
    check_npu(op, "input_offsets", input_offsets);
    check_npu(op, "output_offsets", output_offsets);
    check_same_device(op, values, {&indices, &input_offsets, &output_offsets});
    TORCH_CHECK(values.dim() == 2, "jagged_index_select_2d_forward_cpu supports only 2D inputs");
    check_dtype(op, "values", values, kValueTypes);
    check_dtype(op, "indices", indices, kIndexTypes);
    check_dtype(op, "input_offsets", input_offsets, {at::kLong});
    check_dtype(op, "output_offsets", output_offsets, {at::kLong});
    check_dim(op, "indices", indices, 1, 1);
    check_dim(op, "input_offsets", input_offsets, 1, 1);
    check_dim(op, "output_offsets", output_offsets, 1, 1);
    TORCH_CHECK_VALUE(num_dense_output_rows >= 0, op, ": num_dense_output_rows is ",
                      num_dense_output_rows);
    at::Tensor output = at::empty({num_dense_output_rows, values.size(1)}, values.options());
    if (num_dense_output_rows == 0)
        return output;
    const at::Tensor idx = indices.to(at::kCPU, at::kLong).contiguous();
    const at::Tensor in_off = input_offsets.to(at::kCPU).contiguous();
    const at::Tensor out_off = output_offsets.to(at::kCPU).contiguous();
    const int64_t* ix = idx.data_ptr<int64_t>();
    const int64_t* io = in_off.data_ptr<int64_t>();
    const int64_t* oo = out_off.data_ptr<int64_t>();
    const int64_t segments = out_off.numel();
    TORCH_CHECK_VALUE(idx.numel() >= segments, op, ": output_offsets has ", segments,
                      " segments but indices only ", idx.numel(), " entries");
    TORCH_CHECK_VALUE(segments > 0 && oo[segments - 1] >= num_dense_output_rows, op,
                      ": output_offsets ends at ", segments ? oo[segments - 1] : 0, ", before the ",
                      num_dense_output_rows, " output rows");
    const int64_t in_rows = values.size(0);
    at::Tensor map = at::empty({num_dense_output_rows}, at::kLong);
    int64_t* m = map.data_ptr<int64_t>();
    int64_t prev = 0;
    for (int64_t k = 0; k < segments && prev < num_dense_output_rows; ++k) {
        TORCH_CHECK_VALUE(oo[k] >= prev, op, ": output_offsets decreases at ", k);
        const int64_t sel = ix[k];
        TORCH_CHECK_INDEX(sel >= 0 && sel < in_off.numel(), op, ": indices[", k, "] = ", sel,
                          " is not a row of the input (", in_off.numel(), " rows)");
        const int64_t base = sel == 0 ? 0 : io[sel - 1];
        const int64_t end = std::min(oo[k], num_dense_output_rows);
        for (int64_t r = prev; r < end; ++r) {
            const int64_t src = base + (r - prev);
            TORCH_CHECK_INDEX(src >= 0 && src < in_rows, op, ": output row ", r,
                              " would read values row ", src, " of ", in_rows);
            m[r] = src;
        }
        prev = std::max(prev, end);
    }
    if (values.size(1) == 0)
        return output;
    return gather_rows(values.contiguous(), map.to(values.device()));
}

// --- block_bucketize_sparse_features_inference ----------------------------------------------

using BucketizedInference =
    std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>, std::optional<at::Tensor>,
               std::optional<at::Tensor>, std::optional<at::Tensor>>;

// fbgemm's C++ signature (int64_t sizes).
BucketizedInference block_bucketize_sparse_features_inference(
    const at::Tensor& lengths, const at::Tensor& indices, bool bucketize_pos, bool sequence,
    const at::Tensor& block_sizes, int64_t my_size, const std::optional<at::Tensor>& weights,
    const std::optional<at::Tensor>& batch_size_per_feature, int64_t max_B,
    const std::optional<std::vector<at::Tensor>>& block_bucketize_pos, bool return_bucket_mapping,
    bool keep_orig_idx, const std::optional<at::Tensor>& total_num_blocks) {
    TORCH_CHECK_NOT_IMPLEMENTED(
        !return_bucket_mapping,
        "block_bucketize_sparse_features_inference: return_bucket_mapping=True (the bucket of "
        "every id, torchrec's sequence inference sharding) has no npu kernel; "
        "return_bucket_mapping=False runs on the npu");
    const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(
        "fbgemm::block_bucketize_sparse_features", "");
    torch::jit::Stack stack{
        lengths,       indices,         bucketize_pos,          sequence, block_sizes,
        my_size,       weights,         batch_size_per_feature, max_B,    block_bucketize_pos,
        keep_orig_idx, total_num_blocks};
    op.callBoxed(&stack);
    TORCH_CHECK(stack.size() == 5);
    return {stack[0].toTensor(),
            stack[1].toTensor(),
            stack[2].toOptional<at::Tensor>(),
            stack[3].toOptional<at::Tensor>(),
            stack[4].toOptional<at::Tensor>(),
            std::nullopt};
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("permute_pooled_embs_split", &fbgemm_npu::permute_pooled_embs_op);
    m.impl("permute_pooled_embs_auto_grad_split", &fbgemm_npu::permute_pooled_embs_op);
    m.impl("permute_duplicate_pooled_embs", &fbgemm_npu::permute_duplicate_pooled_embs);
    m.impl("permute_duplicate_pooled_embs_split", &fbgemm_npu::permute_duplicate_pooled_embs);
    m.impl("permute_duplicate_pooled_embs_auto_grad", &fbgemm_npu::permute_duplicate_pooled_embs);
    m.impl("permute_duplicate_pooled_embs_auto_grad_split",
           &fbgemm_npu::permute_duplicate_pooled_embs);
    m.impl("batch_index_select_dim0_tensor", &fbgemm_npu::batch_index_select_dim0_tensor);
    m.impl("jagged_2d_to_dense", &fbgemm_npu::jagged_2d_to_dense);
    m.impl("group_index_select_dim0", &fbgemm_npu::group_index_select_dim0);
    m.impl("group_index_select_dim0_gpu_impl", &fbgemm_npu::group_index_select_dim0_forward);
    m.impl("group_index_select_dim0_gpu_backward", &fbgemm_npu::group_index_select_dim0_backward);
    m.impl("jagged_index_select_2d_forward", &fbgemm_npu::jagged_index_select_2d_forward);
    m.impl("block_bucketize_sparse_features_inference",
           &fbgemm_npu::block_bucketize_sparse_features_inference);
}

// fbgemm registers these for AutogradCPU (or on CPU around an autograd function): the npu gets
// the same autograd behaviour here.
TORCH_LIBRARY_IMPL(fbgemm, AutogradPrivateUse1, m) {
    m.impl("permute_pooled_embs_auto_grad_split", &fbgemm_npu::permute_pooled_embs_auto_grad_split);
    m.impl("permute_duplicate_pooled_embs_auto_grad",
           &fbgemm_npu::permute_duplicate_pooled_embs_auto_grad);
    m.impl("permute_duplicate_pooled_embs_auto_grad_split",
           &fbgemm_npu::permute_duplicate_pooled_embs_auto_grad_split);
    // Its Autograd kernel is the list version's (fbgemm_npu's AutogradPrivateUse1 one).
    m.impl("batch_index_select_dim0_tensor", &fbgemm_npu::batch_index_select_dim0_tensor);
    // fbgemm's composition: its Autograd kernel of group_index_select_dim0_gpu_impl holds the
    // autograd function.
    m.impl("group_index_select_dim0", &fbgemm_npu::group_index_select_dim0);
}
