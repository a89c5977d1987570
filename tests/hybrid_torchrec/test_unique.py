"""hybrid_torchrec.unique against torch.unique and a first-occurrence reference."""

from __future__ import annotations

import hybrid_torchrec as hy
import pytest
import torch
from hybrid_torchrec.workload import zipf_ids

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def first_occurrence(ids: torch.Tensor) -> tuple[list[int], list[int], list[int]]:
    values = ids.tolist()
    order = list(dict.fromkeys(values))
    index = {v: k for k, v in enumerate(order)}
    counts = [0] * len(order)
    for v in values:
        counts[index[v]] += 1
    return order, [index[v] for v in values], counts


CASES = {
    "empty": torch.empty(0, dtype=torch.int64),
    "one": torch.tensor([42]),
    "repeats": torch.tensor([3, 3, 3, 3]),
    "negative": torch.tensor([-1, 5, -1, -(2**40), 0, 5, -7]),
    "extremes": torch.tensor([INT64_MIN, INT64_MAX, 0, -1, INT64_MIN, 1, INT64_MAX]),
    "random": torch.randint(-50, 50, (5000,), generator=torch.Generator().manual_seed(0)),
    "zipf": zipf_ids(200_000, 10**8, 1.05, torch.Generator().manual_seed(1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sorted_equals_torch_unique(name: str) -> None:
    ids = CASES[name]
    ours = hy.unique(ids, sorted=True, return_counts=True)
    values, inverse, counts = torch.unique(
        ids, sorted=True, return_inverse=True, return_counts=True
    )
    assert torch.equal(ours.values, values)
    assert torch.equal(ours.inverse, inverse)
    assert ours.counts is not None
    assert torch.equal(ours.counts, counts)


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_occurrence_order(name: str) -> None:
    ids = CASES[name]
    ours = hy.unique(ids, return_counts=True)
    order, inverse, counts = first_occurrence(ids)
    assert ours.values.tolist() == order
    assert ours.inverse.tolist() == inverse
    assert ours.counts is not None and ours.counts.tolist() == counts
    assert torch.equal(ours.values[ours.inverse], ids)


def test_counts_only_when_asked() -> None:
    assert hy.unique(torch.tensor([1, 1])).counts is None


def test_int32_ids_are_widened() -> None:
    ids = torch.tensor([7, -2, 7, 2**31 - 1], dtype=torch.int32)
    ours = hy.unique(ids, sorted=True)
    assert ours.values.dtype == torch.int64
    assert ours.values.tolist() == [-2, 7, 2**31 - 1]
    assert ours.inverse.tolist() == [1, 0, 1, 2]


def test_rejects_non_integer_and_non_1d() -> None:
    with pytest.raises(TypeError, match="int64 or int32"):
        hy.unique(torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="1-D"):
        hy.unique(torch.zeros(2, 2, dtype=torch.int64))


def test_non_contiguous_input() -> None:
    ids = torch.arange(20).view(4, 5)[:, 1]  # strided
    assert hy.unique(ids).values.tolist() == [1, 6, 11, 16]


def test_independent_of_thread_count() -> None:
    ids = zipf_ids(1 << 20, 10**8, 1.05, torch.Generator().manual_seed(7))
    before = hy.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 4):
            hy.set_num_threads(threads)
            results.append(hy.unique(ids, return_counts=True))
    finally:
        hy.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            assert torch.equal(a, b)
    values = torch.unique(ids)
    ours = results[0]
    assert torch.equal(ours.values[ours.inverse], ids)
    assert ours.values.numel() == values.numel()


def test_set_num_threads_validates() -> None:
    with pytest.raises(ValueError):
        hy.set_num_threads(0)
