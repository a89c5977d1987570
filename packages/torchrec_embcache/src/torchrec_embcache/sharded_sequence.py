"""Sharding of EmbCacheEmbeddingCollection (sequence embeddings: a row per id) by stable hash
buckets, row-wise, table-wise and table-row-wise (see sharded.py for the placements and the
input distribution, which are the bag collection's).

Per batch:

1. input distribution on the **host** group: every id goes to the owner of its bucket in its
   table's placement, as for bags;
2. the owner's own :class:`EmbCacheEmbeddingCollection` (only the tables it holds) looks up
   the row of every id it received;
3. output distribution on the **device** group: the rows go back to the ranks that sent the
   ids, which put them back in their batch's order; the result is the unsharded collection's
   ``dict[str, JaggedTensor]`` for the rank's own bags. The backward carries every row's
   gradient to its owner, whose table applies its fused sparse update.

This equals the unsharded collection fed every rank's batch with the mean of the ranks' losses:
each id's row is looked up by the one table that holds it, as the unsharded collection's one
table would, and the gradients coming back are divided by the world size as torchrec's are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torchrec.modules.embedding_configs import EmbeddingConfig
from torchrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor

from torchrec_embcache.collection import EmbCacheEmbeddingCollection
from torchrec_embcache.config import Optimizer
from torchrec_embcache.distributed.types import BucketMap, Placement
from torchrec_embcache.sharded import (
    EmbCacheSharderBase,
    ShardedEmbCacheBase,
    ShardingContext,
    divide_gradient,
)

__all__ = ["EmbCacheEmbeddingCollectionSharder", "ShardedEmbCacheEmbeddingCollection"]


def _inverse(order: torch.Tensor) -> torch.Tensor:
    """The permutation that undoes ``order`` (x[order][_inverse(order)] == x)."""
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel())
    return inverse


class ShardedEmbCacheEmbeddingCollection(ShardedEmbCacheBase):
    """One rank's share of an EmbCacheEmbeddingCollection sharded by bucket.

    Args:
        tables: the collection's table configs (one embedding_dim, as torchrec requires), the
            same on every rank.
        host_group, device_group, placements, bucket_map: as
            :class:`~torchrec_embcache.sharded.ShardedEmbCacheEmbeddingBagCollection`'s.
        device, need_indices, optimizer, seed: as EmbCacheEmbeddingCollection's; the seed must
            be the same on every rank.

    ``forward(features)`` takes this rank's batch and returns, like the unsharded collection,
    a JaggedTensor per feature: a row per id, in the batch's order, with the batch's lengths
    (and the ids as weights with ``need_indices``). ``local`` holds the tables this rank owns
    buckets of; ``state_dict`` keys are the unsharded collection's (``embeddings.<table>.*``).
    """

    TABLE_PREFIX = "embeddings."

    def __init__(
        self,
        tables: list[EmbeddingConfig],
        host_group: Any,
        device_group: Any = None,
        *,
        placements: Mapping[str, Placement] | None = None,
        bucket_map: BucketMap | None = None,
        device: torch.device | None = None,
        need_indices: bool = False,
        optimizer: Optimizer | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(tables, host_group, device_group, placements, bucket_map, device)
        dims = {config.embedding_dim for config in tables}
        if len(dims) > 1:
            raise ValueError(
                "All tables in a EmbeddingCollection are required to have same embedding "
                f"dimension, got {sorted(dims)}"
            )
        self._dim = dims.pop() if dims else 0
        self._need_indices = need_indices
        local = EmbCacheEmbeddingCollection(
            self._held(tables), device, optimizer=optimizer, seed=seed
        )
        # As for bags: the tables are children under the unsharded collection's name.
        object.__setattr__(self, "local", local)
        self.embeddings = local.embeddings
        self._local_keys = [key for keys in local.embedding_names_by_table() for key in keys]

    def compute(self, ctx: ShardingContext, dist_input: KeyedJaggedTensor) -> torch.Tensor:
        """The row of every id this rank received, [ids, D], sender-major: each sender's ids
        of this rank's features, features in order, in the order they were sent."""
        with self._collective_step():
            out = self.local(dist_input) if self._features else None
        if out is None:
            return self._empty_share(0)
        received = ctx.routing.received  # type: ignore[union-attr]
        pieces = [
            out[key].values().split(received[:, f].tolist())
            for f, key in enumerate(self._local_keys)
        ]
        senders, nf = range(self._world), len(pieces)
        return torch.cat([pieces[f][s] for s in senders for f in range(nf)])

    def _finish(self, ctx: ShardingContext, rows: torch.Tensor) -> dict[str, JaggedTensor]:
        routing = ctx.routing
        assert routing is not None, "input_dist has not run"
        got = self._rows_back(rows, routing.received, routing.per_owner)
        layout, jts = self._layout, routing.features.to_dict()
        result: dict[str, JaggedTensor] = {}
        for f, (name, key) in enumerate(zip(layout.features, layout.keys, strict=True)):
            by_owner = torch.cat([got[r][f] for r in range(self._world)])
            order = routing.orders[f]
            values = by_owner if order is None else by_owner[_inverse(order).to(by_owner.device)]
            jt = jts[name]
            result[key] = JaggedTensor(
                values=values,
                lengths=jt.lengths().to(values.device),
                weights=jt.values().to(values.device) if self._need_indices else None,
            )
        return result

    def _rows_back(
        self, rows: torch.Tensor, received: torch.Tensor, per_owner: torch.Tensor
    ) -> list[tuple[torch.Tensor, ...]]:
        """The owners' rows back to the ranks whose ids they are, over the device group with
        autograd (the backward sends every row's gradient to its owner): per owner, per
        feature, the rows of the ids this rank sent it, in the order sent."""
        from torch.distributed.nn.functional import all_to_all_single

        d = self._dim
        device = rows.device
        receive = [int(n) * d for n in per_owner.sum(dim=1).tolist()]
        out = torch.empty(sum(receive), dtype=rows.dtype, device=device)
        out = all_to_all_single(
            out,
            divide_gradient(rows, self._world).contiguous().view(-1),
            output_split_sizes=receive,
            input_split_sizes=[int(n) * d for n in received.sum(dim=1).tolist()],
            group=self._device_group,
        )
        return [
            block.view(-1, d).split(per_owner[r].tolist())
            for r, block in enumerate(out.split(receive))
        ]


class EmbCacheEmbeddingCollectionSharder(EmbCacheSharderBase):
    """Shards EmbCacheEmbeddingCollection by bucket for DistributedModelParallel: as
    :class:`~torchrec_embcache.sharded.EmbCacheEmbeddingBagCollectionSharder` (the same
    arguments, sharding types and placements from the plan) for the sequence collection."""

    @property
    def module_type(self) -> type[nn.Module]:
        return EmbCacheEmbeddingCollection

    def _configs(self, module: nn.Module) -> list[Any]:
        return module.embedding_configs()  # type: ignore[operator]

    def _build(self, module: nn.Module, **common: Any) -> ShardedEmbCacheEmbeddingCollection:
        return ShardedEmbCacheEmbeddingCollection(
            **common,
            need_indices=module.need_indices(),  # type: ignore[operator]
        )
