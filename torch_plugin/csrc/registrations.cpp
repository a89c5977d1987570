// Torch registrations of the adapter.
//
// fbgemm's schemas are defined by fbgemm_gpu (imported first by the loader); this file only
// adds PrivateUse1 kernels to them (TORCH_LIBRARY_IMPL), never a whole-namespace
// TORCH_LIBRARY, so other libraries that extend fbgemm or mxrec still load next to it.
//
// Which fbgemm ops get a kernel follows fbgemm 1.1.0's own dispatch keys:
// - jagged_to_padded_dense and dense_to_jagged are CompositeImplicitAutograd wrappers around
//   autograd functions that call jagged_to_padded_dense_forward, dense_to_jagged_forward and
//   jagged_to_padded_dense_backward: those inner ops get the npu kernels, and autograd works
//   without an npu autograd kernel of ours;
// - permute_2D_sparse_data has fbgemm's autograd kernel on the Autograd alias key;
// - asynchronous_*_cumsum, bounds_check_indices and block_bucketize_sparse_features have no
//   autograd.
// The TBE lookups (forward + fused optimizer backward) are in tbe.cpp.
// mxrec::gather_for_rank1 is ours: its autograd kernel is registered for AutogradPrivateUse1.
#include <torch/extension.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

constexpr auto kIndexTypes = {at::kInt, at::kLong};

at::Tensor asynchronous_complete_cumsum(const at::Tensor& t_in) {
    const char* op = "asynchronous_complete_cumsum";
    check_npu(op, "t_in", t_in);
    check_dtype(op, "t_in", t_in, {at::kInt, at::kLong});
    check_dim(op, "t_in", t_in, 1, 2);
    at::Tensor x = t_in.contiguous();
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() += 1;
    at::Tensor y = at::empty(shape, x.options());
    backend::asynchronous_complete_cumsum(x, y);
    return y;
}

// fbgemm's inclusive and exclusive sums are the complete sum without its first or last column.
at::Tensor asynchronous_inclusive_cumsum(const at::Tensor& t_in) {
    at::Tensor y = asynchronous_complete_cumsum(t_in);
    return y.narrow(-1, 1, y.size(-1) - 1).contiguous();
}

at::Tensor asynchronous_exclusive_cumsum(const at::Tensor& t_in) {
    at::Tensor y = asynchronous_complete_cumsum(t_in);
    return y.narrow(-1, 0, y.size(-1) - 1).contiguous();
}

constexpr auto kValueTypes = {at::kFloat, at::kHalf, at::kBFloat16, at::kInt, at::kLong};

at::Tensor jagged_to_padded_dense_forward(const at::Tensor& values,
                                          const std::vector<at::Tensor>& offsets,
                                          const std::vector<int64_t>& max_lengths,
                                          double padding_value) {
    const char* op = "jagged_to_padded_dense";
    check_npu(op, "values", values);
    check_dtype(op, "values", values, kValueTypes);
    check_dim(op, "values", values, 1, 2);
    const at::Tensor& off = single_offsets(op, offsets);
    check_npu(op, "offsets[0]", off);
    check_same_device(op, values, {&off});
    check_dtype(op, "offsets[0]", off, kIndexTypes);
    const at::Tensor host = check_offsets(op, "offsets[0]", off);
    // fbgemm's CPU kernel reads past the end of values here and returns whatever lies there.
    const int64_t last = host.data_ptr<int64_t>()[host.size(0) - 1];
    TORCH_CHECK_VALUE(last <= values.size(0), op, ": offsets[0][-1] = ", last,
                      " points past the end of values, which has ", values.size(0),
                      " row(s); the offsets must describe at most values.size(0) rows");
    TORCH_CHECK_VALUE(max_lengths.size() == 1, op, ": max_lengths must have one entry per "
                      "jagged dimension (1), got ", max_lengths.size());
    const int64_t max_length = max_lengths[0];
    TORCH_CHECK_VALUE(max_length >= 0, op, ": max_lengths[0] must be >= 0, got ", max_length);
    at::Tensor v = values.contiguous();
    const int64_t batch = off.size(0) - 1;
    std::vector<int64_t> shape{batch, max_length};
    if (v.dim() == 2) shape.push_back(v.size(1));
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
    const at::Tensor& off = single_offsets(op, offsets);
    check_npu(op, "offsets[0]", off);
    check_same_device(op, dense, {&off});
    check_dtype(op, "offsets[0]", off, kIndexTypes);
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
    if (d.dim() == 3) shape.push_back(d.size(2));
    at::Tensor values = at::empty(shape, d.options());
    backend::dense_to_jagged(d, off.contiguous(), rows, values);
    return values;
}

