"""Lookups of the unsharded collections.

On the CPU they are torch's embedding / embedding_bag. On an accelerator (npu) they go through
fbgemm's standard ``dense_embedding_codegen_lookup_function``, the table-batched lookup the
operator adapter implements on the device (as a one-table batch over the parameter's storage,
so its gradient lands in the parameter and any torch optimiser trains it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# fbgemm's PoolingMode values.
_POOLING = {"sum": 0, "mean": 1, "none": 2}


def _tbe(
    weight: torch.Tensor,
    rows: torch.Tensor,
    offsets: torch.Tensor,
    pooling: str,
    per_id: torch.Tensor | None,
) -> torch.Tensor:
    import fbgemm_gpu  # noqa: F401  (registers the fbgemm operators)

    device = weight.device
    num_rows, dim = weight.shape
    return torch.ops.fbgemm.dense_embedding_codegen_lookup_function(
        dev_weights=weight.view(-1),
        weights_offsets=torch.zeros(1, dtype=torch.int64, device=device),
        D_offsets=torch.tensor([0, dim], dtype=torch.int32, device=device),
        total_D=dim,
        max_D=dim,
        hash_size_cumsum=torch.tensor([0, num_rows], dtype=torch.int64, device=device),
        total_hash_size_bits=max(int(num_rows).bit_length(), 1),
        indices=rows,
        offsets=offsets,
        pooling_mode=_POOLING[pooling],
        indice_weights=per_id,
        feature_requires_grad=None,
        output_dtype=0,
    )


def bag_lookup(
    weight: torch.Tensor,
    rows: torch.Tensor,
    offsets: torch.Tensor,
    mode: str,
    per_id: torch.Tensor | None,
) -> torch.Tensor:
    """Pooled rows ([bags, dim]); ``offsets`` has bags + 1 entries, ``mode`` sum or mean."""
    if weight.device.type == "cpu":
        return F.embedding_bag(
            rows, weight, offsets, mode=mode, per_sample_weights=per_id, include_last_offset=True
        )
    if per_id is not None:
        per_id = per_id.float()
    return _tbe(weight, rows, offsets, mode, per_id).to(weight.dtype)


def row_lookup(weight: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """One row per id ([ids, dim])."""
    if weight.device.type == "cpu":
        return F.embedding(rows, weight)
    offsets = torch.arange(rows.numel() + 1, dtype=torch.int64, device=rows.device)
    return _tbe(weight, rows, offsets, "none", None).to(weight.dtype)
