"""torchrec_embcache: dynamically growing embedding tables with a device cache.

Core (no torchrec needed): :class:`DynamicEmbedding`, :class:`DynamicEmbeddingBag`,
:class:`EmbeddingTable`, the optimiser / initialiser / admission / eviction configs and
directory checkpoints (:func:`save_checkpoint`, :func:`load_checkpoint`).

TorchRec drop-ins (imported on first use, need torchrec): ``EmbCacheEmbeddingBagConfig``,
``EmbCacheEmbeddingConfig``, ``EmbCacheEmbeddingBagCollection``,
``EmbCacheEmbeddingCollection``, ``EmbCacheTrainPipeline`` and ``EmbCacheMetrics``.

Observability: :func:`describe` (the tables' cache and host counters as a table) and
:func:`cache_sizing` (working sets and hit rates per cache size from sample batches).
"""

from __future__ import annotations

from torchrec_embcache._ext import _C
from torchrec_embcache._shared.lazy import lazy_exports
from torchrec_embcache._version import __version__
from torchrec_embcache.checkpoint import (
    load_checkpoint,
    save_checkpoint,
    save_checkpoint_in_background,
)
from torchrec_embcache.config import (
    Admission,
    Constant,
    Eviction,
    EvictionPolicy,
    Normal,
    SparseAdagrad,
    SparseAdam,
    SparseSGD,
    TruncatedNormal,
    Uniform,
)
from torchrec_embcache.counters import describe
from torchrec_embcache.errors import (
    CacheCapacityError,
    CacheStateError,
    CheckpointError,
    CollectiveError,
    DeviceError,
    EmbCacheError,
)
from torchrec_embcache.modules import DynamicEmbedding, DynamicEmbeddingBag
from torchrec_embcache.sizing import TableSizing, cache_sizing, collection_features
from torchrec_embcache.table import EmbeddingTable

_TORCHREC_EXPORTS = {
    "EmbCacheEmbeddingBagConfig": "torchrec_embcache.collection",
    "EmbCacheEmbeddingConfig": "torchrec_embcache.collection",
    "EmbCacheEmbeddingBagCollection": "torchrec_embcache.collection",
    "EmbCacheEmbeddingCollection": "torchrec_embcache.collection",
    "EmbCacheTrainPipeline": "torchrec_embcache.pipeline",
    "EmbCacheMetrics": "torchrec_embcache.metrics",
}


# torchrec is optional and slow to import: load the drop-ins only when asked for.
__getattr__ = lazy_exports(__name__, _TORCHREC_EXPORTS)


def set_num_threads(n: int) -> None:
    """Threads used by batched table operations (default: EMBCACHE_NUM_THREADS, else the CPUs
    this process may run on)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"number of threads must be a positive integer, got {n!r}")
    _C.set_num_threads(n)


def get_num_threads() -> int:
    return int(_C.get_num_threads())


__all__ = [
    "Admission",
    "CacheCapacityError",
    "CacheStateError",
    "CheckpointError",
    "CollectiveError",
    "Constant",
    "DeviceError",
    "DynamicEmbedding",
    "DynamicEmbeddingBag",
    "EmbCacheEmbeddingBagCollection",
    "EmbCacheEmbeddingBagConfig",
    "EmbCacheEmbeddingCollection",
    "EmbCacheEmbeddingConfig",
    "EmbCacheError",
    "EmbCacheMetrics",
    "EmbCacheTrainPipeline",
    "EmbeddingTable",
    "Eviction",
    "EvictionPolicy",
    "Normal",
    "SparseAdagrad",
    "SparseAdam",
    "SparseSGD",
    "TableSizing",
    "TruncatedNormal",
    "Uniform",
    "__version__",
    "cache_sizing",
    "collection_features",
    "describe",
    "get_num_threads",
    "load_checkpoint",
    "save_checkpoint",
    "save_checkpoint_in_background",
    "set_num_threads",
]