at::Tensor dense_to_jagged_forward(const at::Tensor& dense, at::TensorList x_offsets,
                                   std::optional<int64_t> total_L) {
    return dense_to_jagged_impl("dense_to_jagged", dense, x_offsets, total_L);
}

at::Tensor jagged_to_padded_dense_backward(const at::Tensor& grad_output, at::TensorList offsets,
                                           int64_t total_L) {
    return dense_to_jagged_impl("jagged_to_padded_dense_backward", grad_output, offsets,
                                total_L);
}

std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>> permute_2D_sparse_data(
    const at::Tensor& permute, const at::Tensor& lengths, const at::Tensor& values,
    const std::optional<at::Tensor>& weights,
    const std::optional<int64_t>& permuted_lengths_sum) {
    const char* op = "permute_2D_sparse_data";
    check_npu(op, "permute", permute);
    check_npu(op, "lengths", lengths);
    check_npu(op, "values", values);
    const at::Tensor w = weights.has_value() ? *weights : at::Tensor();
    if (w.defined()) check_npu(op, "weights", w);
    check_same_device(op, permute, {&lengths, &values, &w});
    check_dtype(op, "permute", permute, kIndexTypes);
    check_dtype(op, "lengths", lengths, kIndexTypes);
    check_dtype(op, "values", values, kValueTypes);
    check_dim(op, "permute", permute, 1, 1);
    check_dim(op, "lengths", lengths, 1, 2);
    check_dim(op, "values", values, 1, 1);
    if (w.defined()) {
        check_dtype(op, "weights", w, {at::kFloat, at::kHalf, at::kBFloat16});
        check_dim(op, "weights", w, 1, 2);
        TORCH_CHECK_VALUE(w.size(0) == values.size(0), op, ": weights must have as many rows "
                          "as values (", values.size(0), "), got shape ", w.sizes());
    }
    // permute and lengths are small; reading them on the host gives clear errors for rows out
    // of range and sizes the outputs when permuted_lengths_sum is not given.
    const int64_t rows = lengths.size(0);
    const at::Tensor perm_host = permute.to(at::kCPU, at::kLong).contiguous();
    const at::Tensor len_host = lengths.to(at::kCPU, at::kLong).reshape({rows, -1}).contiguous();
    const at::Tensor row_sums = len_host.sum(1);
    const int64_t* p = perm_host.data_ptr<int64_t>();
    const int64_t* rs = row_sums.data_ptr<int64_t>();
    int64_t permuted_total = 0;
    for (int64_t i = 0; i < perm_host.size(0); ++i) {
        TORCH_CHECK_VALUE(p[i] >= 0 && p[i] < rows, op, ": permute[", i, "] = ", p[i],
                          " is not a row of lengths (", rows, " rows)");
        permuted_total += rs[p[i]];
    }
    TORCH_CHECK_VALUE(len_host.numel() == 0 || len_host.min().item<int64_t>() >= 0, op,
                      ": lengths must be >= 0");
    const int64_t total = row_sums.sum().item<int64_t>();
    TORCH_CHECK_VALUE(values.size(0) >= total, op, ": values has ", values.size(0),
                      " entries but lengths sum to ", total);
    const int64_t out_len = permuted_lengths_sum.has_value() ? *permuted_lengths_sum
                                                             : permuted_total;
    TORCH_CHECK_VALUE(out_len >= 0, op, ": permuted_lengths_sum must be >= 0, got ", out_len);

    std::vector<int64_t> len_shape(lengths.sizes().begin(), lengths.sizes().end());
    len_shape[0] = permute.size(0);
    at::Tensor permuted_lengths = at::empty(len_shape, lengths.options());
    at::Tensor permuted_values = at::empty({out_len}, values.options());
    at::Tensor permuted_weights;
    at::Tensor wc;
    if (w.defined()) {
        wc = w.contiguous();
        std::vector<int64_t> w_shape(wc.sizes().begin(), wc.sizes().end());
        w_shape[0] = out_len;
        permuted_weights = at::empty(w_shape, wc.options());
    }
    backend::permute2d_sparse_data(permute.contiguous(), lengths.contiguous(),
                                   values.contiguous(), wc, out_len, permuted_lengths,
                                   permuted_values, permuted_weights);
    std::optional<at::Tensor> out_w;
    if (permuted_weights.defined()) out_w = permuted_weights;
    return {permuted_lengths, permuted_values, out_w};
}

