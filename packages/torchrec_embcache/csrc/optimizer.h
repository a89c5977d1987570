// Sparse optimisers applied row by row, fused with the write into the row's storage.
//
// A row is stored as [embedding (dim floats) | optimiser state (state_width floats)], in the
// host table and in the device cache alike, so a swap moves a row with its state in one copy.
// The arithmetic follows torch.optim's formulas operation by operation (see each kernel) so
// that results can be compared with plain PyTorch: SGD bit for bit, the others to rounding.
#pragma once

#include <cstdint>

#include "row_format.h"

namespace embcache {

enum class OptimKind : int { SGD = 0, Adagrad = 1, Adam = 2 };

struct OptimConfig {
    OptimKind kind = OptimKind::SGD;
    // Hyper-parameters are kept in double, as Python passes them: torch derives its float
    // scalars (e.g. 1 - beta1) from the doubles, and rounding first would change the result.
    double lr = 0.01;
    double eps = 1e-10;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double initial_accumulator = 0.0;  // Adagrad's initial_accumulator_value
};

inline int64_t state_width(OptimKind kind, int64_t dim) {
    switch (kind) {
        case OptimKind::SGD:
            return 0;
        case OptimKind::Adagrad:
            return dim;  // sum of squared gradients
        case OptimKind::Adam:
            return 2 * dim;  // first and second moment
    }
    return 0;
}

// Per-call constants derived from the config and the optimiser step (1-based), computed
// once per batch rather than per row.
struct StepConstants {
    float neg_lr;   // SGD: -lr
    float neg_clr;  // Adagrad: -lr (no lr decay)
    float one_minus_beta1;
    float one_minus_beta2;
    float neg_step_size;  // Adam: -(lr * sqrt(1 - beta2^t) / (1 - beta1^t))
    float eps;
    // The same in float64, for the weight update of 16-bit rows.
    double neg_lr_d;
    double neg_step_size_d;
    double eps_d;
};

StepConstants step_constants(const OptimConfig& cfg, int64_t step);

// Fills the optimiser state of a freshly created row.
void init_state(const OptimConfig& cfg, float* state, int64_t dim);

// Applies one update with gradient `grad` (dim floats) to `row` (embedding followed by state).
void update_row(const OptimConfig& cfg, const StepConstants& k, float* row, const float* grad,
                int64_t dim);

// The update of a row whose embedding is 16-bit (`units` 4-byte units, then float32 state).
// The optimiser state is updated in float32 exactly as update_row does; the new weight is
// computed in float64 from the stored weight, the gradient and that new state, then rounded
// once: to nearest even when `sr_stream` is 0, else stochastically with uniforms drawn from
// the counter-based stream `sr_stream` (see stochastic_stream).
void update_row_16(const OptimConfig& cfg, const StepConstants& k, RowDtype t, float* row,
                   const float* grad, int64_t dim, int64_t units, uint64_t sr_stream);

// The stream of stochastic-rounding uniforms of one row at one optimiser step: a pure
// function of (seed, id, step), so that results do not depend on threads or on the cache.
uint64_t stochastic_stream(uint64_t seed, int64_t key, int64_t step);

}  // namespace embcache
