// KeyedTensor regrouping on the npu: fbgemm's permute_multi_embedding family, which TorchRec's
// regroup_kts (regroup_keyed_tensor), KTRegroupAsDict and permute_multi_embedding call.
//
// Dispatch keys follow fbgemm 1.1.0's own. Its autograd kernels (on the Autograd alias key, so
// they serve npu tensors too) call permute_multi_embedding_function through the dispatcher,
// forward and reverse (the backward, where a key used by several outputs sums its gradients);
// this file gives that function, the two public operators (reached below autograd, e.g. in
// inference mode) and kt_regroup_arguments npu kernels.
//
// The kernel (kernels/ops/permute_multi_embedding) moves the column segments of one source
// tensor into one destination tensor. fbgemm's permutes, [P, 6] int32 rows (in_tensor,
// out_tensor, in_offset, out_offset, length, next), are read on the host (one small copy) and
// planned into launches: a row joins the last launch of its (source, destination) pair unless a
// later launch writes the same destination columns (so the result is that of fbgemm's in-order
// loop, repeated writes and the order of additions included), and segments adjacent in both
// tensors merge. TorchRec's permutes thus cost one launch per (source, destination) pair.
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

// fbgemm's PermuteParam columns.
enum Param : int64_t { kInTensor, kOutTensor, kInOffset, kOutOffset, kLength, kNext, kParams };

struct Segment {
    int64_t src_off;
    int64_t dst_off;
    int64_t len;
    bool add;
};

struct Launch {
    int64_t src;
    int64_t dst;
    std::vector<Segment> segs;
};

bool overlaps(const Launch& l, int64_t dst, const Segment& s) {
    if (l.dst != dst)
        return false;
    for (const Segment& t : l.segs) {
        if (t.dst_off < s.dst_off + s.len && s.dst_off < t.dst_off + t.len)
            return true;
    }
    return false;
}

std::vector<Launch> plan(const std::vector<std::tuple<int64_t, int64_t, Segment>>& rows) {
    std::vector<Launch> launches;
    for (const auto& [src, dst, seg] : rows) {
        int64_t last = -1;
        for (int64_t i = static_cast<int64_t>(launches.size()) - 1; i >= 0; --i) {
            if (launches[i].src == src && launches[i].dst == dst) {
                last = i;
                break;
            }
        }
        bool joins = last >= 0;
        for (int64_t i = last + 1; joins && i < static_cast<int64_t>(launches.size()); ++i)
            joins = !overlaps(launches[i], dst, seg);
        if (!joins) {
            launches.push_back({src, dst, {}});
            last = static_cast<int64_t>(launches.size()) - 1;
        }
        std::vector<Segment>& segs = launches[last].segs;
        if (!segs.empty()) {
            Segment& prev = segs.back();
            if (prev.add == seg.add && prev.src_off + prev.len == seg.src_off &&
                prev.dst_off + prev.len == seg.dst_off) {
                prev.len += seg.len;
                continue;
            }
        }
        segs.push_back(seg);
    }
    return launches;
}

// Whether the segments cover every column of a destination of `width` columns (else the
// columns left over are zeros instead of fbgemm's uninitialised memory).
bool covers(std::vector<std::pair<int64_t, int64_t>> spans, int64_t width) {
    std::sort(spans.begin(), spans.end());
    int64_t reached = 0;
    for (const auto& [lo, hi] : spans) {
        if (lo > reached)
            return false;
        reached = std::max(reached, hi);
    }
    return reached >= width;
}

