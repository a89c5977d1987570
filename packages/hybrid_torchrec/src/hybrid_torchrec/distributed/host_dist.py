"""The host half of a hybrid sharded collection: input distribution over the host process group
and the id -> row mapping of the rank's own table shards.

torchrec's input distributions (KJTAllToAll and friends) are built a second time over the host
(gloo) group on the CPU, so the ids travel between hosts and never touch the device. For tables
fed arbitrary ids (the Hash collections) row-wise routing is by a hash of the id instead of
torchrec's blocks of row numbers, and after the all-to-all each rank maps the ids it received
to rows of its shards with one :class:`~hybrid_torchrec.IdMapper` per table. Only then does the
batch, now holding row numbers local to the shards (what torchrec's lookups expect), go to the
device.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn
from torchrec.distributed.sharding.rw_sharding import RwSparseFeaturesDist
from torchrec.distributed.types import Awaitable
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from hybrid_torchrec.distributed.types import UnknownIdError
from hybrid_torchrec.ids import IdMapper, map_tables
from hybrid_torchrec.kjt import bucketize_kjt

HOST = torch.device("cpu")


def with_values(kjt: KeyedJaggedTensor, values: torch.Tensor) -> KeyedJaggedTensor:
    """``kjt`` with other values of the same lengths."""
    variable = kjt.variable_stride_per_key()
    return KeyedJaggedTensor(
        keys=kjt.keys(),
        values=values,
        weights=kjt.weights_or_none(),
        lengths=kjt.lengths(),
        stride=None if variable else kjt.stride(),
        stride_per_key_per_rank=kjt.stride_per_key_per_rank() if variable else None,
        length_per_key=kjt.length_per_key(),
        inverse_indices=kjt.inverse_indices_or_none(),
    )


class ShardMapper:
    """The id -> row mappings of one rank's table shards, applied to a received batch.

    A table's features may arrive several times in one batch (column-wise shards of a table
    on the same rank each receive the whole feature): the ids of a table are mapped once, in
    the order of the features' first appearance, which is the order the unsharded collection
    maps them in, and every occurrence reads the same rows.

    Rows a batch takes from evicted ids are handed to ``on_evict(table, rows)`` (CPU int64)
    before the batch is returned: they must be reset on the device before its lookup.
    """

    def __init__(
        self,
        feature_to_table: dict[str, str],
        mappers: dict[str, IdMapper],
        on_evict: Callable[[str, torch.Tensor], None] | None = None,
    ) -> None:
        self._feature_to_table = feature_to_table
        self._mappers = mappers
        self._on_evict = on_evict

    def __call__(self, kjt: KeyedJaggedTensor, insert: bool) -> KeyedJaggedTensor:
        keys = kjt.keys()
        if not keys:
            return kjt
        segments = kjt.values().split(kjt.length_per_key())
        first: dict[str, int] = {}
        for i, key in enumerate(keys):
            first.setdefault(key, i)
        by_table: dict[str, list[int]] = {}
        for key, i in first.items():
            by_table.setdefault(self._feature_to_table[key], []).append(i)
        tables = list(by_table)
        ids = [_cat([segments[i] for i in by_table[t]]) for t in tables]
        results = map_tables([self._mappers[t] for t in tables], ids, insert=insert)
        rows_by_key: dict[str, torch.Tensor] = {}
        for table, result in zip(tables, results, strict=True):
            if result.evicted_rows.numel() and self._on_evict is not None:
                self._on_evict(table, result.evicted_rows)
            rows = result.rows_per_id()
            if not insert and bool((rows < 0).any()):
                raise UnknownIdError(
                    f"table {table!r}: {int((result.rows < 0).sum())} ids without a row in "
                    "evaluation mode; a sharded table reads only ids it has seen in training"
                )
            parts = rows.split([segments[i].numel() for i in by_table[table]])
            for i, part in zip(by_table[table], parts, strict=True):
                rows_by_key[keys[i]] = part
        return with_values(kjt, _cat([rows_by_key[key] for key in keys]))


def _cat(parts: list[torch.Tensor]) -> torch.Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts)


class HashRwSparseFeaturesDist(RwSparseFeaturesDist):
    """torchrec's row-wise input distribution with ids routed by their hash.

    Rank r of W receives the ids whose hash lies in [r/W, (r+1)/W) (see
    :func:`hybrid_torchrec.bucketize`), unchanged: its mapper gives them rows of its shard. The
    all-to-all and the permutation a sequence collection needs to put embeddings back are
    torchrec's.
    """

    def __init__(self, pg: dist.ProcessGroup, num_features: int, is_sequence: bool) -> None:
        # Block sizes are unused: routing never looks at row numbers.
        super().__init__(
            pg=pg,
            num_features=num_features,
            feature_hash_sizes=[1] * num_features,
            device=HOST,
            is_sequence=is_sequence,
        )

    def forward(
        self, sparse_features: KeyedJaggedTensor
    ) -> Awaitable[Awaitable[KeyedJaggedTensor]]:
        bucketized, self.unbucketize_permute_tensor = bucketize_kjt(
            sparse_features,
            self._world_size,
            routing="hash",
            output_permute=self._is_sequence,
            keep_original_indices=True,
        )
        return self._dist(bucketized)


class HostInputDist(nn.Module):
    """Runs a torchrec input distribution on the host, then ``finish`` on what arrives.

    The awaitables are torchrec's own (a sharded module reads their metadata into its context);
    ``finish`` (mapping, the copy to the device) is added as a callback of the inner one, so it
    runs when the module waits for the batch.
    """

    def __init__(
        self, dist_module: nn.Module, finish: Callable[[KeyedJaggedTensor], KeyedJaggedTensor]
    ) -> None:
        super().__init__()
        self.dist = dist_module
        self._finish = finish

    @property
    def unbucketize_permute_tensor(self) -> torch.Tensor | None:
        return getattr(self.dist, "unbucketize_permute_tensor", None)

    def forward(self, features: KeyedJaggedTensor) -> Awaitable[Awaitable[KeyedJaggedTensor]]:
        awaitable = self.dist(features)
        awaitable.callbacks.append(self._attach)
        return awaitable

    def _attach(self, inner: Awaitable[KeyedJaggedTensor]) -> Awaitable[KeyedJaggedTensor]:
        inner.callbacks.append(self._finish)
        return inner
