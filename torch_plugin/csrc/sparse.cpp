// Sparse features on the npu: fbgemm's cumulative sums, permute_{1D,2D}_sparse_data (and
// permute_2D_sparse_data_input1D), block_bucketize_sparse_features, invert_permute,
// bounds_check_indices, permute_pooled_embs(_auto_grad), segment_sum_csr, offsets_range and
// expand_into_jagged_permute.
//
// Dispatch keys follow fbgemm 1.1.0's own: permute_2D_sparse_data has fbgemm's autograd kernel
// on the Autograd alias key, as has permute_pooled_embs_auto_grad; asynchronous_*_cumsum,
// bounds_check_indices, block_bucketize_sparse_features and invert_permute have no autograd.
// bounds_check_indices and block_bucketize_sparse_features are boxed (boxed.h explains why) and
// read their arguments by name.
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "backend.h"
#include "boxed.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

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

// Shared by permute_2D_sparse_data, permute_2D_sparse_data_input1D and permute_1D_sparse_data
// (1-D lengths: one column), which report errors under their own name `op`.
std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>> permute_sparse_data_impl(
    const char* op, const at::Tensor& permute, const at::Tensor& lengths, const at::Tensor& values,
    const std::optional<at::Tensor>& weights, const std::optional<int64_t>& permuted_lengths_sum) {
    check_npu(op, "permute", permute);
    check_npu(op, "lengths", lengths);
    check_npu(op, "values", values);
    const at::Tensor w = weights.has_value() ? *weights : at::Tensor();
    if (w.defined())
        check_npu(op, "weights", w);
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
        TORCH_CHECK_VALUE(w.size(0) == values.size(0), op,
                          ": weights must have as many rows "
                          "as values (",
                          values.size(0), "), got shape ", w.sizes());
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
    const int64_t out_len =
        permuted_lengths_sum.has_value() ? *permuted_lengths_sum : permuted_total;
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
    backend::permute2d_sparse_data(permute.contiguous(), lengths.contiguous(), values.contiguous(),
                                   wc, out_len, permuted_lengths, permuted_values,
                                   permuted_weights);
    std::optional<at::Tensor> out_w;
    if (permuted_weights.defined())
        out_w = permuted_weights;
    return {permuted_lengths, permuted_values, out_w};
}

std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>> permute_2D_sparse_data(
    const at::Tensor& permute, const at::Tensor& lengths, const at::Tensor& values,
    const std::optional<at::Tensor>& weights, const std::optional<int64_t>& permuted_lengths_sum) {
    return permute_sparse_data_impl("permute_2D_sparse_data", permute, lengths, values, weights,
                                    permuted_lengths_sum);
}

// fbgemm views lengths as [T, stride] and returns the permuted lengths flat again. stride is
// taken by reference as fbgemm's CPU kernel takes it: the dispatcher refuses a second kernel
// whose C++ signature differs.
std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>> permute_2D_sparse_data_input1D(
    const at::Tensor& permute, const at::Tensor& lengths, const at::Tensor& values,
    const int64_t& stride, const std::optional<at::Tensor>& weights,
    const std::optional<int64_t>& permuted_lengths_sum) {
    const char* op = "permute_2D_sparse_data_input1D";
    check_npu(op, "lengths", lengths);
    TORCH_CHECK_VALUE(stride > 0 && lengths.numel() % stride == 0, op, ": lengths (",
                      lengths.numel(), " entries) cannot be viewed as rows of stride ", stride);
    auto [out_lengths, out_values, out_weights] = permute_sparse_data_impl(
        op, permute, lengths.reshape({-1, stride}), values, weights, permuted_lengths_sum);
    return {out_lengths.view(-1), out_values, out_weights};
}

// Every entry of lengths is a row of one column: the permute_2D kernel with 1-D lengths. fbgemm's
// CPU op permutes float32 weights only; TorchRec also passes integer ones (bucketized
// positions, as its CUDA kernels permute them), which move in a second pass as values.
std::tuple<at::Tensor, at::Tensor, std::optional<at::Tensor>> permute_1D_sparse_data(
    const at::Tensor& permute, const at::Tensor& lengths, const at::Tensor& values,
    const std::optional<at::Tensor>& weights, const std::optional<int64_t>& permuted_lengths_sum) {
    const char* op = "permute_1D_sparse_data";
    check_npu(op, "lengths", lengths);
    const at::Tensor flat = lengths.reshape({-1});
    const at::Tensor w = weights.value_or(at::Tensor());
    if (w.defined()) {
        check_npu(op, "weights", w);
        check_dim(op, "weights", w, 1, 1);
    }
    if (!w.defined() || at::isFloatingType(w.scalar_type()))
        return permute_sparse_data_impl(op, permute, flat, values, weights, permuted_lengths_sum);
    check_dtype(op, "weights", w, kIndexTypes);
    TORCH_CHECK_VALUE(w.size(0) == values.size(0), op,
                      ": weights must have as many entries as values (", values.size(0),
                      "), got shape ", w.sizes());
    auto first =
        permute_sparse_data_impl(op, permute, flat, values, std::nullopt, permuted_lengths_sum);
    const int64_t out_len = std::get<1>(first).size(0);
    auto second = permute_sparse_data_impl(op, permute, flat, w, std::nullopt, out_len);
    return {std::get<0>(first), std::get<1>(first), std::get<1>(second)};
}

