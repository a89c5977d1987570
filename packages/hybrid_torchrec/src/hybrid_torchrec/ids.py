"""Host id processing: de-duplication, id -> row mapping and bucketization.

Everything here runs in the C++ core on a pool of host threads (``set_num_threads``; default
``HYBRID_TORCHREC_NUM_THREADS`` or the CPUs the process may use) with the GIL released, and
gives the same result for any number of threads. Ids are int64 values of any kind: negative
ids and ids near the int64 limits are ordinary keys (int32 ids are widened). Tensors on
another device are copied to the host; results are CPU tensors.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from hybrid_torchrec._ext import _C
from hybrid_torchrec.eviction import LFU, LRU, EvictionPolicy, policy_code


def set_num_threads(n: int) -> None:
    """Threads of the host pool, the calling thread included."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"number of threads must be a positive integer, got {n!r}")
    _C.set_num_threads(n)


def get_num_threads() -> int:
    return int(_C.get_num_threads())


def _host_ids(ids: torch.Tensor, name: str = "ids") -> torch.Tensor:
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(ids).__name__}")
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name} must be int64 or int32, got {ids.dtype}")
    if ids.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(ids.shape)}")
    return ids.to(device="cpu", dtype=torch.int64).contiguous()


class Unique(NamedTuple):
    """values[inverse] == ids. counts is None unless asked for."""

    values: torch.Tensor
    inverse: torch.Tensor
    counts: torch.Tensor | None


def unique(ids: torch.Tensor, *, sorted: bool = False, return_counts: bool = False) -> Unique:
    """The distinct ids with the inverse (and occurrence counts).

    Distinct ids come in order of first occurrence; with ``sorted=True`` in ascending order,
    then the result equals ``torch.unique(ids, sorted=True, return_inverse=True,
    return_counts=...)``.
    """
    values, inverse, counts = _C.unique(_host_ids(ids), sorted, return_counts)
    return Unique(values, inverse, counts)


class MapResult(NamedTuple):
    """What one batch did to a table's mapping.

    unique_ids: the batch's distinct ids, in order of first occurrence.
    rows: the row of each distinct id (-1: unmapped, only for read-only lookups).
    counts: occurrences of each distinct id in the batch.
    inverse: for each input id, its index in unique_ids (so rows[inverse] is the row per id).
    evicted_ids, evicted_rows: ids that lost their rows to this batch (to its new ids, or
        expired by the policy's ``ttl_steps``), and those rows, which new ids of this batch now
        hold or which are free. Reset their embedding and optimiser state before use.
    num_new: distinct ids that got a row in this batch.
    """

    unique_ids: torch.Tensor
    rows: torch.Tensor
    counts: torch.Tensor
    inverse: torch.Tensor
    evicted_ids: torch.Tensor
    evicted_rows: torch.Tensor
    num_new: int

    def rows_per_id(self) -> torch.Tensor:
        return self.rows.index_select(0, self.inverse)


class MappingState(NamedTuple):
    """A mapper's state, as checkpoints hold it: entry i maps ids[i] to rows[i]; counts and
    last_used are the number of batches the id occurred in and the step of the last one.
    Entries are in eviction order (next victim first), or by row without a policy.

    Use statistics are what LRU and LFU order by, and only tables with a policy keep them (it
    costs a random memory access per distinct id and batch): a table without a policy records
    count 1 and the step of insertion, and keeps the values a loaded state brings."""

    ids: torch.Tensor
    rows: torch.Tensor
    counts: torch.Tensor
    last_used: torch.Tensor
    step: int


