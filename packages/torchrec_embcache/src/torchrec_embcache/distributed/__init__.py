"""DistributedModelParallel support, laid out as hybrid_torchrec's distributed part and
torchrec's: the types (sharding types, bucket maps, placements) in
:mod:`torchrec_embcache.distributed.types`, apart from the implementations (the sharders and
sharded collections, their checkpoints and metrics, the train pipeline).

The implementations keep their modules (``torchrec_embcache.sharded``, ``sharded_sequence``,
``sharded_checkpoint``, ``sharded_metrics``, ``pipeline``); this package names their public
objects in one place and imports each (with torchrec) on first use.
"""

from __future__ import annotations

from torchrec_embcache._shared.lazy import lazy_exports

_EXPORTS = {
    "EmbCacheSharderBase": "torchrec_embcache.sharded",
    "EmbCacheEmbeddingBagCollectionSharder": "torchrec_embcache.sharded",
    "EmbCacheEmbeddingCollectionSharder": "torchrec_embcache.sharded_sequence",
    "ShardedEmbCacheBase": "torchrec_embcache.sharded",
    "ShardedEmbCacheEmbeddingBagCollection": "torchrec_embcache.sharded",
    "ShardedEmbCacheEmbeddingCollection": "torchrec_embcache.sharded_sequence",
    "ShardedEmbCacheMetrics": "torchrec_embcache.sharded_metrics",
    "ShardingContext": "torchrec_embcache.sharded",
    "placement_from_plan": "torchrec_embcache.sharded",
    "collective_plan": "torchrec_embcache.sharded",
    "save_sharded_checkpoint": "torchrec_embcache.sharded_checkpoint",
    "save_sharded_checkpoint_in_background": "torchrec_embcache.sharded_checkpoint",
    "load_sharded_checkpoint": "torchrec_embcache.sharded_checkpoint",
    "EmbCacheTrainPipeline": "torchrec_embcache.pipeline",
    "DEFAULT_NUM_BUCKETS": "torchrec_embcache.distributed.types",
    "ROW_WISE": "torchrec_embcache.distributed.types",
    "SHARDING_TYPES": "torchrec_embcache.distributed.types",
    "TABLE_ROW_WISE": "torchrec_embcache.distributed.types",
    "TABLE_WISE": "torchrec_embcache.distributed.types",
    "BucketMap": "torchrec_embcache.distributed.types",
    "Placement": "torchrec_embcache.distributed.types",
    "ShardingError": "torchrec_embcache.distributed.types",
    "bucket_of": "torchrec_embcache.distributed.types",
}


# The implementations need torchrec, which is slow to import: they load when asked for (and
# so types.py, which the implementations import, does not import them back).
__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
