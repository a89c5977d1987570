// HSTU attention: mxrec::hstu_dense and mxrec::hstu_dense_backward (shared/research/hstu.md).
//
// The schemas are RecSDK's "gen A" (hstu.md §1), camelCase names included: the user's documents
// call hstu_dense with ten positional arguments, layout as a string and seqOffset as a list or
// a numpy array (int[]? takes any sequence of integers; a Tensor argument would refuse numpy).
// Kernels: CPU (hstu_cpu.cpp, the golden the npu results are compared with) and PrivateUse1
// (the AscendC operators hstu_dense_forward / hstu_dense_backward through the generated backend
// glue), both behind the same argument checks; hstu_dense is differentiable on both devices
// (AutogradCPU, AutogradPrivateUse1), its backward calls hstu_dense_backward.
//
// Typed kernels rather than boxed ones (boxed.h): these schemas are ours, so no other build can
// grow or drop an argument under us.
#include <torch/autograd.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend.h"
#include "checks.h"
#include "hstu.h"

namespace fbgemm_npu::hstu {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Grads = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

constexpr const char* kForward = "hstu_dense";
constexpr const char* kBackward = "hstu_dense_backward";

// hstu.md §4, with the one deliberate difference: D from 8 in steps of 8 (the user's
// example has D = 8; the kernels pad rows to their alignment, op.toml says so).
constexpr int64_t kMaxBatch = 2048;
constexpr int64_t kMaxSeqLen = 20480;
constexpr int64_t kMaxHeads = 16;
constexpr int64_t kMinDim = 8;
constexpr int64_t kMaxDim = 512;
constexpr int64_t kDimStep = 8;

int64_t layout_code(const char* op, c10::string_view layout) {
    if (layout == "normal")
        return kLayoutNormal;
    TORCH_CHECK_VALUE(layout == "jagged", op,
                      ": layout must be \"normal\" (q, k, v [B, S, N, D]) or ",
                      "\"jagged\" ([T, N, D] with seqOffset), got \"", std::string(layout), "\"");
    return kLayoutJagged;
}

void check_mask_type(const char* op, int64_t mask_type) {
    TORCH_CHECK_VALUE(mask_type != 1, op,
                      ": maskType 1 (the built-in upper triangular mask) is not supported; use 0 "
                      "(causal), 2 (no mask) or 3 (a custom mask)");
    TORCH_CHECK_VALUE(
        mask_type == kMaskCausal || mask_type == kMaskNone || mask_type == kMaskCustom, op,
        ": maskType must be 0 (causal), 2 (no mask) or 3 (a custom mask), got ", mask_type);
}

void check_like_q(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q) {
    TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), op, ": ", name, " must have q's dtype ",
                     q.scalar_type(), ", got ", t.scalar_type());
    TORCH_CHECK_VALUE(t.sizes() == q.sizes(), op, ": ", name, " must have q's shape ", q.sizes(),
                      ", got ", t.sizes());
}

// seqOffset of the jagged layout: at least B + 1 = 2 entries, from 0, non-decreasing, to T, no
// sequence longer than maxSeqLen. Returns the smallest B a mask or bias may have (RecSDK takes
// the batch as the sequences before trailing repeated offsets).
int64_t check_offsets(const char* op, const std::vector<int64_t>& off, int64_t rows,
                      int64_t max_seq_len) {
    TORCH_CHECK_VALUE(off.size() >= 2, op,
                      ": seqOffset must have at least 2 entries (B + 1 sequence offsets), got ",
                      off.size());
    TORCH_CHECK_VALUE(off[0] == 0, op, ": seqOffset must start at 0, got seqOffset[0] = ", off[0]);
    int64_t used = 0;
    for (size_t b = 0; b + 1 < off.size(); ++b) {
        const int64_t len = off[b + 1] - off[b];
        TORCH_CHECK_VALUE(len >= 0, op, ": seqOffset must be non-decreasing, but seqOffset[", b + 1,
                          "] = ", off[b + 1], " < seqOffset[", b, "] = ", off[b]);
        TORCH_CHECK_VALUE(len <= max_seq_len, op, ": sequence ", b, " has length ", len,
                          " (seqOffset[", b + 1, "] - seqOffset[", b, "]), more than maxSeqLen ",
                          max_seq_len);
        if (len > 0)
            used = static_cast<int64_t>(b) + 1;
    }
    TORCH_CHECK_VALUE(off.back() == rows, op, ": seqOffset must end at T = q.size(0) = ", rows,
                      ", got seqOffset[", off.size() - 1, "] = ", off.back());
    return used;
}

