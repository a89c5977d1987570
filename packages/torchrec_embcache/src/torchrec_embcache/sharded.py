"""Sharding of EmbCacheEmbeddingBagCollection by stable hash buckets: row-wise, table-wise and
table-row-wise.

Every id belongs to one of a table's ``num_buckets`` buckets (:func:`bucket_of`, a hash fixed
for good), and the table's :class:`Placement` names the rank owning each bucket
(placement.py): row-wise spreads the buckets over every rank, table-wise gives them all to one
rank, table-row-wise spreads them over the ranks of one host. Tables of one collection may
have different placements.

:class:`ShardedEmbCacheEmbeddingBagCollection` is one rank's part of the sharded collection:

1. input distribution on the **host** group (gloo): every id of the batch goes to the rank that
   owns its bucket in its table's placement, with the bag it belongs to (ids stay on the CPU,
   where the tables hash them); a rank receives only the features of the tables it holds;
2. the rank's own :class:`EmbCacheEmbeddingBagCollection` (host table and device cache of the
   ids of its buckets, for the tables it owns buckets of: no other table is built there, so a
   table-wise table's device cache exists on its rank only) pools, per bag of every sender,
   the ids it owns;
3. output distribution on the **device** group: each rank sends its tables' columns of the
   partial sums to the bags' ranks, which add them into the collection's output. Its backward
   carries each bag's gradient to the owners of its ids, whose tables apply their fused
   sparse update.

With SUM pooling this equals the unsharded collection fed every rank's batch with the mean of
the ranks' losses (the tables' rows start from the same (seed, id) values; admission counts an
id's sightings over the whole global batch, as one table would; the gradients coming back are
divided by the world size as torchrec's are, see :class:`_DivideGradient`). MEAN pooling
works only for table-wise tables (one rank pools the whole bag): a mean of partial means is
not the bag's mean.

:class:`ShardedEmbCacheBase` holds what the bag collection shares with the sequence
collection's sharding (sharded_sequence.py): groups, placements, the tables a rank holds and
the input distribution.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, ClassVar, TypeVar

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
from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig, PoolingType
from torchrec.modules.embedding_modules import get_embedding_names_by_table
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor, KeyedTensor

from torchrec_embcache.collection import EmbCacheEmbeddingBagCollection
from torchrec_embcache.collective import collective_plan, collective_step
from torchrec_embcache.config import Optimizer
from torchrec_embcache.distributed.types import (
    DEFAULT_NUM_BUCKETS,
    ROW_WISE,
    TABLE_ROW_WISE,
    TABLE_WISE,
    BucketMap,
    Placement,
    bucket_of,
)
from torchrec_embcache.errors import ShardingError

__all__ = [
    "DEFAULT_NUM_BUCKETS",
    "BucketMap",
    "EmbCacheEmbeddingBagCollectionSharder",
    "EmbCacheSharderBase",
    "Placement",
    "RowWiseEmbCacheEmbeddingBagCollection",
    "ShardedEmbCacheBase",
    "ShardedEmbCacheEmbeddingBagCollection",
    "ShardingContext",
    "ShardingError",
    "bucket_of",
    "collective_plan",
    "placement_from_plan",
]

_HOST = torch.device("cpu")
_Config = TypeVar("_Config", EmbeddingBagConfig, EmbeddingConfig)


def _cat(parts: list[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """torch.cat that also takes no parts (a rank holding no table): an empty ``like``."""
    return torch.cat(parts) if parts else like.new_empty(0)


def _group_info(group: Any) -> tuple[int, int]:
    return dist.get_rank(group), dist.get_world_size(group)


class _DivideGradient(torch.autograd.Function):
    """Identity forward; backward divides the gradient by the world size when torchrec's
    ``comm_ops.GRADIENT_DIVISION`` is on (its default), read at backward time as torchrec's
    own collectives read it. torchrec's sharded collections divide every embedding gradient
    that comes back through their output distribution so (DDP averages the dense ones): the
    job trains on the mean of the ranks' losses. Without it, replacing torchrec's collection
    by this one would multiply the tables' effective learning rate by the world size."""

    @staticmethod
    def forward(ctx: Any, values: torch.Tensor, world: int) -> torch.Tensor:
        ctx.world = world
        return values.view_as(values)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        from torchrec.distributed.comm_ops import get_gradient_division

        if get_gradient_division() and ctx.world > 1:
            grad = grad / ctx.world
        return grad, None


