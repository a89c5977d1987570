"""hybrid_torchrec: TorchRec embedding tables for arbitrary 64-bit feature ids.

Tables stay wholly in device memory; the id work runs on the host CPU, where it is cheap and
overlaps device compute: a batch's ids are de-duplicated and mapped to table rows by a host
hash table per table, and only row indices go to the device.

Core (C++, parallel on a host thread pool, results independent of the thread count):
:class:`IdMapper`, :func:`map_tables`, :func:`unique`, :func:`bucketize` and the eviction
policy :class:`EvictionPolicy` (shared with torchrec_embcache; :class:`LRU` / :class:`LFU` are
its deprecated spellings).

TorchRec drop-ins (loaded on first use): ``HashEmbeddingBagCollection``,
``HashEmbeddingCollection``, their configs ``HashEmbeddingBagConfig`` /
``HashEmbeddingConfig``, and ``bucketize_kjt``.

The package is built for torchrec 1.1.0 and refuses to import with any other torchrec release.
"""

from __future__ import annotations

from hybrid_torchrec.compat import check_torchrec

TORCHREC_VERSION = check_torchrec()

from hybrid_torchrec._shared.lazy import lazy_exports  # noqa: E402
from hybrid_torchrec._version import __version__  # noqa: E402
from hybrid_torchrec.errors import CapacityError, HybridTorchrecError  # noqa: E402
from hybrid_torchrec.eviction import LFU, LRU, EvictionPolicy  # noqa: E402
from hybrid_torchrec.ids import (  # noqa: E402
    Bucketized,
    IdMapper,
    MappingState,
    MapResult,
    Unique,
    bucketize,
    get_num_threads,
    map_tables,
    set_num_threads,
    unique,
)
from hybrid_torchrec.optim import optimizer_reset_hook, reset_optimizer_rows  # noqa: E402

_TORCHREC_EXPORTS = {
    "HashEmbeddingBagConfig": "hybrid_torchrec.config",
    "HashEmbeddingConfig": "hybrid_torchrec.config",
    "HashEmbeddingBagCollection": "hybrid_torchrec.modules",
    "HashEmbeddingCollection": "hybrid_torchrec.modules",
    "bucketize_kjt": "hybrid_torchrec.kjt",
    "get_default_hybrid_sharders": "hybrid_torchrec.distributed",
    "HybridTrainPipeline": "hybrid_torchrec.distributed",
}


# torchrec takes seconds to import: the drop-ins load it when first asked for.
__getattr__ = lazy_exports(__name__, _TORCHREC_EXPORTS)


__all__ = [
    "LFU",
    "LRU",
    "TORCHREC_VERSION",
    "Bucketized",
    "CapacityError",
    "EvictionPolicy",
    "HashEmbeddingBagCollection",
    "HashEmbeddingBagConfig",
    "HashEmbeddingCollection",
    "HashEmbeddingConfig",
    "HybridTorchrecError",
    "HybridTrainPipeline",
    "IdMapper",
    "MapResult",
    "MappingState",
    "Unique",
    "__version__",
    "bucketize",
    "bucketize_kjt",
    "get_default_hybrid_sharders",
    "get_num_threads",
    "map_tables",
    "optimizer_reset_hook",
    "reset_optimizer_rows",
    "set_num_threads",
    "unique",
]
