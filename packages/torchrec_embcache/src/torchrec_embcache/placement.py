"""Where a sharded EmbCache table's ids live: the bucket maps and placements, now in
:mod:`torchrec_embcache.distributed.types` (the interface apart from the implementations, as
torchrec lays out its distributed part). This path names the same objects."""

from torchrec_embcache.distributed.types import (
    DEFAULT_NUM_BUCKETS,
    ROW_WISE,
    SHARDING_TYPES,
    TABLE_ROW_WISE,
    TABLE_WISE,
    BucketMap,
    Placement,
    bucket_of,
)

__all__ = [
    "DEFAULT_NUM_BUCKETS",
    "ROW_WISE",
    "SHARDING_TYPES",
    "TABLE_ROW_WISE",
    "TABLE_WISE",
    "BucketMap",
    "Placement",
    "bucket_of",
]
