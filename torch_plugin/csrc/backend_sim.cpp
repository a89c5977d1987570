// The sim backend: the operators' sim libraries (mxrec_opp_<op>_sim.so, linked at build time)
// called through their generated typed wrappers. An npu tensor of the simulated device lives
// in host memory, so its data pointer goes to the kernel as is, like a device address to aclnn.
#include <cstring>
#include <memory>
#include <string>

#include "backend.h"
#include "mxrec_sim_asynchronous_complete_cumsum.h"
#include "mxrec_sim_block_bucketize_sparse_features.h"
#include "mxrec_sim_bounds_check_indices.h"
#include "mxrec_sim_dense_to_jagged.h"
#include "mxrec_sim_gather_for_rank1.h"
#include "mxrec_sim_index_select_for_rank1_backward.h"
#include "mxrec_sim_invert_permute.h"
#include "mxrec_sim_jagged_to_padded_dense.h"
#include "mxrec_sim_permute2d_sparse_data.h"
#include "mxrec_sim_split_embedding_backward.h"
#include "mxrec_sim_split_embedding_forward.h"

namespace fbgemm_npu::backend {

namespace {

int32_t sim_dtype(at::ScalarType t) {
    switch (t) {
        case at::kFloat: return RECSDK_DT_FLOAT32;
        case at::kHalf: return RECSDK_DT_FLOAT16;
        case at::kBFloat16: return RECSDK_DT_BFLOAT16;
        case at::kInt: return RECSDK_DT_INT32;
        case at::kLong: return RECSDK_DT_INT64;
        case at::kChar: return RECSDK_DT_INT8;
        case at::kByte: return RECSDK_DT_UINT8;
        case at::kShort: return RECSDK_DT_INT16;
        case at::kBool: return RECSDK_DT_BOOL;
        case at::kDouble: return RECSDK_DT_FLOAT64;
        default: TORCH_CHECK_TYPE(false, "npu (sim): no operator dtype for ", t);
    }
}

RecsdkSimTensor sim_tensor(const at::Tensor& t) {
    RecsdkSimTensor s{};
    if (!t.defined()) {
        s.data = nullptr;
        s.ndim = -1;
        return s;
    }
    // Registrations pass contiguous tensors; a strided one here is an adapter bug.
    TORCH_INTERNAL_ASSERT(t.is_contiguous(), "sim backend got a non-contiguous tensor");
    TORCH_CHECK(t.dim() <= RECSDK_SIM_MAX_DIMS, "npu (sim): tensors have at most ",
                RECSDK_SIM_MAX_DIMS, " dims");
    s.data = t.data_ptr();
    s.dtype = sim_dtype(t.scalar_type());
    s.ndim = static_cast<int32_t>(t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) s.shape[d] = t.size(d);
    return s;
}

// The report holds per-core counters for 128 cores (~13 KiB): heap, not stack.
struct Launch {
    RecsdkSimOptions options{};
    std::unique_ptr<RecsdkSimReport> report = std::make_unique<RecsdkSimReport>();

    Launch() { std::memset(report.get(), 0, sizeof(RecsdkSimReport)); }