// mask or attnBias: [B, N, S, S] with S = maxSeqLen, q's dtype and device.
void check_square(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q,
                  const Problem& p, int64_t used_batch) {
    TORCH_CHECK_TYPE(t.scalar_type() == q.scalar_type(), op, ": ", name, " must have q's dtype ",
                     q.scalar_type(), ", got ", t.scalar_type());
    const int64_t s = p.max_seq_len;
    const bool batch_ok =
        t.dim() == 4 && (t.size(0) == p.batch || (p.jagged() && t.size(0) == used_batch));
    TORCH_CHECK_VALUE(batch_ok && t.size(1) == p.heads && t.size(2) == s && t.size(3) == s, op,
                      ": ", name, " must be [B, N, S, S] = [", p.batch, ", ", p.heads, ", ", s,
                      ", ", s, "] (S = maxSeqLen), got ", t.sizes());
}

// Every tensor the kernel reads lives where q does (CPU for the CPU kernel, one npu device for
// the npu kernel).
void check_device(const char* op, const char* name, const at::Tensor& t, const at::Tensor& q) {
    TORCH_CHECK(t.device() == q.device(), op, ": ", name, " is on ", t.device(), " but q is on ",
                q.device(), "; all tensors must be on one device");
}

// The checks both kernels of both operators run before any work, each naming the argument and
// the limit. `grad` is defined for the backward.
Problem check(const char* op, const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
              const at::Tensor& v, const std::optional<at::Tensor>& mask,
              const std::optional<at::Tensor>& bias, int64_t mask_type, int64_t max_seq_len,
              double silu_scale, c10::string_view layout, at::OptionalIntArrayRef seq_offset) {
    Problem p;
    p.layout = layout_code(op, layout);
    check_mask_type(op, mask_type);
    p.mask_type = mask_type;
    TORCH_CHECK_VALUE(max_seq_len >= 1 && max_seq_len <= kMaxSeqLen, op,
                      ": maxSeqLen must be in [1, ", kMaxSeqLen, "], got ", max_seq_len);
    p.max_seq_len = max_seq_len;
    TORCH_CHECK_VALUE(std::isfinite(silu_scale), op, ": siluScale must be finite, got ",
                      silu_scale);
    p.silu_scale = silu_scale;
    // 1 / maxSeqLen in float32, as the adapter of RecSDK and our kernels compute it.
    p.scale =
        silu_scale != 0.0 ? static_cast<float>(silu_scale) : 1.0f / static_cast<float>(max_seq_len);

    check_dtype(op, "q", q, {at::kFloat, at::kHalf, at::kBFloat16});
    const int64_t rank = p.jagged() ? 3 : 4;
    TORCH_CHECK_VALUE(q.dim() == rank, op, ": layout \"", std::string(layout), "\" needs q ",
                      p.jagged() ? "[T, N, D] (3-D)" : "[B, S, N, D] (4-D)", ", got shape ",
                      q.sizes());
    check_like_q(op, "k", k, q);
    check_like_q(op, "v", v, q);
    if (grad.defined())
        check_like_q(op, "grad", grad, q);
    TORCH_CHECK_VALUE(q.numel() > 0, op, ": q must not be empty, got shape ", q.sizes());
    p.heads = q.size(rank - 2);
    p.dim = q.size(rank - 1);
    TORCH_CHECK_VALUE(p.heads >= 1 && p.heads <= kMaxHeads, op, ": the head count N = q.size(",
                      rank - 2, ") must be in [1, ", kMaxHeads, "], got ", p.heads);
    TORCH_CHECK_VALUE(p.dim >= kMinDim && p.dim <= kMaxDim && p.dim % kDimStep == 0, op,
                      ": the head dimension D = q.size(", rank - 1, ") must be a multiple of ",
                      kDimStep, " in [", kMinDim, ", ", kMaxDim, "], got ", p.dim);

    int64_t used_batch = 0;
    if (p.jagged()) {
        TORCH_CHECK_VALUE(seq_offset.has_value(), op,
                          ": the jagged layout needs seqOffset (B + 1 sequence offsets), got None");
        p.offsets = seq_offset->vec();
        used_batch = check_offsets(op, p.offsets, q.size(0), max_seq_len);
        p.batch = static_cast<int64_t>(p.offsets.size()) - 1;
    } else {
        // seqOffset means nothing here (RecSDK ignores it too).
        TORCH_CHECK_VALUE(q.size(1) == max_seq_len, op,
                          ": the normal layout needs maxSeqLen == S = q.size(1) = ", q.size(1),
                          ", got maxSeqLen ", max_seq_len);
        p.batch = q.size(0);
        used_batch = p.batch;
    }
    TORCH_CHECK_VALUE(p.batch >= 1 && p.batch <= kMaxBatch, op, ": the batch size B ",
                      p.jagged() ? "(len(seqOffset) - 1)" : "(q.size(0))", " must be in [1, ",
                      kMaxBatch, "], got ", p.batch);

    // Any mask with maskType 0 or 2 is ignored, never read (hstu.md §2): the user's example
    // passes a tril mask with maskType 0.
    p.use_mask = mask_type == kMaskCustom;
    if (p.use_mask) {
        TORCH_CHECK_VALUE(mask.has_value() && mask->defined(), op,
                          ": maskType 3 (a custom mask) needs mask [B, N, S, S], got None");
        check_square(op, "mask", *mask, q, p, used_batch);
    }
    p.has_bias = bias.has_value() && bias->defined();
    if (p.has_bias)
        check_square(op, "attnBias", *bias, q, p, used_batch);

    check_device(op, "k", k, q);
    check_device(op, "v", v, q);
    if (grad.defined())
        check_device(op, "grad", grad, q);
    if (p.use_mask)
        check_device(op, "mask", *mask, q);
    if (p.has_bias)
        check_device(op, "attnBias", *bias, q);
    return p;
}

