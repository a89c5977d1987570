"""HashEmbeddingBagCollection and HashEmbeddingCollection: torchrec's EBC / EC for arbitrary
int64 ids, unsharded.

They take torchrec's arguments, the same KeyedJaggedTensor and return the same KeyedTensor /
Dict[str, JaggedTensor] (keys, order, widths, shared features as ``feature@table``), and keep
the weights where torchrec does (``embedding_bags.<table>.weight`` /
``embeddings.<table>.weight``, so any torch optimiser trains them). What changes: an id is not
a row number. Each table maps the ids it sees to its ``num_embeddings`` rows on the host
(:class:`~hybrid_torchrec.IdMapper`), and the lookup reads those rows.

* Training mode: ids without a row get one (smallest free row first). A full table raises
  CapacityError, or evicts by its config's policy; evicted rows are re-initialised with the
  table's ``init_fn`` and the eviction hooks are called (to reset optimiser state).
* Evaluation mode: the mapping is read, never changed; an id without a row reads a zero
  vector (it adds nothing to a sum and counts as a zero in a mean).
* ``state_dict`` holds each table's mapping next to its weights
  (``id_mappers.<table>.{ids,rows,counts,last_used,step}``), and ``load_state_dict``
  restores both; ``reset_parameters`` re-initialises the weights and empties the mappings.

Ids go to the host for mapping (a KeyedJaggedTensor built on the host avoids a copy); the row
indices go to the weights' device.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle
from torchrec.modules.embedding_configs import (
    DataType,
    EmbeddingBagConfig,
    EmbeddingConfig,
    PoolingType,
)
from torchrec.modules.embedding_modules import (
    EmbeddingBagCollectionInterface,
    EmbeddingCollectionInterface,
    get_embedding_names_by_table,
    process_pooled_embeddings,
    reorder_inverse_indices,
)
from torchrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

from hybrid_torchrec.ids import IdMapper, MappingState, MapResult, map_tables
from hybrid_torchrec.lookup import bag_lookup, row_lookup

EvictionHook = Callable[[str, torch.Tensor], None]
_Config = TypeVar("_Config", EmbeddingBagConfig, EmbeddingConfig)

_DTYPES = {DataType.FP32: torch.float32, DataType.FP16: torch.float16}


class _TableMapping(nn.Module):
    """One table's IdMapper, carried in state_dict as five tensors."""

    FIELDS = ("ids", "rows", "counts", "last_used", "step")

    def __init__(self, mapper: IdMapper) -> None:
        super().__init__()
        self.mapper = mapper

    def _save_to_state_dict(
        self, destination: dict[str, Any], prefix: str, keep_vars: bool
    ) -> None:
        state = self.mapper.state()
        destination[prefix + "ids"] = state.ids
        destination[prefix + "rows"] = state.rows
        destination[prefix + "counts"] = state.counts
        destination[prefix + "last_used"] = state.last_used
        destination[prefix + "step"] = torch.tensor(state.step, dtype=torch.int64)

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        keys = [prefix + field for field in self.FIELDS]
        absent = [key for key in keys if key not in state_dict]
        if absent:
            missing_keys.extend(absent)
            return
        ids, rows, counts, last_used, step = (state_dict[key] for key in keys)
        try:
            self.mapper.load_state(MappingState(ids, rows, counts, last_used, int(step)))
        except (ValueError, TypeError) as exc:
            error_msgs.append(f"{prefix[:-1]}: {exc}")

    def extra_repr(self) -> str:
        return repr(self.mapper)


def _check_tables(configs: list[_Config]) -> None:
    names: set[str] = set()
    for config in configs:
        if config.name in names:
            raise ValueError(f"Duplicate table name {config.name}")
        names.add(config.name)
        if config.data_type not in _DTYPES:
            raise ValueError(
                f"table {config.name!r}: data_type {config.data_type} is not supported "
                "(FP32 or FP16)"
            )
        if not config.feature_names:
            config.feature_names = [config.name]


def _concat(parts: list[torch.Tensor]) -> torch.Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _check_lengths(feature: str, lengths: torch.Tensor) -> None:
    """A negative bag length names itself here, on the host (the ids were mapped there), rather
    than reaching the device kernel, which on npu traps without saying which."""
    negative = (lengths < 0).nonzero()
    if negative.numel():
        bag = int(negative[0, 0])
        raise ValueError(
            f"feature {feature!r}: bag {bag} has length {int(lengths[bag])}; lengths must be >= 0"
        )


def _offsets(lengths: torch.Tensor) -> torch.Tensor:
    offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64, device=lengths.device)
    torch.cumsum(lengths, 0, out=offsets[1:])
    return offsets