    // A trap is the kernel's device-side assert (an invalid index); torch raises for those,
    // so it surfaces as a RuntimeError naming the operator.
    void check(const char* op, int32_t status) const {
        if (status == RECSDK_SIM_OK) return;
        const std::string message(report->message);
        switch (status) {
            case RECSDK_SIM_TRAP:
                TORCH_CHECK(false, op, ": the npu kernel stopped on invalid input (device-side "
                            "assert): ", message);
            case RECSDK_SIM_INVALID_ARGUMENT:
                TORCH_CHECK_VALUE(false, op, ": the operator rejected its arguments: ", message);
            default:
                TORCH_CHECK(false, op, ": the npu (sim) kernel failed (status ", status, "): ",
                            message);
        }
    }
};

}  // namespace

const char* name() { return "sim"; }

void asynchronous_complete_cumsum(const at::Tensor& x, const at::Tensor& y) {
    Launch l;
    l.check("asynchronous_complete_cumsum",
            mxrec_sim::AsynchronousCompleteCumsum(sim_tensor(x), sim_tensor(y), &l.options,
                                                  l.report.get()));
}

void jagged_to_padded_dense(const at::Tensor& values, const at::Tensor& offsets,
                            int64_t max_length, double padding_value, int64_t padding_value_int,
                            const at::Tensor& out) {
    Launch l;
    l.check("jagged_to_padded_dense",
            mxrec_sim::JaggedToPaddedDense(sim_tensor(values), sim_tensor(offsets), max_length,
                                           padding_value, padding_value_int, sim_tensor(out),
                                           &l.options, l.report.get()));
}

void dense_to_jagged(const at::Tensor& dense, const at::Tensor& offsets, int64_t total_l,
                     const at::Tensor& values) {
    Launch l;
    l.check("dense_to_jagged",
            mxrec_sim::DenseToJagged(sim_tensor(dense), sim_tensor(offsets), total_l,
                                     sim_tensor(values), &l.options, l.report.get()));
}

void permute2d_sparse_data(const at::Tensor& permute, const at::Tensor& lengths,
                           const at::Tensor& values, const at::Tensor& weights,
                           int64_t permuted_lengths_sum, const at::Tensor& permuted_lengths,
                           const at::Tensor& permuted_values, const at::Tensor& permuted_weights) {
    Launch l;
    l.check("permute_2D_sparse_data",
            mxrec_sim::Permute2dSparseData(sim_tensor(permute), sim_tensor(lengths),
                                           sim_tensor(values), sim_tensor(weights),
                                           permuted_lengths_sum, sim_tensor(permuted_lengths),
                                           sim_tensor(permuted_values),
                                           sim_tensor(permuted_weights), &l.options,
                                           l.report.get()));
}

void gather_for_rank1(const at::Tensor& x, const at::Tensor& index, const at::Tensor& out) {
    Launch l;
    l.check("gather_for_rank1",
            mxrec_sim::GatherForRank1(sim_tensor(x), sim_tensor(index), sim_tensor(out),
                                      &l.options, l.report.get()));
}

void index_select_for_rank1_backward(const at::Tensor& grad, const at::Tensor& x,
                                     const at::Tensor& index, const at::Tensor& out) {
    Launch l;
    l.check("index_select_for_rank1_backward",
            mxrec_sim::IndexSelectForRank1Backward(sim_tensor(grad), sim_tensor(x),
                                                   sim_tensor(index), sim_tensor(out),
                                                   &l.options, l.report.get()));
}

void bounds_check_indices(const at::Tensor& rows_per_table, const at::Tensor& indices,
                          const at::Tensor& offsets, const at::Tensor& warning,
                          const at::Tensor& weights, const at::Tensor& b_offsets,
                          const at::Tensor& b_t_map, int64_t bounds_check_mode, int64_t max_b,
                          int64_t info_b_num_bits, int64_t info_b_mask,
                          int64_t bounds_check_version) {
    Launch l;
    l.check("bounds_check_indices",
            mxrec_sim::BoundsCheckIndices(sim_tensor(rows_per_table), sim_tensor(indices),
                                          sim_tensor(offsets), sim_tensor(warning),
                                          sim_tensor(weights), sim_tensor(b_offsets),
                                          sim_tensor(b_t_map), bounds_check_mode, max_b,
                                          info_b_num_bits, info_b_mask, bounds_check_version,
                                          &l.options, l.report.get()));
}

void block_bucketize_sparse_features(const at::Tensor& lengths, const at::Tensor& indices,
                                     const at::Tensor& block_sizes, const at::Tensor& weights,
                                     const at::Tensor& batch_size_per_feature,
                                     const at::Tensor& total_num_blocks, bool bucketize_pos,
                                     bool sequence, int64_t my_size, int64_t max_b,
                                     bool keep_orig_idx, const at::Tensor& new_lengths,
                                     const at::Tensor& new_indices, const at::Tensor& new_weights,
                                     const at::Tensor& new_pos,
                                     const at::Tensor& unbucketize_permute) {
    Launch l;
    l.check("block_bucketize_sparse_features",
            mxrec_sim::BlockBucketizeSparseFeatures(
                sim_tensor(lengths), sim_tensor(indices), sim_tensor(block_sizes),
                sim_tensor(weights), sim_tensor(batch_size_per_feature),
                sim_tensor(total_num_blocks), bucketize_pos ? 1 : 0, sequence ? 1 : 0, my_size,
                max_b, keep_orig_idx ? 1 : 0, sim_tensor(new_lengths), sim_tensor(new_indices),
                sim_tensor(new_weights), sim_tensor(new_pos), sim_tensor(unbucketize_permute),
                &l.options, l.report.get()));
}

void invert_permute(const at::Tensor& permute, const at::Tensor& inv) {
    Launch l;
    const int32_t status = mxrec_sim::InvertPermute(sim_tensor(permute), sim_tensor(inv),
                                                    &l.options, l.report.get());
    // The kernel's only device-side assert: an entry out of range, or (found once every entry
    // is written) a slot of inv that no entry filled, so some value is repeated or missing.
    TORCH_CHECK_VALUE(status != RECSDK_SIM_TRAP, "invert_permute: permute (", permute.size(0),
                      " entries) is not a permutation of 0..", permute.size(0) - 1,
                      ": an entry is out of range, repeated or missing (",
                      std::string(l.report->message), ")");
    l.check("invert_permute", status);
}

void split_embedding_forward(const at::Tensor& weights, const at::Tensor& weights_offsets,
                             const at::Tensor& d_offsets, const at::Tensor& indices,
                             const at::Tensor& offsets, const at::Tensor& indice_weights,
                             int64_t pooling_mode, int64_t total_d, int64_t max_d,
                             const at::Tensor& out) {
    Launch l;
    l.check("split_embedding_forward",
            mxrec_sim::SplitEmbeddingForward(
                sim_tensor(weights), sim_tensor(weights_offsets), sim_tensor(d_offsets),
                sim_tensor(indices), sim_tensor(offsets), sim_tensor(indice_weights),
                pooling_mode, total_d, max_d, sim_tensor(out), &l.options, l.report.get()));
}

void split_embedding_backward(const at::Tensor& grad_output, const at::Tensor& weights,
                              const at::Tensor& momentum1, const at::Tensor& momentum1_offsets,
                              const at::Tensor& weights_offsets, const at::Tensor& d_offsets,
                              const at::Tensor& indices, const at::Tensor& offsets,
                              const at::Tensor& indice_weights,
                              const at::Tensor& sorted_positions, const at::Tensor& grad_weights,
                              const at::Tensor& momentum2, const at::Tensor& momentum2_offsets,
                              const at::Tensor& sorted_bags, int64_t optimizer, int64_t pooling_mode, double learning_rate,
                              double eps, double weight_decay, int64_t weight_decay_mode,
                              int64_t gradient_clipping, double max_gradient, int64_t max_d,
                              double beta1, double beta2, int64_t iter) {
    Launch l;
    l.check("split_embedding_backward",
            mxrec_sim::SplitEmbeddingBackward(
                sim_tensor(grad_output), sim_tensor(weights), sim_tensor(momentum1),
                sim_tensor(momentum1_offsets), sim_tensor(weights_offsets),
                sim_tensor(d_offsets), sim_tensor(indices), sim_tensor(offsets),
                sim_tensor(indice_weights), sim_tensor(sorted_positions),
                sim_tensor(grad_weights), sim_tensor(momentum2), sim_tensor(momentum2_offsets),
                sim_tensor(sorted_bags), optimizer, pooling_mode, learning_rate, eps, weight_decay, weight_decay_mode,
                gradient_clipping, max_gradient, max_d, beta1, beta2, iter, &l.options,
                l.report.get()));
}

}  // namespace fbgemm_npu::backend
