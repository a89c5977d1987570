// What the HSTU family (hstu.cpp: mxrec::hstu_dense and hstu_dense_backward) shares with its CPU
// kernel (hstu_cpu.cpp): the validated problem, and the CPU kernels themselves.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace fbgemm_npu::hstu {

// The kernels' encodings (kernels/ops/hstu_dense_forward/op.toml).
inline constexpr int64_t kLayoutNormal = 0;
inline constexpr int64_t kLayoutJagged = 1;
inline constexpr int64_t kMaskCausal = 0;
inline constexpr int64_t kMaskNone = 2;
inline constexpr int64_t kMaskCustom = 3;

// A call whose every argument passed the checks of hstu.cpp.
struct Problem {
    int64_t layout = kLayoutNormal;
    int64_t mask_type = kMaskCausal;
    int64_t max_seq_len = 0;
    double silu_scale = 0.0;  // as given (0 means 1 / max_seq_len)
    float scale = 0.0f;       // s, computed in float32 as the kernels do
    int64_t batch = 0;        // B (jagged: len(seqOffset) - 1, trailing empty sequences included)
    int64_t heads = 0;
    int64_t dim = 0;
    std::vector<int64_t> offsets;  // jagged: seqOffset; normal: empty
    bool use_mask = false;         // mask_type 3: the mask is read
    bool has_bias = false;

    bool jagged() const { return layout == kLayoutJagged; }
    // (first row of the [rows, N, D] view, length) of sequence b.
    std::pair<int64_t, int64_t> sequence(int64_t b, int64_t seq_len) const {
        if (jagged())
            return {offsets[b], offsets[b + 1] - offsets[b]};
        return {b * seq_len, seq_len};
    }
};

// Forward on CPU tensors (contiguous, checked): O in q's dtype, q's shape.
at::Tensor forward_cpu(const Problem& p, const at::Tensor& q, const at::Tensor& k,
                       const at::Tensor& v, const at::Tensor& mask, const at::Tensor& bias);

// Backward on CPU tensors: dq, dk, dv and d_attn_bias (undefined without a bias).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward_cpu(
    const Problem& p, const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& mask, const at::Tensor& bias);

}  // namespace fbgemm_npu::hstu
