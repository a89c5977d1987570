// Table-batched embedding (TBE) lookups on the npu: fbgemm's training entry points
// split_embedding_codegen_lookup_{sgd,adagrad,rowwise_adagrad,adam,lars_sgd,partial_rowwise_adam,
// lamb,partial_rowwise_lamb,rowwise_adagrad_with_counter}_function (fused kernels: the optimizer
// runs inside the backward),
// split_embedding_codegen_lookup_none_function (optimizer NONE: the backward returns the weights'
// gradient as a sparse tensor of the touched rows, as fbgemm's) and
// dense_embedding_codegen_lookup_function (data-parallel tables: an ordinary gradient for the
// weights).
//
// fbgemm-gpu-cpu defines the dense lookup but not the split ones (only their *_cpu variants):
// their schemas come from fbgemm's CUDA build. We define them, with fbgemm's exact schema, only
// where no other library did (TORCH_LIBRARY_FRAGMENT, never a whole-namespace TORCH_LIBRARY),
// and always add our npu kernels.
//
// The kernels are boxed and read their arguments by name from the schema on the stack (boxed.h):
// a schema that grows an argument (another fbgemm build) still dispatches here, and one that
// loses an argument we need fails with its name instead of reading the wrong slot.
//
// Each lookup is an autograd function (forward: split_embedding_forward; backward:
// split_embedding_backward). Variable batch per feature (VBE: B_offsets and the vbe_ metadata
// fbgemm's generate_vbe_metadata builds) goes to the same kernels, which take that metadata as
// is and write (read) fbgemm's flat per-rank, per-feature output (gradient) layout. It is
// registered for AutogradPrivateUse1 and, for calls below autograd (inference mode), its forward
// alone for PrivateUse1.
#include <torch/autograd.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend.h"
#include "boxed.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// fbgemm's PoolingMode and EmbeddingLocation values.
constexpr int64_t kPoolSum = 0;
constexpr int64_t kPoolMean = 1;
constexpr int64_t kPoolNone = 2;
constexpr int64_t kLocationDevice = 0;

// Optimizer modes of the split_embedding_backward operator (its op.toml).
enum class Optimizer : int64_t {
    kSgd = 0,
    kAdagrad = 1,
    kRowwiseAdagrad = 2,
    kDense = 3,
    kAdam = 4,
    kNone = 5,
    kLarsSgd = 6,
    kPartialRowwiseAdam = 7,
    kLamb = 8,
    kPartialRowwiseLamb = 9,
    kRowwiseAdagradWithCounter = 10
};

// The optimizers with Adam's moments, bias corrections and arguments.
bool adam_like(Optimizer o) {
    return o == Optimizer::kAdam || o == Optimizer::kPartialRowwiseAdam || o == Optimizer::kLamb ||
           o == Optimizer::kPartialRowwiseLamb;
}

// What the forward needs and the backward keeps.
struct Lookup {
    const char* op = "";
    at::Tensor weights;           // dev_weights, flat
    at::Tensor weights_offsets;   // [T] int64
    at::Tensor d_offsets;         // [T + 1] int32
    at::Tensor hash_size_cumsum;  // [T + 1] int64
    at::Tensor indices;
    at::Tensor offsets;
    at::Tensor indice_weights;  // undefined when unweighted
    // VBE (all undefined without): fbgemm's B_offsets, vbe_output_offsets_feature_rank and
    // vbe_B_offsets_rank_per_feature; the output is then [vbe_output_size].
    at::Tensor b_offsets;
    at::Tensor vbe_output_offsets;
    at::Tensor vbe_b_offsets_rank;
    int64_t vbe_output_size = -1;
    int64_t pooling_mode = kPoolSum;
    int64_t total_d = 0;
    int64_t max_d = 0;
    int64_t output_dtype = 0;
};

// fbgemm's SparseType values of the output dtypes a TBE produces.
at::ScalarType output_scalar_type(const char* op, int64_t output_dtype) {
    switch (output_dtype) {
        case 0:
            return at::kFloat;
        case 1:
            return at::kHalf;
        case 5:
            return at::kBFloat16;
        default:
            TORCH_CHECK_VALUE(false, op, ": output_dtype ", output_dtype,
                              " is not supported on npu (0 fp32, 1 fp16, 5 bf16)");
    }
}

// fbgemm's VBE metadata (generate_vbe_metadata in split_table_batched_embeddings_ops_training):
// the same checks of presence, device and dtype as the other inputs.
void read_vbe(const Args& a, Lookup& l) {
    const char* op = l.op;
    l.b_offsets = a.tensor("B_offsets");
    for (const char* name : {"vbe_output_offsets_feature_rank", "vbe_B_offsets_rank_per_feature"}) {
        TORCH_CHECK_VALUE(a.has(name) && !a.get(name).isNone(), op,
                          ": variable batch per feature (B_offsets given) needs ", name);
    }
    l.vbe_output_offsets = a.tensor("vbe_output_offsets_feature_rank");
    l.vbe_b_offsets_rank = a.tensor("vbe_B_offsets_rank_per_feature");
    l.vbe_output_size = a.integer("vbe_output_size");
    TORCH_CHECK_VALUE(l.pooling_mode != kPoolNone, op,
                      ": variable batch per feature (VBE) needs pooled tables (pooling_mode sum "
                      "or mean), as in fbgemm");
    TORCH_CHECK_VALUE(l.vbe_output_size >= 0, op,
                      ": variable batch per feature needs vbe_output_size >= 0, got ",
                      l.vbe_output_size);
    check_npu(op, "B_offsets", l.b_offsets);
    check_npu(op, "vbe_output_offsets_feature_rank", l.vbe_output_offsets);
    check_npu(op, "vbe_B_offsets_rank_per_feature", l.vbe_b_offsets_rank);
    check_dtype(op, "B_offsets", l.b_offsets, {at::kInt});
    check_dtype(op, "vbe_output_offsets_feature_rank", l.vbe_output_offsets, {at::kLong});
    check_dtype(op, "vbe_B_offsets_rank_per_feature", l.vbe_b_offsets_rank, {at::kInt});
    check_same_device(op, l.weights, {&l.b_offsets, &l.vbe_output_offsets, &l.vbe_b_offsets_rank});
    l.b_offsets = l.b_offsets.contiguous();
    l.vbe_output_offsets = l.vbe_output_offsets.contiguous();
    l.vbe_b_offsets_rank = l.vbe_b_offsets_rank.contiguous();
}

