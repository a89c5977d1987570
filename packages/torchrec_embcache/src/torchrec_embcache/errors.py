"""Exception types of torchrec_embcache.

Errors raised by the C++ core arrive as these classes (the core registers them at import).
Invalid arguments raise the built-in TypeError (wrong dtype) or ValueError (bad value).
"""

from __future__ import annotations


class EmbCacheError(RuntimeError):
    """Base class of the package's own errors."""


class CheckpointError(EmbCacheError):
    """A checkpoint is missing, truncated, corrupted, or does not fit the table.

    The message names the file and what is wrong with it. Nothing has been loaded when this
    is raised: the table keeps its previous contents.
    """


class CacheCapacityError(EmbCacheError):
    """A batch has more distinct ids than the device cache has slots."""


class CacheStateError(EmbCacheError):
    """The operation conflicts with work in flight (e.g. prefetched batches not yet run)."""


class DeviceError(EmbCacheError, ValueError):
    """A tensor is on a device the module cannot use with its own device."""


class ShardingError(EmbCacheError):
    """A sharded collection was given groups, placements, plans or tables it cannot work
    with; the message names the table or argument and why."""


class CollectiveError(EmbCacheError):
    """A step that every rank takes together failed on one or more ranks with an error this
    rank cannot rebuild by type (see torchrec_embcache.collective): raised on every rank with
    the same message, naming the failing ranks and their errors."""