at::Tensor used(const std::optional<at::Tensor>& t, bool use) {
    return use ? t->contiguous() : at::Tensor();
}

// ---- CPU --------------------------------------------------------------------------------------

void check_cpu(const char* op, const at::Tensor& q) {
    TORCH_CHECK(q.device().is_cpu(), op, ": the CPU kernel got q on ", q.device());
}

at::Tensor hstu_dense_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::optional<at::Tensor>& mask,
                          const std::optional<at::Tensor>& attnBias, int64_t maskType,
                          int64_t maxSeqLen, double siluScale, c10::string_view layout,
                          at::OptionalIntArrayRef seqOffset) {
    const Problem p = check(kForward, at::Tensor(), q, k, v, mask, attnBias, maskType, maxSeqLen,
                            siluScale, layout, seqOffset);
    check_cpu(kForward, q);
    return forward_cpu(p, q.contiguous(), k.contiguous(), v.contiguous(), used(mask, p.use_mask),
                       used(attnBias, p.has_bias));
}

Grads hstu_dense_backward_cpu(const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
                              const at::Tensor& v, const std::optional<at::Tensor>& mask,
                              const std::optional<at::Tensor>& attnBias, c10::string_view layout,
                              int64_t maskType, int64_t maxSeqLen, double siluScale,
                              at::OptionalIntArrayRef seqOffset) {
    const Problem p = check(kBackward, grad, q, k, v, mask, attnBias, maskType, maxSeqLen,
                            siluScale, layout, seqOffset);
    check_cpu(kBackward, q);
    return backward_cpu(p, grad.contiguous(), q.contiguous(), k.contiguous(), v.contiguous(),
                        used(mask, p.use_mask), used(attnBias, p.has_bias));
}