// Pooled embeddings [B, D, ...] with their feature blocks reordered: output block i is input
// block permute_list[i]. The blocks are fbgemm's CPU op's (tensor_split of dim 1 at
// offset_dim_list[1..T-1], T = permute_list.size(0)); both lists are small and read on the host
// for clear errors and the output width. inv_offset_dim_list and inv_permute_list are not read
// (fbgemm's autograd passes them to the backward, which is this operator with the lists swapped).
at::Tensor permute_pooled_embs(const at::Tensor& pooled_embs, const at::Tensor& offset_dim_list,
                               const at::Tensor& permute_list,
                               const at::Tensor& /*inv_offset_dim_list*/,
                               const at::Tensor& /*inv_permute_list*/) {
    const char* op = "permute_pooled_embs";
    check_npu(op, "pooled_embs", pooled_embs);
    check_npu(op, "offset_dim_list", offset_dim_list);
    check_npu(op, "permute_list", permute_list);
    check_same_device(op, pooled_embs, {&offset_dim_list, &permute_list});
    // fbgemm's own checks, with its messages.
    TORCH_CHECK(offset_dim_list.scalar_type() == at::kLong,
                "offset_dim_list needs to have long/int64 type");
    TORCH_CHECK(permute_list.scalar_type() == at::kLong,
                "permute_list needs to have long/int64 type");
    check_dtype(op, "pooled_embs", pooled_embs, kValueTypes);
    TORCH_CHECK_INDEX(pooled_embs.dim() >= 2, op,
                      ": pooled_embs must have a feature dimension (dim 1), got shape ",
                      pooled_embs.sizes());
    check_dim(op, "offset_dim_list", offset_dim_list, 1, 1);
    check_dim(op, "permute_list", permute_list, 1, 1);
    const int64_t blocks = permute_list.size(0);
    TORCH_CHECK_VALUE(blocks > 0, op, ": permute_list is empty");
    TORCH_CHECK_INDEX(offset_dim_list.size(0) >= blocks, op, ": offset_dim_list has ",
                      offset_dim_list.size(0), " entries, fewer than the ", blocks,
                      " blocks permute_list names");
    const at::Tensor off_host = offset_dim_list.to(at::kCPU).contiguous();
    const at::Tensor perm_host = permute_list.to(at::kCPU).contiguous();
    const int64_t* off = off_host.data_ptr<int64_t>();
    const int64_t* perm = perm_host.data_ptr<int64_t>();
    const int64_t cols = pooled_embs.size(1);
    std::vector<int64_t> widths(blocks);
    for (int64_t k = 0; k < blocks; ++k) {
        if (k > 0)
            TORCH_CHECK_VALUE(off[k] >= 0, op, ": offset_dim_list[", k, "] = ", off[k],
                              " is negative");
        const int64_t start = k == 0 ? 0 : std::min(off[k], cols);
        const int64_t end = k + 1 == blocks ? cols : std::min(off[k + 1], cols);
        widths[k] = std::max<int64_t>(end - start, 0);
    }
    int64_t width = 0;
    for (int64_t i = 0; i < blocks; ++i) {
        TORCH_CHECK_VALUE(perm[i] >= 0 && perm[i] < blocks, op, ": permute_list[", i,
                          "] = ", perm[i], " is not a block (permute_list has ", blocks,
                          " entries)");
        width += widths[perm[i]];
    }
    std::vector<int64_t> shape(pooled_embs.sizes().begin(), pooled_embs.sizes().end());
    shape[1] = width;
    at::Tensor out =
        at::empty(shape, pooled_embs.options().memory_format(at::MemoryFormat::Contiguous));
    backend::permute_pooled_embs(pooled_embs.contiguous(), offset_dim_list.contiguous(),
                                 permute_list.contiguous(), width, out);
    return out;
}