void bounds_check_indices(const at::Tensor& rows_per_table, const at::Tensor& indices,
                          const at::Tensor& offsets, int64_t bounds_check_mode,
                          const at::Tensor& warning, const std::optional<at::Tensor>& weights,
                          const std::optional<at::Tensor>& B_offsets, int64_t max_B,
                          const std::optional<at::Tensor>& b_t_map, int64_t info_B_num_bits,
                          int64_t info_B_mask, int64_t bounds_check_version) {
    const char* op = "bounds_check_indices";
    const at::Tensor w = weights.value_or(at::Tensor());
    const at::Tensor bo = B_offsets.value_or(at::Tensor());
    const at::Tensor bt = b_t_map.value_or(at::Tensor());
    check_npu(op, "rows_per_table", rows_per_table);
    check_npu(op, "indices", indices);
    check_npu(op, "offsets", offsets);
    check_npu(op, "warning", warning);
    if (w.defined()) check_npu(op, "weights", w);
    if (bo.defined()) check_npu(op, "B_offsets", bo);
    if (bt.defined()) check_npu(op, "b_t_map", bt);
    check_same_device(op, rows_per_table, {&indices, &offsets, &warning, &w, &bo, &bt});
    check_dtype(op, "rows_per_table", rows_per_table, {at::kLong});
    check_dtype(op, "indices", indices, kIndexTypes);
    check_dtype(op, "offsets", offsets, kIndexTypes);
    check_dtype(op, "warning", warning, {at::kLong});
    if (w.defined()) check_dtype(op, "weights", w, {at::kFloat, at::kHalf, at::kBFloat16});
    if (bo.defined()) check_dtype(op, "B_offsets", bo, {at::kInt});
    if (bt.defined()) check_dtype(op, "b_t_map", bt, {at::kInt});
    TORCH_CHECK_VALUE(bounds_check_mode >= 0 && bounds_check_mode <= 3, op,
                      ": bounds_check_mode must be 0 (fatal), 1 (warning), 2 (ignore) or 3 "
                      "(none), got ", bounds_check_mode);
    // indices, offsets and warning are updated in place: a contiguous copy would drop the
    // update, so strided tensors are refused instead.
    for (auto [name, t] : {std::pair<const char*, const at::Tensor*>{"indices", &indices},
                           {"offsets", &offsets},
                           {"warning", &warning}}) {
        TORCH_CHECK_VALUE(t->is_contiguous(), op, ": ", name,
                          " is updated in place and must be contiguous");
    }
    if (bounds_check_mode == 3) return;  // fbgemm's NONE: nothing is checked
    backend::bounds_check_indices(rows_per_table.contiguous(), indices, offsets, warning,
                                  w.defined() ? w.contiguous() : w,
                                  bo.defined() ? bo.contiguous() : bo,
                                  bt.defined() ? bt.contiguous() : bt, bounds_check_mode, max_B,
                                  info_B_num_bits, info_B_mask, bounds_check_version);
}