class _HashCollection(nn.Module):
    """What both collections share: one IdMapper per table, mapping in forward, eviction
    resets and hooks. Subclasses own the weights and produce the output."""

    _configs: list[Any]
    _feature_names: list[list[str]]
    _weights_attr: str

    def _init_mappings(self, configs: list[_Config], device: torch.device | None) -> None:
        self._device = device if device is not None else torch.device("cpu")
        self.id_mappers = nn.ModuleDict(
            {
                config.name: _TableMapping(
                    IdMapper(
                        config.num_embeddings, getattr(config, "eviction", None), name=config.name
                    )
                )
                for config in configs
            }
        )
        self._feature_names = [list(config.feature_names) for config in configs]
        self._eviction_hooks: OrderedDict[int, EvictionHook] = OrderedDict()

    def _weights(self) -> nn.ModuleDict:
        # torchrec's attribute name: "embedding_bags" or "embeddings" (state_dict keys).
        return getattr(self, self._weights_attr)

    @property
    def device(self) -> torch.device:
        return torch.device(self._device)

    def table_weights(self) -> dict[str, torch.Tensor]:
        """Table name -> weight parameter ([num_embeddings, embedding_dim])."""
        return {name: module.weight for name, module in self._weights().items()}

    def mappers(self) -> dict[str, IdMapper]:
        """Table name -> its IdMapper."""
        return {name: mapping.mapper for name, mapping in self.id_mappers.items()}

    def register_eviction_hook(self, hook: EvictionHook) -> RemovableHandle:
        """Calls ``hook(table_name, rows)`` after a training batch evicted ids of a table and
        their rows were re-initialised (e.g. to reset optimiser state: see
        :func:`hybrid_torchrec.optimizer_reset_hook`)."""
        handle = RemovableHandle(self._eviction_hooks)
        self._eviction_hooks[handle.id] = hook
        return handle

    def _reset_rows(self, config: Any, rows: torch.Tensor) -> None:
        weight = self._weights()[config.name].weight
        rows = rows.to(weight.device)
        if weight.device.type != "meta":
            with torch.no_grad():
                fresh = torch.empty(
                    (rows.numel(), weight.shape[1]), dtype=weight.dtype, device=weight.device
                )
                if config.init_fn is not None:
                    config.init_fn(fresh)
                else:
                    fresh.zero_()
                weight.index_copy_(0, rows, fresh)
        for hook in list(self._eviction_hooks.values()):
            hook(config.name, rows)

    def _map(self, feature_dict: dict[str, JaggedTensor]) -> list[MapResult]:
        ids = [
            _concat([feature_dict[name].values() for name in names])
            for names in self._feature_names
        ]
        mappers = [mapping.mapper for mapping in self.id_mappers.values()]
        results = map_tables(mappers, ids, insert=self.training)
        for config, result in zip(self._configs, results, strict=True):
            if result.evicted_rows.numel():
                self._reset_rows(config, result.evicted_rows)
        return results

    def reset_parameters(self) -> None:
        """Re-initialises every table with its ``init_fn`` and forgets every id."""
        for mapping in self.id_mappers.values():
            mapping.mapper.clear()
        weights = self._weights()
        for config in self._configs:
            weight = weights[config.name].weight
            if weight.device.type != "meta" and config.init_fn is not None:
                with torch.no_grad():
                    config.init_fn(weight)


class HashEmbeddingBagCollection(_HashCollection, EmbeddingBagCollectionInterface):
    """Drop-in for torchrec's EmbeddingBagCollection with arbitrary int64 ids.

    Args:
        tables: HashEmbeddingBagConfig (or plain EmbeddingBagConfig: no eviction) per table.
        is_weighted: the input KeyedJaggedTensor carries per-id weights (SUM pooling only).
        device: where the weights live ("cpu", "npu", "meta").
    """

    _weights_attr = "embedding_bags"

    def __init__(
        self,
        tables: list[EmbeddingBagConfig],
        is_weighted: bool = False,
        device: torch.device | None = None,
    ) -> None:
        super().__init__()
        _check_tables(tables)
        self._is_weighted = is_weighted
        self._configs = tables
        self._embedding_bag_configs = tables
        self.embedding_bags = nn.ModuleDict()
        for config in tables:
            if config.pooling not in (PoolingType.SUM, PoolingType.MEAN):
                raise ValueError(f"table {config.name!r}: unsupported pooling {config.pooling}")
            if is_weighted and config.pooling != PoolingType.SUM:
                raise ValueError(
                    f"table {config.name!r}: weighted features need SUM pooling (per-id weights "
                    "of a mean are undefined in torch's embedding_bag)"
                )
            self.embedding_bags[config.name] = nn.EmbeddingBag(
                num_embeddings=config.num_embeddings,
                embedding_dim=config.embedding_dim,
                mode="sum" if config.pooling == PoolingType.SUM else "mean",
                include_last_offset=True,
                device=device,
                dtype=_DTYPES[config.data_type],
            )
        self._init_mappings(tables, device)
        self._lengths_per_embedding = [
            config.embedding_dim for config in tables for _ in config.feature_names
        ]
        self._embedding_names = [
            name for names in get_embedding_names_by_table(tables) for name in names
        ]
        self.reset_parameters()

    def embedding_bag_configs(self) -> list[EmbeddingBagConfig]:
        return self._embedding_bag_configs

    def is_weighted(self) -> bool:
        return self._is_weighted

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        flat_names = [name for names in self._feature_names for name in names]
        inverse_indices = reorder_inverse_indices(
            inverse_indices=features.inverse_indices_or_none(), feature_names=flat_names
        )
        feature_dict = features.to_dict()
        for name in flat_names:
            _check_lengths(name, feature_dict[name].lengths())
        results = self._map(feature_dict)
        pooled: list[torch.Tensor] = []
        for bag, names, result in zip(
            self.embedding_bags.values(), self._feature_names, results, strict=True
        ):
            jts = [feature_dict[name] for name in names]
            weight = bag.weight
            lengths = _concat([jt.lengths() for jt in jts]).to(weight.device)
            per_id = _concat([jt.weights() for jt in jts]) if self._is_weighted else None
            out = _pool(
                result.rows_per_id().to(weight.device),
                weight,
                lengths,
                bag.mode,
                per_id.to(device=weight.device, dtype=weight.dtype) if per_id is not None else None,
            ).float()
            bags = [jt.lengths().numel() for jt in jts]
            pooled.extend(out.split(bags) if len(bags) > 1 else [out])
        return KeyedTensor(
            keys=self._embedding_names,
            values=process_pooled_embeddings(
                pooled_embeddings=pooled, inverse_indices=inverse_indices
            ),
            length_per_key=self._lengths_per_embedding,
        )


