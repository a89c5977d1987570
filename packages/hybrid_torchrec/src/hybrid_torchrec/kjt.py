"""Bucketization of a KeyedJaggedTensor, as torchrec's row-wise input distribution does it.

:func:`bucketize_kjt` returns what torchrec's ``bucketize_kjt_before_all2all`` returns (the
KeyedJaggedTensor with the keys repeated once per bucket, and the optional permutation), computed
on the host by the core, with hash routing for arbitrary ids as an option. The row-wise sharders
of phase 2 call it before the all-to-all over the host process group.
"""

from __future__ import annotations

import torch
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from hybrid_torchrec.ids import bucketize


def bucketize_kjt(
    kjt: KeyedJaggedTensor,
    num_buckets: int,
    *,
    routing: str = "hash",
    block_sizes: torch.Tensor | None = None,
    output_permute: bool = False,
    keep_original_indices: bool | None = None,
) -> tuple[KeyedJaggedTensor, torch.Tensor | None]:
    """Splits ``kjt`` into ``num_buckets`` buckets; see :func:`hybrid_torchrec.bucketize`.

    With ``routing="block"`` and ``block_sizes`` the result equals torchrec's
    ``bucketize_kjt_before_all2all(kjt, num_buckets, block_sizes, output_permute=...,
    keep_original_indices=...)``. Variable batch sizes per feature are supported.
    """
    keys = kjt.keys()
    variable = kjt.variable_stride_per_key()
    out = bucketize(
        kjt.lengths().view(-1),
        kjt.values(),
        num_buckets,
        routing=routing,
        block_sizes=block_sizes,
        num_features=max(len(keys), 1),
        batch_size_per_feature=list(kjt.stride_per_key()) if variable else None,
        weights=kjt.weights_or_none(),
        keep_ids=keep_original_indices,
        return_permute=output_permute,
    )
    result = KeyedJaggedTensor(
        keys=list(keys) * num_buckets,
        values=out.ids,
        weights=out.weights,
        lengths=out.lengths,
        stride=None if variable else kjt.stride(),
        stride_per_key_per_rank=kjt.stride_per_key_per_rank() * num_buckets if variable else None,
    )
    return result, out.permute
