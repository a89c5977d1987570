"""fbgemm::jagged_unique_indices in plain PyTorch, from the semantics of fbgemm 1.1.0's CUDA op.

fbgemm-gpu-cpu defines only the schema, so the golden is written here: ids linearized with
hash_size_cumsum per feature (feature = bag // B), torch.unique (sorted) of the linearized ids,
unique_indices the original id of each unique one, and per feature group g the reverse indices'
max - min + 1 over the group's ids, spread over its bags [hash_size_offsets[g] * B,
hash_size_offsets[g + 1] * B) with the first ones one more.

One reference for the kernel's tests on the simulator
(tests/kernels/test_op_jagged_unique_indices.py) and the adapter's on the npu device
(verify/ops/test_npu_jagged_unique_indices.py).
"""

from __future__ import annotations

import torch

I64 = torch.int64


def jagged_unique_reference(
    cumsum: torch.Tensor, groups: torch.Tensor, offsets: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(lengths, offsets, unique_indices, reverse_index) for hash_size_cumsum, hash_size_offsets,
    offsets and indices as the operator takes them."""
    t = cumsum.numel() - 1
    bags = offsets.numel() - 1
    b = bags // t
    bag_of = torch.repeat_interleave(torch.arange(bags), offsets.diff())
    linear = cumsum[bag_of // b] + indices if b else indices.clone()
    uniq, reverse = torch.unique(linear, sorted=True, return_inverse=True)
    # The first id (in input order) of each unique linearized id: only ids outside their
    # feature's range can differ within one, and the kernel's stable sort keeps the first.
    first = torch.full((uniq.numel(),), indices.numel(), dtype=I64)
    first = first.scatter_reduce(0, reverse, torch.arange(indices.numel()), reduce="amin")
    unique = indices[first]
    lengths = torch.zeros(bags, dtype=I64)
    for g in range(t):
        lo, hi = int(groups[g]), int(groups[g + 1])
        rb, re = int(offsets[lo * b]), int(offsets[hi * b])
        if rb < re:
            count = int(reverse[rb:re].max() - reverse[rb:re].min()) + 1
            slots = (hi - lo) * b
            lengths[lo * b : hi * b] = count // slots + (torch.arange(slots) < count % slots)
    out_offsets = torch.cat([torch.zeros(1, dtype=I64), lengths.cumsum(0)])
    return lengths, out_offsets, unique, reverse