def _pool(
    rows: torch.Tensor,
    weight: torch.Tensor,
    lengths: torch.Tensor,
    mode: str,
    per_id: torch.Tensor | None,
) -> torch.Tensor:
    offsets = _offsets(lengths)
    known = rows >= 0
    if bool(known.all()):
        return bag_lookup(weight, rows, offsets, mode, per_id)
    # Ids without a row (evaluation only) read zeros: a sum with weight 0 for them, and a
    # mean that still counts them.
    mask = known.to(weight.dtype)
    summed = bag_lookup(
        weight, rows.clamp(min=0), offsets, "sum", mask if per_id is None else mask * per_id
    )
    if mode == "mean":
        summed = summed / lengths.clamp(min=1).to(summed.dtype).unsqueeze(1)
    return summed


class HashEmbeddingCollection(_HashCollection, EmbeddingCollectionInterface):
    """Drop-in for torchrec's EmbeddingCollection with arbitrary int64 ids.

    Args are torchrec's (tables, device, need_indices). As in torchrec, all tables share one
    embedding_dim. Output: feature name -> JaggedTensor of [ids, dim] embeddings, with the
    ids as weights when ``need_indices``.
    """

    _weights_attr = "embeddings"

    def __init__(
        self,
        tables: list[EmbeddingConfig],
        device: torch.device | None = None,
        need_indices: bool = False,
    ) -> None:
        super().__init__()
        _check_tables(tables)
        self._configs = tables
        self._embedding_configs = tables
        self._need_indices = need_indices
        self._embedding_dim = tables[0].embedding_dim if tables else -1
        self.embeddings = nn.ModuleDict()
        for config in tables:
            if config.embedding_dim != self._embedding_dim:
                raise ValueError(
                    "All tables in a EmbeddingCollection are required to have same embedding "
                    f"dimension. Violating case: {config.name}'s embedding_dim "
                    f"{config.embedding_dim} != {self._embedding_dim}"
                )
            self.embeddings[config.name] = nn.Embedding(
                num_embeddings=config.num_embeddings,
                embedding_dim=config.embedding_dim,
                device=device,
                dtype=_DTYPES[config.data_type],
            )
        self._init_mappings(tables, device)
        self._embedding_names_by_table = get_embedding_names_by_table(tables)
        self.reset_parameters()

    def embedding_configs(self) -> list[EmbeddingConfig]:
        return self._embedding_configs

    def need_indices(self) -> bool:
        return self._need_indices

    def embedding_dim(self) -> int:
        return self._embedding_dim

    def embedding_names_by_table(self) -> list[list[str]]:
        return self._embedding_names_by_table

    def forward(self, features: KeyedJaggedTensor) -> dict[str, JaggedTensor]:
        feature_dict = features.to_dict()
        results = self._map(feature_dict)
        out: dict[str, JaggedTensor] = {}
        for emb, names, out_names, result in zip(
            self.embeddings.values(),
            self._feature_names,
            self._embedding_names_by_table,
            results,
            strict=True,
        ):
            weight = emb.weight
            rows = result.rows_per_id().to(weight.device)
            known = rows >= 0
            looked_up = row_lookup(weight, rows.clamp(min=0))
            if not bool(known.all()):
                looked_up = looked_up * known.to(looked_up.dtype).unsqueeze(1)
            jts = [feature_dict[name] for name in names]
            parts = looked_up.float().split([jt.values().numel() for jt in jts])
            for out_name, jt, part in zip(out_names, jts, parts, strict=True):
                out[out_name] = JaggedTensor(
                    values=part,
                    lengths=jt.lengths(),
                    weights=jt.values() if self._need_indices else None,
                )
        return out
