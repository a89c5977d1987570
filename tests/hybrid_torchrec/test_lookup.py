"""The collections' device lookup (fbgemm's dense TBE op, used off the CPU) against torch's
embedding_bag / embedding, run here on the CPU through fbgemm's CPU kernel of the same op."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hybrid_torchrec import lookup


def _case(rows: int, dim: int, bags: int, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(rows, dim, generator=g, dtype=torch.float32)
    lengths = torch.randint(0, 5, (bags,), generator=g)
    offsets = torch.zeros(bags + 1, dtype=torch.int64)
    offsets[1:] = lengths.cumsum(0)
    ids = torch.randint(0, rows, (int(offsets[-1]),), generator=g)
    return weight, ids, offsets


# (rows, dim, bags): a toy table and a production-like one (10^5 rows, D 128, 2048 bags).
SHAPES = [(7, 4, 5), (100_000, 128, 2048)]


@pytest.mark.parametrize(("rows", "dim", "bags"), SHAPES)
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_pooled_tbe_lookup_equals_embedding_bag(rows: int, dim: int, bags: int, mode: str) -> None:
    weight, ids, offsets = _case(rows, dim, bags, seed=rows + dim)
    weight.requires_grad_()
    got = lookup._tbe(weight, ids, offsets, mode, None)
    want = F.embedding_bag(ids, weight, offsets, mode=mode, include_last_offset=True)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # The gradient reaches the parameter through the flat view the op is given.
    (grad,) = torch.autograd.grad((got * got).sum(), weight)
    (want_grad,) = torch.autograd.grad((want * want).sum(), weight)
    torch.testing.assert_close(grad, want_grad, rtol=1e-5, atol=1e-5)


def test_weighted_and_unpooled_tbe_lookups() -> None:
    weight, ids, offsets = _case(50, 8, 9, seed=3)
    per_id = torch.linspace(-1.0, 2.0, ids.numel())
    got = lookup._tbe(weight, ids, offsets, "sum", per_id)
    want = F.embedding_bag(
        ids, weight, offsets, mode="sum", per_sample_weights=per_id, include_last_offset=True
    )
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    rows = torch.tensor([3, 3, 0, 49])
    flat = torch.arange(rows.numel() + 1)
    torch.testing.assert_close(lookup._tbe(weight, rows, flat, "none", None), weight[rows])