bool is_vbe(const Lookup& l) {
    return l.b_offsets.defined();
}

// none_2d: optimizer NONE, whose dev_weights fbgemm makes a [total_hash_size, max_D] parameter
// (one D for all tables); the kernels take it flat.
Lookup read_lookup(const Args& a, bool none_2d = false) {
    Lookup l;
    l.op = a.op();
    l.weights = a.tensor("dev_weights");
    if (none_2d && l.weights.defined() && l.weights.dim() == 2)
        l.weights = l.weights.reshape({-1});
    l.weights_offsets = a.tensor("weights_offsets");
    l.d_offsets = a.tensor("D_offsets");
    l.hash_size_cumsum = a.tensor("hash_size_cumsum");
    l.indices = a.tensor("indices");
    l.offsets = a.tensor("offsets");
    l.indice_weights = a.tensor("indice_weights");
    l.pooling_mode = a.integer("pooling_mode");
    l.total_d = a.integer("total_D");
    l.max_d = a.integer("max_D");
    l.output_dtype = a.integer_or("output_dtype", 0);

    const char* op = l.op;
    const bool vbe = a.has("B_offsets") && !a.get("B_offsets").isNone();
    if (vbe)
        read_vbe(a, l);
    for (auto [name, t] : {std::pair<const char*, const at::Tensor*>{"dev_weights", &l.weights},
                           {"weights_offsets", &l.weights_offsets},
                           {"D_offsets", &l.d_offsets},
                           {"hash_size_cumsum", &l.hash_size_cumsum},
                           {"indices", &l.indices},
                           {"offsets", &l.offsets}}) {
        check_npu(op, name, *t);
    }
    if (l.indice_weights.defined())
        check_npu(op, "indice_weights", l.indice_weights);
    check_same_device(op, l.weights,
                      {&l.weights_offsets, &l.d_offsets, &l.hash_size_cumsum, &l.indices,
                       &l.offsets, &l.indice_weights});
    check_dtype(op, "dev_weights", l.weights, {at::kFloat, at::kHalf, at::kBFloat16});
    check_dtype(op, "weights_offsets", l.weights_offsets, {at::kLong});
    check_dtype(op, "D_offsets", l.d_offsets, {at::kInt});
    check_dtype(op, "hash_size_cumsum", l.hash_size_cumsum, {at::kLong});
    check_dtype(op, "indices", l.indices, {at::kInt, at::kLong});
    check_dtype(op, "offsets", l.offsets, {at::kInt, at::kLong});
    check_dim(op, "dev_weights", l.weights, 1, 1);
    check_dim(op, "indices", l.indices, 1, 1);
    check_dim(op, "offsets", l.offsets, 1, 1);
    if (l.indice_weights.defined()) {
        check_dtype(op, "indice_weights", l.indice_weights, {at::kFloat});
        TORCH_CHECK_VALUE(
            l.indice_weights.dim() == 1 && l.indice_weights.size(0) == l.indices.size(0), op,
            ": indice_weights must have one weight per index (", l.indices.size(0), "), got shape ",
            l.indice_weights.sizes());
        TORCH_CHECK_VALUE(l.pooling_mode != kPoolNone, op,
                          ": indice_weights need a pooled table (pooling_mode sum or mean)");
    }
    TORCH_CHECK_VALUE(
        l.pooling_mode == kPoolSum || l.pooling_mode == kPoolMean || l.pooling_mode == kPoolNone,
        op, ": pooling_mode must be 0 (sum), 1 (mean) or 2 (none), got ", l.pooling_mode);
    const int64_t tables = l.d_offsets.numel() - 1;
    TORCH_CHECK_VALUE(tables >= 1, op, ": D_offsets must have T + 1 >= 2 entries");
    TORCH_CHECK_VALUE(l.weights_offsets.numel() == tables, op, ": weights_offsets has ",
                      l.weights_offsets.numel(), " entries for ", tables, " tables");
    // With VBE each feature has its own batch: offsets has total_B + 1 entries, which the
    // kernels check against B_offsets[T] (device data).
    TORCH_CHECK_VALUE(vbe || (l.offsets.numel() - 1) % tables == 0, op, ": offsets has ",
                      l.offsets.numel(), " entries, not B * T + 1 for T = ", tables);
    if (vbe) {
        TORCH_CHECK_VALUE(l.b_offsets.numel() == tables + 1, op, ": B_offsets has ",
                          l.b_offsets.numel(), " entries, not T + 1 = ", tables + 1);
        TORCH_CHECK_VALUE(
            l.vbe_b_offsets_rank.dim() == 2 && l.vbe_b_offsets_rank.size(0) == tables &&
                l.vbe_b_offsets_rank.size(1) >= 2,
            op, ": vbe_B_offsets_rank_per_feature must be [T, R + 1] with T = ", tables, ", got ",
            l.vbe_b_offsets_rank.sizes());
        const int64_t ranks = l.vbe_b_offsets_rank.size(1) - 1;
        TORCH_CHECK_VALUE(l.vbe_output_offsets.numel() == ranks * tables + 1, op,
                          ": vbe_output_offsets_feature_rank has ", l.vbe_output_offsets.numel(),
                          " entries, not R * T + 1 = ", ranks * tables + 1);
    }
    // The kernels take offsets in the indices' dtype; fbgemm's prepare_inputs casts both to
    // int64 anyway, so this copies only for callers that mix them.
    if (l.offsets.scalar_type() != l.indices.scalar_type()) {
        l.offsets = l.offsets.to(l.indices.scalar_type());
    }
    output_scalar_type(op, l.output_dtype);
    TORCH_CHECK_VALUE(!l.indice_weights.defined() || !l.indice_weights.requires_grad() ||
                          !at::GradMode::is_enabled(),
                      op,
                      ": gradients of indice_weights (per-sample weights) are not supported "
                      "on npu yet");
    return l;
}

int64_t batch_size(const Lookup& l) {
    return (l.offsets.numel() - 1) / (l.d_offsets.numel() - 1);
}

// The output's shape: [B, total_D] pooled, [N, max_D] without bags, fbgemm's flat
// [vbe_output_size] with VBE.
std::vector<int64_t> output_shape(const Lookup& l) {
    if (is_vbe(l))
        return {l.vbe_output_size};
    if (l.pooling_mode == kPoolNone)
        return {l.indices.numel(), l.max_d};
    return {batch_size(l), l.total_d};
}

