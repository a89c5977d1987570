"""Row-wise sharding of EmbCacheEmbeddingBagCollection by stable hash buckets.

Every id belongs to one of ``num_buckets`` buckets, ``bucket_of(id)``: a hash fixed for good
(splitmix64's finaliser of the id, taken modulo the bucket count), so that a checkpoint, another
world size or another process computes the same bucket. A :class:`BucketMap` names the rank that
owns each bucket; changing the map moves whole buckets between ranks, never splits one.

:class:`RowWiseEmbCacheEmbeddingBagCollection` is one rank's part of the sharded collection:

1. input distribution on the **host** group (gloo): every id of the batch goes to the rank that
   owns its bucket, with the bag it belongs to (ids stay on the CPU, where the tables hash them);
2. the rank's own :class:`EmbCacheEmbeddingBagCollection` (host table and device cache of the
   ids of its buckets) pools, per bag of every sender, the ids it owns;
3. output distribution on the **device** group: the partial sums go back to the bags' ranks,
   which add them. Its backward carries each bag's gradient to the owners of its ids, whose
   tables apply their fused sparse update.

With SUM pooling this equals the unsharded collection fed every rank's batch (the tables'
rows start from the same (seed, id) values; admission counts an id's sightings over the whole
global batch, as one table would). MEAN pooling is refused: a mean of partial means is not the
bag's mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torchrec.distributed.embedding_types import EmbeddingComputeKernel
from torchrec.distributed.types import (
    Awaitable,
    LazyAwaitable,
    LazyNoWait,
    ModuleSharder,
    Multistreamable,
    NoWait,
    ParameterSharding,
    ShardedModule,
    ShardingEnv,
    ShardingType,
)
from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor, KeyedTensor

from torchrec_embcache.collection import EmbCacheEmbeddingBagCollection
from torchrec_embcache.config import Optimizer
from torchrec_embcache.errors import EmbCacheError

DEFAULT_NUM_BUCKETS = 4096
_HOST = torch.device("cpu")

# splitmix64's constants as signed int64 (torch has no uint64 arithmetic).
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_MIX1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_MIX2 = 0x94D049BB133111EB - (1 << 64)


class ShardingError(EmbCacheError):
    """A sharded collection was given groups, maps or tables it cannot work with."""


def _shift_right(z: torch.Tensor, k: int) -> torch.Tensor:
    # A logical shift: torch's >> is arithmetic on int64.
    return (z >> k) & ((1 << (64 - k)) - 1)


def bucket_of(ids: torch.Tensor, num_buckets: int) -> torch.Tensor:
    """The bucket of every id: splitmix64's finaliser of the id (two's-complement int64
    arithmetic, which wraps like uint64), its top 63 bits modulo ``num_buckets``."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets must be positive, got {num_buckets}")
    z = ids.to(torch.int64) + _GOLDEN
    z = (z ^ _shift_right(z, 30)) * _MIX1
    z = (z ^ _shift_right(z, 27)) * _MIX2
    z = z ^ _shift_right(z, 31)
    return _shift_right(z, 1) % num_buckets


