"""The Zipf sampler the benchmarks and tests draw ids from, against the exact distribution."""

from __future__ import annotations

import pytest
import torch
from hybrid_torchrec.workload import zipf_ids, zipf_ranks


@pytest.mark.parametrize("exponent", [0.7, 1.05, 1.5])
def test_rank_frequencies_match_zipf(exponent: float) -> None:
    n, values = 400_000, 50
    ranks = zipf_ranks(n, values, exponent, torch.Generator().manual_seed(0))
    assert int(ranks.min()) >= 1 and int(ranks.max()) <= values
    expected = torch.arange(1, values + 1, dtype=torch.float64).pow(-exponent)
    expected /= expected.sum()
    observed = torch.bincount(ranks, minlength=values + 1)[1:].double() / n
    # Within 4 standard errors of a binomial proportion, for every rank.
    stderr = (expected * (1 - expected) / n).sqrt()
    assert bool(((observed - expected).abs() <= 4 * stderr + 1e-12).all())


def test_ids_are_a_bijection_of_ranks_and_deterministic() -> None:
    a = zipf_ids(10_000, 10**8, 1.05, torch.Generator().manual_seed(3))
    b = zipf_ids(10_000, 10**8, 1.05, torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    ranks = zipf_ranks(10_000, 10**8, 1.05, torch.Generator().manual_seed(3))
    assert torch.unique(a).numel() == torch.unique(ranks).numel()
    assert bool((a < 0).any()) and bool((a > 0).any())
