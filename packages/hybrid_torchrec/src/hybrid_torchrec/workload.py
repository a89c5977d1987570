"""Synthetic feature ids for benchmarks and tests: Zipf-distributed ranks spread over int64.

Real id streams are heavy-tailed: a few ids occur in most batches, most ids rarely. Zipf(s)
over N values draws rank k with probability proportional to k^-s. The sampler below is exact
(rejection-inversion, Hörmann and Derflinger 1996) and needs O(1) memory, so N = 10^8 or
more costs nothing to set up, unlike sampling from a tabulated CDF.
"""

from __future__ import annotations

import math

import torch

# An odd multiplier is a bijection of the 64-bit integers: distinct ranks stay distinct ids,
# and the ids spread over the whole int64 range, negative values included.
_SPREAD = 0xD6E8FEB86659FD93 - (1 << 64)


def zipf_ranks(
    n: int, num_values: int, exponent: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """n ranks in [1, num_values], P(k) proportional to k^-exponent (exponent > 0, != 1)."""
    s = float(exponent)
    if s <= 0 or s == 1.0:
        raise ValueError(f"exponent must be > 0 and != 1, got {exponent}")
    if num_values < 1:
        raise ValueError("num_values must be >= 1")
    one_minus_s = 1.0 - s

    # H integrates x^-s. A uniform draw between H(1.5) - 1 and H(N + 0.5), mapped back through
    # H's inverse and rounded, is a candidate k; it is rejected only where the area under x^-s
    # around k exceeds k^-s, which makes the accepted k exactly Zipf-distributed.
    def big_h(x: torch.Tensor | float) -> torch.Tensor | float:
        if isinstance(x, torch.Tensor):
            return torch.expm1(one_minus_s * torch.log(x)) / one_minus_s
        return math.expm1(one_minus_s * math.log(x)) / one_minus_s

    def big_h_inv(y: torch.Tensor) -> torch.Tensor:
        return torch.exp(torch.log1p(y * one_minus_s) / one_minus_s)

    h_x1 = float(big_h(1.5)) - 1.0
    h_n = float(big_h(num_values + 0.5))
    below_two = float(big_h(2.5)) - 2.0**-s
    threshold = 2.0 - math.exp(math.log1p(below_two * one_minus_s) / one_minus_s)

    out = torch.empty(n, dtype=torch.int64)
    todo = torch.arange(n)
    while todo.numel():
        u = h_n + torch.rand(todo.numel(), dtype=torch.float64, generator=generator) * (h_x1 - h_n)
        x = big_h_inv(u)
        k = torch.round(x).clamp_(1, num_values)
        accept = (k - x <= threshold) | (u >= big_h(k + 0.5) - torch.pow(k, -s))
        out[todo[accept]] = k[accept].to(torch.int64)
        todo = todo[~accept]
    return out


def zipf_ids(
    n: int, num_values: int, exponent: float = 1.05, generator: torch.Generator | None = None
) -> torch.Tensor:
    """n int64 ids with Zipf(exponent)-distributed ranks over num_values distinct ids, the
    ranks scattered over the whole int64 range (many ids are negative)."""
    return zipf_ranks(n, num_values, exponent, generator) * _SPREAD
