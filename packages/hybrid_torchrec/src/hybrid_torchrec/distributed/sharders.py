"""Sharders for DistributedModelParallel that keep the id work on the host.

A hybrid sharded collection is torchrec's sharded collection (the same plan, lookups through
fbgemm's standard TBE operators with the fused optimiser, output distribution over the device
process group) whose input distribution runs on the host process group instead: the batch
stays on the CPU until each rank holds the ids of its own shards, the Hash collections map
them to rows of those shards there, and only row numbers go to the device.

Sharding types (anything else is refused by the planner, which is offered only these, and by
``shard`` with :class:`UnsupportedShardingError`):

========================  ===========================  ===========================
                          EBC / EC (row-number ids)    Hash EBC / Hash EC
========================  ===========================  ===========================
table_wise                yes                          yes
row_wise                  yes (block routing)          yes (hash routing)
column_wise               yes                          yes
data_parallel             yes                          no: every replica would need
                                                       every rank's ids to keep one
                                                       mapping
table_row_wise            EBC only (torchrec shards    no: its input distribution
                          EC without it)               routes blocks of row numbers
table_column_wise, grid   no: not verified with a      no
                          host input distribution
========================  ===========================  ===========================
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import torch
import torch.distributed as dist
from fbgemm_gpu.permute_pooled_embedding_modules_split import PermutePooledEmbeddingsSplit
from fbgemm_gpu.split_embedding_configs import EmbOptimType as OptimType
from torch import nn
from torchrec.distributed.embedding import (
    EmbeddingCollectionSharder,
    ShardedEmbeddingCollection,
    create_embedding_sharding,
)
from torchrec.distributed.embedding import (
    create_sharding_infos_by_sharding as create_ec_sharding_infos,
)
from torchrec.distributed.embeddingbag import (
    EmbeddingBagCollectionSharder,
    ShardedEmbeddingBagCollection,
    create_embedding_bag_sharding,
)
from torchrec.distributed.embeddingbag import (
    create_sharding_infos_by_sharding as create_ebc_sharding_infos,
)
from torchrec.distributed.types import (
    Awaitable,
    ModuleSharder,
    ParameterSharding,
    ShardingEnv,
    ShardingType,
)
from torchrec.modules.embedding_configs import PoolingType
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from hybrid_torchrec.distributed import checkpoint
from hybrid_torchrec.distributed.collective import collective_step
from hybrid_torchrec.distributed.host_dist import (
    HOST,
    HashRwSparseFeaturesDist,
    HostInputDist,
    ShardMapper,
)
from hybrid_torchrec.distributed.types import (
    DP,
    EBC_SHARDING_TYPES,
    HASH_SHARDING_TYPES,
    PLAIN_SHARDING_TYPES,
    RW,
    TWRW,
    HostEnvError,
    HostWork,
    Plan,
    Resets,
    UnsupportedShardingError,
)
from hybrid_torchrec.ids import IdMapper
from hybrid_torchrec.modules import (
    HashEmbeddingBagCollection,
    HashEmbeddingCollection,
    _TableMapping,
)

_WHY_NOT = {
    TWRW: "offered for EmbeddingBagCollection with row-number ids only: a Hash table's ids are "
    "routed by hash, which torchrec's table-row-wise input distribution (blocks of row numbers "
    "within a node) cannot do, and torchrec shards EmbeddingCollection without it",
    ShardingType.TABLE_COLUMN_WISE.value: "it is not verified with a host input distribution",
    ShardingType.GRID_SHARD.value: "it is not verified with a host input distribution",
    DP: "a replicated Hash table would need every rank's ids on every rank to keep one mapping",
}


def check_host_env(host_env: ShardingEnv) -> None:
    pg = getattr(host_env, "process_group", None)
    if not isinstance(host_env, ShardingEnv) or pg is None:
        raise HostEnvError(
            "host_env must be a ShardingEnv over a process group, e.g. "
            "ShardingEnv.from_process_group(dist.new_group(backend='gloo'))"
        )
    backend = dist.get_backend(pg)
    if backend != "gloo":
        raise HostEnvError(
            f"host_env's process group uses the {backend!r} backend; the host input "
            "distribution needs 'gloo' (CPU tensors): dist.new_group(backend='gloo')"
        )


def _check_plan(
    module: nn.Module,
    params: dict[str, ParameterSharding],
    supported: tuple[str, ...],
    env: ShardingEnv,
    host_env: ShardingEnv,
) -> None:
    if (host_env.world_size, host_env.rank) != (env.world_size, env.rank):
        raise HostEnvError(
            f"host_env has rank {host_env.rank} of {host_env.world_size}, the device "
            f"environment rank {env.rank} of {env.world_size}: the host group must have the "
            "same ranks as the device group"
        )
    for table, ps in params.items():
        if ps.sharding_type not in supported:
            why = _WHY_NOT.get(ps.sharding_type, "")
            raise UnsupportedShardingError(
                f"table {table!r} of {type(module).__name__}: sharding type "
                f"{ps.sharding_type!r} is not offered by the hybrid sharder"
                + (f" ({why})" if why else "")
                + f"; use one of {', '.join(supported)}"
            )


def _local_rows(ps: ParameterSharding, rank: int, num_embeddings: int) -> int | None:
    """Rows of the rank's shard of a table (None: no shard on this rank)."""
    if ps.sharding_spec is None:
        return None
    rows = [
        int(shard.shard_sizes[0])
        for shard in ps.sharding_spec.shards
        if shard.placement is not None and shard.placement.rank() == rank
    ]
    if not rows:
        return None
    return rows[0] if ps.sharding_type == RW else num_embeddings