at::Tensor forward(const Lookup& l) {
    at::Tensor out = at::empty(output_shape(l), l.weights.options().dtype(at::kFloat));
    backend::split_embedding_forward(
        l.weights.contiguous(), l.weights_offsets.contiguous(), l.d_offsets.contiguous(),
        l.indices.contiguous(), l.offsets.contiguous(),
        l.indice_weights.defined() ? l.indice_weights.contiguous() : at::Tensor(), l.b_offsets,
        l.vbe_output_offsets, l.vbe_b_offsets_rank, l.pooling_mode, l.total_d, l.max_d,
        is_vbe(l) ? l.vbe_output_size : -1, out);
    const at::ScalarType want = output_scalar_type(l.op, l.output_dtype);
    return want == at::kFloat ? out : out.to(want);
}

// Positions of the indices ordered so that equal (table, row) pairs are adjacent (a stable sort
// of hash_size_cumsum[table] + index), and the bag and index of each sorted position. Runs on
// the device (aten sort on torch_npu); the backward kernel then sums each run's gradient once
// and updates its row once ("exact"), and needs neither a search for a position's bag nor a
// scalar read of its index.
struct SortedPositions {
    at::Tensor positions;
    at::Tensor bags;
    at::Tensor indices;  // indices[positions]
    at::Tensor keys;     // hash_size_cumsum[table] + index, in sorted order
};

SortedPositions sorted_positions(const Lookup& l) {
    const at::Tensor offsets = l.offsets.to(at::kLong);
    const int64_t bag_count = offsets.numel() - 1;
    const at::Tensor lengths = offsets.narrow(0, 1, bag_count) - offsets.narrow(0, 0, bag_count);
    const at::Tensor bags = at::arange(bag_count, offsets.options());
    const at::Tensor bag_of = at::repeat_interleave(bags, lengths, std::nullopt, l.indices.numel());
    // A bag's table: k / B, or with VBE the feature whose B_offsets range holds k.
    const at::Tensor table_of =
        is_vbe(l) ? at::searchsorted(l.b_offsets.to(at::kLong), bag_of, /*out_int32=*/false,
                                     /*right=*/true) -
                        1
                  : at::div(bag_of, batch_size(l), "floor");
    const at::Tensor linear =
        l.hash_size_cumsum.index_select(0, table_of) + l.indices.to(at::kLong);
    auto [keys, order] = linear.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
    order = order.contiguous();
    at::Tensor sorted_bags = bag_of.index_select(0, order).contiguous();
    at::Tensor sorted_indices = l.indices.index_select(0, order).contiguous();
    return {order, sorted_bags, sorted_indices, keys};
}

struct Update {
    Optimizer optimizer = Optimizer::kSgd;
    at::Tensor momentum1;
    at::Tensor momentum1_offsets;
    double learning_rate = 0.0;
    double eps = 0.0;
    double weight_decay = 0.0;
    int64_t weight_decay_mode = 0;
    bool gradient_clipping = false;
    double max_gradient = 0.0;
    // Adam
    at::Tensor momentum2;
    at::Tensor momentum2_offsets;
    double beta1 = 0.0;
    double beta2 = 0.0;
    int64_t iter = 0;
    // LARS-SGD
    double eta = 0.0;
    double momentum = 0.0;
    // row-wise Adagrad with counter (fbgemm's names)
    at::Tensor prev_iter;
    at::Tensor prev_iter_offsets;
    at::Tensor row_counter;
    at::Tensor row_counter_offsets;
    int64_t counter_halflife = -1;
    int64_t adjustment_iter = -1;
    double adjustment_ub = 1.0;
    int64_t learning_rate_mode = -1;
    double max_counter = 0.0;
    double tail_id_threshold = 0.0;
    int64_t is_tail_id_thresh_ratio = 0;
    int64_t regularization_mode = 0;
    double weight_norm_coefficient = 0.0;
    double lower_bound = 0.0;
};

at::Tensor float_gradient(const Lookup& l, const at::Tensor& grad_output) {
    at::Tensor grad = grad_output.to(at::kFloat).contiguous();
    const std::vector<int64_t> shape = output_shape(l);
    TORCH_CHECK_VALUE(grad.sizes() == at::IntArrayRef(shape), l.op,
                      ": the output gradient must have the output's shape ", at::IntArrayRef(shape),
                      ", got ", grad.sizes());
    return grad;
}

void launch_backward(const Lookup& l, const Update& u, const at::Tensor& grad,
                     const SortedPositions& sorted, const at::Tensor& grad_weights,
                     const at::Tensor& run_slots) {
    backend::split_embedding_backward(
        grad, l.weights, u.momentum1, u.momentum1_offsets, l.weights_offsets.contiguous(),
        l.d_offsets.contiguous(), l.indices.contiguous(), l.offsets.contiguous(),
        l.indice_weights.defined() ? l.indice_weights.contiguous() : at::Tensor(), sorted.positions,
        grad_weights, u.momentum2, u.momentum2_offsets, sorted.bags, l.b_offsets,
        l.vbe_output_offsets, l.vbe_b_offsets_rank, run_slots, u.prev_iter, u.prev_iter_offsets,
        u.row_counter, u.row_counter_offsets, sorted.indices, static_cast<int64_t>(u.optimizer),
        l.pooling_mode, u.learning_rate, u.eps, u.weight_decay, u.weight_decay_mode,
        u.gradient_clipping ? 1 : 0, u.max_gradient, l.max_d, u.beta1, u.beta2, u.iter, u.eta,
        u.momentum, u.counter_halflife, u.adjustment_iter, u.adjustment_ub, u.learning_rate_mode,
        u.max_counter, u.tail_id_threshold, u.is_tail_id_thresh_ratio, u.regularization_mode,
        u.weight_norm_coefficient, u.lower_bound);
}

// The run rank of every sorted entry (how many runs of equal rows come before its own): with it
// the kernel splits the entries over its cores by cost, hot rows' long runs against cold rows'
// many short ones, rather than by count.
at::Tensor run_ranks(const SortedPositions& sorted) {
    const int64_t n = sorted.positions.numel();
    if (n == 0)
        return at::Tensor();
    const at::Tensor& keys = sorted.keys;
    const at::Tensor starts = keys.narrow(0, 1, n - 1).ne(keys.narrow(0, 0, n - 1)).to(at::kLong);
    return at::cat({at::zeros({1}, starts.options()), starts.cumsum(0)}).contiguous();
}