// The C++ signatures are those of fbgemm's CPU kernels (const references included): the
// dispatcher refuses a second kernel whose unboxed signature differs from the first's.
std::vector<at::Tensor> permute_multi_embedding_function(
    const at::TensorList& pooled_embs, const at::Tensor& permutes, const at::Tensor& in_shapes,
    const at::Tensor& out_shapes, const c10::IntArrayRef out_lengths, const bool& reverse) {
    const char* op = "permute_multi_embedding";
    TORCH_CHECK_VALUE(!pooled_embs.empty(), op, ": pooled_embs must hold at least one tensor");
    const at::Tensor& first = pooled_embs[0];
    check_npu(op, "pooled_embs[0]", first);
    check_dtype(op, "pooled_embs[0]", first, {at::kFloat, at::kHalf, at::kBFloat16});
    check_dim(op, "pooled_embs[0]", first, 2, 2);
    const int64_t batch = first.size(0);
    const int64_t n_src = static_cast<int64_t>(pooled_embs.size());
    std::vector<at::Tensor> sources;
    sources.reserve(n_src);
    for (int64_t i = 0; i < n_src; ++i) {
        const at::Tensor& t = pooled_embs[i];
        const std::string name = "pooled_embs[" + std::to_string(i) + "]";
        check_npu(op, name.c_str(), t);
        check_same_device(op, first, {&t});
        TORCH_CHECK_TYPE(t.scalar_type() == first.scalar_type(), op, ": ", name,
                         " must have the dtype of pooled_embs[0] (", first.scalar_type(), "), got ",
                         t.scalar_type());
        check_dim(op, name.c_str(), t, 2, 2);
        TORCH_CHECK_VALUE(t.size(0) == batch, op, ": ", name, " must have ", batch,
                          " rows like pooled_embs[0], got shape ", t.sizes());
        sources.push_back(t.contiguous());
    }
    check_npu(op, "permutes", permutes);
    check_same_device(op, first, {&permutes, &in_shapes, &out_shapes});
    check_dtype(op, "permutes", permutes, {at::kInt});
    TORCH_CHECK_VALUE(permutes.dim() == 2 && permutes.size(1) == kParams, op,
                      ": permutes must be [P, 6] (in_tensor, out_tensor, in_offset, out_offset, "
                      "length, next), got shape ",
                      permutes.sizes());
    const int64_t n_dst = static_cast<int64_t>(out_lengths.size());
    for (int64_t i = 0; i < n_dst; ++i) {
        TORCH_CHECK_VALUE(out_lengths[i] >= 0, op, ": out_lengths[", i, "] must be >= 0, got ",
                          out_lengths[i]);
    }

    // The permutes on the host: one small device-to-host copy, checked row by row (fbgemm's
    // kernels trust them; a bad row would read or write outside the tensors).
    const at::Tensor host = permutes.to(at::kCPU).contiguous();
    const int32_t* pp = host.data_ptr<int32_t>();
    std::vector<std::tuple<int64_t, int64_t, Segment>> rows;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> spans(n_dst);
    for (int64_t r = 0; r < host.size(0); ++r) {
        const int32_t* p = pp + r * kParams;
        // reverse: the gradients of the outputs flow back into the inputs' places.
        const int64_t src = reverse ? p[kOutTensor] : p[kInTensor];
        const int64_t dst = reverse ? p[kInTensor] : p[kOutTensor];
        const int64_t src_off = reverse ? p[kOutOffset] : p[kInOffset];
        const int64_t dst_off = reverse ? p[kInOffset] : p[kOutOffset];
        const int64_t len = p[kLength];
        TORCH_CHECK_VALUE(src >= 0 && src < n_src, op, ": permutes row ", r,
                          " names source tensor ", src, " of ", n_src);
        TORCH_CHECK_VALUE(dst >= 0 && dst < n_dst, op, ": permutes row ", r,
                          " names destination tensor ", dst, " of ", n_dst);
        TORCH_CHECK_VALUE(len >= 0, op, ": permutes row ", r, " has length ", len);
        TORCH_CHECK_VALUE(src_off >= 0 && src_off + len <= sources[src].size(1), op,
                          ": permutes row ", r, " reads columns [", src_off, ", ", src_off + len,
                          ") of a ", sources[src].size(1), "-column source tensor");
        TORCH_CHECK_VALUE(dst_off >= 0 && dst_off + len <= out_lengths[dst], op, ": permutes row ",
                          r, " writes columns [", dst_off, ", ", dst_off + len, ") of a ",
                          out_lengths[dst], "-column output");
        if (len == 0)
            continue;
        rows.emplace_back(src, dst, Segment{src_off, dst_off, len, reverse && p[kNext] < 0});
        spans[dst].emplace_back(dst_off, dst_off + len);
    }

    std::vector<at::Tensor> outputs;
    outputs.reserve(n_dst);
    for (int64_t i = 0; i < n_dst; ++i) {
        const bool full = batch == 0 || covers(spans[i], out_lengths[i]);
        outputs.push_back(full ? at::empty({batch, out_lengths[i]}, first.options())
                               : at::zeros({batch, out_lengths[i]}, first.options()));
    }
    if (batch == 0)
        return outputs;
    for (const Launch& l : plan(rows)) {
        at::Tensor table = at::empty({static_cast<int64_t>(l.segs.size()), 4}, at::kInt);
        int32_t* t = table.data_ptr<int32_t>();
        bool accumulate = false;
        for (const Segment& s : l.segs) {
            *t++ = static_cast<int32_t>(s.src_off);
            *t++ = static_cast<int32_t>(s.dst_off);
            *t++ = static_cast<int32_t>(s.len);
            *t++ = s.add ? 1 : 0;
            accumulate = accumulate || s.add;
        }
        backend::permute_multi_embedding(sources[l.src], table.to(first.device()), outputs[l.dst],
                                         accumulate);
    }
    return outputs;
}

