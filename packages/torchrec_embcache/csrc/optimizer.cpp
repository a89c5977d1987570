#include "optimizer.h"

#include <cmath>

// The library is compiled with -ffp-contract=off so that rounding is decided here, not by
// the compiler: fma is used exactly where torch's vectorised kernels use it. On x86 a clone
// for CPUs with FMA is added (the baseline x86-64 ISA has none, and std::fma would become a
// libm call); other architectures have a native fused multiply-add.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EMBCACHE_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define EMBCACHE_MULTIVERSION
#endif

namespace embcache {

StepConstants step_constants(const OptimConfig& cfg, int64_t step) {
    StepConstants k{};
    k.neg_lr = static_cast<float>(-cfg.lr);
    k.neg_clr = static_cast<float>(-cfg.lr);
    k.one_minus_beta1 = static_cast<float>(1.0 - cfg.beta1);
    k.one_minus_beta2 = static_cast<float>(1.0 - cfg.beta2);
    const double t = static_cast<double>(step < 1 ? 1 : step);
    const double bias1 = 1.0 - std::pow(cfg.beta1, t);
    const double bias2 = 1.0 - std::pow(cfg.beta2, t);
    k.neg_step_size = static_cast<float>(-(cfg.lr * std::sqrt(bias2) / bias1));
    k.eps = static_cast<float>(cfg.eps);
    return k;
}

void init_state(const OptimConfig& cfg, float* state, int64_t dim) {
    const int64_t width = state_width(cfg.kind, dim);
    const float v =
        cfg.kind == OptimKind::Adagrad ? static_cast<float>(cfg.initial_accumulator) : 0.f;
    for (int64_t j = 0; j < width; ++j)
        state[j] = v;
}

namespace {

// torch: param.add_(grad, alpha=-lr), whose vectorised kernel computes fma(grad, alpha, param).
EMBCACHE_MULTIVERSION
void sgd(float* __restrict w, const float* __restrict g, int64_t dim, float neg_lr) {
    for (int64_t j = 0; j < dim; ++j)
        w[j] = std::fma(g[j], neg_lr, w[j]);
}

// torch (dense Adagrad): state_sum.addcmul_(grad, grad, value=1);
// std = state_sum.sqrt().add_(eps); param.addcdiv_(grad, std, value=-clr).
EMBCACHE_MULTIVERSION
void adagrad(float* __restrict w, float* __restrict sum, const float* __restrict g, int64_t dim,
             float neg_clr, float eps) {
    for (int64_t j = 0; j < dim; ++j) {
        const float s = sum[j] + g[j] * g[j];
        sum[j] = s;
        const float denom = std::sqrt(s) + eps;
        w[j] = w[j] + (neg_clr * g[j]) / denom;
    }
}

// torch.optim.SparseAdam (lazy Adam: only rows with a gradient move, bias correction uses
// the optimiser's global step):
//   m_upd = (g - m) * (1 - b1);  m += m_upd
//   v_upd = (g^2 - v) * (1 - b2); v += v_upd
//   param += -step_size * (m / (sqrt(v) + eps))
EMBCACHE_MULTIVERSION
void adam(float* __restrict w, float* __restrict m, float* __restrict v, const float* __restrict g,
          int64_t dim, float omb1, float omb2, float neg_step_size, float eps) {
    for (int64_t j = 0; j < dim; ++j) {
        const float gj = g[j];
        const float m_new = (gj - m[j]) * omb1 + m[j];
        const float v_new = (gj * gj - v[j]) * omb2 + v[j];
        m[j] = m_new;
        v[j] = v_new;
        const float denom = std::sqrt(v_new) + eps;
        w[j] = w[j] + neg_step_size * (m_new / denom);
    }
}

}  // namespace

void update_row(const OptimConfig& cfg, const StepConstants& k, float* row, const float* grad,
                int64_t dim) {
    switch (cfg.kind) {
        case OptimKind::SGD:
            sgd(row, grad, dim, k.neg_lr);
            return;
        case OptimKind::Adagrad:
            adagrad(row, row + dim, grad, dim, k.neg_clr, k.eps);
            return;
        case OptimKind::Adam:
            adam(row, row + dim, row + 2 * dim, grad, dim, k.one_minus_beta1, k.one_minus_beta2,
                 k.neg_step_size, k.eps);
            return;
    }
}

}  // namespace embcache