void backward(const Lookup& l, const Update& u, const at::Tensor& grad_output,
              const at::Tensor& grad_weights) {
    const at::Tensor grad = float_gradient(l, grad_output);
    const SortedPositions sorted = sorted_positions(l);
    launch_backward(l, u, grad, sorted, grad_weights, run_ranks(sorted));
}

at::Tensor optional_tensor(const c10::IValue& v) {
    return v.isNone() ? at::Tensor() : v.toTensor();
}

void save(AutogradContext* ctx, const Lookup& l) {
    ctx->saved_data["weights_offsets"] = l.weights_offsets;
    ctx->saved_data["d_offsets"] = l.d_offsets;
    ctx->saved_data["hash_size_cumsum"] = l.hash_size_cumsum;
    ctx->saved_data["indices"] = l.indices;
    ctx->saved_data["offsets"] = l.offsets;
    ctx->saved_data["indice_weights"] = l.indice_weights;
    ctx->saved_data["b_offsets"] = l.b_offsets;
    ctx->saved_data["vbe_output_offsets"] = l.vbe_output_offsets;
    ctx->saved_data["vbe_b_offsets_rank"] = l.vbe_b_offsets_rank;
    ctx->saved_data["vbe_output_size"] = l.vbe_output_size;
    ctx->saved_data["pooling_mode"] = l.pooling_mode;
    ctx->saved_data["total_d"] = l.total_d;
    ctx->saved_data["max_d"] = l.max_d;
    ctx->saved_data["output_dtype"] = l.output_dtype;
}

Lookup restore(AutogradContext* ctx, const char* op, const at::Tensor& weights) {
    Lookup l;
    l.op = op;
    l.weights = weights;
    auto& s = ctx->saved_data;
    l.weights_offsets = s["weights_offsets"].toTensor();
    l.d_offsets = s["d_offsets"].toTensor();
    l.hash_size_cumsum = s["hash_size_cumsum"].toTensor();
    l.indices = s["indices"].toTensor();
    l.offsets = s["offsets"].toTensor();
    l.indice_weights = optional_tensor(s["indice_weights"]);
    l.b_offsets = optional_tensor(s["b_offsets"]);
    l.vbe_output_offsets = optional_tensor(s["vbe_output_offsets"]);
    l.vbe_b_offsets_rank = optional_tensor(s["vbe_b_offsets_rank"]);
    l.vbe_output_size = s["vbe_output_size"].toInt();
    l.pooling_mode = s["pooling_mode"].toInt();
    l.total_d = s["total_d"].toInt();
    l.max_d = s["max_d"].toInt();
    l.output_dtype = s["output_dtype"].toInt();
    return l;
}

// ---- split (fused optimizer) lookups ------------------------------------------------------

struct SplitCall {
    Lookup lookup;
    Update update;
};

void save_update(AutogradContext* ctx, const Update& u) {
    ctx->saved_data["optimizer"] = static_cast<int64_t>(u.optimizer);
    ctx->saved_data["momentum1"] = u.momentum1;
    ctx->saved_data["momentum1_offsets"] = u.momentum1_offsets;
    ctx->saved_data["learning_rate"] = u.learning_rate;
    ctx->saved_data["eps"] = u.eps;
    ctx->saved_data["weight_decay"] = u.weight_decay;
    ctx->saved_data["weight_decay_mode"] = u.weight_decay_mode;
    ctx->saved_data["gradient_clipping"] = u.gradient_clipping;
    ctx->saved_data["max_gradient"] = u.max_gradient;
    ctx->saved_data["momentum2"] = u.momentum2;
    ctx->saved_data["momentum2_offsets"] = u.momentum2_offsets;
    ctx->saved_data["beta1"] = u.beta1;
    ctx->saved_data["beta2"] = u.beta2;
    ctx->saved_data["iter"] = u.iter;
    ctx->saved_data["eta"] = u.eta;
    ctx->saved_data["momentum"] = u.momentum;
    ctx->saved_data["prev_iter"] = u.prev_iter;
    ctx->saved_data["prev_iter_offsets"] = u.prev_iter_offsets;
    ctx->saved_data["row_counter"] = u.row_counter;
    ctx->saved_data["row_counter_offsets"] = u.row_counter_offsets;
    ctx->saved_data["counter_halflife"] = u.counter_halflife;
    ctx->saved_data["adjustment_iter"] = u.adjustment_iter;
    ctx->saved_data["adjustment_ub"] = u.adjustment_ub;
    ctx->saved_data["learning_rate_mode"] = u.learning_rate_mode;
    ctx->saved_data["max_counter"] = u.max_counter;
    ctx->saved_data["tail_id_threshold"] = u.tail_id_threshold;
    ctx->saved_data["is_tail_id_thresh_ratio"] = u.is_tail_id_thresh_ratio;
    ctx->saved_data["regularization_mode"] = u.regularization_mode;
    ctx->saved_data["weight_norm_coefficient"] = u.weight_norm_coefficient;
    ctx->saved_data["lower_bound"] = u.lower_bound;
}

Update restore_update(AutogradContext* ctx) {
    auto& s = ctx->saved_data;
    Update u;
    u.optimizer = static_cast<Optimizer>(s["optimizer"].toInt());
    u.momentum1 = optional_tensor(s["momentum1"]);
    u.momentum1_offsets = optional_tensor(s["momentum1_offsets"]);
    u.learning_rate = s["learning_rate"].toDouble();
    u.eps = s["eps"].toDouble();
    u.weight_decay = s["weight_decay"].toDouble();
    u.weight_decay_mode = s["weight_decay_mode"].toInt();
    u.gradient_clipping = s["gradient_clipping"].toBool();
    u.max_gradient = s["max_gradient"].toDouble();
    u.momentum2 = optional_tensor(s["momentum2"]);
    u.momentum2_offsets = optional_tensor(s["momentum2_offsets"]);
    u.beta1 = s["beta1"].toDouble();
    u.beta2 = s["beta2"].toDouble();
    u.iter = s["iter"].toInt();
    u.eta = s["eta"].toDouble();
    u.momentum = s["momentum"].toDouble();
    u.prev_iter = optional_tensor(s["prev_iter"]);
    u.prev_iter_offsets = optional_tensor(s["prev_iter_offsets"]);
    u.row_counter = optional_tensor(s["row_counter"]);
    u.row_counter_offsets = optional_tensor(s["row_counter_offsets"]);
    u.counter_halflife = s["counter_halflife"].toInt();
    u.adjustment_iter = s["adjustment_iter"].toInt();
    u.adjustment_ub = s["adjustment_ub"].toDouble();
    u.learning_rate_mode = s["learning_rate_mode"].toInt();
    u.max_counter = s["max_counter"].toDouble();
    u.tail_id_threshold = s["tail_id_threshold"].toDouble();
    u.is_tail_id_thresh_ratio = s["is_tail_id_thresh_ratio"].toInt();
    u.regularization_mode = s["regularization_mode"].toInt();
    u.weight_norm_coefficient = s["weight_norm_coefficient"].toDouble();
    u.lower_bound = s["lower_bound"].toDouble();
    return u;
}

