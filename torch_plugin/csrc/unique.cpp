// Deduplication of jagged ids on the npu: fbgemm's jagged_unique_indices (EmbeddingCollection
// dedup and managed collision's input dist).
//
// fbgemm 1.1.0 has this operator for CUDA only (fbgemm-gpu-cpu defines the schema); its kernel
// reads every tensor as the index type and at::_unique's int64 inverse as it too, so it runs with
// int64 tensors only. The feature groups (hash_size_offsets, T + 1 entries at most a few
// hundred) are checked on the host; offsets are checked by the kernel, whose trap becomes a
// ValueError. The number of unique ids is read back once (fbgemm's at::_unique syncs the same
// way) to cut unique_indices, allocated at its bound N.
#include <torch/library.h>

#include <tuple>

#include "backend.h"
#include "checks.h"

namespace fbgemm_npu {

namespace {

constexpr const char* kOp = "jagged_unique_indices";

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> jagged_unique_indices(
    const at::Tensor& hash_size_cumsum, const at::Tensor& hash_size_offsets,
    const at::Tensor& offsets, const at::Tensor& indices) {
    check_npu(kOp, "hash_size_cumsum", hash_size_cumsum);
    check_npu(kOp, "hash_size_offsets", hash_size_offsets);
    check_npu(kOp, "offsets", offsets);
    check_npu(kOp, "indices", indices);
    check_same_device(kOp, hash_size_cumsum, {&hash_size_offsets, &offsets, &indices});
    check_dtype(kOp, "hash_size_cumsum", hash_size_cumsum, {at::kLong});
    check_dtype(kOp, "hash_size_offsets", hash_size_offsets, {at::kLong});
    check_dtype(kOp, "offsets", offsets, {at::kLong});
    check_dtype(kOp, "indices", indices, {at::kLong});
    check_dim(kOp, "hash_size_cumsum", hash_size_cumsum, 1, 1);
    check_dim(kOp, "hash_size_offsets", hash_size_offsets, 1, 1);
    check_dim(kOp, "offsets", offsets, 1, 1);
    check_dim(kOp, "indices", indices, 1, 1);
    const int64_t t = hash_size_cumsum.size(0) - 1;
    TORCH_CHECK_VALUE(t >= 1, kOp, ": hash_size_cumsum must have T + 1 >= 2 entries, got ",
                      hash_size_cumsum.size(0));
    TORCH_CHECK_VALUE(hash_size_offsets.size(0) >= t + 1, kOp,
                      ": hash_size_offsets must have at least T + 1 = ", t + 1, " entries, got ",
                      hash_size_offsets.size(0));
    TORCH_CHECK_VALUE(offsets.size(0) >= 1 && (offsets.size(0) - 1) % t == 0, kOp,
                      ": offsets must have T * B + 1 entries for T = ", t, " features, got ",
                      offsets.size(0));
    const at::Tensor groups = hash_size_offsets.narrow(0, 0, t + 1).to(at::kCPU).contiguous();
    const int64_t* g = groups.data_ptr<int64_t>();
    TORCH_CHECK_VALUE(g[0] >= 0, kOp, ": hash_size_offsets[0] = ", g[0], " must be >= 0");
    for (int64_t i = 1; i <= t; ++i) {
        TORCH_CHECK_VALUE(g[i] >= g[i - 1], kOp,
                          ": hash_size_offsets must be non-decreasing, but hash_size_offsets[", i,
                          "] = ", g[i], " < hash_size_offsets[", i - 1, "] = ", g[i - 1]);
    }
    TORCH_CHECK_VALUE(g[t] <= t, kOp, ": hash_size_offsets[", t, "] = ", g[t],
                      " names a feature past T = ", t);
    const int64_t bags = offsets.size(0) - 1;
    const int64_t n = indices.size(0);
    at::Tensor lengths = at::empty({bags}, offsets.options());
    at::Tensor out_offsets = at::empty({bags + 1}, offsets.options());
    at::Tensor unique = at::empty({n}, indices.options());
    at::Tensor reverse = at::empty({n}, indices.options().dtype(at::kLong));
    at::Tensor num_unique = at::empty({1}, indices.options().dtype(at::kLong));
    backend::jagged_unique_indices(hash_size_cumsum.contiguous(), hash_size_offsets.contiguous(),
                                   offsets.contiguous(), indices.contiguous(), lengths, out_offsets,
                                   unique, reverse, num_unique);
    const int64_t u = num_unique.to(at::kCPU).item<int64_t>();
    return {lengths, out_offsets, unique.narrow(0, 0, u), reverse};
}

}  // namespace

}  // namespace fbgemm_npu

TORCH_LIBRARY_IMPL(fbgemm, PrivateUse1, m) {
    m.impl("jagged_unique_indices", &fbgemm_npu::jagged_unique_indices);
}