def _table_configs(module: nn.Module) -> list[Any]:
    """The table configs of an EBC-like or EC-like module."""
    if hasattr(module, "embedding_bag_configs"):
        return module.embedding_bag_configs()  # type: ignore[operator]
    return module.embedding_configs()  # type: ignore[operator]


class _Hybrid:
    """What both sharded collections add to torchrec's: host input distributions, the mapping
    of the rank's shards, and the sharding contexts moved to the device before the lookups.

    Subclasses say whether their outputs are sequences and build torchrec's shardings a second
    time over the host group (``_host_shardings``)."""

    _device: torch.device | None
    _input_dists: list[nn.Module]
    _output_dists: list[nn.Module]
    _is_sequence: bool
    _weights_attr: str
    training: bool

    def __init__(
        self,
        module: nn.Module,
        table_name_to_parameter_sharding: dict[str, ParameterSharding],
        env: ShardingEnv,
        host_env: ShardingEnv,
        hashed: bool,
        fused_params: dict[str, Any] | None = None,
        device: torch.device | None = None,
        qcomm_codecs_registry: dict[str, Any] | None = None,
        module_fqn: str | None = None,
    ) -> None:
        super().__init__(  # type: ignore[call-arg]
            module=module,
            table_name_to_parameter_sharding=table_name_to_parameter_sharding,
            env=env,
            fused_params=fused_params,
            device=device,
            qcomm_codecs_registry=qcomm_codecs_registry,
            module_fqn=module_fqn,
        )
        params = table_name_to_parameter_sharding
        self._host_pg = host_env.process_group
        self._plan_fused_params = fused_params
        self._host_shardings = self._host_shardings_of(module, params, host_env)
        self._shard_mapper: ShardMapper | None = None
        if hashed:
            self._init_mappers(module, params, env)
        # Only the EBC's column-wise output distribution has these permutes; a no-op for ECs.
        _portable_permutes(self._output_dists)

    def _host_shardings_of(
        self, module: nn.Module, params: Plan, host_env: ShardingEnv
    ) -> list[tuple[str, Any]]:
        """(sharding type, torchrec's sharding of it built over the host group)."""
        raise NotImplementedError

    def _create_input_dist(self, input_feature_names: list[str]) -> None:
        super()._create_input_dist(input_feature_names)  # type: ignore[misc]
        self._input_dists = self._host_input_dists()
        # torchrec reorders the features in the input distribution, which now runs on the host.
        order = getattr(self, "_features_order_tensor", None)
        if order is not None:
            self._features_order_tensor = order.to(HOST)

    def _init_mappers(
        self, module: nn.Module, params: dict[str, ParameterSharding], env: ShardingEnv
    ) -> None:
        configs = _table_configs(module)
        mappers: dict[str, IdMapper] = {}
        for config in configs:
            rows = _local_rows(params[config.name], env.rank, config.num_embeddings)
            if rows is not None:
                # A shard's mapper evicts within the shard: row-wise ranks each keep the most
                # recent ids of their own hash range.
                eviction = getattr(config, "eviction", None)
                mappers[config.name] = IdMapper(rows, eviction, name=config.name)
        self.id_mappers = nn.ModuleDict(
            {name: _TableMapping(mapper) for name, mapper in mappers.items()}
        )
        feature_to_table = {f: c.name for c in configs for f in c.feature_names}
        # Evicted rows are noted in the thread that maps the batch (the pipeline's host thread
        # or the caller's) and reset by that batch's device step.
        self._evicted = threading.local()
        self._shard_mapper = ShardMapper(feature_to_table, mappers, self._note_evicted)
        self._table_dims = {c.name: c.embedding_dim for c in configs}
        self._init_fns = {c.name: getattr(c, "init_fn", None) for c in configs}
        # The hash range of each local table: row-wise ranks hold 1/W of the ids each.
        self._shares = {
            name: (env.rank, env.world_size) if params[name].sharding_type == RW else (0, 1)
            for name in mappers
        }
        self._register_state_dict_hook(_save_id_rows)  # type: ignore[attr-defined]

    def _local_columns(self, table: str) -> list[tuple[int, torch.Tensor]]:
        """(first column, local weight) of each of this rank's shards of a table."""
        shards = self._model_parallel_name_to_local_shards[table]  # type: ignore[attr-defined]
        return [(int(s.metadata.shard_offsets[1]), s.tensor) for s in shards]

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        if self._shard_mapper is not None:
            checkpoint.check_tables(state_dict, prefix, self._table_dims)
            for table in self._table_dims:
                self._load_table(state_dict, prefix, table)
        super()._load_from_state_dict(state_dict, prefix, *args)  # type: ignore[misc]

    def _load_table(self, state_dict: dict[str, Any], prefix: str, table: str) -> None:
        """One table from its id rows when the checkpoint has no weight of the same layout;
        the children and torchrec's hooks then load what now stands in the module."""
        base = f"{prefix}{checkpoint.ID_ROWS}.{table}."
        if base + "ids" not in state_dict:
            raise checkpoint.CheckpointError(f"table {table!r}: the checkpoint has no id rows")
        weight_key = f"{prefix}{self._weights_attr}.{table}.weight"
        ours = self._model_parallel_name_to_sharded_tensor[table]  # type: ignore[attr-defined]
        saved = state_dict.get(weight_key)
        if saved is None:
            if table in self.id_mappers:
                mapping = self.id_mappers[table]
                checkpoint.load_table(
                    state_dict,
                    base,
                    table,
                    self._table_dims[table],
                    mapping.mapper,
                    self._shares[table],
                    self._local_columns(table),
                )
                mapping._save_to_state_dict(state_dict, f"{prefix}id_mappers.{table}.", False)
            state_dict[weight_key] = ours
        elif not checkpoint.own_layout(saved, ours):
            raise checkpoint.CheckpointError(
                f"table {table!r}: the checkpoint's weight is sharded otherwise (another world "
                "size or plan); load hybrid_torchrec.distributed.portable_state_dict of every "
                "rank's state_dict instead"
            )
        checkpoint.pop_table(state_dict, base)

    def host_work(self, features: KeyedJaggedTensor) -> HostWork:
        """The host half of a forward: input distribution, mapping, the copy to the device.
        Returns what :meth:`prefetch` takes."""
        ctx = self.create_context()  # type: ignore[attr-defined]
        dist_input = self.input_dist(ctx, features).wait().wait()  # type: ignore[attr-defined]
        return HostWork(ctx, dist_input, self._take_evicted())

    def prefetch(self, host_result: HostWork) -> None:
        """The next forward uses this result of :meth:`host_work` instead of its input."""
        self._hybrid_prefetched = host_result

    def forward(self, *input: Any, **kwargs: Any) -> Any:
        prefetched = self.__dict__.pop("_hybrid_prefetched", None)
        if prefetched is None:
            return super().forward(*input, **kwargs)  # type: ignore[misc]
        self._reset_evicted(prefetched.resets)
        return self.compute_and_output_dist(prefetched.ctx, prefetched.dist_input)  # type: ignore[attr-defined]

    def _note_evicted(self, table: str, rows: torch.Tensor) -> None:
        self._evicted.__dict__.setdefault("resets", []).append((table, rows))

    def _take_evicted(self) -> Resets:
        if self._shard_mapper is None:
            return []
        return self._evicted.__dict__.pop("resets", [])

    def _reset_evicted(self, resets: Resets) -> None:
        """Evicted ids' rows start again as new rows: the table's ``init_fn`` values (zeros
        without one, as the unsharded collections do) and zero fused-optimiser state."""
        for table, rows in resets:
            init_fn = self._init_fns.get(table)
            with torch.no_grad():
                # init_fn per local shard, as torchrec's reset_parameters applies it.
                for _, weight in self._local_columns(table):
                    fresh = torch.zeros(rows.numel(), weight.shape[1], dtype=weight.dtype)
                    if init_fn is not None:
                        init_fn(fresh)
                    weight.index_copy_(0, rows.to(weight.device), fresh.to(weight.device))
                for state in self._optimizer_states(table):
                    state.index_fill_(0, rows.to(state.device), 0)

    def _optimizer_states(self, table: str) -> list[torch.Tensor]:
        """Views of the fused optimiser's per-row state of this rank's shards of a table
        (momentum, and counters some optimisers keep), from fbgemm's TBE modules."""
        return [state for _, states in self._fused_shards(table).values() for state in states]

    def _fused_shards(self, table: str) -> dict[int, tuple[Any, list[torch.Tensor]]]:
        """First column -> (fbgemm's TBE module, its per-row optimiser states) of each of this
        rank's shards of a table."""
        found: dict[int, tuple[Any, list[torch.Tensor]]] = {}
        for lookup in self._lookups:  # type: ignore[attr-defined]
            for emb in getattr(lookup, "_emb_modules", ()):
                tbe = getattr(emb, "_emb_module", None)
                config = getattr(emb, "_config", None)
                if tbe is None or config is None:
                    continue
                per_table: list[list[torch.Tensor]] | None = None
                for t, shard in enumerate(config.embedding_tables):
                    if shard.name != table:
                        continue
                    if per_table is None:
                        per_table = _split_states(tbe)
                    meta = shard.local_metadata
                    column = int(meta.shard_offsets[1]) if meta is not None else 0
                    found[column] = (tbe, list(per_table[t]) if per_table else [])
        return found

    def _fused_optimizer(self, table: str) -> tuple[str, int, list[list[torch.Tensor]]]:
        """The fused optimiser of this rank's shards of a table: its name (fbgemm's
        EmbOptimType), its step (the TBE's iteration counter, which Adam-like optimisers
        correct their moments by) and per local shard, in the order of ``_local_columns``,
        its per-row state tensors."""
        fused = self._fused_shards(table)
        name, step = "NONE", 0
        for tbe, _ in fused.values():
            optim = getattr(tbe, "optimizer", None)
            name = getattr(optim, "name", str(optim))
            counter = getattr(tbe, "iter", None)
            step = int(counter.item()) if isinstance(counter, torch.Tensor) else 0
            break
        states = [fused[c][1] if c in fused else [] for c, _ in self._local_columns(table)]
        return name, step, states

    def _set_optimizer_step(self, table: str, step: int) -> None:
        """Sets the iteration counter of the TBE modules holding a table's shards (fbgemm reads
        its host copy ``iter_cpu`` from ``iter`` only while the copy is 0: both are set)."""
        for tbe, _ in self._fused_shards(table).values():
            for name in ("iter", "iter_cpu"):
                counter = getattr(tbe, name, None)
                if isinstance(counter, torch.Tensor):
                    counter.fill_(step)

    def mappers(self) -> dict[str, IdMapper]:
        """Table name -> the IdMapper of this rank's shard (Hash collections only)."""
        if self._shard_mapper is None:
            return {}
        return {name: m.mapper for name, m in self.id_mappers.items()}  # type: ignore[union-attr]

    def _host_input_dists(self) -> list[nn.Module]:
        dists: list[nn.Module] = []
        for sharding_type, sharding in self._host_shardings:
            if sharding_type == RW and self._shard_mapper is not None:
                inner: nn.Module = HashRwSparseFeaturesDist(
                    self._host_pg, len(sharding.feature_names()), self._is_sequence
                )
            else:
                inner = sharding.create_input_dist(device=HOST)
            dists.append(HostInputDist(inner, self._to_device))
        return dists

    def _to_device(self, kjt: KeyedJaggedTensor) -> KeyedJaggedTensor:
        if self._shard_mapper is not None:
            # A shard that cannot take its ids (CapacityError) or reads ids it never saw fails
            # on its rank only: every rank raises the same error here, rather than waiting in
            # the device's output distribution for the one that stopped.
            with collective_step(self._host_pg, "mapping a sharded batch's ids to rows"):
                mapped = self._shard_mapper(kjt, insert=self.training)
            kjt = mapped
        device = self._device if self._device is not None else HOST
        return kjt.to(device)

    def _fix_context(self, ctx: Any) -> None:
        """Sharding contexts filled on the host, as the device's output distribution needs
        them (EC: the row-wise permutation, the recat of the all-to-all, the batch)."""
        device = self._device if self._device is not None else HOST
        for sc in getattr(ctx, "sharding_contexts", []):
            for name in ("sparse_features_recat", "unbucketize_permute_tensor"):
                tensor = getattr(sc, name, None)
                if isinstance(tensor, torch.Tensor) and tensor.device != device:
                    setattr(sc, name, tensor.to(device))
            features = getattr(sc, "features_before_input_dist", None)
            if features is not None and features.device() != device:
                sc.features_before_input_dist = features.to(device)

    def compute(self, ctx: Any, dist_input: Any) -> Any:
        self._fix_context(ctx)
        self._reset_evicted(self._take_evicted())
        return super().compute(ctx, dist_input)  # type: ignore[misc]

    def compute_and_output_dist(self, ctx: Any, input: Any) -> Any:
        self._fix_context(ctx)
        # Mapped in this thread (a plain forward); a prefetched batch brought its own.
        self._reset_evicted(self._take_evicted())
        return super().compute_and_output_dist(ctx, input)  # type: ignore[misc]


