"""fbgemm::jagged_unique_indices on the npu device, through the installed adapter.

fbgemm-gpu-cpu has no CPU kernel for it (the schema only), so results are compared with a
plain-PyTorch reference of fbgemm 1.1.0's CUDA op (lib/jagged_unique_reference.py, shared with the
kernel's tests). The inputs are laid out as torchrec's EmbeddingCollection dedup and managed
collision build them.
"""

from __future__ import annotations

import pytest
import torch
from jagged_unique_reference import jagged_unique_reference as reference

NPU = "npu"
I64 = torch.int64
pytestmark = [
    pytest.mark.requires_npu,
    pytest.mark.requires_npu_ops("fbgemm::jagged_unique_indices"),
]


def run(cumsum, groups, offsets, indices):
    got = torch.ops.fbgemm.jagged_unique_indices(
        cumsum.to(NPU), groups.to(NPU), offsets.to(NPU), indices.to(NPU)
    )
    assert all(x.device.type == NPU for x in got)
    return [x.cpu() for x in got]


def zipf_case(t: int, b: int, table_of: list[int], sizes: list[int], seed: int):
    """Bags of 0-4 Zipf ids; features mapped to tables as managed collision groups them."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 5, (t * b,), generator=gen, dtype=I64)
    n = int(lengths.sum())
    feature = torch.repeat_interleave(torch.arange(t * b), lengths) // b
    table = torch.tensor(table_of)[feature]
    ids = (torch.rand(n, generator=gen).pow(-4.0).long() - 1).clamp(min=0) % torch.tensor(sizes)[
        table
    ]
    starts = [0]
    for s in sizes:
        starts.append(starts[-1] + s)
    cumsum = torch.tensor([starts[table_of[f]] for f in range(t)] + [starts[-1]], dtype=I64)
    first_feature = {}
    for f, tb in enumerate(table_of):
        first_feature.setdefault(tb, f)
    groups = torch.tensor([first_feature[tb] for tb in table_of] + [t], dtype=I64)
    offsets = torch.cat([torch.zeros(1, dtype=I64), lengths.cumsum(0)])
    return cumsum, groups, offsets, ids


@pytest.mark.parametrize(
    ("table_of", "sizes"),
    [
        ([0, 1, 2, 3, 4, 5], [1000, 50, 70000, 3, 1 << 40, 999]),  # EC dedup: a table each
        ([0, 0, 1, 1, 1, 2], [5000, 1 << 54, 80]),  # managed collision: shared tables
    ],
)
def test_matches_reference(table_of, sizes) -> None:
    args = zipf_case(len(table_of), 512, table_of, sizes, seed=len(sizes))
    got = run(*args)
    want = reference(*args)
    for name, g, w in zip(("lengths", "offsets", "unique", "reverse"), got, want, strict=True):
        assert g.dtype == w.dtype and torch.equal(g, w), name
    assert got[2].numel() < args[3].numel()  # repeats were removed


def test_hand_example() -> None:
    got = run(
        *(
            torch.tensor(x, dtype=I64)
            for x in ([0, 10, 30], [0, 1, 2], [0, 2, 3, 5, 5], [3, 1, 3, 5, 5])
        )
    )
    assert [x.tolist() for x in got] == [[1, 1, 1, 0], [0, 1, 2, 3, 3], [1, 3, 5], [1, 0, 1, 2, 2]]


def test_empty_ids() -> None:
    got = run(*(torch.tensor(x, dtype=I64) for x in ([0, 10, 30], [0, 1, 2], [0, 0, 0, 0, 0], [])))
    assert [x.tolist() for x in got] == [[0, 0, 0, 0], [0, 0, 0, 0, 0], [], []]


def test_bad_arguments_are_refused() -> None:
    cumsum, groups, offsets, ids = (
        torch.tensor(x, dtype=I64).to(NPU)
        for x in ([0, 10, 30], [0, 1, 2], [0, 2, 3, 5, 5], [3, 1, 3, 5, 5])
    )
    op = torch.ops.fbgemm.jagged_unique_indices
    with pytest.raises(TypeError, match="indices"):
        op(cumsum, groups, offsets, ids.int())
    with pytest.raises(ValueError, match="non-decreasing"):
        op(cumsum, torch.tensor([0, 2, 1], dtype=I64).to(NPU), offsets, ids)
    with pytest.raises(ValueError, match="T \\* B"):
        op(cumsum, groups, offsets[:4], ids)
    with pytest.raises(ValueError, match="offsets"):  # the kernel's trap: offsets end before N
        op(cumsum, groups, torch.tensor([0, 2, 3, 4, 4], dtype=I64).to(NPU), ids)