// out[i] = sum of values[csr_seg[i] * batch_size : csr_seg[i + 1] * batch_size], values read
// flat, in fbgemm's order and precision. csr_seg is read on the host for clear errors where
// fbgemm's CPU op would read outside values.
at::Tensor segment_sum_csr(int64_t batch_size, const at::Tensor& csr_seg,
                           const at::Tensor& values) {
    const char* op = "segment_sum_csr";
    check_npu(op, "csr_seg", csr_seg);
    check_npu(op, "values", values);
    check_same_device(op, csr_seg, {&values});
    // fbgemm's own errors: csr_seg is read as int32, values dispatched over its five dtypes.
    TORCH_CHECK(csr_seg.scalar_type() == at::kInt, "expected scalar type Int but found ",
                csr_seg.scalar_type());
    const auto dtype = values.scalar_type();
    TORCH_CHECK(std::find(kValueTypes.begin(), kValueTypes.end(), dtype) != kValueTypes.end(),
                "\"_segment_sum_csr_cpu\" not implemented for '", c10::toString(dtype), "'");
    check_dim(op, "csr_seg", csr_seg, 1, 1);
    TORCH_CHECK_VALUE(csr_seg.size(0) >= 1, op, ": csr_seg must have at least one entry");
    TORCH_CHECK_VALUE(batch_size >= 0, op, ": batch_size must be >= 0, got ", batch_size);
    const at::Tensor host = csr_seg.to(at::kCPU).contiguous();
    const int32_t* c = host.data_ptr<int32_t>();
    TORCH_CHECK_VALUE(c[0] >= 0, op, ": csr_seg[0] = ", c[0], " must be >= 0");
    for (int64_t i = 1; i < host.size(0); ++i) {
        TORCH_CHECK_VALUE(c[i] >= c[i - 1], op, ": csr_seg must be non-decreasing, but csr_seg[", i,
                          "] = ", c[i], " < csr_seg[", i - 1, "] = ", c[i - 1]);
    }
    const int64_t last = static_cast<int64_t>(c[host.size(0) - 1]) * batch_size;
    TORCH_CHECK_VALUE(last <= values.numel(), op, ": csr_seg[-1] * batch_size = ", last,
                      " points past the end of values (", values.numel(), " elements)");
    at::Tensor out = at::empty({csr_seg.size(0) - 1}, values.options());
    backend::segment_sum_csr(csr_seg.contiguous(), values.contiguous(), batch_size, out);
    return out;
}

// Each position's index within its segment (TorchRec's position-weighted features). offsets
// are read on the host: fbgemm's CPU op leaves positions before offsets[0] uninitialised and
// writes outside its output for offsets that decrease or pass range_size; those are refused.
at::Tensor offsets_range(const at::Tensor& offsets, int64_t range_size) {
    const char* op = "offsets_range";
    check_npu(op, "offsets", offsets);
    // fbgemm's own checks, with its messages.
    TORCH_CHECK(offsets.dim() == 1, "Tensor 'offsets' must have 1 dimension(s). Found ",
                offsets.dim());
    TORCH_CHECK(offsets.scalar_type() == at::kLong || offsets.scalar_type() == at::kInt,
                "Expected tensor for argument #1 'offsets' to have one of the following scalar "
                "types: Long, Int; but got ",
                offsets.scalar_type(),
                " instead (while checking arguments for _offsets_range_cpu)");
    TORCH_CHECK(range_size >= 0, "Trying to create tensor with negative dimension ", range_size,
                ": [", range_size, "]");
    at::Tensor range = at::empty({range_size}, offsets.options());
    if (range_size == 0)
        return range;
    TORCH_CHECK_VALUE(offsets.size(0) >= 1, op, ": offsets is empty, so no position of the ",
                      range_size, " has a segment");
    const at::Tensor host = check_offsets(op, "offsets", offsets);
    const int64_t* o = host.data_ptr<int64_t>();
    TORCH_CHECK_VALUE(o[0] == 0, op, ": offsets[0] = ", o[0],
                      " must be 0 (positions before it would belong to no segment)");
    TORCH_CHECK_VALUE(o[host.size(0) - 1] <= range_size, op,
                      ": offsets[-1] = ", o[host.size(0) - 1], " passes range_size ", range_size);
    backend::offsets_range(offsets.contiguous(), range_size, range);
    return range;
}