class ColumnPermute(nn.Module):
    """Reorders column blocks of pooled embeddings: output block i is input block
    ``permute[i]``. fbgemm's PermutePooledEmbeddingsSplit in plain torch operators, which every
    device has (the operator adapter has no npu kernel of permute_pooled_embs_auto_grad_split,
    which torchrec's column-wise output distribution calls)."""

    def __init__(self, dims: list[int], permute: list[int]) -> None:
        super().__init__()
        self._dims = dims
        self._permute = permute

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        blocks = pooled.split(self._dims, dim=1)
        return torch.cat([blocks[i] for i in self._permute], dim=1)


def _save_id_rows(
    module: _Hybrid, destination: dict[str, Any], prefix: str, _metadata: Any
) -> None:
    for table, mapping in module.id_mappers.items():
        state = mapping.mapper.state()
        entries = checkpoint.table_state(
            state.ids, state.rows, module._local_columns(table), module._shares[table]
        )
        for key, value in entries.items():
            destination[f"{prefix}{checkpoint.ID_ROWS}.{table}.{key}"] = value


def _split_states(tbe: Any) -> list[list[torch.Tensor]]:
    """fbgemm's per-table optimiser states of a TBE module (none for SGD and NONE)."""
    if not hasattr(tbe, "split_optimizer_states"):
        return []
    if getattr(tbe, "optimizer", None) == OptimType.NONE:
        return []  # no optimiser, no state (fbgemm refuses to list it)
    return tbe.split_optimizer_states()  # SGD keeps no state (and fbgemm then lists no tables)