class SplitLookupFunction : public torch::autograd::Function<SplitLookupFunction> {
public:
    // placeholder_autograd_tensor is the only differentiable input: it makes autograd call
    // backward, which updates the weights (and optimizer state) in place and returns no
    // gradient. The weights are not saved for backward: the update must see them as they are
    // then, like fbgemm's in-place Tensor(a!) dev_weights.
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& placeholder,
                              const std::shared_ptr<SplitCall>& call) {
        at::AutoDispatchBelowADInplaceOrView guard;
        save(ctx, call->lookup);
        save_update(ctx, call->update);
        ctx->saved_data["op"] = std::string(call->lookup.op);
        ctx->saved_data["weights"] = call->lookup.weights;
        return fbgemm_npu::forward(call->lookup);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const std::string op = ctx->saved_data["op"].toStringRef();
        const Lookup l = restore(ctx, op.c_str(), ctx->saved_data["weights"].toTensor());
        const Update u = restore_update(ctx);
        at::AutoDispatchBelowADInplaceOrView guard;
        fbgemm_npu::backward(l, u, grads[0], at::Tensor());
        return {at::Tensor(), at::Tensor()};
    }
};

// An optimizer state tensor (<name>_dev with <name>_offsets per table), updated in place.
std::pair<at::Tensor, at::Tensor> read_momentum(const Args& a, const std::string& name,
                                                const Lookup& l) {
    const char* op = a.op();
    const std::string dev = name + "_dev";
    const std::string offsets_name = name + "_offsets";
    at::Tensor state = a.tensor(dev.c_str());
    at::Tensor offsets = a.tensor(offsets_name.c_str());
    const at::Tensor uvm = a.tensor((name + "_uvm").c_str());
    TORCH_CHECK_VALUE(!uvm.defined() || uvm.numel() == 0, op, ": ", name,
                      " in UVM is not supported on npu (place the table on the device)");
    check_npu(op, dev.c_str(), state);
    check_npu(op, offsets_name.c_str(), offsets);
    check_same_device(op, l.weights, {&state, &offsets});
    check_dtype(op, dev.c_str(), state, {at::kFloat});
    check_dtype(op, offsets_name.c_str(), offsets, {at::kLong});
    TORCH_CHECK_VALUE(state.is_contiguous(), op, ": ", dev,
                      " is updated in place and must be contiguous");
    return {state, offsets.contiguous()};
}

Update read_update(const Args& a, Optimizer optimizer, const Lookup& l) {
    const char* op = a.op();
    Update u;
    u.optimizer = optimizer;
    u.learning_rate = a.real("learning_rate");
    u.gradient_clipping = a.flag("gradient_clipping");
    u.max_gradient = a.real("max_gradient");
    TORCH_CHECK_VALUE(!a.flag("stochastic_rounding") || l.weights.scalar_type() == at::kFloat, op,
                      ": stochastic rounding of fp16/bf16 weights is not supported on npu");
    TORCH_CHECK_TYPE(l.weights.scalar_type() == at::kFloat, op,
                     ": fused optimizers on npu update float32 weights; dev_weights is ",
                     l.weights.scalar_type());
    TORCH_CHECK_VALUE(l.weights.is_contiguous(), op,
                      ": dev_weights is updated in place and must be contiguous");
    if (optimizer == Optimizer::kSgd)
        return u;
    std::tie(u.momentum1, u.momentum1_offsets) = read_momentum(a, "momentum1", l);
    if (optimizer == Optimizer::kLarsSgd) {
        u.eta = a.real("eta");
        u.momentum = a.real("momentum");
        u.weight_decay = a.real("weight_decay");
        return u;
    }
    u.eps = a.real("eps");
    if (adam_like(optimizer)) {
        std::tie(u.momentum2, u.momentum2_offsets) = read_momentum(a, "momentum2", l);
        u.beta1 = a.real("beta1");
        u.beta2 = a.real("beta2");
        u.weight_decay = a.real("weight_decay");
        u.iter = a.integer("iter");
        TORCH_CHECK_VALUE(
            !a.has("use_rowwise_bias_correction") || !a.flag("use_rowwise_bias_correction"), op,
            ": use_rowwise_bias_correction is not supported on npu");
        TORCH_CHECK_VALUE(u.iter >= 1, op, ": iter must be >= 1 (bias correction), got ", u.iter);
        return u;
    }
    if (optimizer == Optimizer::kRowwiseAdagradWithCounter) {
        // fbgemm's rowwise_adagrad_with_counter: grad_sum_decay is in its schema but its kernel
        // never reads it, so it is ignored here too.
        std::tie(u.prev_iter, u.prev_iter_offsets) = read_momentum(a, "prev_iter", l);
        std::tie(u.row_counter, u.row_counter_offsets) = read_momentum(a, "row_counter", l);
        u.weight_decay = a.real("weight_decay");
        u.weight_decay_mode = a.integer("weight_decay_mode");
        u.iter = a.integer("iter");
        u.counter_halflife = a.integer("counter_halflife");
        u.adjustment_iter = a.integer("adjustment_iter");
        u.adjustment_ub = a.real("adjustment_ub");
        u.learning_rate_mode = a.integer("learning_rate_mode");
        u.max_counter = a.real("max_counter");
        u.tail_id_threshold = a.real("tail_id_threshold");
        u.is_tail_id_thresh_ratio = a.integer("is_tail_id_thresh_ratio");
        u.regularization_mode = a.integer("regularization_mode");
        u.weight_norm_coefficient = a.real("weight_norm_coefficient");
        u.lower_bound = a.real("lower_bound");
        TORCH_CHECK_VALUE(u.weight_decay_mode >= 0 && u.weight_decay_mode <= 2, op,
                          ": weight_decay_mode (fbgemm's counter_weight_decay_mode) ",
                          u.weight_decay_mode, " is not supported (0 none, 1 L2, 2 decoupled)");
        TORCH_CHECK_VALUE(u.max_counter != 0.0, op,
                          ": max_counter must not be 0 (fbgemm asserts it: it divides the "
                          "tail-id adjustment)");
        TORCH_CHECK_VALUE(!a.flag("apply_global_weight_decay"), op,
                          ": apply_global_weight_decay is not supported on npu");
        return u;
    }
    if (optimizer == Optimizer::kRowwiseAdagrad) {
        u.weight_decay = a.real_or("weight_decay", 0.0);
        u.weight_decay_mode = a.integer_or("weight_decay_mode", 0);
        TORCH_CHECK_VALUE(u.weight_decay_mode >= 0 && u.weight_decay_mode <= 2, op,
                          ": weight_decay_mode ", u.weight_decay_mode,
                          " is not supported on npu (0 none, 1 L2, 2 decoupled)");
        TORCH_CHECK_VALUE(a.real_or("max_norm", 0.0) == 0.0, op,
                          ": max_norm is not supported on npu");
    }
    return u;
}

