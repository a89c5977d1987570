"""Exception types of hybrid_torchrec.

Errors of the C++ core arrive as these classes. Invalid arguments raise the built-in
TypeError (wrong dtype) or ValueError (bad value).
"""

from __future__ import annotations


class HybridTorchrecError(RuntimeError):
    """Base class of the package's own errors."""


class CapacityError(HybridTorchrecError):
    """A table cannot take a batch's new ids.

    Raised when the table is full and has no eviction policy, when every row the policy could
    give up is protected, or when one batch has more distinct ids than the table has rows.
    The message names the table, its capacity and the numbers involved. Nothing has changed
    when this is raised: the mapping is as before the batch.
    """


class CollectiveError(HybridTorchrecError):
    """A step that every rank takes together failed on one or more ranks with an error this
    rank cannot rebuild by type (see hybrid_torchrec.distributed.collective): raised on every
    rank with the same message, naming the failing ranks and their errors."""


class CheckpointError(HybridTorchrecError, ValueError):
    """A checkpoint is missing, damaged (a file's size or CRC-32C differs from its manifest's
    record) or does not fit the module it is loaded into. The message names the file or the
    table; nothing has been loaded when it is raised."""
