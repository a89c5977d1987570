"""Recommendation traffic for the at-scale tests: ids that follow a Zipf law, as real feature
ids do (a few rows take most lookups and repeat within a batch)."""

from __future__ import annotations

import torch

ZIPF_EXPONENT = 1.05


def zipf_ids(
    rows: int, n: int, g: torch.Generator, exponent: float = ZIPF_EXPONENT
) -> torch.Tensor:
    """n ids of a table of ``rows``: P(rank k) proportional to 1 / k**exponent, the hot ranks
    scattered over the table by a permutation fixed per table size, so every row range (and
    every row-wise shard) has hot rows."""
    weights = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64) ** exponent
    ranks = torch.multinomial(weights, n, replacement=True, generator=g)
    scatter = torch.randperm(rows, generator=torch.Generator().manual_seed(rows))
    return scatter[ranks]
