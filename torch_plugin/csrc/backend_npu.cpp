// The npu backend: each operator through its aclnn API (aclnn<Op>GetWorkspaceSize, then
// aclnn<Op>) on torch_npu's current stream.
//
// The prototypes come from headers generated from the operators' specs
// (recsdk_build/ops/codegen.py aclnn_declaration, aclnn_<op>_decl.h), never from casts of
// looked-up symbols: a spec change that the adapter does not follow fails to compile instead
// of passing wrong arguments. The symbols are declared weak, so a host whose operator package
// is missing still loads the adapter and fails the call with an error naming the operator
// (the loader makes the installed packages' op_api libraries globally visible first).
#ifndef FBGEMM_NPU_API_NPU
#error "backend_npu.cpp is the npu variant's backend: build it with FBGEMM_NPU_API_NPU defined"
#endif

#include <memory>
#include <vector>

#include "backend.h"
#include "aclnn/acl_meta.h"
#include "aclnn_asynchronous_complete_cumsum_decl.h"
#include "aclnn_block_bucketize_sparse_features_decl.h"
#include "aclnn_bounds_check_indices_decl.h"
#include "aclnn_dense_to_jagged_decl.h"
#include "aclnn_gather_for_rank1_decl.h"
#include "aclnn_index_select_for_rank1_backward_decl.h"
#include "aclnn_invert_permute_decl.h"
#include "aclnn_jagged_to_padded_dense_decl.h"
#include "aclnn_permute2d_sparse_data_decl.h"
#include "aclnn_split_embedding_backward_decl.h"
#include "aclnn_split_embedding_forward_decl.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"


#pragma weak aclnnAsynchronousCompleteCumsumGetWorkspaceSize
#pragma weak aclnnAsynchronousCompleteCumsum
#pragma weak aclnnBoundsCheckIndicesGetWorkspaceSize
#pragma weak aclnnBoundsCheckIndices
#pragma weak aclnnDenseToJaggedGetWorkspaceSize
#pragma weak aclnnDenseToJagged
#pragma weak aclnnGatherForRank1GetWorkspaceSize
#pragma weak aclnnGatherForRank1
#pragma weak aclnnIndexSelectForRank1BackwardGetWorkspaceSize
#pragma weak aclnnIndexSelectForRank1Backward
#pragma weak aclnnJaggedToPaddedDenseGetWorkspaceSize
#pragma weak aclnnJaggedToPaddedDense
#pragma weak aclnnPermute2dSparseDataGetWorkspaceSize
#pragma weak aclnnPermute2dSparseData
#pragma weak aclnnBlockBucketizeSparseFeaturesGetWorkspaceSize
#pragma weak aclnnBlockBucketizeSparseFeatures
#pragma weak aclnnInvertPermuteGetWorkspaceSize
#pragma weak aclnnInvertPermute
#pragma weak aclnnSplitEmbeddingForwardGetWorkspaceSize
#pragma weak aclnnSplitEmbeddingForward
#pragma weak aclnnSplitEmbeddingBackwardGetWorkspaceSize
#pragma weak aclnnSplitEmbeddingBackward