def divide_gradient(values: torch.Tensor, world: int) -> torch.Tensor:
    """``values``, whose gradient is divided by ``world`` as torchrec's sharded collections
    divide theirs (see :class:`_DivideGradient`)."""
    if not values.requires_grad:
        return values
    return _DivideGradient.apply(values, world)  # type: ignore[no-any-return]


def _placements_of(
    tables: Sequence[EmbeddingBagConfig | EmbeddingConfig],
    placements: Mapping[str, Placement] | None,
    bucket_map: BucketMap | None,
    world: int,
) -> dict[str, Placement]:
    """Every table's placement: the given one, else row-wise by ``bucket_map`` (default:
    :meth:`BucketMap.even` over the world)."""
    given = dict(placements or {})
    unknown = sorted(set(given) - {config.name for config in tables})
    if unknown:
        raise ShardingError(f"placements name table(s) {unknown} the collection does not have")
    default = Placement(ROW_WISE, bucket_map if bucket_map is not None else BucketMap.even(world))
    out = {config.name: given.get(config.name, default) for config in tables}
    for name, placement in out.items():
        if placement.world_size != world:
            raise ShardingError(
                f"table {name!r}: its bucket map is for {placement.world_size} ranks, the "
                f"groups have {world}"
            )
    return out


def _check_pooling(tables: Sequence[EmbeddingBagConfig], placements: dict[str, Placement]) -> None:
    for config in tables:
        placement = placements[config.name]
        # By type, not by rank count: a config that runs on one rank must run on more.
        if config.pooling != PoolingType.SUM and placement.sharding_type != TABLE_WISE:
            raise ShardingError(
                f"table {config.name!r}: {placement.sharding_type} sharding needs SUM pooling "
                "(each rank pools only the ids it owns, and partial means do not add up to the "
                "mean); shard it table-wise"
            )


def _signature(tables: Sequence[EmbeddingBagConfig | EmbeddingConfig], weighted: bool) -> Any:
    """What every rank must agree on about the tables (the routing and the exchanged widths
    follow from it)."""
    return [
        [c.name, c.embedding_dim, list(c.feature_names), str(getattr(c, "pooling", ""))]
        for c in tables
    ] + [weighted]


def _check_same_everywhere(
    placements: dict[str, Placement], error: str | None, signature: Any, group: Any
) -> None:
    """Every rank must route by the same tables and placements (a collective over ``group``):
    otherwise the exchanges' sizes disagree and the ranks hang, or ids reach ranks without
    their rows. A rank's own error (``error``) is raised on every rank, so that none waits
    for it in a later collective."""
    mine = {
        "error": error,
        "tables": signature,
        "placements": {name: p.to_json() for name, p in placements.items()},
    }
    everyone: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, mine, group=group)
    if error is not None:
        raise ShardingError(error)
    failed = [(rank, theirs["error"]) for rank, theirs in enumerate(everyone) if theirs["error"]]
    if failed:
        rank, message = failed[0]
        raise ShardingError(f"rank {rank} could not build the collection: {message}")
    differ = [
        rank
        for rank, theirs in enumerate(everyone)
        if (theirs["tables"], theirs["placements"]) != (mine["tables"], mine["placements"])
    ]
    if differ:
        raise ShardingError(
            f"rank(s) {differ} were given other tables or placements than rank "
            f"{dist.get_rank(group)}: every rank must build the collection with the same ones"
        )


