"""Recommendation traffic for the at-scale tests: ids that follow a Zipf law, as real feature
ids do (a few rows take most lookups and repeat within a batch)."""

from __future__ import annotations

from functools import lru_cache

import torch

ZIPF_EXPONENT = 1.05


@lru_cache(maxsize=64)
def _zipf_table(rows: int, exponent: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The cumulative distribution over ranks and the rank -> row permutation of a table size:
    the same for every draw, and most of a draw's cost when built each time (the at-scale
    workers draw for 26 tables of up to 10^5 rows at every step)."""
    weights = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64) ** exponent
    cdf = weights.cumsum(0)
    cdf /= cdf[-1].item()
    scatter = torch.randperm(rows, generator=torch.Generator().manual_seed(rows))
    return cdf, scatter


def zipf_ids(
    rows: int, n: int, g: torch.Generator, exponent: float = ZIPF_EXPONENT
) -> torch.Tensor:
    """n ids of a table of ``rows``: P(rank k) proportional to 1 / k**exponent, the hot ranks
    scattered over the table by a permutation fixed per table size, so every row range (and
    every row-wise shard) has hot rows."""
    cdf, scatter = _zipf_table(rows, exponent)
    # Inverse transform sampling: rank k for a uniform u in (cdf[k-1], cdf[k]].
    u = torch.rand(n, generator=g, dtype=torch.float64)
    ranks = torch.searchsorted(cdf, u).clamp_(max=rows - 1)
    return scatter[ranks]