namespace fbgemm_npu::backend {

namespace {

aclDataType acl_dtype(at::ScalarType t) {
    switch (t) {
        case at::kFloat: return ACL_FLOAT;
        case at::kHalf: return ACL_FLOAT16;
        case at::kBFloat16: return ACL_BF16;
        case at::kInt: return ACL_INT32;
        case at::kLong: return ACL_INT64;
        case at::kChar: return ACL_INT8;
        case at::kByte: return ACL_UINT8;
        case at::kShort: return ACL_INT16;
        case at::kBool: return ACL_BOOL;
        case at::kDouble: return ACL_DOUBLE;
        default: TORCH_CHECK_TYPE(false, "npu: no aclnn dtype for ", t);
    }
}

struct TensorDeleter {
    void operator()(aclTensor* t) const {
        if (t != nullptr) aclDestroyTensor(t);
    }
};
using AclTensor = std::unique_ptr<aclTensor, TensorDeleter>;

// A view of a contiguous npu tensor; an undefined tensor (an absent optional) is nullptr.
AclTensor acl_tensor(const at::Tensor& t) {
    if (!t.defined()) return AclTensor(nullptr);
    TORCH_INTERNAL_ASSERT(t.is_contiguous(), "npu backend got a non-contiguous tensor");
    const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    const std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
    const int64_t storage = static_cast<int64_t>(t.storage().nbytes() / t.itemsize());
    aclTensor* out = aclCreateTensor(sizes.data(), sizes.size(), acl_dtype(t.scalar_type()),
                                     strides.data(), t.storage_offset(), ACL_FORMAT_ND,
                                     &storage, 1, t.storage().data_ptr().get());
    TORCH_CHECK(out != nullptr, "npu: aclCreateTensor failed for a tensor of shape ", t.sizes());
    return AclTensor(out);
}

// Runs one operator: the workspace size query, then the launch on the current stream.
// `get_workspace` calls aclnn<Op>GetWorkspaceSize with the operator's own typed arguments.
template <typename GetWorkspace, typename Launch>
void run(const char* op_type, const char* package, const at::Tensor& like, bool installed,
         GetWorkspace get_workspace, Launch launch) {
    TORCH_CHECK(installed, "aclnn", op_type, " is not available: the operator package ",
                package, " is not installed (or not on ASCEND_CUSTOM_OPP_PATH); reinstall "
                "fbgemm_npu_api built by recsdk-build for this host");
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = get_workspace(&workspace_size, &executor);
    TORCH_CHECK(status == 0, "aclnn", op_type, "GetWorkspaceSize failed with status ", status);
    at::Tensor workspace;
    if (workspace_size > 0) {
        workspace = at::empty({static_cast<int64_t>(workspace_size)},
                              like.options().dtype(at::kByte));
    }
    // stream() (unlike stream(false)) first drains torch_npu's task queue, so the launch is
    // ordered after every operator queued before it on this stream.
    aclrtStream stream = c10_npu::getCurrentNPUStream(like.device().index()).stream();
    const aclnnStatus launched = launch(workspace.defined() ? workspace.data_ptr() : nullptr,
                                        workspace_size, executor, stream);
    TORCH_CHECK(launched == 0, "aclnn", op_type, " failed with status ", launched);
}

}  // namespace

const char* name() { return "npu"; }

void asynchronous_complete_cumsum(const at::Tensor& x, const at::Tensor& y) {
    auto ax = acl_tensor(x), ay = acl_tensor(y);
    run("AsynchronousCompleteCumsum", "mxrec_opp_asynchronous_complete_cumsum", x,
        &aclnnAsynchronousCompleteCumsumGetWorkspaceSize != nullptr &&
            &aclnnAsynchronousCompleteCumsum != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnAsynchronousCompleteCumsumGetWorkspaceSize(ax.get(), ay.get(), ws, ex);
        },
        aclnnAsynchronousCompleteCumsum);
}

void jagged_to_padded_dense(const at::Tensor& values, const at::Tensor& offsets,
                            int64_t max_length, double padding_value, int64_t padding_value_int,
                            const at::Tensor& out) {
    auto av = acl_tensor(values), ao = acl_tensor(offsets), aout = acl_tensor(out);
    run("JaggedToPaddedDense", "mxrec_opp_jagged_to_padded_dense", values,
        &aclnnJaggedToPaddedDenseGetWorkspaceSize != nullptr &&
            &aclnnJaggedToPaddedDense != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnJaggedToPaddedDenseGetWorkspaceSize(av.get(), ao.get(), max_length,
                                                            padding_value, padding_value_int,
                                                            aout.get(), ws, ex);
        },
        aclnnJaggedToPaddedDense);
}

void dense_to_jagged(const at::Tensor& dense, const at::Tensor& offsets, int64_t total_l,
                     const at::Tensor& values) {
    auto ad = acl_tensor(dense), ao = acl_tensor(offsets), av = acl_tensor(values);
    run("DenseToJagged", "mxrec_opp_dense_to_jagged", dense,
        &aclnnDenseToJaggedGetWorkspaceSize != nullptr && &aclnnDenseToJagged != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnDenseToJaggedGetWorkspaceSize(ad.get(), ao.get(), total_l, av.get(), ws,
                                                      ex);
        },
        aclnnDenseToJagged);
}