def _portable_permutes(output_dists: list[nn.Module]) -> None:
    for output_dist in output_dists:
        callbacks = getattr(output_dist, "_callbacks", None)
        if not callbacks:
            continue
        for i, callback in enumerate(callbacks):
            if isinstance(callback, PermutePooledEmbeddingsSplit):
                offsets = callback._offset_dim_list.tolist()
                dims = [b - a for a, b in itertools.pairwise(offsets)]
                callbacks[i] = ColumnPermute(dims, callback._permute.tolist())


class HybridShardedEmbeddingBagCollection(_Hybrid, ShardedEmbeddingBagCollection):
    """torchrec's ShardedEmbeddingBagCollection with the input distribution on the host."""

    _is_sequence = False
    _weights_attr = "embedding_bags"

    def _host_shardings_of(self, module: nn.Module, params: Plan, host_env: ShardingEnv) -> Any:
        infos = create_ebc_sharding_infos(
            module,  # type: ignore[arg-type]
            params,
            "embedding_bags.",
            self._plan_fused_params,
        )
        return [
            (st, create_embedding_bag_sharding(i, host_env, HOST, permute_embeddings=True))
            for st, i in infos.items()
        ]

    def input_dist(self, ctx: Any, features: KeyedJaggedTensor) -> Awaitable[Any]:
        return super().input_dist(ctx, features.to(HOST))


