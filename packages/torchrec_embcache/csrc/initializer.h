// Row initialisers.
//
// A row's initial values are a pure function of (seed, id, element): counter-based random
// numbers instead of a stateful generator. This makes initialisation independent of the
// order in which ids arrive, of the number of threads, and of whether a row went through
// the device cache - the property the exactness guarantees (cached == uncached, save/load
// round trips) rest on. An evicted id that comes back starts again from the same values.
#pragma once

#include <cstdint>

namespace embcache {

enum class InitKind : int { Uniform = 0, Normal = 1, TruncatedNormal = 2, Constant = 3 };

struct InitConfig {
    InitKind kind = InitKind::Uniform;
    // Uniform: [p0, p1). Normal / TruncatedNormal: mean p0, std p1 (truncated to
    // mean +- 2 std). Constant: p0.
    double p0 = 0.0;
    double p1 = 1.0;
    uint64_t seed = 0;
};

// Writes the initial embedding of `key` into out[0, dim).
void initialize_row(const InitConfig& cfg, int64_t key, float* out, int64_t dim);

}  // namespace embcache