void permute2d_sparse_data(const at::Tensor& permute, const at::Tensor& lengths,
                           const at::Tensor& values, const at::Tensor& weights,
                           int64_t permuted_lengths_sum, const at::Tensor& permuted_lengths,
                           const at::Tensor& permuted_values, const at::Tensor& permuted_weights) {
    auto ap = acl_tensor(permute), al = acl_tensor(lengths), av = acl_tensor(values);
    auto aw = acl_tensor(weights), apl = acl_tensor(permuted_lengths);
    auto apv = acl_tensor(permuted_values), apw = acl_tensor(permuted_weights);
    run("Permute2dSparseData", "mxrec_opp_permute2d_sparse_data", values,
        &aclnnPermute2dSparseDataGetWorkspaceSize != nullptr &&
            &aclnnPermute2dSparseData != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnPermute2dSparseDataGetWorkspaceSize(
                ap.get(), al.get(), av.get(), aw.get(), permuted_lengths_sum, apl.get(),
                apv.get(), apw.get(), ws, ex);
        },
        aclnnPermute2dSparseData);
}

void gather_for_rank1(const at::Tensor& x, const at::Tensor& index, const at::Tensor& out) {
    auto ax = acl_tensor(x), ai = acl_tensor(index), aout = acl_tensor(out);
    run("GatherForRank1", "mxrec_opp_gather_for_rank1", x,
        &aclnnGatherForRank1GetWorkspaceSize != nullptr && &aclnnGatherForRank1 != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnGatherForRank1GetWorkspaceSize(ax.get(), ai.get(), aout.get(), ws, ex);
        },
        aclnnGatherForRank1);
}

void index_select_for_rank1_backward(const at::Tensor& grad, const at::Tensor& x,
                                     const at::Tensor& index, const at::Tensor& out) {
    auto ag = acl_tensor(grad), ax = acl_tensor(x), ai = acl_tensor(index);
    auto aout = acl_tensor(out);
    run("IndexSelectForRank1Backward", "mxrec_opp_index_select_for_rank1_backward", grad,
        &aclnnIndexSelectForRank1BackwardGetWorkspaceSize != nullptr &&
            &aclnnIndexSelectForRank1Backward != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnIndexSelectForRank1BackwardGetWorkspaceSize(ag.get(), ax.get(), ai.get(),
                                                                    aout.get(), ws, ex);
        },
        aclnnIndexSelectForRank1Backward);
}

void bounds_check_indices(const at::Tensor& rows_per_table, const at::Tensor& indices,
                          const at::Tensor& offsets, const at::Tensor& warning,
                          const at::Tensor& weights, const at::Tensor& b_offsets,
                          const at::Tensor& b_t_map, int64_t bounds_check_mode, int64_t max_b,
                          int64_t info_b_num_bits, int64_t info_b_mask,
                          int64_t bounds_check_version) {
    auto ar = acl_tensor(rows_per_table), ai = acl_tensor(indices), ao = acl_tensor(offsets);
    auto awarn = acl_tensor(warning), aw = acl_tensor(weights), ab = acl_tensor(b_offsets);
    auto abt = acl_tensor(b_t_map);
    run("BoundsCheckIndices", "mxrec_opp_bounds_check_indices", indices,
        &aclnnBoundsCheckIndicesGetWorkspaceSize != nullptr &&
            &aclnnBoundsCheckIndices != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnBoundsCheckIndicesGetWorkspaceSize(
                ar.get(), ai.get(), ao.get(), awarn.get(), aw.get(), ab.get(), abt.get(),
                bounds_check_mode, max_b, info_b_num_bits, info_b_mask, bounds_check_version,
                ws, ex);
        },
        aclnnBoundsCheckIndices);
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
    auto al = acl_tensor(lengths), ai = acl_tensor(indices), ab = acl_tensor(block_sizes);
    auto aw = acl_tensor(weights), abpf = acl_tensor(batch_size_per_feature);
    auto atnb = acl_tensor(total_num_blocks), anl = acl_tensor(new_lengths);
    auto ani = acl_tensor(new_indices), anw = acl_tensor(new_weights);
    auto anp = acl_tensor(new_pos), aup = acl_tensor(unbucketize_permute);
    run("BlockBucketizeSparseFeatures", "mxrec_opp_block_bucketize_sparse_features", indices,
        &aclnnBlockBucketizeSparseFeaturesGetWorkspaceSize != nullptr &&
            &aclnnBlockBucketizeSparseFeatures != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnBlockBucketizeSparseFeaturesGetWorkspaceSize(
                al.get(), ai.get(), ab.get(), aw.get(), abpf.get(), atnb.get(),
                bucketize_pos ? 1 : 0, sequence ? 1 : 0, my_size, max_b, keep_orig_idx ? 1 : 0,
                anl.get(), ani.get(), anw.get(), anp.get(), aup.get(), ws, ex);
        },
        aclnnBlockBucketizeSparseFeatures);
}

