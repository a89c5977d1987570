// The CPU kernels of mxrec::hstu_dense and hstu_dense_backward: the golden the npu results and
// user models are compared with, rounding where the npu kernels round (shared/research/hstu.md
// §2): Q K^T and G V^T summed in float32 and stored in q's dtype, the element-wise work in
// float32, P and dZ rounded to q's dtype before their products, every product summed in
// float32 and each output cast once.
#include <ATen/ATen.h>

#include "hstu.h"

namespace fbgemm_npu::hstu {

namespace {

// What the npu kernels keep in q's dtype (a Cube output or an input of the next product):
// float32 values rounded to the dtype, held as float32.
at::Tensor rounded(const at::Tensor& x, at::ScalarType dtype) {
    return dtype == at::kFloat ? x : x.to(dtype).to(at::kFloat);
}

// Rows [r0, r0 + n) of a [rows, N, D] view as [N, n, D] in float32.
at::Tensor heads_first(const at::Tensor& x, int64_t r0, int64_t n) {
    return x.narrow(0, r0, n).transpose(0, 1).to(at::kFloat);
}

// The top-left n x n of sequence b's [N, S, S] square (mask or attn_bias) in float32.
at::Tensor square(const at::Tensor& t, int64_t b, int64_t n) {
    return t[b].narrow(1, 0, n).narrow(2, 0, n).to(at::kFloat);
}

// s * M for sequence b, broadcastable to [N, n, n]: the kernels multiply silu(Z) by the mask
// already scaled (mask * s in float32; the causal mask as a generated tril of s).
at::Tensor scaled_mask(const Problem& p, const at::Tensor& mask, int64_t b, int64_t n) {
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    if (p.mask_type == kMaskCausal)
        return at::full({n, n}, p.scale, f32).tril_();
    if (p.mask_type == kMaskNone)
        return at::scalar_tensor(p.scale, f32);
    return square(mask, b, n) * p.scale;
}

// Z = rounded(Q K^T) (+ bias) for sequence b.
at::Tensor scores(const Problem& p, const at::Tensor& q, const at::Tensor& k,
                  const at::Tensor& bias, int64_t b, int64_t n, at::ScalarType dtype) {
    at::Tensor z = rounded(at::bmm(q, k.transpose(1, 2)), dtype);
    if (p.has_bias)
        z.add_(square(bias, b, n));
    return z;
}

at::Tensor rows_view(const Problem& p, const at::Tensor& t) {
    return t.reshape({-1, p.heads, p.dim});
}

}  // namespace

at::Tensor forward_cpu(const Problem& p, const at::Tensor& q, const at::Tensor& k,
                       const at::Tensor& v, const at::Tensor& mask, const at::Tensor& bias) {
    const at::ScalarType dtype = q.scalar_type();
    const at::Tensor qv = rows_view(p, q), kv = rows_view(p, k), vv = rows_view(p, v);
    at::Tensor out = at::zeros_like(qv);
    for (int64_t b = 0; b < p.batch; ++b) {
        const auto [r0, n] = p.sequence(b, p.max_seq_len);
        if (n == 0)
            continue;
        const at::Tensor z =
            scores(p, heads_first(qv, r0, n), heads_first(kv, r0, n), bias, b, n, dtype);
        const at::Tensor prob = rounded(at::silu(z) * scaled_mask(p, mask, b, n), dtype);
        // copy_ casts the float32 sum to q's dtype once (round to nearest even).
        out.narrow(0, r0, n).copy_(at::bmm(prob, heads_first(vv, r0, n)).transpose(0, 1));
    }
    return out.view(q.sizes());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward_cpu(
    const Problem& p, const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& mask, const at::Tensor& bias) {
    const at::ScalarType dtype = q.scalar_type();
    const at::Tensor gv = rows_view(p, grad), qv = rows_view(p, q), kv = rows_view(p, k),
                     vv = rows_view(p, v);
    at::Tensor dq = at::zeros_like(qv), dk = at::zeros_like(qv), dv = at::zeros_like(qv);
    // Zero wherever nothing flows back: M = 0, jagged padding, empty sequences.
    at::Tensor dbias = p.has_bias ? at::zeros_like(bias) : at::Tensor();
    for (int64_t b = 0; b < p.batch; ++b) {
        const auto [r0, n] = p.sequence(b, p.max_seq_len);
        if (n == 0)
            continue;
        const at::Tensor qb = heads_first(qv, r0, n), kb = heads_first(kv, r0, n),
                         vb = heads_first(vv, r0, n), gb = heads_first(gv, r0, n);
        const at::Tensor z = scores(p, qb, kb, bias, b, n, dtype);
        const at::Tensor dprob = rounded(at::bmm(gb, vb.transpose(1, 2)), dtype);
        const at::Tensor sm = scaled_mask(p, mask, b, n);
        const at::Tensor sig = at::sigmoid(z);
        // silu'(z) = sigma (1 + z (1 - sigma))
        const at::Tensor dz = rounded(dprob * sm * sig * (z * (1 - sig) + 1), dtype);
        const at::Tensor prob = rounded(at::silu(z) * sm, dtype);
        dv.narrow(0, r0, n).copy_(at::bmm(prob.transpose(1, 2), gb).transpose(0, 1));
        dk.narrow(0, r0, n).copy_(at::bmm(dz.transpose(1, 2), qb).transpose(0, 1));
        dq.narrow(0, r0, n).copy_(at::bmm(dz, kb).transpose(0, 1));
        if (p.has_bias)
            dbias[b].narrow(1, 0, n).narrow(2, 0, n).copy_(dz);
    }
    return {dq.view(q.sizes()), dk.view(q.sizes()), dv.view(q.sizes()), dbias};
}

}  // namespace fbgemm_npu::hstu
