"""BatchIndexSelectDim0Backward on sim against the gradient fbgemm's CPU batch_index_select_dim0
computes. The hand case, the hypothesis comparison and the trap run beside the forward's in
test_op_batch_index_select_dim0.py (one launch helper for both); this file holds the backward at
the size users train."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
fbgemm_gpu = pytest.importorskip("fbgemm_gpu")
from test_op_batch_index_select_dim0 import select_backward, zipf_indices  # noqa: E402


def test_production_size_matches_fbgemm_and_traffic(sim_ops) -> None:
    """26 tables of 4096 rows x D = 128, B = 2048 Zipf indices each (hot rows repeat hundreds
    of times), interleaved output: the gradient equals fbgemm's (integer values, so the atomic
    adds' order cannot show) and traffic stays near what the scatter must move."""
    t, rows, d, b = 26, 4096, 128, 2048
    gen = torch.Generator().manual_seed(5)
    indices = torch.cat([zipf_indices(gen, rows, b) for _ in range(t)])
    num, rs, cs = [b] * t, [rows] * t, [d] * t
    leaf = torch.zeros(t * rows * d, requires_grad=True)
    want = torch.ops.fbgemm.batch_index_select_dim0(leaf, indices, num, rs, cs, True)
    grad = torch.randint(-8, 9, want.shape, generator=gen).to(torch.float32)
    want.backward(grad)
    got, result = select_backward(sim_ops, grad, indices, num, rs, cs, True)
    assert torch.equal(got, leaf.grad)
    # Indices once, the gradient rows once, and one atomic read-modify-write per selected row.
    minimum = indices.numel() * 8 + grad.numel() * 4 + 2 * grad.numel() * 4
    assert result.gm_bytes <= 1.02 * minimum
    assert result.balance() <= 1.1