// TorchRec's variable-batch recat: a permutation of T segments expanded to one of their
// elements. permute and output_offsets are read on the host: fbgemm's CPU op reads and writes
// out of bounds for entries outside [0, T) or offsets that decrease or pass output_size.
at::Tensor expand_into_jagged_permute(const at::Tensor& permute, const at::Tensor& input_offsets,
                                      const at::Tensor& output_offsets, int64_t output_size) {
    const char* op = "expand_into_jagged_permute";
    check_npu(op, "permute", permute);
    check_npu(op, "input_offset", input_offsets);
    check_npu(op, "output_offset", output_offsets);
    check_same_device(op, permute, {&input_offsets, &output_offsets});
    // fbgemm's own checks, with its messages.
    TORCH_CHECK(permute.numel() > 0);
    TORCH_CHECK(permute.numel() == input_offsets.numel() - 1);
    TORCH_CHECK(permute.numel() == output_offsets.numel() - 1);
    const auto dtype = permute.scalar_type();
    TORCH_CHECK(dtype == at::kInt || dtype == at::kLong,
                "\"expand_into_jagged_permute_cpu\" not implemented for '", c10::toString(dtype),
                "'");
    for (const at::Tensor* t : {&input_offsets, &output_offsets}) {
        TORCH_CHECK(t->scalar_type() == dtype, "expected scalar type ", dtype, " but found ",
                    t->scalar_type());
    }
    TORCH_CHECK(output_size >= 0, "Trying to create tensor with negative dimension ", output_size,
                ": [", output_size, "]");
    check_dim(op, "permute", permute, 1, 1);
    const int64_t segments = permute.size(0);
    const at::Tensor out_host = check_offsets(op, "output_offset", output_offsets.reshape({-1}));
    const int64_t* o = out_host.data_ptr<int64_t>();
    TORCH_CHECK_VALUE(o[0] == 0 && o[segments] == output_size, op,
                      ": output_offset must run from 0 to output_size = ", output_size, ", got ",
                      o[0], " .. ", o[segments]);
    const at::Tensor perm_host = permute.to(at::kCPU, at::kLong).contiguous();
    const int64_t* p = perm_host.data_ptr<int64_t>();
    for (int64_t t = 0; t < segments; ++t) {
        TORCH_CHECK_VALUE(p[t] >= 0 && p[t] < segments, op, ": permute[", t, "] = ", p[t],
                          " is not a segment (", segments, " segments)");
    }
    at::Tensor out = at::empty({output_size}, input_offsets.options());
    backend::expand_into_jagged_permute(
        permute.contiguous(), input_offsets.reshape({-1}).contiguous(),
        output_offsets.reshape({-1}).contiguous(), output_size, out);
    return out;
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
    if (w.defined())
        check_npu(op, "weights", w);
    if (bo.defined())
        check_npu(op, "B_offsets", bo);
    if (bt.defined())
        check_npu(op, "b_t_map", bt);
    check_same_device(op, rows_per_table, {&indices, &offsets, &warning, &w, &bo, &bt});
    check_dtype(op, "rows_per_table", rows_per_table, {at::kLong});
    check_dtype(op, "indices", indices, kIndexTypes);
    check_dtype(op, "offsets", offsets, kIndexTypes);
    check_dtype(op, "warning", warning, {at::kLong});
    if (w.defined())
        check_dtype(op, "weights", w, {at::kFloat, at::kHalf, at::kBFloat16});
    if (bo.defined())
        check_dtype(op, "B_offsets", bo, {at::kInt});
    if (bt.defined())
        check_dtype(op, "b_t_map", bt, {at::kInt});
    TORCH_CHECK_VALUE(bounds_check_mode >= 0 && bounds_check_mode <= 3, op,
                      ": bounds_check_mode must be 0 (fatal), 1 (warning), 2 (ignore) or 3 "
                      "(none), got ",
                      bounds_check_mode);
    // indices, offsets and warning are updated in place: a contiguous copy would drop the
    // update, so strided tensors are refused instead.
    for (auto [name, t] : {std::pair<const char*, const at::Tensor*>{"indices", &indices},
                           {"offsets", &offsets},
                           {"warning", &warning}}) {
        TORCH_CHECK_VALUE(t->is_contiguous(), op, ": ", name,
                          " is updated in place and must be contiguous");
    }
    if (bounds_check_mode == 3)
        return;  // fbgemm's NONE: nothing is checked
    backend::bounds_check_indices(
        rows_per_table.contiguous(), indices, offsets, warning, w.defined() ? w.contiguous() : w,
        bo.defined() ? bo.contiguous() : bo, bt.defined() ? bt.contiguous() : bt, bounds_check_mode,
        max_B, info_B_num_bits, info_B_mask, bounds_check_version);
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
    if (w.defined())
        check_npu(op, "weights", w);
    if (bpf.defined())
        check_npu(op, "batch_size_per_feature", bpf);
    if (tnb.defined())
        check_npu(op, "total_num_blocks", tnb);
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
        lengths.contiguous(), indices.contiguous(), bs, w.defined() ? w.contiguous() : w, bsz, nb,
        bucketize_pos ? 1 : 0, sequence ? 1 : 0, my_size, max_B, keep_orig_idx ? 1 : 0, new_lengths,
        new_indices, new_weights, new_pos, permute);
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