class IdMapper:
    """Maps arbitrary int64 ids to the rows 0..capacity-1 of one table (or table shard).

    Rows are handed out as new ids arrive, smallest free row first. When all ``capacity``
    rows are taken, a batch with new ids raises :class:`CapacityError` (``eviction=None``) or
    takes the rows of the ids its eviction policy gives up (:class:`EvictionPolicy`). A
    failing batch changes nothing. Calls are serialised per mapper; separate mappers can be
    used from separate threads.

    Args:
        capacity: rows of the table (1 .. 2^31-1).
        eviction: None or EvictionPolicy("lru" | "lfu", protect_batches=..., ttl_steps=...).
        name: the table's name, used in error messages.
    """

    def __init__(
        self, capacity: int, eviction: EvictionPolicy | None = None, *, name: str = "table"
    ) -> None:
        code, protect, ttl = policy_code(eviction)
        self._eviction = eviction
        self._impl = _C.IdMapper(int(capacity), code, protect, ttl, name)

    @property
    def capacity(self) -> int:
        return int(self._impl.capacity)

    @property
    def size(self) -> int:
        """Ids currently mapped."""
        return int(self._impl.size)

    @property
    def step(self) -> int:
        """Inserting batches so far (the clock of LRU/LFU, protect_batches and ttl_steps)."""
        return int(self._impl.step)

    @property
    def name(self) -> str:
        return str(self._impl.name)

    @property
    def eviction(self) -> EvictionPolicy | None:
        return self._eviction

    @property
    def memory_bytes(self) -> int:
        """Host memory held by the mapping and its batch workspace."""
        return int(self._impl.memory_bytes)

    def map(self, ids: torch.Tensor, *, insert: bool = True) -> MapResult:
        """De-duplicates a batch and maps its ids to rows.

        With ``insert`` (training) ids without a row get one and the batch counts as a step;
        without (evaluation) nothing changes and unmapped ids get row -1.
        """
        return MapResult(*self._impl.map(_host_ids(ids), insert))

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        """The row of each id, -1 where unmapped. Changes nothing."""
        return self._impl.lookup(_host_ids(ids))

    def remove(self, ids: torch.Tensor) -> torch.Tensor:
        """Unmaps ids; returns the row each had (-1 where unmapped). The rows become free
        and are handed out again (smallest first): reset them like evicted rows."""
        return self._impl.remove(_host_ids(ids))

    def state(self) -> MappingState:
        ids, rows, counts, last_used, step = self._impl.export_state()
        return MappingState(ids, rows, counts, last_used, int(step))

    def load_state(self, state: MappingState) -> None:
        """Replaces the mapping. Entries may come from a mapper with another policy (they are
        ordered by this mapper's policy, keeping the given order among equals); everything is
        validated first and nothing changes on error (ValueError)."""
        ids, rows, counts, last_used, step = state

        def arg(t: torch.Tensor, name: str) -> torch.Tensor:
            if not isinstance(t, torch.Tensor) or t.dtype.is_floating_point or t.dim() != 1:
                raise ValueError(f"mapping state: {name} must be a 1-D integer tensor")
            return t.to(device="cpu", dtype=torch.int64).contiguous()

        self._impl.load_state(
            arg(ids, "ids"),
            arg(rows, "rows"),
            arg(counts, "counts"),
            arg(last_used, "last_used"),
            int(step),
        )

    def clear(self) -> None:
        self._impl.clear()

    # Copies and pickles carry the configuration and the state (deepcopy of a module, or a
    # module sent to another process, must not share or lose the mapping).
    def __getstate__(self) -> dict[str, object]:
        return {
            "capacity": self.capacity,
            "eviction": self._eviction,
            "name": self.name,
            "state": self.state(),
        }

    def __setstate__(self, data: dict[str, object]) -> None:
        self.__init__(data["capacity"], data["eviction"], name=data["name"])  # type: ignore[misc]
        self.load_state(data["state"])  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return (
            f"IdMapper(name={self.name!r}, capacity={self.capacity}, size={self.size}, "
            f"eviction={self._eviction!r})"
        )


def map_tables(
    mappers: list[IdMapper], ids: list[torch.Tensor], *, insert: bool = True
) -> list[MapResult]:
    """Maps one batch per mapper, the tables in parallel (one task per table).

    Each table is atomic on its own: when one raises, tables that succeeded keep their new
    mappings.
    """
    if len(mappers) != len(ids):
        raise ValueError(f"{len(mappers)} mappers but {len(ids)} id batches")
    results = _C.map_tables([m._impl for m in mappers], [_host_ids(t) for t in ids], insert)
    return [MapResult(*r) for r in results]


class Bucketized(NamedTuple):
    """lengths: [buckets * bags] as [bucket][feature][sample]; ids grouped by bucket, then
    feature, then sample; weights in the same order; permute[i]: output position of input id
    i (when asked for)."""

    lengths: torch.Tensor
    ids: torch.Tensor
    weights: torch.Tensor | None
    permute: torch.Tensor | None