class HybridShardedEmbeddingCollection(_Hybrid, ShardedEmbeddingCollection):
    """torchrec's ShardedEmbeddingCollection with the input distribution on the host."""

    _is_sequence = True
    _weights_attr = "embeddings"

    def _host_shardings_of(self, module: nn.Module, params: Plan, host_env: ShardingEnv) -> Any:
        infos = create_ec_sharding_infos(module, params, self._plan_fused_params)  # type: ignore[arg-type]
        return [(st, create_embedding_sharding(st, i, host_env, HOST)) for st, i in infos.items()]

    def input_dist(self, ctx: Any, features: KeyedJaggedTensor) -> Awaitable[Any]:
        awaitable = super().input_dist(ctx, features.to(HOST))
        # torchrec reads the row-wise permutation only from its own dist class.
        for sc, host_dist in zip(ctx.sharding_contexts, self._input_dists, strict=True):
            sc.unbucketize_permute_tensor = host_dist.unbucketize_permute_tensor
        return awaitable


class _HybridSharderBase:
    """Keeps the host environment, offers only the sharding types of ``_supported`` and
    shards into ``_sharded_cls`` after checking the plan."""

    _supported: tuple[str, ...]
    _hashed: bool
    _sharded_cls: type[_Hybrid]
    _module_type: type[nn.Module] | None = None
    fused_params: dict[str, Any] | None
    qcomm_codecs_registry: dict[str, Any] | None

    def __init__(
        self,
        host_env: ShardingEnv,
        fused_params: dict[str, Any] | None = None,
        qcomm_codecs_registry: dict[str, Any] | None = None,
    ) -> None:
        check_host_env(host_env)
        super().__init__(  # type: ignore[call-arg]
            fused_params=fused_params, qcomm_codecs_registry=qcomm_codecs_registry
        )
        self._host_env = host_env

    @property
    def host_env(self) -> ShardingEnv:
        return self._host_env

    @property
    def module_type(self) -> type[nn.Module]:
        # The Hash sharders shard their own collections; the others torchrec's.
        return self._module_type or super().module_type  # type: ignore[misc]

    def sharding_types(self, compute_device_type: str) -> list[str]:
        offered = super().sharding_types(compute_device_type)  # type: ignore[misc]
        return [t for t in offered if t in self._supported]

    def shard(
        self,
        module: Any,
        params: dict[str, ParameterSharding],
        env: ShardingEnv,
        device: torch.device | None = None,
        module_fqn: str | None = None,
    ) -> Any:
        _check_plan(module, params, self._supported, env, self._host_env)
        configs = _table_configs(module)
        if not self._sharded_cls._is_sequence:  # sequence tables do not pool
            _refuse_row_wise_mean(configs, params)
        return self._sharded_cls(
            module,
            params,
            env,
            self._host_env,
            self._hashed,
            fused_params=self.fused_params,
            device=device,
            qcomm_codecs_registry=self.qcomm_codecs_registry,
            module_fqn=module_fqn,
        )


