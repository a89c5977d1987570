// The one interface between the torch registrations and the operators. Argument order follows
// the operators' specs (kernels/ops/<op>/op.toml): inputs, attributes, outputs, as the aclnn
// API and the generated sim wrappers take them.
//
// Callers (registrations.cpp) have checked every argument and allocated the outputs; tensors
// are contiguous npu tensors, and an absent optional tensor is an undefined at::Tensor.
// Implementations: backend_sim.cpp (the simulated npu device) and backend_npu.cpp (aclnn on
// torch_npu's current stream); exactly one is compiled into the extension.
#pragma once

#include <ATen/ATen.h>

namespace fbgemm_npu::backend {

// "sim" or "npu": reported by fbgemm_npu_api.backend() so nobody mistakes one for the other.
const char* name();

void asynchronous_complete_cumsum(const at::Tensor& x, const at::Tensor& y);

void jagged_to_padded_dense(const at::Tensor& values, const at::Tensor& offsets,
                            int64_t max_length, double padding_value, int64_t padding_value_int,
                            const at::Tensor& out);

void dense_to_jagged(const at::Tensor& dense, const at::Tensor& offsets, int64_t total_l,
                     const at::Tensor& values);

void permute2d_sparse_data(const at::Tensor& permute, const at::Tensor& lengths,
                           const at::Tensor& values, const at::Tensor& weights,
                           int64_t permuted_lengths_sum, const at::Tensor& permuted_lengths,
                           const at::Tensor& permuted_values, const at::Tensor& permuted_weights);

void gather_for_rank1(const at::Tensor& x, const at::Tensor& index, const at::Tensor& out);

void index_select_for_rank1_backward(const at::Tensor& grad, const at::Tensor& x,
                                     const at::Tensor& index, const at::Tensor& out);

void bounds_check_indices(const at::Tensor& rows_per_table, const at::Tensor& indices,
                          const at::Tensor& offsets, const at::Tensor& warning,
                          const at::Tensor& weights, const at::Tensor& b_offsets,
                          const at::Tensor& b_t_map, int64_t bounds_check_mode, int64_t max_b,
                          int64_t info_b_num_bits, int64_t info_b_mask,
                          int64_t bounds_check_version);

void block_bucketize_sparse_features(const at::Tensor& lengths, const at::Tensor& indices,
                                     const at::Tensor& block_sizes, const at::Tensor& weights,
                                     const at::Tensor& batch_size_per_feature,
                                     const at::Tensor& total_num_blocks, bool bucketize_pos,
                                     bool sequence, int64_t my_size, int64_t max_b,
                                     bool keep_orig_idx, const at::Tensor& new_lengths,
                                     const at::Tensor& new_indices, const at::Tensor& new_weights,
                                     const at::Tensor& new_pos,
                                     const at::Tensor& unbucketize_permute);

void invert_permute(const at::Tensor& permute, const at::Tensor& inv);

void split_embedding_forward(const at::Tensor& weights, const at::Tensor& weights_offsets,
                             const at::Tensor& d_offsets, const at::Tensor& indices,
                             const at::Tensor& offsets, const at::Tensor& indice_weights,
                             int64_t pooling_mode, int64_t total_d, int64_t max_d,
                             const at::Tensor& out);

// In place: weights (and momentum1/momentum2) for the optimizers, grad_weights in dense
// mode.
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
                              double beta1, double beta2, int64_t iter);

}  // namespace fbgemm_npu::backend