// ---- npu --------------------------------------------------------------------------------------

// The jagged layout's offsets go to the kernel twice: as the seq_offset attribute (the host
// tiling balances the cores by each sequence's cost) and as the int64 tensor the kernel reads.
at::Tensor device_offsets(const Problem& p, const at::Tensor& q) {
    if (!p.jagged())
        return at::Tensor();
    return at::tensor(p.offsets, at::TensorOptions().dtype(at::kLong)).to(q.device());
}

at::Tensor hstu_dense_npu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::optional<at::Tensor>& mask,
                          const std::optional<at::Tensor>& attnBias, int64_t maskType,
                          int64_t maxSeqLen, double siluScale, c10::string_view layout,
                          at::OptionalIntArrayRef seqOffset) {
    check_npu(kForward, "q", q);
    const Problem p = check(kForward, at::Tensor(), q, k, v, mask, attnBias, maskType, maxSeqLen,
                            siluScale, layout, seqOffset);
    const at::Tensor qc = q.contiguous();
    at::Tensor out = at::empty_like(qc);
    backend::hstu_dense_forward(qc, k.contiguous(), v.contiguous(), used(mask, p.use_mask),
                                used(attnBias, p.has_bias), device_offsets(p, q), p.mask_type,
                                p.max_seq_len, p.silu_scale, p.layout, p.offsets, out);
    return out;
}

Grads hstu_dense_backward_npu(const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
                              const at::Tensor& v, const std::optional<at::Tensor>& mask,
                              const std::optional<at::Tensor>& attnBias, c10::string_view layout,
                              int64_t maskType, int64_t maxSeqLen, double siluScale,
                              at::OptionalIntArrayRef seqOffset) {
    check_npu(kBackward, "q", q);
    const Problem p = check(kBackward, grad, q, k, v, mask, attnBias, maskType, maxSeqLen,
                            siluScale, layout, seqOffset);
    const at::Tensor qc = q.contiguous();
    const at::Tensor bias = used(attnBias, p.has_bias);
    at::Tensor dq = at::empty_like(qc), dk = at::empty_like(qc), dv = at::empty_like(qc);
    // The kernel writes every element of d_attn_bias (zeros where nothing flows back).
    at::Tensor dbias = p.has_bias ? at::empty_like(bias) : at::Tensor();
    backend::hstu_dense_backward(grad.contiguous(), qc, k.contiguous(), v.contiguous(),
                                 used(mask, p.use_mask), bias, device_offsets(p, q), p.mask_type,
                                 p.max_seq_len, p.silu_scale, p.layout, p.offsets, dq, dk, dv,
                                 dbias);
    return {dq, dk, dv, dbias};
}

// ---- autograd (both devices) ------------------------------------------------------------------