// bounds_check_indices(Tensor rows_per_table, Tensor(a!) indices, Tensor(b!) offsets,
//     int bounds_check_mode, Tensor(c!) warning, Tensor(d!)? weights=None,
//     Tensor? B_offsets=None, SymInt max_B=-1, Tensor? b_t_map=None, int info_B_num_bits=-1,
//     int info_B_mask=-1, int bounds_check_version=1) -> ()
void bounds_check_indices_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    bounds_check_indices(
        a.tensor("rows_per_table"), a.tensor("indices"), a.tensor("offsets"),
        a.integer("bounds_check_mode"), a.tensor("warning"), a.optional_tensor("weights"),
        a.optional_tensor("B_offsets"), a.integer("max_B"), a.optional_tensor("b_t_map"),
        a.integer("info_B_num_bits"), a.integer("info_B_mask"), a.integer("bounds_check_version"));
    torch::jit::drop(*stack, a.size());
}

// block_bucketize_sparse_features(Tensor lengths, Tensor indices, bool bucketize_pos,
//     bool sequence, Tensor block_sizes, SymInt my_size, Tensor? weights=None,
//     Tensor? batch_size_per_feature=None, SymInt max_B=-1, Tensor[]? block_bucketize_pos=None,
//     bool keep_orig_idx=False, Tensor? total_num_blocks=None)
//     -> (Tensor, Tensor, Tensor?, Tensor?, Tensor?)
void block_bucketize_sparse_features_boxed(const c10::OperatorHandle& handle,
                                           torch::jit::Stack* stack) {
    const Args a(handle, stack);
    auto out = block_bucketize_sparse_features(
        a.tensor("lengths"), a.tensor("indices"), a.flag("bucketize_pos"), a.flag("sequence"),
        a.tensor("block_sizes"), a.integer("my_size"), a.optional_tensor("weights"),
        a.optional_tensor("batch_size_per_feature"), a.integer("max_B"),
        a.optional_tensor_list("block_bucketize_pos"), a.flag("keep_orig_idx"),
        a.optional_tensor("total_num_blocks"));
    torch::jit::drop(*stack, a.size());
    for (auto& t : out) {
        if (t.has_value()) {
            torch::jit::push(*stack, std::move(*t));
        } else {
            torch::jit::push(*stack, c10::IValue());
        }
    }
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("asynchronous_complete_cumsum", &fbgemm_npu::asynchronous_complete_cumsum);
    m.impl("asynchronous_inclusive_cumsum", &fbgemm_npu::asynchronous_inclusive_cumsum);
    m.impl("asynchronous_exclusive_cumsum", &fbgemm_npu::asynchronous_exclusive_cumsum);
    m.impl("permute_2D_sparse_data", &fbgemm_npu::permute_2D_sparse_data);
    m.impl("bounds_check_indices",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::bounds_check_indices_boxed>());
    m.impl("invert_permute", &fbgemm_npu::invert_permute);
    m.impl("permute_1D_sparse_data", &fbgemm_npu::permute_1D_sparse_data);
    m.impl("permute_2D_sparse_data_input1D", &fbgemm_npu::permute_2D_sparse_data_input1D);
    // permute_pooled_embs_auto_grad keeps fbgemm's autograd kernel (Autograd alias key), which
    // calls permute_pooled_embs; this one serves calls below autograd (no_grad, inference).
    m.impl("permute_pooled_embs", &fbgemm_npu::permute_pooled_embs);
    m.impl("permute_pooled_embs_auto_grad", &fbgemm_npu::permute_pooled_embs);
    m.impl("segment_sum_csr", &fbgemm_npu::segment_sum_csr);
    m.impl("offsets_range", &fbgemm_npu::offsets_range);
    m.impl("expand_into_jagged_permute", &fbgemm_npu::expand_into_jagged_permute);
    m.impl("block_bucketize_sparse_features",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::block_bucketize_sparse_features_boxed>());
}