// fbgemm's row-wise bucketization of KJT ids (TorchRec's row-wise and table-row-wise input
// distribution): every id goes to the rank owning its row block.
std::vector<std::optional<at::Tensor>> block_bucketize_sparse_features(
    const at::Tensor& lengths, const at::Tensor& indices, bool bucketize_pos, bool sequence,
    const at::Tensor& block_sizes, int64_t my_size, const std::optional<at::Tensor>& weights,
    const std::optional<at::Tensor>& batch_size_per_feature, int64_t max_B,
    const std::optional<std::vector<at::Tensor>>& block_bucketize_pos, bool keep_orig_idx,
    const std::optional<at::Tensor>& total_num_blocks) {
    const char* op = "block_bucketize_sparse_features";
    const at::Tensor w = weights.value_or(at::Tensor());
    const at::Tensor bpf = batch_size_per_feature.value_or(at::Tensor());
    const at::Tensor tnb = total_num_blocks.value_or(at::Tensor());
    check_npu(op, "lengths", lengths);
    check_npu(op, "indices", indices);
    check_npu(op, "block_sizes", block_sizes);
    if (w.defined()) check_npu(op, "weights", w);
    if (bpf.defined()) check_npu(op, "batch_size_per_feature", bpf);
    if (tnb.defined()) check_npu(op, "total_num_blocks", tnb);
    check_same_device(op, lengths, {&indices, &block_sizes, &w, &bpf, &tnb});
    check_dtype(op, "lengths", lengths, kIndexTypes);
    check_dtype(op, "indices", indices, kIndexTypes);
    check_dtype(op, "block_sizes", block_sizes, kIndexTypes);
    check_dim(op, "lengths", lengths, 1, 1);
    check_dim(op, "indices", indices, 1, 1);
    check_dim(op, "block_sizes", block_sizes, 1, 1);
    TORCH_CHECK_VALUE(!block_bucketize_pos.has_value(), op,
                      ": block_bucketize_pos (uneven row blocks per rank) is not supported on "
                      "npu yet");
    TORCH_CHECK_VALUE(my_size >= 1, op, ": my_size must be >= 1, got ", my_size);
    if (w.defined()) {
        check_dtype(op, "weights", w, {at::kFloat});
        TORCH_CHECK_VALUE(w.dim() == 1 && w.size(0) == indices.size(0), op,
                          ": weights must have one entry per index (", indices.size(0),
                          "), got shape ", w.sizes());
    }
    // The kernel reads block sizes (and block counts) in the ids' dtype, as TorchRec passes
    // them, and batch sizes in the lengths' dtype.
    const at::Tensor bs = block_sizes.to(indices.scalar_type()).contiguous();
    const at::Tensor nb = tnb.defined() ? tnb.to(indices.scalar_type()).contiguous() : tnb;
    const at::Tensor bsz = bpf.defined() ? bpf.to(lengths.scalar_type()).contiguous() : bpf;
    const int64_t n = indices.size(0);
    at::Tensor new_lengths = at::empty({lengths.numel() * my_size}, lengths.options());
    at::Tensor new_indices = at::empty({n}, indices.options());
    at::Tensor new_weights = w.defined() ? at::empty({n}, w.options()) : at::Tensor();
    at::Tensor new_pos = bucketize_pos ? at::empty({n}, indices.options()) : at::Tensor();
    at::Tensor permute = sequence ? at::empty({n}, indices.options()) : at::Tensor();
    backend::block_bucketize_sparse_features(
        lengths.contiguous(), indices.contiguous(), bs, w.defined() ? w.contiguous() : w,
        bsz, nb, bucketize_pos, sequence, my_size, max_B,
        keep_orig_idx, new_lengths, new_indices, new_weights, new_pos, permute);
    auto optional = [](const at::Tensor& t) {
        return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
    };
    return {new_lengths, new_indices, optional(new_weights), optional(new_pos), optional(permute)};
}

// The inverse of a permutation (TorchRec's sequence row-wise input distribution).
at::Tensor invert_permute(const at::Tensor& permute) {
    const char* op = "invert_permute";
    check_npu(op, "permute", permute);
    check_dtype(op, "permute", permute, kIndexTypes);
    check_dim(op, "permute", permute, 1, 1);
    at::Tensor inv = at::empty_like(permute, at::MemoryFormat::Contiguous);
    backend::invert_permute(permute.contiguous(), inv);
    return inv;
}

// ---- boxed entry points ---------------------------------------------------------------------
//
// fbgemm's own callers reach these operators through typed handles whose C++ signatures
// (std::vector<Tensor> offsets, SymInt sizes, Tensor& arguments) an unboxed kernel of ours
// would have to repeat exactly: a mismatch aborts loading or fails the call. fbgemm registers
// its CPU kernels of these operators boxed, so ours are boxed too: a boxed kernel has no C++
// signature that can drift, and its arguments are unpacked here in schema order.

int64_t int_arg(const c10::IValue& v) {
    return v.isSymInt() ? v.toSymInt().guard_int(__FILE__, __LINE__) : v.toInt();
}

std::optional<int64_t> optional_int_arg(const c10::IValue& v) {
    if (v.isNone()) return std::nullopt;
    return int_arg(v);
}

std::vector<int64_t> int_list_arg(const c10::IValue& v) {
    if (v.isIntList()) return v.toIntVector();
    std::vector<int64_t> out;
    for (const c10::SymInt& s : v.toSymIntVector()) out.push_back(s.guard_int(__FILE__, __LINE__));
    return out;
}

std::vector<at::Tensor> tensor_list_arg(const c10::IValue& v) { return v.toTensorVector(); }

c10::ArrayRef<c10::IValue> take_args(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                     size_t expected) {
    TORCH_INTERNAL_ASSERT(op.schema().arguments().size() == expected, op.schema().name(),
                          " changed its schema: ", op.schema());
    return torch::jit::last(*stack, expected);
}

// (values, offsets[], max_lengths[], padding_value) -> Tensor
void jagged_to_padded_dense_forward_boxed(const c10::OperatorHandle& op,
                                          torch::jit::Stack* stack) {
    auto args = take_args(op, stack, 4);
    at::Tensor out = jagged_to_padded_dense_forward(
        args[0].toTensor(), tensor_list_arg(args[1]), int_list_arg(args[2]), args[3].toDouble());
    torch::jit::drop(*stack, 4);
    torch::jit::push(*stack, std::move(out));
}