class HybridEmbeddingBagCollectionSharder(_HybridSharderBase, EmbeddingBagCollectionSharder):
    """torchrec's EmbeddingBagCollection (ids are row numbers) with the input distribution on
    the host group."""

    _supported = EBC_SHARDING_TYPES
    _hashed = False
    _sharded_cls = HybridShardedEmbeddingBagCollection


class HybridHashEmbeddingBagCollectionSharder(HybridEmbeddingBagCollectionSharder):
    """HashEmbeddingBagCollection: ids mapped to rows of each rank's shards on the host."""

    _supported = HASH_SHARDING_TYPES
    _hashed = True
    _module_type = HashEmbeddingBagCollection


class HybridEmbeddingCollectionSharder(_HybridSharderBase, EmbeddingCollectionSharder):
    """torchrec's EmbeddingCollection with the input distribution on the host group."""

    _supported = PLAIN_SHARDING_TYPES
    _hashed = False
    _sharded_cls = HybridShardedEmbeddingCollection


class HybridHashEmbeddingCollectionSharder(HybridEmbeddingCollectionSharder):
    """HashEmbeddingCollection: ids mapped to rows of each rank's shards on the host."""

    _supported = HASH_SHARDING_TYPES
    _hashed = True
    _module_type = HashEmbeddingCollection