// Only EmbeddingLocation.DEVICE tables: fbgemm fills uvm_weights for managed (UVM) tables and
// lxu_cache_weights for cached ones, so both must be empty. (Checking weights_placements itself
// would copy it to the host on every lookup.)
void check_split_placement(const Args& a) {
    for (const char* name : {"uvm_weights", "lxu_cache_weights"}) {
        const at::Tensor t = a.tensor(name);
        TORCH_CHECK_VALUE(!t.defined() || t.numel() == 0, a.op(), ": ", name,
                          " is not empty: only EmbeddingLocation.DEVICE tables are supported on "
                          "npu (no UVM, no cache)");
    }
}

template <Optimizer kOptimizer>
void split_lookup_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    auto call = std::make_shared<SplitCall>();
    call->lookup = read_lookup(a);
    check_split_placement(a);
    call->update = read_update(a, kOptimizer, call->lookup);
    const at::Tensor placeholder = a.tensor("placeholder_autograd_tensor");
    const size_t n = a.size();
    at::Tensor out = SplitLookupFunction::apply(placeholder, call);
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, std::move(out));
}

// Below autograd (inference mode): the forward only.
template <bool kNone2d>
void split_lookup_forward_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    const Lookup l = read_lookup(a, kNone2d);
    check_split_placement(a);
    const size_t n = a.size();
    at::Tensor out = forward(l);
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, std::move(out));
}

// ---- optimizer NONE -------------------------------------------------------------------------
//
// fbgemm's NONE lookup (split_embedding_backward_codegen_none_* in its CUDA build) updates
// nothing: its backward returns dev_weights' gradient as a sparse COO tensor of size
// [total_hash_size, max_D] whose indices are the unique linear rows (hash_size_cumsum[t] + index,
// ascending) and whose values are their summed gradients, [total_unique_indices, max_D] (the
// caller's bound on the number of unique rows). The kernel sums each run into its row's slot;
// the slots past the real number of unique rows stay zero, with index 0.

struct NoneCall {
    Lookup lookup;
    int64_t total_hash_size = 0;
    int64_t total_unique_indices = 0;
};

class NoneLookupFunction : public torch::autograd::Function<NoneLookupFunction> {
public:
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dev_weights,
                              const std::shared_ptr<NoneCall>& call) {
        at::AutoDispatchBelowADInplaceOrView guard;
        save(ctx, call->lookup);
        ctx->saved_data["op"] = std::string(call->lookup.op);
        ctx->saved_data["weights"] = call->lookup.weights;
        ctx->saved_data["total_hash_size"] = call->total_hash_size;
        ctx->saved_data["total_unique_indices"] = call->total_unique_indices;
        ctx->saved_data["weights_dtype"] = static_cast<int64_t>(dev_weights.scalar_type());
        return fbgemm_npu::forward(call->lookup);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const std::string op = ctx->saved_data["op"].toStringRef();
        const Lookup l = restore(ctx, op.c_str(), ctx->saved_data["weights"].toTensor());
        const int64_t total_hash_size = ctx->saved_data["total_hash_size"].toInt();
        const int64_t unique_bound = ctx->saved_data["total_unique_indices"].toInt();
        const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["weights_dtype"].toInt());
        at::AutoDispatchBelowADInplaceOrView guard;
        const at::Tensor grad = float_gradient(l, grads[0]);
        const SortedPositions sorted = sorted_positions(l);
        // Each sorted position's unique row (its rank among the live ones); pruned (-1)
        // indices have none, and the kernel skips them.
        const at::Tensor live = sorted.indices.ne(-1);
        const at::Tensor sorted_linear = sorted.keys.masked_select(live);
        const auto [unique, inverse, counts] =
            at::unique_consecutive(sorted_linear, /*return_inverse=*/true);
        const int64_t count = unique.numel();
        TORCH_CHECK_VALUE(count <= unique_bound, op, ": the batch has ", count,
                          " unique rows, more than total_unique_indices = ", unique_bound);
        at::Tensor slots = at::full({l.indices.numel()}, -1, sorted.positions.options());
        slots.masked_scatter_(live, inverse);
        at::Tensor values =
            at::zeros({unique_bound * l.max_d}, l.weights.options().dtype(at::kFloat));
        Update u;
        u.optimizer = Optimizer::kNone;
        launch_backward(l, u, grad, sorted, values, slots.contiguous());
        at::Tensor rows = at::zeros({unique_bound}, unique.options());
        rows.narrow(0, 0, count).copy_(unique);
        at::Tensor sparse = at::sparse_coo_tensor(
            rows.unsqueeze(0), values.view({unique_bound, l.max_d}).to(dtype),
            {total_hash_size, l.max_d}, values.options().dtype(dtype).layout(at::kSparse));
        return {sparse, at::Tensor()};
    }
};

void none_lookup_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    const char* op = a.op();
    auto call = std::make_shared<NoneCall>();
    const at::Tensor dev_weights = a.tensor("dev_weights");
    call->lookup = read_lookup(a, /*none_2d=*/true);
    check_split_placement(a);
    call->total_hash_size = a.integer("total_hash_size");
    call->total_unique_indices = a.integer("total_unique_indices");
    const Lookup& l = call->lookup;
    TORCH_CHECK_VALUE(dev_weights.dim() == 2 && dev_weights.size(1) == l.max_d &&
                          dev_weights.size(0) == call->total_hash_size,
                      op, ": dev_weights must be [total_hash_size, max_D] = [",
                      call->total_hash_size, ", ", l.max_d, "] for optimizer NONE, got ",
                      dev_weights.sizes());
    TORCH_CHECK_VALUE(call->total_unique_indices >= 0, op,
                      ": total_unique_indices must be >= 0, got ", call->total_unique_indices);
    const size_t n = a.size();
    at::Tensor out = NoneLookupFunction::apply(dev_weights, call);
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, std::move(out));
}