std::vector<at::Tensor> permute_multi_embedding(const at::TensorList& pooled_embs,
                                                const at::Tensor& permutes,
                                                const at::Tensor& in_shapes,
                                                const at::Tensor& out_shapes,
                                                const c10::IntArrayRef out_lengths) {
    return permute_multi_embedding_function(pooled_embs, permutes, in_shapes, out_shapes,
                                            out_lengths, false);
}

using Names = std::vector<std::vector<std::string>>;
using Lengths = std::vector<std::vector<int64_t>>;
using RegroupArgs = std::tuple<at::Tensor, at::Tensor, at::Tensor, std::vector<int64_t>>;

// Pure host work on names and lengths: fbgemm's CPU kernel computes it (its errors included),
// and its tensors move to the device of embs, as fbgemm's CUDA kernel moves them.
RegroupArgs kt_regroup_arguments(const at::Tensor& embs, const Names& keys, const Lengths& lengths,
                                 const Names& groups) {
    check_npu("kt_regroup_arguments", "embs", embs);
    static auto cpu =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("fbgemm::kt_regroup_arguments", "")
            .typed<RegroupArgs(const at::Tensor&, const Names&, const Lengths&, const Names&)>();
    auto [permutes, in_shapes, out_shapes, out_lengths] =
        cpu.call(at::empty({0}, at::kFloat), keys, lengths, groups);
    const c10::Device device = embs.device();
    return {permutes.to(device), in_shapes.to(device), out_shapes.to(device), out_lengths};
}

std::vector<at::Tensor> regroup_keyed_tensor(const at::TensorList& pooled_embs, const Names& keys,
                                             const Lengths& lengths, const Names& groups) {
    TORCH_CHECK_VALUE(!pooled_embs.empty(), "regroup_keyed_tensor",
                      ": pooled_embs must hold at least one tensor");
    auto [permutes, in_shapes, out_shapes, out_lengths] =
        kt_regroup_arguments(pooled_embs[0], keys, lengths, groups);
    return permute_multi_embedding_function(pooled_embs, permutes, in_shapes, out_shapes,
                                            out_lengths, false);
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("permute_multi_embedding_function", &fbgemm_npu::permute_multi_embedding_function);
    m.impl("permute_multi_embedding", &fbgemm_npu::permute_multi_embedding);
    m.impl("kt_regroup_arguments", &fbgemm_npu::kt_regroup_arguments);
    m.impl("regroup_keyed_tensor", &fbgemm_npu::regroup_keyed_tensor);
}

