#include "initializer.h"

#include <cmath>

#include "common.h"

namespace embcache {

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// The i-th value (i >= 0) of the splitmix64 stream that starts at `base`.
inline uint64_t stream(uint64_t base, uint64_t i) {
    return splitmix64_mix(base + (i + 1) * kGoldenGamma);
}

// Uniform double in [0, 1) from the top 53 bits.
inline double unit_open_right(uint64_t u) {
    return static_cast<double>(u >> 11) * 0x1.0p-53;
}

// Uniform double in (0, 1]: the logarithm in Box-Muller must never see 0.
inline double unit_open_left(uint64_t u) {
    return static_cast<double>((u >> 11) + 1) * 0x1.0p-53;
}

// One standard normal from two uniforms of `base`'s stream at 2k and 2k+1; `second`
// selects the sine branch so a pair of draws yields two independent normals.
inline double box_muller(uint64_t base, uint64_t k, bool second) {
    const double r = std::sqrt(-2.0 * std::log(unit_open_left(stream(base, 2 * k))));
    const double theta = kTwoPi * unit_open_right(stream(base, 2 * k + 1));
    return second ? r * std::sin(theta) : r * std::cos(theta);
}

}  // namespace

void initialize_row(const InitConfig& cfg, int64_t key, float* out, int64_t dim) {
    // Distinct seeds and distinct ids must give unrelated streams: hash both in.
    const uint64_t base = splitmix64_mix(splitmix64_mix(cfg.seed ^ 0x5851f42d4c957f2dULL) ^
                                         static_cast<uint64_t>(key));
    switch (cfg.kind) {
        case InitKind::Constant: {
            const float v = static_cast<float>(cfg.p0);
            for (int64_t j = 0; j < dim; ++j)
                out[j] = v;
            return;
        }
        case InitKind::Uniform: {
            const double lo = cfg.p0;
            const double width = cfg.p1 - cfg.p0;
            for (int64_t j = 0; j < dim; ++j) {
                const float v = static_cast<float>(lo + width * unit_open_right(stream(base, j)));
                // Rounding to float can land exactly on the open upper bound; keep the interval.
                out[j] = (v < cfg.p1 || width == 0.0)
                             ? v
                             : std::nextafter(static_cast<float>(cfg.p1), static_cast<float>(lo));
            }
            return;
        }
        case InitKind::Normal: {
            for (int64_t j = 0; j < dim; ++j) {
                out[j] =
                    static_cast<float>(cfg.p0 + cfg.p1 * box_muller(base, j / 2, (j & 1) != 0));
            }
            return;
        }
        case InitKind::TruncatedNormal: {
            for (int64_t j = 0; j < dim; ++j) {
                // Rejection sampling on a per-element sub-stream: the accepted draw depends only on
                // (seed, id, j). 2-sigma truncation rejects ~4.6% of draws; 64 rejections in a row
                // has probability ~1e-85, after which the value is clamped rather than looping.
                const uint64_t sub = stream(base, j) ^ 0x2545f4914f6cdd1dULL;
                double z = 0.0;
                bool accepted = false;
                for (uint64_t attempt = 0; attempt < 64; ++attempt) {
                    z = box_muller(sub, attempt, false);
                    if (z >= -2.0 && z <= 2.0) {
                        accepted = true;
                        break;
                    }
                }
                if (!accepted)
                    z = z < 0 ? -2.0 : 2.0;
                out[j] = static_cast<float>(cfg.p0 + cfg.p1 * z);
            }
            return;
        }
    }
}

}  // namespace embcache
