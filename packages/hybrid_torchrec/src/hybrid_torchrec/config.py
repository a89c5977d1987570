"""Table configs of the Hash collections: torchrec's configs plus what a hashed table needs.

``num_embeddings`` keeps torchrec's meaning, the rows the table holds in device memory, and is
therefore the capacity of the id -> row mapping: the planner and the row-wise sharders size
and split tables by it, so a second number could only disagree with it. ``capacity`` is a
read-only name for it. What the configs add is what happens when the rows run out.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig

from hybrid_torchrec.eviction import EvictionPolicy


@dataclass
class _HashOptions:
    eviction: EvictionPolicy | None = None


# The options class comes first among the bases so that its fields come after torchrec's
# (dataclass fields follow the reversed MRO): torchrec's positional arguments stay as they are.
@dataclass
class HashEmbeddingBagConfig(_HashOptions, EmbeddingBagConfig):
    """torchrec's EmbeddingBagConfig for a table fed arbitrary int64 ids.

    eviction: None (a batch with new ids for a full table raises CapacityError) or
        EvictionPolicy("lru" | "lfu", protect_batches=..., ttl_steps=...): the ids it gives up
        (and, with ``ttl_steps``, those unseen for longer) lose their rows, which are then
        re-initialised with ``init_fn``.
    """

    @property
    def capacity(self) -> int:
        """Ids the table can map at once: its rows, ``num_embeddings``."""
        return self.num_embeddings


@dataclass
class HashEmbeddingConfig(_HashOptions, EmbeddingConfig):
    """torchrec's EmbeddingConfig for a table fed arbitrary int64 ids (see
    HashEmbeddingBagConfig)."""

    @property
    def capacity(self) -> int:
        return self.num_embeddings
