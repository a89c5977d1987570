#include "optimizer.h"

#include <cmath>

#include "common.h"

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
    k.neg_lr_d = -cfg.lr;
    k.neg_step_size_d = -(cfg.lr * std::sqrt(bias2) / bias1);
    k.eps_d = cfg.eps;
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

namespace {

// The i-th uniform in [0, 1) of a stochastic-rounding stream.
inline double stream_uniform(uint64_t stream, int64_t i) {
    return static_cast<double>(
               splitmix64_mix(stream + static_cast<uint64_t>(i + 1) * kGoldenGamma) >> 11) *
           0x1.0p-53;
}

inline double stored_weight(RowDtype t, const uint16_t* w, int64_t j) {
    return static_cast<double>(decode_16(t, w[j]));
}

}  // namespace

uint64_t stochastic_stream(uint64_t seed, int64_t key, int64_t step) {
    // A different constant than the initialiser's, so the two streams are unrelated.
    const uint64_t s = splitmix64_mix(seed ^ 0x5bd1e9955bd1e995ULL);
    const uint64_t stream = splitmix64_mix(s ^ id_hash(key)) ^
                            splitmix64_mix(static_cast<uint64_t>(step) * 0xd6e8feb86659fd93ULL);
    return stream == 0 ? 1 : stream;
}

// -ffp-contract=off keeps every operation below separately rounded in float64, as the
// reference formulas in the tests (and their docs) are written.
void update_row_16(const OptimConfig& cfg, const StepConstants& k, RowDtype t, float* row,
                   const float* grad, int64_t dim, int64_t units, uint64_t sr_stream) {
    uint16_t* w = reinterpret_cast<uint16_t*>(row);
    float* state = row + units;
    auto store = [&](int64_t j, double x) {
        w[j] = round_to_16(t, x, sr_stream == 0 ? -1.0 : stream_uniform(sr_stream, j));
    };
    switch (cfg.kind) {
        case OptimKind::SGD:
            for (int64_t j = 0; j < dim; ++j) {
                store(j, stored_weight(t, w, j) + k.neg_lr_d * static_cast<double>(grad[j]));
            }
            return;
        case OptimKind::Adagrad:
            for (int64_t j = 0; j < dim; ++j) {
                const float s = state[j] + grad[j] * grad[j];
                state[j] = s;
                const double denom = std::sqrt(static_cast<double>(s)) + k.eps_d;
                const double g = static_cast<double>(grad[j]);
                store(j, stored_weight(t, w, j) + (k.neg_lr_d * g) / denom);
            }
            return;
        case OptimKind::Adam: {
            float* m = state;
            float* v = state + dim;
            for (int64_t j = 0; j < dim; ++j) {
                const float gj = grad[j];
                const float m_new = (gj - m[j]) * k.one_minus_beta1 + m[j];
                const float v_new = (gj * gj - v[j]) * k.one_minus_beta2 + v[j];
                m[j] = m_new;
                v[j] = v_new;
                const double denom = std::sqrt(static_cast<double>(v_new)) + k.eps_d;
                store(j, stored_weight(t, w, j) +
                             k.neg_step_size_d * (static_cast<double>(m_new) / denom));
            }
            return;
        }
    }
}

}  // namespace embcache
