"""The emulator's global-memory counters tell the user workspace from the tensors.

Benchmarks report the HBM traffic of inputs and outputs apart from a kernel's scratch round trips
(L2-resident on a device), so the split must be exact: checked against byte counts worked out by
hand from the operator's contract, not against what the counters said before.
"""

from __future__ import annotations

import torch
from kernel_testlib import arg


def test_a_kernel_without_workspace_counts_none(sim_ops) -> None:
    # gather_for_rank1 reads x and the indices and writes out; it asks for no workspace.
    x = torch.arange(64, dtype=torch.float32)
    index = torch.randint(0, 64, (256,), generator=torch.Generator().manual_seed(0))
    out = torch.empty(256, dtype=torch.float32)
    r = sim_ops("gather_for_rank1").launch([arg(x), arg(index), arg(out)], max_cores=1)
    assert torch.equal(out, x[index])
    assert r.workspace_bytes_moved == 0
    assert r.total("gm_write_bytes") == out.numel() * 4


def test_hstu_inputs_are_read_once_and_scratch_is_counted_apart(sim_ops) -> None:
    # One sequence of one query block, one head, no mask: a single worker reads Q, K and V
    # exactly once and writes O once; besides them every core reads the tiling struct (the same
    # bytes on each), and every score block and the float32 accumulator go through the workspace.
    # A second read of K or V would add 8 KiB to the tensors' share.
    seq, dim = 16, 128
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.empty(1, seq, 1, dim).uniform_(-1, 1, generator=gen) for _ in range(3))
    out = torch.empty_like(q)
    attrs = [2, seq, 0.0, 0, []]  # mask type 2 (none), normal layout
    r = sim_ops("hstu_dense_forward").launch(
        [arg(t) for t in (q, k, v, None, None, None, out)], attrs, max_cores=1
    )
    tensor_bytes = q.numel() * 4
    tiling_reads = r.gm_bytes - r.workspace_bytes_moved - 4 * tensor_bytes
    cores = len(r.cores)
    assert tiling_reads % cores == 0 and 0 < tiling_reads // cores < 4096, (tiling_reads, cores)
    # S = Q K^T ([16, 16] float32) written by the Cube and read by the vector core, P written
    # back and read by the Cube, the [16, 128] float32 accumulator written by the Cube and read
    # by the vector core.
    scores, acc = seq * seq * 4, seq * dim * 4
    assert r.workspace_bytes_moved == 4 * scores + 2 * acc
    assert r.total("gm_workspace_write_bytes") == 2 * scores + acc