// ---- keyed_jagged_index_select_dim1 -------------------------------------------------------
//
// fbgemm 1.1.0 has this operator for CUDA only (fbgemm-gpu-cpu registers a Meta kernel): the
// same batch columns `indices` of every key of a KeyedJaggedTensor (torchrec's variable-stride
// permute and ITEP). lengths and indices are read on the host (T * B and I entries: small) to
// check the columns and to size the output when selected_lengths_sum is not given; the kernel
// (kernels/ops/keyed_jagged_index_select_dim1) gathers lengths and moves the values. Its
// autograd follows fbgemm's: the values' gradient sums the output's gradient back into the
// selected places (the kernel run on the positions 0..N-1 maps each output element to its
// source, index_select_for_rank1_backward adds), weights get none.
namespace fbgemm_npu {

namespace {

constexpr const char* kKjis = "keyed_jagged_index_select_dim1";

std::vector<at::Tensor> keyed_jagged_index_select_dim1(
    const at::Tensor& values, const at::Tensor& lengths, const at::Tensor& offsets,
    const at::Tensor& indices, const c10::SymInt batch_size_sym,
    const std::optional<at::Tensor>& weights,
    const std::optional<c10::SymInt> selected_lengths_sum) {
    const char* op = kKjis;
    check_npu(op, "values", values);
    check_npu(op, "lengths", lengths);
    check_npu(op, "offsets", offsets);
    check_npu(op, "indices", indices);
    const at::Tensor w = weights.has_value() ? *weights : at::Tensor();
    if (w.defined())
        check_npu(op, "weights", w);
    check_same_device(op, values, {&lengths, &offsets, &indices, &w});
    check_dtype(op, "values", values, kValueTypes);
    check_dtype(op, "lengths", lengths, kIndexTypes);
    check_dtype(op, "offsets", offsets, kIndexTypes);
    check_dtype(op, "indices", indices, kIndexTypes);
    check_dim(op, "values", values, 1, 1);
    check_dim(op, "lengths", lengths, 1, 1);
    check_dim(op, "offsets", offsets, 1, 1);
    check_dim(op, "indices", indices, 1, 1);
    TORCH_CHECK_VALUE(offsets.size(0) == lengths.size(0) + 1, op,
                      ": offsets size must be lengths size + 1, got ", offsets.size(0), " and ",
                      lengths.size(0));
    if (w.defined()) {
        // fbgemm dispatches the weights as float or half.
        check_dtype(op, "weights", w, {at::kFloat, at::kHalf});
        check_dim(op, "weights", w, 1, 1);
        TORCH_CHECK_VALUE(w.size(0) == values.size(0), op, ": weights must have as many entries ",
                          "as values (", values.size(0), "), got ", w.size(0));
    }
    const int64_t batch = batch_size_sym.guard_int(__FILE__, __LINE__);
    TORCH_CHECK_VALUE(batch >= 1, op, ": batch_size must be >= 1, got ", batch);
    TORCH_CHECK_VALUE(lengths.size(0) % batch == 0, op, ": lengths has ", lengths.size(0),
                      " entries, not a multiple of batch_size ", batch);
    const int64_t keys = lengths.size(0) / batch;
    const int64_t sel = indices.size(0);

    const at::Tensor len_host = lengths.to(at::kCPU, at::kLong).contiguous();
    const at::Tensor idx_host = indices.to(at::kCPU, at::kLong).contiguous();
    const int64_t* lp = len_host.data_ptr<int64_t>();
    const int64_t* ip = idx_host.data_ptr<int64_t>();
    for (int64_t j = 0; j < sel; ++j) {
        TORCH_CHECK_VALUE(ip[j] >= 0 && ip[j] < batch, op, ": indices[", j, "] = ", ip[j],
                          " is not a batch column in [0, batch_size = ", batch, ")");
    }
    int64_t selected = 0;
    for (int64_t t = 0; t < keys; ++t) {
        for (int64_t j = 0; j < sel; ++j) {
            const int64_t n = lp[t * batch + ip[j]];
            TORCH_CHECK_VALUE(n >= 0, op, ": lengths[", t * batch + ip[j], "] = ", n,
                              " is negative");
            selected += n;
        }
    }
    int64_t total = selected;
    if (selected_lengths_sum.has_value()) {
        total = selected_lengths_sum->guard_int(__FILE__, __LINE__);
        TORCH_CHECK_VALUE(total >= 0, op, ": selected_lengths_sum must be >= 0, got ", total);
    }

    // The kernel takes offsets and indices in the dtype of lengths; mixed index dtypes run in
    // int64 (the output lengths return in the dtype of lengths).
    const at::ScalarType idx_type =
        offsets.scalar_type() == lengths.scalar_type() ? lengths.scalar_type() : at::kLong;
    at::Tensor out_lengths = at::empty({keys * sel}, lengths.options().dtype(idx_type));
    at::Tensor output = at::empty({total}, values.options());
    at::Tensor out_weights;
    if (w.defined())
        out_weights = at::empty({total}, w.options());
    backend::keyed_jagged_index_select_dim1(
        values.contiguous(), lengths.to(idx_type).contiguous(), offsets.to(idx_type).contiguous(),
        indices.to(idx_type).contiguous(), w.defined() ? w.contiguous() : w, batch, total, output,
        out_lengths, out_weights);
    std::vector<at::Tensor> result{output, out_lengths.to(lengths.scalar_type())};
    if (w.defined())
        result.push_back(out_weights);
    return result;
}

class KeyedJaggedIndexSelectDim1Function
    : public torch::autograd::Function<KeyedJaggedIndexSelectDim1Function> {
public:
    static torch::autograd::variable_list forward(
        torch::autograd::AutogradContext* ctx, const at::Tensor& values, const at::Tensor& lengths,
        const at::Tensor& offsets, const at::Tensor& indices, int64_t batch_size,
        const std::optional<at::Tensor>& weights, std::optional<int64_t> selected_lengths_sum) {
        at::AutoDispatchBelowADInplaceOrView guard;
        std::optional<c10::SymInt> sum;
        if (selected_lengths_sum.has_value())
            sum = c10::SymInt(*selected_lengths_sum);
        std::vector<at::Tensor> out = keyed_jagged_index_select_dim1(
            values, lengths, offsets, indices, c10::SymInt(batch_size), weights, sum);
        ctx->save_for_backward({lengths, offsets, indices});
        ctx->saved_data["batch_size"] = batch_size;
        ctx->saved_data["num_values"] = values.size(0);
        ctx->mark_non_differentiable({out[1]});
        return out;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const torch::autograd::variable_list saved = ctx->get_saved_variables();
        const int64_t batch = ctx->saved_data["batch_size"].toInt();
        const int64_t n = ctx->saved_data["num_values"].toInt();
        torch::autograd::variable_list none(6);
        const at::Tensor& grad = grads[0];
        if (!grad.defined()) {
            none.insert(none.begin(), at::Tensor());
            return none;
        }
        check_dtype(kKjis, "the output's gradient", grad, {at::kFloat, at::kHalf, at::kBFloat16});
        at::Tensor grad_values = at::empty({n}, grad.options());
        if (n > 0) {
            // Where each output element came from: the forward selection of 0..N-1.
            const at::Tensor positions = at::arange(n, grad.options().dtype(at::kLong));
            const at::Tensor source = keyed_jagged_index_select_dim1(
                positions, saved[0], saved[1], saved[2], c10::SymInt(batch), std::nullopt,
                c10::SymInt(grad.size(0)))[0];
            const at::Tensor like = at::empty({n}, grad.options());  // only its length is read
            backend::index_select_for_rank1_backward(grad.contiguous(), like, source, grad_values);
        }
        none.insert(none.begin(), grad_values);
        return none;
    }
};

std::vector<at::Tensor> keyed_jagged_index_select_dim1_autograd(
    const at::Tensor& values, const at::Tensor& lengths, const at::Tensor& offsets,
    const at::Tensor& indices, const c10::SymInt batch_size,
    const std::optional<at::Tensor>& weights,
    const std::optional<c10::SymInt> selected_lengths_sum) {
    std::optional<int64_t> sum;
    if (selected_lengths_sum.has_value())
        sum = selected_lengths_sum->guard_int(__FILE__, __LINE__);
    return KeyedJaggedIndexSelectDim1Function::apply(
        values, lengths, offsets, indices, batch_size.guard_int(__FILE__, __LINE__), weights, sum);
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("keyed_jagged_index_select_dim1", &fbgemm_npu::keyed_jagged_index_select_dim1);
}

TORCH_LIBRARY_IMPL(fbgemm, AutogradPrivateUse1, m) {
    m.impl("keyed_jagged_index_select_dim1", &fbgemm_npu::keyed_jagged_index_select_dim1_autograd);
}