void invert_permute(const at::Tensor& permute, const at::Tensor& inv) {
    auto ap = acl_tensor(permute), ai = acl_tensor(inv);
    run("InvertPermute", "mxrec_opp_invert_permute", permute,
        &aclnnInvertPermuteGetWorkspaceSize != nullptr && &aclnnInvertPermute != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnInvertPermuteGetWorkspaceSize(ap.get(), ai.get(), ws, ex);
        },
        aclnnInvertPermute);
}

void split_embedding_forward(const at::Tensor& weights, const at::Tensor& weights_offsets,
                             const at::Tensor& d_offsets, const at::Tensor& indices,
                             const at::Tensor& offsets, const at::Tensor& indice_weights,
                             int64_t pooling_mode, int64_t total_d, int64_t max_d,
                             const at::Tensor& out) {
    auto aw = acl_tensor(weights), awo = acl_tensor(weights_offsets);
    auto ad = acl_tensor(d_offsets), ai = acl_tensor(indices), ao = acl_tensor(offsets);
    auto aiw = acl_tensor(indice_weights), aout = acl_tensor(out);
    run("SplitEmbeddingForward", "mxrec_opp_split_embedding_forward", weights,
        &aclnnSplitEmbeddingForwardGetWorkspaceSize != nullptr &&
            &aclnnSplitEmbeddingForward != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnSplitEmbeddingForwardGetWorkspaceSize(
                aw.get(), awo.get(), ad.get(), ai.get(), ao.get(), aiw.get(), pooling_mode,
                total_d, max_d, aout.get(), ws, ex);
        },
        aclnnSplitEmbeddingForward);
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
    auto ag = acl_tensor(grad_output), aw = acl_tensor(weights), am = acl_tensor(momentum1);
    auto amo = acl_tensor(momentum1_offsets), awo = acl_tensor(weights_offsets);
    auto ad = acl_tensor(d_offsets), ai = acl_tensor(indices), ao = acl_tensor(offsets);
    auto aiw = acl_tensor(indice_weights), asp = acl_tensor(sorted_positions);
    auto agw = acl_tensor(grad_weights), am2 = acl_tensor(momentum2);
    auto am2o = acl_tensor(momentum2_offsets), asb = acl_tensor(sorted_bags);
    run("SplitEmbeddingBackward", "mxrec_opp_split_embedding_backward", grad_output,
        &aclnnSplitEmbeddingBackwardGetWorkspaceSize != nullptr &&
            &aclnnSplitEmbeddingBackward != nullptr,
        [&](uint64_t* ws, aclOpExecutor** ex) {
            return aclnnSplitEmbeddingBackwardGetWorkspaceSize(
                ag.get(), aw.get(), am.get(), amo.get(), awo.get(), ad.get(), ai.get(), ao.get(),
                aiw.get(), asp.get(), agw.get(), am2.get(), am2o.get(), asb.get(), optimizer,
                pooling_mode, learning_rate, eps, weight_decay, weight_decay_mode,
                gradient_clipping, max_gradient, max_d, beta1, beta2, iter, ws, ex);
        },
        aclnnSplitEmbeddingBackward);
}

}  // namespace fbgemm_npu::backend
