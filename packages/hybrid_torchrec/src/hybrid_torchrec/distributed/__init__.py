"""DistributedModelParallel support: sharders whose input distribution and id mapping run on
the host (a gloo process group), with the lookups and fused optimisers on the device.

Laid out as torchrec's distributed part: the types (sharding types, the host half of a
forward, the errors) in :mod:`hybrid_torchrec.distributed.types`, apart from the
implementations (``sharders``, ``host_dist``, ``pipeline``, ``checkpoint``, ``accumulate``)."""

from hybrid_torchrec.distributed.accumulate import accumulate_gradients
from hybrid_torchrec.distributed.checkpoint import (
    CheckpointError,
    hash_ranks,
    load_sharded_checkpoint,
    portable_state_dict,
    save_sharded_checkpoint,
    save_sharded_checkpoint_in_background,
)
from hybrid_torchrec.distributed.collective import collective_plan
from hybrid_torchrec.distributed.pipeline import HybridTrainPipeline
from hybrid_torchrec.distributed.sharders import (
    HybridEmbeddingBagCollectionSharder,
    HybridEmbeddingCollectionSharder,
    HybridHashEmbeddingBagCollectionSharder,
    HybridHashEmbeddingCollectionSharder,
    HybridShardedEmbeddingBagCollection,
    HybridShardedEmbeddingCollection,
    get_default_hybrid_sharders,
)
from hybrid_torchrec.distributed.types import (
    HASH_SHARDING_TYPES,
    PLAIN_SHARDING_TYPES,
    HostEnvError,
    HostWork,
    UnknownIdError,
    UnsupportedShardingError,
)
from hybrid_torchrec.errors import CollectiveError

__all__ = [
    "HASH_SHARDING_TYPES",
    "PLAIN_SHARDING_TYPES",
    "CheckpointError",
    "CollectiveError",
    "HostEnvError",
    "HostWork",
    "HybridEmbeddingBagCollectionSharder",
    "HybridEmbeddingCollectionSharder",
    "HybridHashEmbeddingBagCollectionSharder",
    "HybridHashEmbeddingCollectionSharder",
    "HybridShardedEmbeddingBagCollection",
    "HybridShardedEmbeddingCollection",
    "HybridTrainPipeline",
    "UnknownIdError",
    "UnsupportedShardingError",
    "accumulate_gradients",
    "collective_plan",
    "get_default_hybrid_sharders",
    "hash_ranks",
    "load_sharded_checkpoint",
    "portable_state_dict",
    "save_sharded_checkpoint",
    "save_sharded_checkpoint_in_background",
]