// ---- dense (data-parallel) lookup ---------------------------------------------------------

class DenseLookupFunction : public torch::autograd::Function<DenseLookupFunction> {
public:
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& weights,
                              const std::shared_ptr<SplitCall>& call) {
        at::AutoDispatchBelowADInplaceOrView guard;
        save(ctx, call->lookup);
        ctx->saved_data["op"] = std::string(call->lookup.op);
        ctx->save_for_backward({weights});
        return fbgemm_npu::forward(call->lookup);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const at::Tensor weights = ctx->get_saved_variables()[0];
        const std::string op = ctx->saved_data["op"].toStringRef();
        const Lookup l = restore(ctx, op.c_str(), weights);
        at::AutoDispatchBelowADInplaceOrView guard;
        at::Tensor grad_weights = at::zeros(weights.sizes(), weights.options().dtype(at::kFloat));
        Update u;
        u.optimizer = Optimizer::kDense;
        fbgemm_npu::backward(l, u, grads[0], grad_weights);
        if (weights.scalar_type() != at::kFloat)
            grad_weights = grad_weights.to(weights.scalar_type());
        return {grad_weights, at::Tensor()};
    }
};

void dense_lookup_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    auto call = std::make_shared<SplitCall>();
    call->lookup = read_lookup(a);
    const size_t n = a.size();
    at::Tensor out = DenseLookupFunction::apply(call->lookup.weights, call);
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, std::move(out));
}

void dense_lookup_forward_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    const Lookup l = read_lookup(a);
    const size_t n = a.size();
    at::Tensor out = forward(l);
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, std::move(out));
}

// ---- VBE metadata ---------------------------------------------------------------------------
//
// Both are reached only from fbgemm's prepare_inputs under its BOUNDS_CHECK_INDICES_V2 feature
// gate (once per lookup, a few scalars or no work at all), and both do here what fbgemm's CPU
// build does: the lookups above take the per-feature metadata as it is.

// get_infos_metadata(Tensor unused, int B, int T) -> (int, int): host arithmetic on B and T
// (the tensor only selects the device), so it goes to fbgemm's own CPU kernel with a CPU
// placeholder and the bit split is fbgemm's by construction.
void get_infos_metadata_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    const int64_t batch = a.integer("B");
    const int64_t tables = a.integer("T");
    const size_t n = a.size();
    check_npu(a.op(), "unused", a.tensor("unused"));
    const at::Tensor placeholder = at::empty({0}, at::TensorOptions().dtype(at::kInt));
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, placeholder, batch, tables);
    handle.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

// generate_vbe_metadata(B_offsets, B_offsets_rank_per_feature, output_offsets_feature_rank, ...)
// -> (Tensor, Tensor): fbgemm's CPU kernel returns output_offsets_feature_rank and
// B_offsets_rank_per_feature as they are (its CUDA kernel expands them per sample for its own
// lookup kernels, which the npu kernels do not need); so does the npu.
void generate_vbe_metadata_boxed(const c10::OperatorHandle& handle, torch::jit::Stack* stack) {
    const Args a(handle, stack);
    const char* op = a.op();
    const at::Tensor b_offsets = a.tensor("B_offsets");
    const at::Tensor rank_offsets = a.tensor("B_offsets_rank_per_feature");
    const at::Tensor output_offsets = a.tensor("output_offsets_feature_rank");
    check_npu(op, "B_offsets", b_offsets);
    check_npu(op, "B_offsets_rank_per_feature", rank_offsets);
    check_npu(op, "output_offsets_feature_rank", output_offsets);
    const size_t n = a.size();
    torch::jit::drop(*stack, n);
    torch::jit::push(*stack, output_offsets, rank_offsets);
}

// ---- schemas --------------------------------------------------------------------------------

// fbgemm 1.1.0's schema of split_embedding_codegen_lookup_<optimizer>_function (its CUDA build,
// v1 interface), with the optimizer's own arguments in the middle.
std::string split_schema(const std::string& optimizer, const std::string& optimizer_args) {
    // An optimizer with its own iter (prev_iter) argument does not get the common one; NONE has
    // no gradient clipping nor stochastic rounding arguments (nothing to update).
    const bool own_iter = optimizer_args.find("int iter") != std::string::npos;
    const bool own_prev_iter = optimizer_args.find("prev_iter_dev") != std::string::npos;
    const bool updates = optimizer != "none";
    return "split_embedding_codegen_lookup_" + optimizer +
           "_function("
           "Tensor placeholder_autograd_tensor, Tensor(a!) dev_weights, Tensor(b!) uvm_weights, "
           "Tensor lxu_cache_weights, Tensor weights_placements, Tensor weights_offsets, "
           "Tensor D_offsets, SymInt total_D, SymInt max_D, Tensor hash_size_cumsum, "
           "int total_hash_size_bits, Tensor indices, Tensor offsets, int pooling_mode, "
           "Tensor? indice_weights, Tensor? feature_requires_grad, Tensor lxu_cache_locations, " +
           std::string(updates ? "bool gradient_clipping, float max_gradient, "
                                 "bool stochastic_rounding, "
                               : "") +
           optimizer_args +
           ", int output_dtype=0, Tensor? B_offsets=None, "
           "Tensor? vbe_output_offsets_feature_rank=None, "
           "Tensor? vbe_B_offsets_rank_per_feature=None, SymInt max_B=-1, "
           "SymInt max_B_feature_rank=-1, SymInt vbe_output_size=-1, bool is_experimental=False, "
           "bool use_uniq_cache_locations_bwd=False, bool use_homogeneous_placements=False, "
           "Tensor? uvm_cache_stats=None, " +
           std::string(own_prev_iter ? "" : "Tensor? prev_iter_dev=None, ") +
           std::string(own_iter ? "" : "int iter=0, ") +
           "bool apply_global_weight_decay=False, float gwd_lower_bound=0, bool mixed_D=True"
           ") -> Tensor";
}

// The optimizers with an npu kernel, and their arguments in fbgemm's schema.
struct SplitOp {
    const char* optimizer;
    const char* args;
};

