"""The types of hybrid_torchrec's distributed part, apart from its implementations (torchrec's
split: ``torchrec.distributed.types`` beside the sharders and sharded modules).

What a plan may ask of a hybrid sharder (the sharding types), what one forward's host half
hands to its device half (:class:`HostWork`), and the errors the distributed modules raise.
The implementations (``sharders``, ``host_dist``, ``pipeline``, ``checkpoint``) import these
from here; the names stay importable from the modules that defined them before.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torchrec.distributed.types import ParameterSharding, ShardingType

from hybrid_torchrec.errors import HybridTorchrecError

__all__ = [
    "CW",
    "DP",
    "EBC_SHARDING_TYPES",
    "HASH_SHARDING_TYPES",
    "PLAIN_SHARDING_TYPES",
    "RW",
    "TW",
    "TWRW",
    "HostEnvError",
    "HostWork",
    "Plan",
    "Resets",
    "UnknownIdError",
    "UnsupportedShardingError",
]

TW = ShardingType.TABLE_WISE.value
RW = ShardingType.ROW_WISE.value
TWRW = ShardingType.TABLE_ROW_WISE.value
CW = ShardingType.COLUMN_WISE.value
DP = ShardingType.DATA_PARALLEL.value

# Table-row-wise runs torchrec's input distribution on the host group as it stands (blocks of
# row numbers within each node; the intra- and cross-node groups serve only the device's output
# distribution). torchrec's EmbeddingCollection sharder does not offer it.
EBC_SHARDING_TYPES = (DP, TW, CW, RW, TWRW)
PLAIN_SHARDING_TYPES = (DP, TW, CW, RW)
HASH_SHARDING_TYPES = (TW, CW, RW)

Plan = dict[str, ParameterSharding]
# (table, rows of this rank's shards) whose ids were evicted by a batch's mapping.
Resets = list[tuple[str, torch.Tensor]]


class HostWork(NamedTuple):
    """The host half of one forward (``host_work`` of a hybrid sharded collection): torchrec's
    context, the batch on the device, and the rows the batch took from evicted ids (reset
    before its lookup)."""

    ctx: Any
    dist_input: Any
    resets: Resets


class HostEnvError(HybridTorchrecError):
    """The host environment is not a ShardingEnv over a gloo process group."""


class UnsupportedShardingError(HybridTorchrecError):
    """A plan asks a hybrid sharder for a sharding type or table option it does not offer."""


class UnknownIdError(HybridTorchrecError):
    """A sharded table in evaluation mode received ids it has no row for."""