@dataclass
class _Layout:
    """What routing needs per feature and per rank, worked out once from the placements.

    Features are in the unsharded collection's order (tables in order, each table's features
    in order); so are the output columns (a feature's table's dim each)."""

    features: list[str]
    feature_maps: list[BucketMap]
    features_at: list[torch.Tensor]  # per rank: indices of the features of its tables
    columns_at: list[torch.Tensor]  # per rank: output columns of its local pooled values
    keys: list[str]
    length_per_key: list[int]
    _columns: dict[torch.device, torch.Tensor] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        tables: Sequence[EmbeddingBagConfig | EmbeddingConfig],
        placements: dict[str, Placement],
        world: int,
    ) -> _Layout:
        names = get_embedding_names_by_table(list(tables))
        features, maps, keys, widths, holders = [], [], [], [], []
        for config, table_keys in zip(tables, names, strict=True):
            placement = placements[config.name]
            for feature, key in zip(config.feature_names, table_keys, strict=True):
                features.append(feature)
                maps.append(placement.bucket_map)
                keys.append(key)
                widths.append(config.embedding_dim)
                holders.append(set(placement.ranks))
        offsets = [0, *accumulate(widths)]
        features_at, columns_at = [], []
        for rank in range(world):
            held = [f for f in range(len(features)) if rank in holders[f]]
            features_at.append(torch.tensor(held, dtype=torch.int64))
            columns = [c for f in held for c in range(offsets[f], offsets[f] + widths[f])]
            columns_at.append(torch.tensor(columns, dtype=torch.int64))
        return cls(features, maps, features_at, columns_at, keys, widths)

    @property
    def width(self) -> int:
        return sum(self.length_per_key)

    def columns(self, device: torch.device) -> torch.Tensor:
        """Every rank's ``columns_at`` in rank order, on ``device`` (copied there once)."""
        if device not in self._columns:
            self._columns[device] = torch.cat(self.columns_at).to(device)
        return self._columns[device]


@dataclass
class _Routing:
    """What the output distribution needs to know of the input distribution's routing."""

    batch_sizes: list[int]  # every rank's batch size
    per_owner: torch.Tensor  # [W, F]: ids of each feature this rank sent to each owner
    received: torch.Tensor  # [W, local F]: ids of each of its features this rank got per sender
    orders: list[torch.Tensor | None]  # per feature: the order that sorted its ids by owner
    features: KeyedJaggedTensor  # this rank's batch, on the host


class ShardingContext(Multistreamable):
    """The routing of a batch, from the input distribution to the output distribution."""

    def __init__(self) -> None:
        self.routing: _Routing | None = None

    @property
    def batch_sizes(self) -> list[int]:
        assert self.routing is not None, "input_dist has not run"
        return self.routing.batch_sizes

    def record_stream(self, stream: torch.Stream | None) -> None:
        pass  # nothing on the device