// The v1 arguments of fbgemm's partial_rowwise_adam, lamb and partial_rowwise_lamb (momentum2
// is one float per row for the partial row-wise ones; the schema does not say).
constexpr const char* kAdamFamilyArgs =
    "Tensor momentum1_dev, Tensor momentum1_uvm, Tensor momentum1_placements, "
    "Tensor momentum1_offsets, Tensor momentum2_dev, Tensor momentum2_uvm, "
    "Tensor momentum2_placements, Tensor momentum2_offsets, float learning_rate=0, float eps=0, "
    "float beta1=0, float beta2=0, float weight_decay=0, int iter=0";

const SplitOp kSplitOps[] = {
    {"sgd", "float learning_rate=0"},
    {"adagrad",
     "Tensor momentum1_dev, Tensor momentum1_uvm, Tensor momentum1_placements, "
     "Tensor momentum1_offsets, float eps=0, float learning_rate=0"},
    {"rowwise_adagrad",
     "Tensor momentum1_dev, Tensor momentum1_uvm, Tensor momentum1_placements, "
     "Tensor momentum1_offsets, float eps=0, float learning_rate=0, float weight_decay=0.0, "
     "int weight_decay_mode=0, float max_norm=0.0"},
    {"adam",
     "Tensor momentum1_dev, Tensor momentum1_uvm, Tensor momentum1_placements, "
     "Tensor momentum1_offsets, Tensor momentum2_dev, Tensor momentum2_uvm, "
     "Tensor momentum2_placements, Tensor momentum2_offsets, float learning_rate=0, "
     "float eps=0, float beta1=0, float beta2=0, float weight_decay=0, int iter=0, "
     "bool use_rowwise_bias_correction=False, Tensor? row_counter_dev=None, "
     "Tensor? row_counter_uvm=None, Tensor? row_counter_placements=None, "
     "Tensor? row_counter_offsets=None"},
    {"lars_sgd",
     "Tensor momentum1_dev, Tensor momentum1_uvm, Tensor momentum1_placements, "
     "Tensor momentum1_offsets, float learning_rate=0, float eta=0, float momentum=0, "
     "float weight_decay=0"},
    {"partial_rowwise_adam", kAdamFamilyArgs},
    {"lamb", kAdamFamilyArgs},
    {"partial_rowwise_lamb", kAdamFamilyArgs},
    {"rowwise_adagrad_with_counter",
     "Tensor momentum1_dev, Tensor momentum1_uvm, Tensor momentum1_placements, "
     "Tensor momentum1_offsets, Tensor prev_iter_dev, Tensor prev_iter_uvm, "
     "Tensor prev_iter_placements, Tensor prev_iter_offsets, Tensor row_counter_dev, "
     "Tensor row_counter_uvm, Tensor row_counter_placements, Tensor row_counter_offsets, "
     "float eps=0, float learning_rate=0, float weight_decay=0.0, int iter=0, "
     "int counter_halflife=-1, int adjustment_iter=-1, float adjustment_ub=1.0, "
     "int learning_rate_mode=-1, int weight_decay_mode=1, int grad_sum_decay=-1, "
     "float max_counter=0, float tail_id_threshold=0.0, int is_tail_id_thresh_ratio=0, "
     "int regularization_mode=0, float weight_norm_coefficient=0.0, float lower_bound=0.0"},
    {"none", "int total_hash_size=0, SymInt total_unique_indices=0"},
};

bool defined_elsewhere(const std::string& name) {
    return c10::Dispatcher::singleton().findSchema({"fbgemm::" + name, ""}).has_value();
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_FRAGMENT(fbgemm, m) {
    for (const auto& op : fbgemm_npu::kSplitOps) {
        const std::string name =
            std::string("split_embedding_codegen_lookup_") + op.optimizer + "_function";
        if (!fbgemm_npu::defined_elsewhere(name)) {
            m.def(fbgemm_npu::split_schema(op.optimizer, op.args).c_str());
        }
    }
}

TORCH_LIBRARY_IMPL(fbgemm, AutogradPrivateUse1, m) {
    using fbgemm_npu::Optimizer;
    m.impl("split_embedding_codegen_lookup_sgd_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kSgd>>());
    m.impl("split_embedding_codegen_lookup_adagrad_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kAdagrad>>());
    m.impl("split_embedding_codegen_lookup_rowwise_adagrad_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kRowwiseAdagrad>>());
    m.impl("split_embedding_codegen_lookup_adam_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kAdam>>());
    m.impl("split_embedding_codegen_lookup_lars_sgd_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kLarsSgd>>());
    m.impl("split_embedding_codegen_lookup_partial_rowwise_adam_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kPartialRowwiseAdam>>());
    m.impl("split_embedding_codegen_lookup_lamb_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kLamb>>());
    m.impl("split_embedding_codegen_lookup_partial_rowwise_lamb_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kPartialRowwiseLamb>>());
    m.impl("split_embedding_codegen_lookup_rowwise_adagrad_with_counter_function",
           torch::CppFunction::makeFromBoxedFunction<
               &fbgemm_npu::split_lookup_boxed<Optimizer::kRowwiseAdagradWithCounter>>());
    m.impl("split_embedding_codegen_lookup_none_function",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::none_lookup_boxed>());
    m.impl("dense_embedding_codegen_lookup_function",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::dense_lookup_boxed>());
}

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    for (const char* name :
         {"split_embedding_codegen_lookup_sgd_function",
          "split_embedding_codegen_lookup_adagrad_function",
          "split_embedding_codegen_lookup_rowwise_adagrad_function",
          "split_embedding_codegen_lookup_adam_function",
          "split_embedding_codegen_lookup_lars_sgd_function",
          "split_embedding_codegen_lookup_partial_rowwise_adam_function",
          "split_embedding_codegen_lookup_lamb_function",
          "split_embedding_codegen_lookup_partial_rowwise_lamb_function",
          "split_embedding_codegen_lookup_rowwise_adagrad_with_counter_function"}) {
        m.impl(name, torch::CppFunction::makeFromBoxedFunction<
                         &fbgemm_npu::split_lookup_forward_boxed<false>>());
    }
    m.impl(
        "split_embedding_codegen_lookup_none_function",
        torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::split_lookup_forward_boxed<true>>());
    m.impl("dense_embedding_codegen_lookup_function",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::dense_lookup_forward_boxed>());
    m.impl("get_infos_metadata",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::get_infos_metadata_boxed>());
    m.impl("generate_vbe_metadata",
           torch::CppFunction::makeFromBoxedFunction<&fbgemm_npu::generate_vbe_metadata_boxed>());
}