class HstuDenseFunction : public torch::autograd::Function<HstuDenseFunction> {
public:
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                              const at::Tensor& v, const std::optional<at::Tensor>& mask,
                              const std::optional<at::Tensor>& attnBias, int64_t maskType,
                              int64_t maxSeqLen, double siluScale, c10::string_view layout,
                              at::OptionalIntArrayRef seqOffset) {
        // Below autograd, so the call reaches the CPU or PrivateUse1 kernel.
        at::AutoDispatchBelowADInplaceOrView guard;
        static auto fwd =
            c10::Dispatcher::singleton()
                .findSchemaOrThrow("mxrec::hstu_dense", "")
                .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                  const std::optional<at::Tensor>&,
                                  const std::optional<at::Tensor>&, int64_t, int64_t, double,
                                  c10::string_view, at::OptionalIntArrayRef)>();
        at::Tensor out =
            fwd.call(q, k, v, mask, attnBias, maskType, maxSeqLen, siluScale, layout, seqOffset);
        ctx->save_for_backward(
            {q, k, v, mask.value_or(at::Tensor()), attnBias.value_or(at::Tensor())});
        ctx->saved_data["maskType"] = maskType;
        ctx->saved_data["maxSeqLen"] = maxSeqLen;
        ctx->saved_data["siluScale"] = siluScale;
        ctx->saved_data["layout"] = std::string(layout);
        ctx->saved_data["seqOffset"] =
            seqOffset.has_value() ? c10::IValue(seqOffset->vec()) : c10::IValue();
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        static auto bwd = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("mxrec::hstu_dense_backward", "")
                              .typed<Grads(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const std::optional<at::Tensor>&,
                                           const std::optional<at::Tensor>&, c10::string_view,
                                           int64_t, int64_t, double, at::OptionalIntArrayRef)>();
        const variable_list saved = ctx->get_saved_variables();
        const auto optional = [](const at::Tensor& t) {
            return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
        };
        const std::string layout = ctx->saved_data["layout"].toStringRef();
        const c10::IValue& seq = ctx->saved_data["seqOffset"];
        std::vector<int64_t> offsets;
        if (!seq.isNone())
            offsets = seq.toIntVector();
        at::OptionalIntArrayRef seq_offset;
        if (!seq.isNone())
            seq_offset = at::IntArrayRef(offsets);
        at::Tensor grad = grads[0];
        // Nothing flowed back into the output (it was not used): zeros, as autograd would.
        if (!grad.defined())
            grad = at::zeros_like(saved[0]);
        auto [dq, dk, dv, dbias] = bwd.call(
            grad.contiguous(), saved[0], saved[1], saved[2], optional(saved[3]), optional(saved[4]),
            layout, ctx->saved_data["maskType"].toInt(), ctx->saved_data["maxSeqLen"].toInt(),
            ctx->saved_data["siluScale"].toDouble(), seq_offset);
        // One gradient per forward argument: q, k, v, mask (never), attnBias, then the five
        // non-tensor arguments.
        return {dq,           dk,           dv,           at::Tensor(), dbias,
                at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

at::Tensor hstu_dense_autograd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::optional<at::Tensor>& mask,
                               const std::optional<at::Tensor>& attnBias, int64_t maskType,
                               int64_t maxSeqLen, double siluScale, c10::string_view layout,
                               at::OptionalIntArrayRef seqOffset) {
    return HstuDenseFunction::apply(q, k, v, mask, attnBias, maskType, maxSeqLen, siluScale, layout,
                                    seqOffset);
}

}  // namespace

}  // namespace fbgemm_npu::hstu

// hstu.md §1, gen A.
TORCH_LIBRARY_FRAGMENT(mxrec, m) {
    m.def(
        "hstu_dense(Tensor q, Tensor k, Tensor v, Tensor? mask=None, Tensor? attnBias=None, "
        "int maskType=0, int maxSeqLen=0, float siluScale=0.0, str layout=\"normal\", "
        "int[]? seqOffset=None) -> Tensor");
    m.def(
        "hstu_dense_backward(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor? mask, "
        "Tensor? attnBias, str layout, int maskType, int maxSeqLen, float siluScale=0.0, "
        "int[]? seqOffset=None) -> (Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(mxrec, CPU, m) {
    m.impl("hstu_dense", &fbgemm_npu::hstu::hstu_dense_cpu);
    m.impl("hstu_dense_backward", &fbgemm_npu::hstu::hstu_dense_backward_cpu);
}

TORCH_LIBRARY_IMPL(mxrec, PrivateUse1, m) {
    m.impl("hstu_dense", &fbgemm_npu::hstu::hstu_dense_npu);
    m.impl("hstu_dense_backward", &fbgemm_npu::hstu::hstu_dense_backward_npu);
}

TORCH_LIBRARY_IMPL(mxrec, AutogradCPU, m) {
    m.impl("hstu_dense", &fbgemm_npu::hstu::hstu_dense_autograd);
}

TORCH_LIBRARY_IMPL(mxrec, AutogradPrivateUse1, m) {
    m.impl("hstu_dense", &fbgemm_npu::hstu::hstu_dense_autograd);
}