class ShardedEmbCacheBase(ShardedModule[Any, Any, Any, Any]):
    """What the sharded bag and sequence collections share: the groups, every table's
    placement, the tables this rank holds, and the input distribution (every id to the owner
    of its bucket over the host group). Subclasses build ``local`` (the rank's own collection
    of the tables it holds) and the output distribution."""

    TABLE_PREFIX: ClassVar[str]  # the tables' module path prefix in ``local`` (checkpoints)
    local: Any

    def __init__(
        self,
        tables: Sequence[EmbeddingBagConfig | EmbeddingConfig],
        host_group: Any,
        device_group: Any,
        placements: Mapping[str, Placement] | None,
        bucket_map: BucketMap | None,
        device: torch.device | None,
        is_weighted: bool = False,
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
        error = None
        try:
            self.placements = _placements_of(tables, placements, bucket_map, self._world)
            self._check_tables(tables)
        except (ShardingError, ValueError, TypeError) as exc:
            error, self.placements = str(exc), {}
        _check_same_everywhere(self.placements, error, _signature(tables, is_weighted), host_group)
        self._layout = _Layout.build(tables, self.placements, self._world)
        self._features = [
            self._layout.features[f] for f in self._layout.features_at[self._rank].tolist()
        ]
        self._is_weighted = is_weighted
        self._device = torch.device(device) if device is not None else _HOST

    def _check_tables(self, tables: Sequence[Any]) -> None:
        """Refuses tables the layout cannot serve (subclasses)."""

    def _held(self, tables: Sequence[_Config]) -> list[_Config]:
        """The tables this rank owns buckets of: the only ones it builds (a table costs its
        device cache's slots even if no id of it ever comes)."""
        return [c for c in tables if self._rank in self.placements[c.name].ranks]

    @property
    def bucket_map(self) -> BucketMap:
        """The one bucket map of every table (row-wise collections); with several placements,
        ``placements[table].bucket_map``."""
        maps = {p.bucket_map for p in self.placements.values()}
        if len(maps) != 1:
            raise ShardingError(
                "the tables have different placements: use placements[table].bucket_map"
            )
        return maps.pop()

    def table_placements(self) -> dict[str, Placement]:
        """Placements keyed by the tables' module paths, as checkpoints name the tables."""
        return {self.TABLE_PREFIX + name: p for name, p in self.placements.items()}

    def forward(self, features: KeyedJaggedTensor) -> Any:
        ctx = self.create_context()
        received = self.input_dist(ctx, features).wait().wait()
        return self._finish(ctx, self.compute(ctx, received))

    def _finish(self, ctx: ShardingContext, output: Any) -> Any:
        raise NotImplementedError

    def _collective_step(self) -> Any:
        """Around a rank's own lookups, between the input and the output distribution: an
        error on one rank (a device cache too small for its share of the batch, say) is
        raised on every rank as the same CollectiveError, instead of leaving the others
        waiting in the output all-to-all."""
        return collective_step(self._host_group, "the sharded forward's lookups")

    # ---- torchrec's ShardedModule steps -----------------------------------------------------

    def create_context(self) -> ShardingContext:
        return ShardingContext()

    def input_dist(self, ctx: ShardingContext, features: KeyedJaggedTensor) -> Awaitable[Any]:
        received, ctx.routing = self._input_dist(features.to(_HOST))
        return NoWait(NoWait(received))

    def output_dist(self, ctx: ShardingContext, output: Any) -> LazyAwaitable[Any]:
        return LazyNoWait(self._finish(ctx, output))

    def _empty_share(self, rows: int) -> torch.Tensor:
        """What a rank holding no table sends back: nothing, [rows, 0]. In training it must
        be part of the autograd graph, or this rank's backward would skip the gradients'
        all-to-all that the other ranks wait in."""
        train = self.training and torch.is_grad_enabled()
        return torch.zeros(rows, 0, device=self._device, requires_grad=train)

    # ---- host: every id to the owner of its bucket -----------------------------------------

    def _input_dist(self, kjt: KeyedJaggedTensor) -> tuple[KeyedJaggedTensor, _Routing]:
        """The ids this rank owns, from every rank's batch: a KJT of this rank's tables'
        features whose bags are the senders' bags in rank order; and how they were routed."""
        layout = self._layout
        problem = self._batch_problem(kjt)
        # A batch this rank cannot route is announced by size -1 in the exchange every rank
        # makes first, so that all of them raise rather than wait for this one.
        w, batch = self._world, (-1 if problem else kjt.stride())
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(w)]
        dist.all_gather(sizes, torch.tensor([batch]), group=self._host_group)
        batch_sizes = [int(s) for s in sizes]
        if problem:
            raise ShardingError(problem)
        if min(batch_sizes) < 0:
            bad = [r for r, b in enumerate(batch_sizes) if b < 0]
            raise ShardingError(f"rank(s) {bad} got a batch they cannot route (see their error)")
        jts = kjt.to_dict()
        lengths, values, weights, orders = [], [], [], []  # per feature
        for name, bucket_map in zip(layout.features, layout.feature_maps, strict=True):
            jt = jts[name]
            counts, order = self._route(jt.values(), jt.lengths(), bucket_map, batch)
            lengths.append(counts)
            orders.append(order)
            values.append(jt.values() if order is None else jt.values()[order])
            if self._is_weighted:
                weights.append(jt.weights() if order is None else jt.weights()[order])
        send_lengths = torch.stack(lengths, dim=1)  # [W, F, B]
        per_owner = send_lengths.sum(dim=2)  # [W, F]: ids of each feature for each owner
        # Each owner gets the lengths of its own tables' features only.
        held = [len(f) for f in layout.features_at]
        got_lengths = self._exchange(
            torch.cat([send_lengths[r, layout.features_at[r]].reshape(-1) for r in range(w)]),
            [n * batch for n in held],
            [held[self._rank] * b for b in batch_sizes],
        )
        send_counts = per_owner.sum(dim=1)
        got_counts = self._exchange(send_counts, [1] * w, [1] * w)
        by_owner = self._by_owner(values, per_owner)
        got_values = self._exchange(by_owner, send_counts.tolist(), got_counts.tolist())
        got_weights = None
        if self._is_weighted:
            by_owner_w = self._by_owner(weights, per_owner)
            got_weights = self._exchange(by_owner_w, send_counts.tolist(), got_counts.tolist())
        received, counts = self._regroup(got_lengths, got_values, got_weights, batch_sizes)
        return received, _Routing(batch_sizes, per_owner, counts, orders, kjt)

    def _batch_problem(self, kjt: KeyedJaggedTensor) -> str | None:
        """Why this rank's batch cannot be routed, or None."""
        keys = set(kjt.keys())
        missing = [f for f in self._layout.features if f not in keys]
        if missing:
            return f"the batch has no feature(s) {missing}"
        if self._is_weighted and kjt.weights_or_none() is None:
            return "the collection is weighted but the batch has no weights"
        if kjt.stride() == 0:  # torchrec's KeyedJaggedTensor.to_dict cannot split it
            return "the batch has no samples (stride 0): give every rank at least one"
        return None

    def _route(
        self, ids: torch.Tensor, lengths: torch.Tensor, bucket_map: BucketMap, batch: int
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One feature's ids per (owner, bag), [W, B]; and the order that sorts the ids by
        owner, bags in order within one (None: they are in that order)."""
        w = self._world
        if len(bucket_map.ranks) == 1:  # table-wise: everything to one rank, as it is
            counts = torch.zeros(w, batch, dtype=torch.int64)
            counts[bucket_map.ranks[0]] = lengths
            return counts, None
        owner = bucket_map.rank_of(ids)
        bag = torch.repeat_interleave(torch.arange(batch), lengths)
        order = torch.argsort(owner, stable=True)
        counts = torch.bincount(owner * batch + bag, minlength=w * batch)
        return counts.view(w, batch), order

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
    ) -> tuple[KeyedJaggedTensor, torch.Tensor]:
        """Senders' pieces (sender-major, then feature) -> one KJT of this rank's features,
        feature-major, whose bags for a feature are every sender's bags in rank order; and
        the ids of each feature per sender, [W, local F]."""
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
        kjt = KeyedJaggedTensor(
            keys=self._features,
            values=_cat([vals[s][f] for f in range(nf) for s in senders], values),
            weights=None
            if wts is None or weights is None
            else _cat([wts[s][f] for f in range(nf) for s in senders], weights),
            lengths=_cat([lens[s][f] for f in range(nf) for s in senders], lengths),
            stride=sum(batch_sizes),
        )
        return kjt, torch.tensor(counts, dtype=torch.int64).view(self._world, nf)


class ShardedEmbCacheEmbeddingBagCollection(ShardedEmbCacheBase):
    """One rank's share of an EmbCacheEmbeddingBagCollection sharded by bucket.

    Args:
        tables: the collection's table configs, the same on every rank.
        host_group: a gloo process group over every rank: the ids travel there.
        device_group: the process group of the device (hccl on npu) with the same ranks, over
            which pooled partial sums and their gradients travel; None: ``host_group`` (CPU).
        placements: table name -> :class:`Placement` (row-wise, table-wise or
            table-row-wise), the same on every rank; tables not named are row-wise by
            ``bucket_map``.
        bucket_map: bucket -> rank of the row-wise tables without a placement (default:
            :meth:`BucketMap.even` over the world).
        is_weighted, device, optimizer, seed: as EmbCacheEmbeddingBagCollection's; the seed
            must be the same on every rank (a row's initial value is a function of it and the
            id, wherever the id lives).

    ``forward(features)`` takes this rank's batch (any batch size per rank) and returns its
    pooled embeddings as a KeyedTensor, like the unsharded collection. ``local`` is the rank's
    own collection, with only the tables the rank owns buckets of (each holding exactly the
    ids of its buckets); ``state_dict`` holds them under the unsharded collection's keys
    (``embedding_bags.<table>.*``), this rank's ids only. As a torchrec ShardedModule it also
    offers input_dist / compute / output_dist to torchrec's pipelines. Construction is a
    collective over ``host_group`` (the ranks check that their placements agree).
    """

    TABLE_PREFIX = "embedding_bags."

    def __init__(
        self,
        tables: list[EmbeddingBagConfig],
        host_group: Any,
        device_group: Any = None,
        *,
        placements: Mapping[str, Placement] | None = None,
        bucket_map: BucketMap | None = None,
        is_weighted: bool = False,
        device: torch.device | None = None,
        optimizer: Optimizer | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(
            tables, host_group, device_group, placements, bucket_map, device, is_weighted
        )
        local = EmbCacheEmbeddingBagCollection(
            self._held(tables), is_weighted, device, optimizer=optimizer, seed=seed
        )
        # The tables are this module's children under the unsharded collection's name (so that
        # state_dict keys match it); the collection around them is kept unregistered.
        object.__setattr__(self, "local", local)
        self.embedding_bags = local.embedding_bags

    def _check_tables(self, tables: Sequence[EmbeddingBagConfig]) -> None:
        _check_pooling(tables, self.placements)

    def compute(self, ctx: ShardingContext, dist_input: KeyedJaggedTensor) -> KeyedTensor:
        with self._collective_step():
            if self._features:
                return self.local(dist_input)
        empty = self._empty_share(sum(ctx.batch_sizes))
        return KeyedTensor(keys=[], length_per_key=[], values=empty)

    def _finish(self, ctx: ShardingContext, pooled: KeyedTensor) -> KeyedTensor:
        values = self._output_dist(pooled.values(), ctx.batch_sizes)
        return KeyedTensor(
            keys=self._layout.keys, length_per_key=self._layout.length_per_key, values=values
        )

    # ---- device: partial sums back to the bags' ranks --------------------------------------

    def _output_dist(self, pooled: torch.Tensor, batch_sizes: list[int]) -> torch.Tensor:
        """[sum of batch sizes, this rank's columns] partial sums (rows: senders' bags in rank
        order) -> this rank's [B, all columns] sums, over the device group with autograd (the
        backward sends every bag's gradient columns to each owner). Each rank sends only its
        own tables' columns; the bag's rank adds every sender's into their places."""
        from torch.distributed.nn.functional import all_to_all_single

        layout = self._layout
        batch, width = batch_sizes[self._rank], pooled.shape[1]
        widths = [c.numel() for c in layout.columns_at]
        receive = [batch * n for n in widths]
        out = torch.empty(sum(receive), dtype=pooled.dtype, device=pooled.device)
        out = all_to_all_single(
            out,
            divide_gradient(pooled, self._world).contiguous().view(-1),
            output_split_sizes=receive,
            input_split_sizes=[b * width for b in batch_sizes],
            group=self._device_group,
        )
        blocks = [p.view(batch, n) for p, n in zip(out.split(receive), widths, strict=True)]
        total = pooled.new_zeros(batch, layout.width)
        return total.index_add(1, layout.columns(pooled.device), torch.cat(blocks, dim=1))


# The former name, from when row-wise was the only layout.
RowWiseEmbCacheEmbeddingBagCollection = ShardedEmbCacheEmbeddingBagCollection

_WHY_NOT = {
    ShardingType.DATA_PARALLEL.value: (
        "a replica per rank would grow its own rows apart from the others' (data-parallel "
        "needs one dense weight that every rank holds)"
    ),
    ShardingType.COLUMN_WISE.value: (
        "an EmbCache row is created, admitted and evicted whole on the rank owning its id; "
        "splitting columns over ranks would need every rank to do that for every id"
    ),
}
_WHY_NOT[ShardingType.TABLE_COLUMN_WISE.value] = _WHY_NOT[ShardingType.COLUMN_WISE.value]
_WHY_NOT[ShardingType.GRID_SHARD.value] = _WHY_NOT[ShardingType.COLUMN_WISE.value]


def _plan_ranks(name: str, ps: ParameterSharding) -> list[int]:
    """The ranks of a table's shards in the plan (``ranks``, else the sharding spec's)."""
    if ps.ranks:
        return list(dict.fromkeys(ps.ranks))
    spec = getattr(ps, "sharding_spec", None)
    shards = getattr(spec, "shards", None) or []
    ranks = [shard.placement.rank() for shard in shards if shard.placement is not None]
    if not ranks:
        raise ShardingError(f"table {name!r}: the plan names no rank for its shards")
    return list(dict.fromkeys(ranks))


def placement_from_plan(
    name: str,
    ps: ParameterSharding | None,
    world_size: int,
    row_wise_map: BucketMap | None = None,
    num_buckets: int = DEFAULT_NUM_BUCKETS,
    local_world_size: int | None = None,
) -> Placement:
    """A table's placement from its ParameterSharding in a torchrec plan: table-wise on the
    plan's rank, table-row-wise over the plan's ranks (one host's: checked when
    ``local_world_size`` is given), row-wise over every rank (by ``row_wise_map`` if given).
    The plan's row ranges are not used: ids go by bucket."""
    kind = None if ps is None else ps.sharding_type
    if ps is None or kind not in (ROW_WISE, TABLE_WISE, TABLE_ROW_WISE):
        why = _WHY_NOT.get(str(kind), "the plan has no such sharding for EmbCache tables")
        raise ShardingError(
            f"table {name!r}: the plan asks for {kind!r}; EmbCache tables are sharded "
            f"table_wise, row_wise or table_row_wise: {why}"
        )
    if kind == ROW_WISE:
        if row_wise_map is not None:
            return Placement(ROW_WISE, row_wise_map)
        return Placement(ROW_WISE, BucketMap.over(_plan_ranks(name, ps), world_size, num_buckets))
    ranks = _plan_ranks(name, ps)
    if kind == TABLE_WISE:
        return Placement.table_wise(ranks[0], world_size, num_buckets)
    try:
        return Placement.table_row_wise(ranks, world_size, num_buckets, local_world_size)
    except ShardingError as exc:
        raise ShardingError(f"table {name!r}: {exc}") from None


class EmbCacheSharderBase(ModuleSharder[nn.Module]):
    """What the EmbCache sharders share (see :class:`EmbCacheEmbeddingBagCollectionSharder`):
    the host group, the sharding types and kernels offered to the planner, stand-in
    parameters, and the plan turned into placements. Subclasses name the module type, its
    configs and build the sharded module."""

    def __init__(
        self,
        host_env: ShardingEnv,
        bucket_map: BucketMap | None = None,
        num_buckets: int = DEFAULT_NUM_BUCKETS,
        local_world_size: int | None = None,
    ) -> None:
        super().__init__()
        pg = getattr(host_env, "process_group", None)
        if pg is None or dist.get_backend(pg) != "gloo":
            raise ShardingError(
                "host_env must be a ShardingEnv over a gloo process group: "
                "ShardingEnv.from_process_group(dist.new_group(backend='gloo'))"
            )
        self._host_env = host_env
        self._bucket_map = bucket_map
        self._num_buckets = num_buckets
        # torchrun tells each process its host's rank count; without it (or the argument) a
        # table-row-wise plan's ranks are taken as they are.
        env = os.environ.get("LOCAL_WORLD_SIZE")
        if local_world_size is None and env is not None and env.isdigit():
            local_world_size = int(env)
        self._local_world_size = local_world_size

    @abc.abstractmethod
    def _configs(self, module: nn.Module) -> list[Any]:
        """The collection's table configs."""

    @abc.abstractmethod
    def _build(self, module: nn.Module, **common: Any) -> ShardedEmbCacheBase:
        """The sharded module from the arguments every sharded collection takes (``common``)
        and what this collection adds."""

    def shard(
        self,
        module: nn.Module,
        params: dict[str, ParameterSharding],
        env: ShardingEnv,
        device: torch.device | None = None,
        module_fqn: str | None = None,
    ) -> ShardedEmbCacheBase:
        defaults = getattr(module, "table_defaults", {})
        return self._build(
            module,
            tables=self._configs(module),
            host_group=self._host_env.process_group,
            device_group=env.process_group,
            placements=self.placements(module, params, env.world_size),
            device=device,
            optimizer=defaults.get("optimizer"),
            seed=defaults.get("seed", 0),
        )

    def shardable_parameters(self, module: nn.Module) -> dict[str, nn.Parameter]:
        return {
            config.name: nn.Parameter(
                torch.empty(config.num_embeddings, config.embedding_dim, device="meta"),
                requires_grad=False,
            )
            for config in self._configs(module)
        }

    def sharding_types(self, compute_device_type: str) -> list[str]:
        return [TABLE_WISE, ROW_WISE, TABLE_ROW_WISE]

    def compute_kernels(self, sharding_type: str, compute_device_type: str) -> list[str]:
        return [EmbeddingComputeKernel.FUSED.value]

    def storage_usage(
        self, tensor: torch.Tensor, compute_device_type: str, compute_kernel: str
    ) -> dict[str, int]:
        # Rows live in host memory; a device cache's size is the tables' cache_slots.
        return {"ddr": tensor.numel() * tensor.element_size()}

    def placements(
        self, module: nn.Module, params: dict[str, ParameterSharding], world_size: int
    ) -> dict[str, Placement]:
        """Every table's placement from the plan (:func:`placement_from_plan`)."""
        return {
            config.name: placement_from_plan(
                config.name,
                params.get(config.name),
                world_size,
                self._bucket_map,
                self._num_buckets,
                self._local_world_size,
            )
            for config in self._configs(module)
        }


class EmbCacheEmbeddingBagCollectionSharder(EmbCacheSharderBase):
    """Shards EmbCacheEmbeddingBagCollection by bucket for DistributedModelParallel.

    Args:
        host_env: a ShardingEnv over a gloo process group with the device group's ranks (the
            ids travel there): ``ShardingEnv.from_process_group(dist.new_group(backend="gloo"))``.
        bucket_map: bucket -> rank of the row-wise tables (default: :meth:`BucketMap.even`
            over the world).
        num_buckets: buckets per table of the other placements (and of the default row-wise
            map).
        local_world_size: ranks per host (default: torchrun's ``LOCAL_WORLD_SIZE``): a
            table-row-wise plan over ranks of more than one host is refused. Unknown: the
            plan's ranks are taken as they are.

    The planner sees each table as a parameter of ``num_embeddings x embedding_dim`` (a
    stand-in on the meta device: set ``num_embeddings`` to the rows you expect) in host memory,
    and is offered table-wise, row-wise and table-row-wise sharding; the sharder turns each
    table's plan into a :class:`Placement` (:func:`placement_from_plan`). Plans may mix the
    three. Tables are built anew on the ranks that hold them, with the collection's optimizer
    and seed.
    """

    @property
    def module_type(self) -> type[nn.Module]:
        return EmbCacheEmbeddingBagCollection

    def _configs(self, module: nn.Module) -> list[Any]:
        return module.embedding_bag_configs()  # type: ignore[operator]

    def _build(self, module: nn.Module, **common: Any) -> ShardedEmbCacheEmbeddingBagCollection:
        return ShardedEmbCacheEmbeddingBagCollection(
            **common,
            is_weighted=module.is_weighted(),  # type: ignore[operator]
        )