@dataclass(frozen=True)
class BucketMap:
    """Which rank owns each bucket (``owners[b]``)."""

    owners: tuple[int, ...]
    world_size: int

    def __post_init__(self) -> None:
        if not self.owners:
            raise ShardingError("a BucketMap needs at least one bucket")
        bad = [r for r in set(self.owners) if not 0 <= r < self.world_size]
        if bad:
            raise ShardingError(
                f"BucketMap names rank(s) {sorted(bad)} outside a world of {self.world_size}"
            )

    @classmethod
    def even(cls, world_size: int, num_buckets: int = DEFAULT_NUM_BUCKETS) -> BucketMap:
        """Contiguous runs of buckets, as equal as the counts allow (rank r: buckets
        [r * n / W, (r + 1) * n / W))."""
        if world_size < 1 or num_buckets < world_size:
            raise ShardingError(
                f"{num_buckets} buckets cannot be spread over {world_size} ranks: every rank "
                "needs at least one"
            )
        return cls(tuple(b * world_size // num_buckets for b in range(num_buckets)), world_size)

    @property
    def num_buckets(self) -> int:
        return len(self.owners)

    @cached_property
    def _owner_table(self) -> torch.Tensor:
        return torch.tensor(self.owners, dtype=torch.int64)

    def rank_of(self, ids: torch.Tensor) -> torch.Tensor:
        """The owner rank of every id."""
        return self._owner_table[bucket_of(ids, self.num_buckets)]


def _group_info(group: Any) -> tuple[int, int]:
    return dist.get_rank(group), dist.get_world_size(group)


class _Context(Multistreamable):
    """The senders' batch sizes, from the input distribution to the output distribution."""

    def __init__(self) -> None:
        self.batch_sizes: list[int] = []

    def record_stream(self, stream: torch.Stream | None) -> None:
        pass  # nothing on the device


class RowWiseEmbCacheEmbeddingBagCollection(ShardedModule[Any, Any, KeyedTensor, Any]):
    """One rank's share of an EmbCacheEmbeddingBagCollection sharded row-wise by bucket.

    Args:
        tables: the collection's table configs (SUM pooling), the same on every rank.
        host_group: a gloo process group over every rank: the ids travel there.
        device_group: the process group of the device (hccl on npu) with the same ranks, over
            which pooled partial sums and their gradients travel; None: ``host_group`` (CPU).
        bucket_map: bucket -> rank (default: :meth:`BucketMap.even` over the world).
        is_weighted, device, optimizer, seed: as EmbCacheEmbeddingBagCollection's; the seed
            must be the same on every rank (a row's initial value is a function of it and the
            id, wherever the id lives).

    ``forward(features)`` takes this rank's batch (any batch size per rank) and returns its
    pooled embeddings as a KeyedTensor, like the unsharded collection. ``local`` is the rank's
    own collection (its tables hold exactly the ids of its buckets); ``state_dict`` holds its
    tables under the unsharded collection's keys (``embedding_bags.<table>.*``), this rank's
    ids only. As a torchrec ShardedModule it also offers input_dist / compute / output_dist to
    torchrec's pipelines.
    """

    def __init__(
        self,
        tables: list[EmbeddingBagConfig],
        host_group: Any,
        device_group: Any = None,
        *,
        bucket_map: BucketMap | None = None,
        is_weighted: bool = False,
        device: torch.device | None = None,
        optimizer: Optimizer | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()  # type: ignore[call-arg]
        self._host_group = host_group
        self._device_group = device_group if device_group is not None else host_group
        self._rank, self._world = _group_info(host_group)
        if dist.get_backend(host_group) != "gloo":
            raise ShardingError(
                "host_group must be a gloo group (the ids are exchanged as CPU tensors): "
                "dist.new_group(backend='gloo')"
            )
        if _group_info(self._device_group) != (self._rank, self._world):
            raise ShardingError(
                f"device_group has rank {dist.get_rank(self._device_group)} of "
                f"{dist.get_world_size(self._device_group)}, host_group rank {self._rank} of "
                f"{self._world}: both groups need the same ranks"
            )
        for config in tables:
            if config.pooling != PoolingType.SUM:
                raise ShardingError(
                    f"table {config.name!r}: row-wise sharding needs SUM pooling (each rank "
                    "pools only the ids it owns, and partial means do not add up to the mean)"
                )
        self.bucket_map = bucket_map if bucket_map is not None else BucketMap.even(self._world)
        if self.bucket_map.world_size != self._world:
            raise ShardingError(
                f"bucket_map is for {self.bucket_map.world_size} ranks, the groups have "
                f"{self._world}"
            )
        self._features = [name for config in tables for name in config.feature_names]
        self._is_weighted = is_weighted
        local = EmbCacheEmbeddingBagCollection(
            tables, is_weighted, device, optimizer=optimizer, seed=seed
        )
        # The tables are this module's children under the unsharded collection's name (so that
        # state_dict keys match it); the collection around them is kept unregistered.
        object.__setattr__(self, "local", local)
        self.embedding_bags = local.embedding_bags

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        ctx = self.create_context()
        received = self.input_dist(ctx, features).wait().wait()
        return self._combine(ctx, self.compute(ctx, received))

    # ---- torchrec's ShardedModule steps -----------------------------------------------------

    def create_context(self) -> _Context:
        return _Context()

    def input_dist(self, ctx: _Context, features: KeyedJaggedTensor) -> Awaitable[Any]:
        received, ctx.batch_sizes = self._input_dist(features.to(_HOST))
        return NoWait(NoWait(received))

    def compute(self, ctx: _Context, dist_input: KeyedJaggedTensor) -> KeyedTensor:
        return self.local(dist_input)

    def output_dist(self, ctx: _Context, output: KeyedTensor) -> LazyAwaitable[KeyedTensor]:
        return LazyNoWait(self._combine(ctx, output))

    def _combine(self, ctx: _Context, pooled: KeyedTensor) -> KeyedTensor:
        values = self._output_dist(pooled.values(), ctx.batch_sizes)
        return KeyedTensor(
            keys=pooled.keys(), length_per_key=pooled.length_per_key(), values=values
        )

    # ---- host: every id to the owner of its bucket -----------------------------------------

    def _input_dist(self, kjt: KeyedJaggedTensor) -> tuple[KeyedJaggedTensor, list[int]]:
        """The ids this rank owns, from every rank's batch: a KJT whose bags are the senders'
        bags in rank order; and each rank's batch size."""
        keys = set(kjt.keys())
        missing = [f for f in self._features if f not in keys]
        if missing:
            raise ShardingError(f"the batch has no feature(s) {missing}")
        w, batch = self._world, kjt.stride()
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(w)]
        dist.all_gather(sizes, torch.tensor([batch]), group=self._host_group)
        batch_sizes = [int(s) for s in sizes]
        jts = kjt.to_dict()
        lengths, values, weights = [], [], []  # per feature: [W, B] counts, ids by owner
        for name in self._features:
            jt = jts[name]
            ids = jt.values()
            owner = self.bucket_map.rank_of(ids)
            bag = torch.repeat_interleave(torch.arange(batch), jt.lengths())
            order = torch.argsort(owner, stable=True)  # by owner, bags in order within one
            counts = torch.bincount(owner * batch + bag, minlength=w * batch)
            lengths.append(counts.view(w, batch))
            values.append(ids[order])
            if self._is_weighted:
                weights.append(jt.weights()[order])
        send_lengths = torch.stack(lengths, dim=1)  # [W, F, B]
        per_owner = send_lengths.sum(dim=2)  # [W, F]: ids of each feature for each owner
        got_lengths = self._exchange(
            send_lengths.reshape(-1),
            [len(self._features) * batch] * w,
            [len(self._features) * b for b in batch_sizes],
        )
        send_counts = per_owner.sum(dim=1)
        got_counts = self._exchange(send_counts, [1] * w, [1] * w)
        by_owner = self._by_owner(values, per_owner)
        got_values = self._exchange(by_owner, send_counts.tolist(), got_counts.tolist())
        got_weights = None
        if self._is_weighted:
            by_owner_w = self._by_owner(weights, per_owner)
            got_weights = self._exchange(by_owner_w, send_counts.tolist(), got_counts.tolist())
        return self._regroup(got_lengths, got_values, got_weights, batch_sizes), batch_sizes

    def _by_owner(self, per_feature: list[torch.Tensor], per_owner: torch.Tensor) -> torch.Tensor:
        """Feature-major pieces (each sorted by owner) -> owner-major, features in order."""
        pieces = [t.split(per_owner[:, f].tolist()) for f, t in enumerate(per_feature)]
        return torch.cat([pieces[f][r] for r in range(self._world) for f in range(len(pieces))])

    def _exchange(
        self, tensor: torch.Tensor, send: Sequence[int], receive: Sequence[int]
    ) -> torch.Tensor:
        out = torch.empty(sum(receive), dtype=tensor.dtype)
        dist.all_to_all_single(
            out, tensor.contiguous(), list(receive), list(send), group=self._host_group
        )
        return out

    def _regroup(
        self,
        lengths: torch.Tensor,
        values: torch.Tensor,
        weights: torch.Tensor | None,
        batch_sizes: list[int],
    ) -> KeyedJaggedTensor:
        """Senders' pieces (sender-major, then feature) -> one KJT, feature-major, whose bags
        for a feature are every sender's bags in rank order."""
        nf = len(self._features)
        per_sender = lengths.split([nf * b for b in batch_sizes])
        lens = [p.view(nf, b) for p, b in zip(per_sender, batch_sizes, strict=True)]
        counts = [ln.sum(dim=1).tolist() for ln in lens]  # [sender][feature]
        vals = values.split([sum(c) for c in counts])
        vals = [v.split(c) for v, c in zip(vals, counts, strict=True)]
        wts = None
        if weights is not None:
            wts = weights.split([sum(c) for c in counts])
            wts = [w.split(c) for w, c in zip(wts, counts, strict=True)]
        senders = range(self._world)
        return KeyedJaggedTensor(
            keys=self._features,
            values=torch.cat([vals[s][f] for f in range(nf) for s in senders]),
            weights=None
            if wts is None
            else torch.cat([wts[s][f] for f in range(nf) for s in senders]),
            lengths=torch.cat([lens[s][f] for f in range(nf) for s in senders]),
            stride=sum(batch_sizes),
        )

    # ---- device: partial sums back to the bags' ranks --------------------------------------

    def _output_dist(self, pooled: torch.Tensor, batch_sizes: list[int]) -> torch.Tensor:
        """[sum of batch sizes, D] partial sums (rows: senders' bags in rank order) -> this
        rank's [B, D] sums, over the device group with autograd (the backward sends every
        bag's gradient to each owner)."""
        from torch.distributed.nn.functional import all_to_all_single

        batch = batch_sizes[self._rank]
        out = torch.empty(
            self._world * batch, pooled.shape[1], dtype=pooled.dtype, device=pooled.device
        )
        out = all_to_all_single(
            out,
            pooled.contiguous(),
            output_split_sizes=[batch] * self._world,
            input_split_sizes=batch_sizes,
            group=self._device_group,
        )
        return out.view(self._world, batch, pooled.shape[1]).sum(dim=0)


class EmbCacheEmbeddingBagCollectionSharder(ModuleSharder[nn.Module]):
    """Shards EmbCacheEmbeddingBagCollection row-wise by bucket for DistributedModelParallel.

    Args:
        host_env: a ShardingEnv over a gloo process group with the device group's ranks (the
            ids travel there): ``ShardingEnv.from_process_group(dist.new_group(backend="gloo"))``.
        bucket_map: bucket -> rank (default: :meth:`BucketMap.even` over the world).

    The planner sees each table as a parameter of ``num_embeddings x embedding_dim`` (a
    stand-in on the meta device: set ``num_embeddings`` to the rows you expect) in host memory,
    and is offered row-wise sharding only; the row ranges of its plan are not used, ids go by
    bucket. Tables are built anew on every rank with the collection's optimizer and seed.
    """

    def __init__(self, host_env: ShardingEnv, bucket_map: BucketMap | None = None) -> None:
        super().__init__()
        pg = getattr(host_env, "process_group", None)
        if pg is None or dist.get_backend(pg) != "gloo":
            raise ShardingError(
                "host_env must be a ShardingEnv over a gloo process group: "
                "ShardingEnv.from_process_group(dist.new_group(backend='gloo'))"
            )
        self._host_env = host_env
        self._bucket_map = bucket_map

    @property
    def module_type(self) -> type[nn.Module]:
        return EmbCacheEmbeddingBagCollection

    def shardable_parameters(self, module: nn.Module) -> dict[str, nn.Parameter]:
        return {
            config.name: nn.Parameter(
                torch.empty(config.num_embeddings, config.embedding_dim, device="meta"),
                requires_grad=False,
            )
            for config in module.embedding_bag_configs()  # type: ignore[operator]
        }

    def sharding_types(self, compute_device_type: str) -> list[str]:
        return [ShardingType.ROW_WISE.value]

    def compute_kernels(self, sharding_type: str, compute_device_type: str) -> list[str]:
        return [EmbeddingComputeKernel.FUSED.value]

    def storage_usage(
        self, tensor: torch.Tensor, compute_device_type: str, compute_kernel: str
    ) -> dict[str, int]:
        # Rows live in host memory; a device cache's size is the tables' cache_slots.
        return {"ddr": tensor.numel() * tensor.element_size()}

    def shard(
        self,
        module: nn.Module,
        params: dict[str, ParameterSharding],
        env: ShardingEnv,
        device: torch.device | None = None,
        module_fqn: str | None = None,
    ) -> RowWiseEmbCacheEmbeddingBagCollection:
        configs = module.embedding_bag_configs()  # type: ignore[operator]
        for config in configs:
            ps = params.get(config.name)
            kind = None if ps is None else ps.sharding_type
            if kind != ShardingType.ROW_WISE.value:
                raise ShardingError(
                    f"table {config.name!r}: the plan asks for {kind!r}; EmbCache tables are "
                    "sharded row-wise (by bucket) only for now"
                )
        defaults = getattr(module, "table_defaults", {})
        return RowWiseEmbCacheEmbeddingBagCollection(
            configs,
            self._host_env.process_group,
            env.process_group,
            bucket_map=self._bucket_map,
            is_weighted=module.is_weighted(),  # type: ignore[operator]
            device=device,
            optimizer=defaults.get("optimizer"),
            seed=defaults.get("seed", 0),
        )
