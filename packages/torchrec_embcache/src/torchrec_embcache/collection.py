"""TorchRec drop-ins: EmbeddingBagCollection / EmbeddingCollection over dynamic tables.

``EmbCacheEmbeddingBagCollection(tables, is_weighted, device)`` takes the same arguments as
torchrec's EmbeddingBagCollection, the same KeyedJaggedTensor input and returns the same
KeyedTensor (keys, order, widths); likewise ``EmbCacheEmbeddingCollection`` for
EmbeddingCollection and its Dict[str, JaggedTensor]. They implement torchrec's collection
interfaces, so torchrec models (e.g. DLRM's SparseArch) accept them.

What changes:
- ids are arbitrary int64 values; ``num_embeddings`` is not a bound but the rows you expect:
  it sets the default initialisation range (uniform +-sqrt(1/num_embeddings), as torchrec
  does; 1 would start every row in U(-1, 1), which trains worse) and the planner's estimate;
- each table is a dynamic table updated in backward by its sparse optimiser (fused, like
  torchrec's fused optimisers), so its rows are not parameters of the dense optimiser;
- the config classes below add the dynamic-table options to torchrec's configs; plain
  torchrec configs are accepted too and get the collection's defaults.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import nn
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

from torchrec_embcache._ext import _C
from torchrec_embcache.config import Admission, EvictionPolicy, Initializer, Optimizer, Uniform
from torchrec_embcache.modules import DynamicEmbedding, DynamicEmbeddingBag, _DynamicBase


@dataclass
class _DynamicTableOptions:
    """The dynamic-table options the EmbCache configs add to torchrec's (documented on
    EmbCacheEmbeddingBagConfig)."""

    optimizer: Optimizer | None = None
    initializer: Initializer | None = None
    seed: int | None = None
    cache_slots: int | None = None
    admission: Admission | None = None
    eviction: EvictionPolicy | None = None
    stochastic_rounding: bool = False
    shard_bits: int = 5


# The options class comes first among the bases so that its fields come after torchrec's
# (dataclass fields follow the reversed MRO): positional arguments stay torchrec's.
@dataclass
class EmbCacheEmbeddingBagConfig(_DynamicTableOptions, EmbeddingBagConfig):
    """torchrec's EmbeddingBagConfig plus the dynamic-table options.

    optimizer: sparse optimiser of the table (default: the collection's).
    initializer: initial rows (default: uniform in torchrec's weight_init_min/max range).
    seed: initialiser seed (default: derived from the collection seed and the table name).
    cache_slots: rows kept on the device; None keeps rows in host memory only.
    admission, eviction: optional policies.
    stochastic_rounding: with ``data_type`` FP16 or BF16 (rows stored in that dtype,
        optimiser state in float32), round updates stochastically instead of to nearest even.
    shard_bits: the host table has ``2**shard_bits`` shards (the parallelism of its batched
        calls; default 32). Each shard allocates rows in blocks, so a table of a few thousand
        rows spends several times its stored bytes per row with 32; 0 to 2 suit small tables.
    """


@dataclass
class EmbCacheEmbeddingConfig(_DynamicTableOptions, EmbeddingConfig):
    """torchrec's EmbeddingConfig plus the dynamic-table options (see
    EmbCacheEmbeddingBagConfig)."""


def _table_options(
    config: EmbeddingBagConfig | EmbeddingConfig, optimizer: Optimizer | None, seed: int
) -> dict[str, object]:
    row_dtypes = {
        DataType.FP32: torch.float32,
        DataType.FP16: torch.float16,
        DataType.BF16: torch.bfloat16,
    }
    if config.data_type not in row_dtypes:
        raise ValueError(
            f"table {config.name!r}: dynamic tables store FP32, FP16 or BF16 rows; data_type "
            f"{config.data_type} is not supported"
        )
    initializer = getattr(config, "initializer", None)
    if initializer is None:
        fn = config.init_fn
        default = isinstance(fn, functools.partial) and fn.func is torch.nn.init.uniform_
        if fn is not None and not default:
            raise ValueError(
                f"table {config.name!r}: init_fn works on a dense weight and cannot initialise "
                "rows created on demand; set initializer= (Uniform, Normal, TruncatedNormal, "
                "Constant) on an EmbCache config instead"
            )
        initializer = Uniform(config.get_weight_init_min(), config.get_weight_init_max())
    table_seed = getattr(config, "seed", None)
    if table_seed is None:
        # Tables of one collection must not share initial values: mix in the name.
        table_seed = (seed * 1_000_003 + _C.crc32c(config.name.encode())) % 2**64
    return {
        "optimizer": getattr(config, "optimizer", None) or optimizer,
        "initializer": initializer,
        "seed": table_seed,
        "cache_slots": getattr(config, "cache_slots", None),
        "admission": getattr(config, "admission", None),
        "eviction": getattr(config, "eviction", None),
        "row_dtype": row_dtypes[config.data_type],
        "stochastic_rounding": getattr(config, "stochastic_rounding", False),
        "shard_bits": getattr(config, "shard_bits", 5),
    }


def _check_names(configs: list[EmbeddingBagConfig] | list[EmbeddingConfig]) -> None:
    names = set()
    for config in configs:
        if config.name in names:
            raise ValueError(f"Duplicate table name {config.name}")
        names.add(config.name)
        if not config.feature_names:
            config.feature_names = [config.name]


def _host_features(features: KeyedJaggedTensor) -> KeyedJaggedTensor:
    """The ids are hashed on the host anyway: one copy of the whole KJT there replaces a copy
    per table, and splitting it needs no device kernels (e.g. fbgemm's on npu)."""
    if features.device().type != "cpu":
        return features.to(torch.device("cpu"))
    return features


def _check_lengths(feature: str, lengths: torch.Tensor) -> None:
    """A negative bag length is named here, on the host, rather than failing in an indexing
    kernel (on npu: a trap) with no word of which bag."""
    negative = (lengths < 0).nonzero()
    if negative.numel():
        bag = int(negative[0, 0])
        raise ValueError(
            f"feature {feature!r}: bag {bag} has length {int(lengths[bag])}; lengths must be >= 0"
        )


def _table_input(
    features: dict[str, JaggedTensor], names: list[str], weighted: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, list[int]]:
    """Values, offsets (with the last offset), weights and bags per feature of one table's
    features, concatenated so that a table does one lookup per batch."""
    jts = [features[name] for name in names]
    for name, jt in zip(names, jts, strict=True):
        _check_lengths(name, jt.lengths())
    if len(jts) == 1:
        jt = jts[0]
        return jt.values(), jt.offsets(), jt.weights() if weighted else None, [jt.lengths().numel()]
    lengths = torch.cat([jt.lengths() for jt in jts])
    offsets = torch.zeros(lengths.numel() + 1, dtype=lengths.dtype, device=lengths.device)
    torch.cumsum(lengths, 0, out=offsets[1:])
    values = torch.cat([jt.values() for jt in jts])
    weights = torch.cat([jt.weights() for jt in jts]) if weighted else None
    return values, offsets, weights, [jt.lengths().numel() for jt in jts]


_Config = TypeVar("_Config", EmbeddingBagConfig, EmbeddingConfig)


class _EmbCacheCollection(nn.Module):
    """What the two collections share: one dynamic-table module per table config, each fed
    the concatenated ids of its table's features. Subclasses keep the modules in the
    ModuleDict torchrec's collection names (so state_dict keys match torchrec's) and
    produce the output (pooled or per id)."""

    _feature_names: list[list[str]]

    def _tables(self) -> nn.ModuleDict:
        raise NotImplementedError

    def _make_tables(
        self, configs: list[_Config], make: Callable[[_Config], _DynamicBase]
    ) -> nn.ModuleDict:
        tables = nn.ModuleDict()
        for config in configs:
            tables[config.name] = make(config)
        self._feature_names = [config.feature_names for config in configs]
        return tables

    @property
    def device(self) -> torch.device:
        for table in self._tables().values():
            return table.device
        return torch.device("cpu")

    def reset_parameters(self) -> None:
        for table in self._tables().values():
            table.reset_parameters()

    def prefetch(self, features: KeyedJaggedTensor) -> None:
        """Plans the swaps of a future training batch (tables with a device cache)."""
        feature_dict = _host_features(features).to_dict()
        for table, names in zip(self._tables().values(), self._feature_names, strict=True):
            table.prefetch(_table_input(feature_dict, names, False)[0])


class EmbCacheEmbeddingBagCollection(_EmbCacheCollection, EmbeddingBagCollectionInterface):
    """Drop-in for torchrec's EmbeddingBagCollection over dynamic tables.

    Args:
        tables: EmbCacheEmbeddingBagConfig (or plain EmbeddingBagConfig) per table.
        is_weighted: whether the input KeyedJaggedTensor carries per-id weights.
        device: compute device ("cpu", "npu", "meta").
        optimizer: default sparse optimiser of the tables (default SparseSGD(lr=0.01)).
        seed: base seed of the tables' initialisers.
    """

    def __init__(
        self,
        tables: list[EmbeddingBagConfig],
        is_weighted: bool = False,
        device: torch.device | None = None,
        *,
        optimizer: Optimizer | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        _check_names(tables)
        self._is_weighted = is_weighted
        self._embedding_bag_configs = tables
        # What a sharder needs to build the same tables on every rank.
        self.table_defaults = {"optimizer": optimizer, "seed": seed}

        def make(config: EmbeddingBagConfig) -> DynamicEmbeddingBag:
            if config.pooling not in (PoolingType.SUM, PoolingType.MEAN):
                raise ValueError(f"table {config.name!r}: unsupported pooling {config.pooling}")
            if is_weighted and config.pooling != PoolingType.SUM:
                raise ValueError(
                    f"table {config.name!r}: weighted features need SUM pooling (torch's "
                    "embedding_bag takes per-sample weights only for sums)"
                )
            return DynamicEmbeddingBag(
                config.embedding_dim,
                mode="sum" if config.pooling == PoolingType.SUM else "mean",
                include_last_offset=True,
                device=device,
                **_table_options(config, optimizer, seed),  # type: ignore[arg-type]
            )

        self.embedding_bags: nn.ModuleDict = self._make_tables(tables, make)
        self._lengths_per_embedding: list[int] = [
            config.embedding_dim for config in tables for _ in config.feature_names
        ]
        self._embedding_names = [
            name for names in get_embedding_names_by_table(tables) for name in names
        ]

    def _tables(self) -> nn.ModuleDict:
        return self.embedding_bags

    def embedding_bag_configs(self) -> list[EmbeddingBagConfig]:
        return self._embedding_bag_configs

    def is_weighted(self) -> bool:
        return self._is_weighted

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        features = _host_features(features)
        flat_names = [name for names in self._feature_names for name in names]
        inverse_indices = reorder_inverse_indices(
            inverse_indices=features.inverse_indices_or_none(), feature_names=flat_names
        ).to(self.device)
        feature_dict = features.to_dict()
        pooled: list[torch.Tensor] = []
        for bag, names in zip(self.embedding_bags.values(), self._feature_names, strict=True):
            values, offsets, weights, bags = _table_input(feature_dict, names, self._is_weighted)
            out = bag(values, offsets, per_sample_weights=weights)
            pooled.extend(out.split(bags) if len(bags) > 1 else [out])
        return KeyedTensor(
            keys=self._embedding_names,
            values=process_pooled_embeddings(
                pooled_embeddings=pooled, inverse_indices=inverse_indices
            ),
            length_per_key=self._lengths_per_embedding,
        )


class EmbCacheEmbeddingCollection(_EmbCacheCollection, EmbeddingCollectionInterface):
    """Drop-in for torchrec's EmbeddingCollection over dynamic tables.

    Args are torchrec's (tables, device, need_indices) plus ``optimizer`` and ``seed`` as
    for EmbCacheEmbeddingBagCollection. As in torchrec, all tables share one embedding_dim.
    """

    def __init__(
        self,
        tables: list[EmbeddingConfig],
        device: torch.device | None = None,
        need_indices: bool = False,
        *,
        optimizer: Optimizer | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        _check_names(tables)
        self._embedding_configs = tables
        self._need_indices = need_indices
        # What a sharder needs to build the same tables on every rank.
        self.table_defaults = {"optimizer": optimizer, "seed": seed}
        self._embedding_dim = tables[0].embedding_dim if tables else -1

        def make(config: EmbeddingConfig) -> DynamicEmbedding:
            if config.embedding_dim != self._embedding_dim:
                raise ValueError(
                    "All tables in a EmbeddingCollection are required to have same embedding "
                    f"dimension. Violating case: {config.name}'s embedding_dim "
                    f"{config.embedding_dim} != {self._embedding_dim}"
                )
            return DynamicEmbedding(
                config.embedding_dim,
                device=device,
                **_table_options(config, optimizer, seed),  # type: ignore[arg-type]
            )

        self.embeddings: nn.ModuleDict = self._make_tables(tables, make)
        self._embedding_names_by_table = get_embedding_names_by_table(tables)

    def _tables(self) -> nn.ModuleDict:
        return self.embeddings

    def embedding_configs(self) -> list[EmbeddingConfig]:
        return self._embedding_configs

    def need_indices(self) -> bool:
        return self._need_indices

    def embedding_dim(self) -> int:
        return self._embedding_dim

    def embedding_names_by_table(self) -> list[list[str]]:
        return self._embedding_names_by_table

    def forward(self, features: KeyedJaggedTensor) -> dict[str, JaggedTensor]:
        device = self.device
        feature_dict = _host_features(features).to_dict()
        result: dict[str, JaggedTensor] = {}
        for emb, names, out_names in zip(
            self.embeddings.values(),
            self._feature_names,
            self._embedding_names_by_table,
            strict=True,
        ):
            jts = [feature_dict[name] for name in names]
            values = _table_input(feature_dict, names, False)[0]
            rows = emb(values)
            parts = rows.split([jt.values().numel() for jt in jts]) if len(jts) > 1 else [rows]
            for out_name, jt, part in zip(out_names, jts, parts, strict=True):
                result[out_name] = JaggedTensor(
                    values=part,
                    lengths=jt.lengths().to(device),
                    weights=jt.values().to(device) if self._need_indices else None,
                )
        return result