def _refuse_row_wise_mean(configs: list[Any], params: dict[str, ParameterSharding]) -> None:
    for config in configs:
        sharding_type = params[config.name].sharding_type
        if config.pooling == PoolingType.MEAN and sharding_type in (RW, TWRW):
            raise UnsupportedShardingError(
                f"table {config.name!r}: MEAN pooling with {sharding_type} sharding is not "
                "supported by the hybrid sharder (torchrec divides on the device with "
                "lengths of the host batch); use SUM or table_wise/column_wise"
            )


def get_default_hybrid_sharders(
    host_env: ShardingEnv, fused_params: dict[str, Any] | None = None
) -> list[ModuleSharder[nn.Module]]:
    """Sharders for torchrec's EBC and EC and the Hash collections, all distributing input
    over ``host_env`` (a ShardingEnv over a gloo process group with the device group's ranks).

    ``fused_params`` are torchrec's (the fused optimiser: ``optimizer``, ``learning_rate``...).
    """
    return [
        HybridEmbeddingBagCollectionSharder(host_env, fused_params),  # type: ignore[list-item]
        HybridEmbeddingCollectionSharder(host_env, fused_params),  # type: ignore[list-item]
        HybridHashEmbeddingBagCollectionSharder(host_env, fused_params),  # type: ignore[list-item]
        HybridHashEmbeddingCollectionSharder(host_env, fused_params),  # type: ignore[list-item]
    ]