def bucketize(
    lengths: torch.Tensor,
    ids: torch.Tensor,
    num_buckets: int,
    *,
    routing: str = "hash",
    block_sizes: torch.Tensor | None = None,
    num_features: int = 1,
    batch_size_per_feature: list[int] | None = None,
    weights: torch.Tensor | None = None,
    keep_ids: bool | None = None,
    return_permute: bool = False,
) -> Bucketized:
    """Splits a keyed jagged batch into ``num_buckets`` buckets (ranks) for row-wise sharding.

    The layout is that of fbgemm's ``block_bucketize_sparse_features``, which torchrec's
    row-wise input distribution sends through its all-to-all.

    Args:
        lengths: bag lengths as [feature][sample] (int32 or int64; the output keeps the dtype).
        ids: the ids of the bags, concatenated (int32 or int64; the output keeps the dtype).
        routing: "hash": bucket r takes the ids whose 64-bit hash lies in [r/W, (r+1)/W) of
            the hash range (balanced for any ids; ids are kept); "block": fbgemm's rule with
            ``block_sizes`` per feature: ids below block*W go to id // block, others to
            id % W, ids read as unsigned numbers of their width (so negative ids land by the
            modulo rule), and become id % block (or id // W) unless ``keep_ids``.
        num_features / batch_size_per_feature: how lengths splits into features (equal batch
            sizes, or one per feature).
        weights: per-id weights (any dtype), permuted like the ids.
        return_permute: also return the output position of each input id (for sequence
            embeddings, which must be put back in input order).
    """
    if not isinstance(num_buckets, int) or num_buckets < 1:
        raise ValueError(f"num_buckets must be a positive integer, got {num_buckets!r}")
    if routing not in ("hash", "block"):
        raise ValueError(f"routing must be 'hash' or 'block', got {routing!r}")
    if lengths.dtype not in (torch.int64, torch.int32) or lengths.dim() != 1:
        raise TypeError("lengths must be a 1-D int32 or int64 tensor")
    host_lengths = lengths.to(device="cpu", dtype=torch.int64).contiguous()
    host_ids = _host_ids(ids)
    if batch_size_per_feature is None:
        if num_features < 1 or host_lengths.numel() % num_features:
            raise ValueError(
                f"{host_lengths.numel()} lengths do not split into {num_features} features"
            )
        batch_size_per_feature = [host_lengths.numel() // num_features] * num_features
    sizes = [int(b) for b in batch_size_per_feature]
    if sum(sizes) != host_lengths.numel():
        raise ValueError(
            f"batch sizes per feature add up to {sum(sizes)}, not to the "
            f"{host_lengths.numel()} lengths"
        )
    host_blocks: torch.Tensor | None = None
    if routing == "block":
        if block_sizes is None:
            raise ValueError("block routing needs block_sizes (one per feature)")
        host_blocks = torch.as_tensor(block_sizes).to(device="cpu", dtype=torch.int64).contiguous()
        keep = False if keep_ids is None else keep_ids
    else:
        if keep_ids is False:
            raise ValueError("hash routing always keeps the original ids")
        keep = True
    if weights is not None and weights.shape[:1] != host_ids.shape:
        raise ValueError(f"{weights.shape[0]} weights for {host_ids.numel()} ids")
    want_permute = return_permute or weights is not None
    out_lengths, out_ids, permute = _C.bucketize(
        host_lengths,
        host_ids,
        num_buckets,
        sizes,
        0 if routing == "block" else 1,
        host_blocks,
        keep,
        ids.dtype == torch.int32,
        want_permute,
    )
    out_weights = None
    if weights is not None:
        host_weights = weights.to("cpu")
        out_weights = torch.empty_like(host_weights).index_copy_(0, permute, host_weights)
    return Bucketized(
        out_lengths.to(lengths.dtype),
        out_ids.to(ids.dtype),
        out_weights,
        permute if return_permute else None,
    )


__all__ = [
    "LFU",
    "LRU",
    "Bucketized",
    "EvictionPolicy",
    "IdMapper",
    "MapResult",
    "MappingState",
    "Unique",
    "bucketize",
    "get_num_threads",
    "map_tables",
    "set_num_threads",
    "unique",
]