// (grad_output, offsets[], total_L) -> Tensor
void jagged_to_padded_dense_backward_boxed(const c10::OperatorHandle& op,
                                           torch::jit::Stack* stack) {
    auto args = take_args(op, stack, 3);
    at::Tensor out = jagged_to_padded_dense_backward(args[0].toTensor(),
                                                     tensor_list_arg(args[1]), int_arg(args[2]));
    torch::jit::drop(*stack, 3);
    torch::jit::push(*stack, std::move(out));
}

// (dense, x_offsets[], total_L?) -> Tensor
void dense_to_jagged_forward_boxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    auto args = take_args(op, stack, 3);
    at::Tensor out = dense_to_jagged_forward(args[0].toTensor(), tensor_list_arg(args[1]),
                                             optional_int_arg(args[2]));
    torch::jit::drop(*stack, 3);
    torch::jit::push(*stack, std::move(out));
}

// (rows_per_table, indices, offsets, bounds_check_mode, warning, weights?, B_offsets?, max_B,
//  b_t_map?, info_B_num_bits, info_B_mask, bounds_check_version) -> ()
void bounds_check_indices_boxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    auto args = take_args(op, stack, 12);
    bounds_check_indices(args[0].toTensor(), args[1].toTensor(), args[2].toTensor(),
                         args[3].toInt(), args[4].toTensor(), args[5].toOptional<at::Tensor>(),
                         args[6].toOptional<at::Tensor>(), int_arg(args[7]),
                         args[8].toOptional<at::Tensor>(), args[9].toInt(), args[10].toInt(),
                         args[11].toInt());
    torch::jit::drop(*stack, 12);
}

// (lengths, indices, bucketize_pos, sequence, block_sizes, my_size, weights?,
//  batch_size_per_feature?, max_B, block_bucketize_pos[]?, keep_orig_idx, total_num_blocks?)
//  -> (Tensor, Tensor, Tensor?, Tensor?, Tensor?)
void block_bucketize_sparse_features_boxed(const c10::OperatorHandle& op,
                                           torch::jit::Stack* stack) {
    auto args = take_args(op, stack, 12);
    std::optional<std::vector<at::Tensor>> positions;
    if (!args[9].isNone()) positions = tensor_list_arg(args[9]);
    auto out = block_bucketize_sparse_features(
        args[0].toTensor(), args[1].toTensor(), args[2].toBool(), args[3].toBool(),
        args[4].toTensor(), int_arg(args[5]), args[6].toOptional<at::Tensor>(),
        args[7].toOptional<at::Tensor>(), int_arg(args[8]), positions, args[10].toBool(),
        args[11].toOptional<at::Tensor>());
    torch::jit::drop(*stack, 12);
    for (auto& t : out) {
        if (t.has_value()) {
            torch::jit::push(*stack, std::move(*t));
        } else {
            torch::jit::push(*stack, c10::IValue());
        }
    }
}

// ---- mxrec ----------------------------------------------------------------------------------

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

std::vector<at::Tensor> index_select_for_rank1_backward(const at::Tensor& grad,
                                                        const at::Tensor& x,
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
    backend::index_select_for_rank1_backward(grad.contiguous(), x.contiguous(),
                                             index.contiguous(), out);
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
        static auto bwd =
            c10::Dispatcher::singleton()
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

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("asynchronous_complete_cumsum", &fbgemm_npu::asynchronous_complete_cumsum);
    m.impl("asynchronous_inclusive_cumsum", &fbgemm_npu::asynchronous_inclusive_cumsum);
    m.impl("asynchronous_exclusive_cumsum", &fbgemm_npu::asynchronous_exclusive_cumsum);
    m.impl("jagged_to_padded_dense_forward",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::jagged_to_padded_dense_forward_boxed>());
    m.impl("jagged_to_padded_dense_backward",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::jagged_to_padded_dense_backward_boxed>());
    m.impl("dense_to_jagged_forward",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::dense_to_jagged_forward_boxed>());
    m.impl("permute_2D_sparse_data", &fbgemm_npu::permute_2D_sparse_data);
    m.impl("bounds_check_indices",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::bounds_check_indices_boxed>());
    m.impl("invert_permute", &fbgemm_npu::invert_permute);
    m.impl("block_bucketize_sparse_features",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::block_bucketize_sparse_features_boxed>());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "npu kernels of fbgemm and mxrec operators (loaded by fbgemm_npu_api)";
    m.def("backend", &fbgemm_npu::backend::name, "the backend compiled in: 'sim' or 'npu'");
}
