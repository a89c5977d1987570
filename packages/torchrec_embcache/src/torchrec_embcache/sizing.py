"""Sizing device caches from a sample of batches.

For each table: the working set (distinct ids over the sample), the fewest slots a batch
needs (its distinct ids), and the hit rate a cache of S slots would have, for every S at
once. Hit rate is defined as in the metrics (counters.py): over training batches, the share
of a batch's distinct ids whose row is already resident when the batch is planned.

Why every S at once: the cache (csrc/cache_planner.cpp) keeps the S most recently used rows,
where after a batch its rows are the most recent in ascending id order. That recency order
does not depend on S, so an id is a hit in a cache of S slots exactly when fewer than S
other ids are more recent than it, i.e. ranked above it by (last batch seen, id). One pass
over the sample records that rank (the id's "stack distance") for every lookup; the hit
rate of S slots is the share of lookups with a distance below S.

Assumptions: every id gets a row (no admission threshold: with one, usable slots are one
fewer and ids below the threshold take no slot), and no row is evicted from the host table
while resident in the sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch


@dataclass
class TableSizing:
    """What a sample of batches says about one table's cache."""

    working_set: int  # distinct ids over the sample
    min_slots: int  # the most distinct ids of one batch: fewer slots cannot run the sample
    lookups: int  # distinct ids summed over batches
    # Sorted stack distances of the lookups that were seen before (first sightings are
    # misses for every size).
    distances: torch.Tensor

    def hits(self, slots: int) -> int:
        """Lookups a cache of ``slots`` usable slots would serve from the device."""
        return int(torch.searchsorted(self.distances, slots, right=False))

    def hit_rate(self, slots: int) -> float:
        """Share of lookups that would hit with ``slots`` usable slots (nan: no lookups)."""
        if slots < self.min_slots:
            raise ValueError(
                f"{slots} slots cannot hold a batch of the sample: one batch has "
                f"{self.min_slots} distinct ids"
            )
        return self.hits(slots) / self.lookups if self.lookups else float("nan")

    def slots_for(self, hit_rate: float) -> int:
        """The fewest usable slots reaching ``hit_rate`` on the sample (at least min_slots);
        ValueError if no size reaches it (first sightings always miss)."""
        if not 0 <= hit_rate <= 1:
            raise ValueError(f"hit_rate must be in [0, 1], got {hit_rate}")
        need = int(torch.ceil(torch.tensor(hit_rate * self.lookups, dtype=torch.float64)))
        if need > self.distances.numel():
            best = self.distances.numel() / self.lookups if self.lookups else 0.0
            raise ValueError(
                f"no cache size reaches a hit rate of {hit_rate}: of {self.lookups} lookups "
                f"only {self.distances.numel()} see an id seen before (at most {best:.4f})"
            )
        slots = int(self.distances[need - 1]) + 1 if need > 0 else 0
        return max(slots, self.min_slots)


def _distances(batches: Iterable[torch.Tensor]) -> TableSizing:
    keys = torch.empty(0, dtype=torch.int64)  # every id seen so far, ascending
    seen_at = torch.empty(0, dtype=torch.int64)  # the last batch each was seen in
    distances: list[torch.Tensor] = []
    lookups = min_slots = 0
    for t, ids in enumerate(batches):
        uniq = torch.unique(ids.reshape(-1).to("cpu", torch.int64))
        lookups += uniq.numel()
        min_slots = max(min_slots, uniq.numel())
        n = keys.numel()
        if n:
            # Recency: (last batch, id) ascending; keys are sorted, so a stable sort by the
            # batch breaks ties by id. Position = how many ids rank above.
            order = torch.argsort(seen_at, stable=True)
            position = torch.empty_like(order)
            position[order] = torch.arange(n - 1, -1, -1)
            at = torch.searchsorted(keys, uniq).clamp(max=n - 1)
            known = keys[at] == uniq
            distances.append(position[at[known]])
        keys, inverse = torch.unique(torch.cat([keys, uniq]), return_inverse=True)
        merged = torch.empty(keys.numel(), dtype=torch.int64)
        merged[inverse[:n]] = seen_at
        merged[inverse[n:]] = t
        seen_at = merged
    dist = (
        torch.sort(torch.cat(distances)).values if distances else torch.empty(0, dtype=torch.int64)
    )
    return TableSizing(
        working_set=keys.numel(), min_slots=min_slots, lookups=lookups, distances=dist
    )


def cache_sizing(
    batches: Iterable[Mapping[str, torch.Tensor]],
    features_of: Mapping[str, list[str]] | None = None,
) -> dict[str, TableSizing]:
    """Per table, the working set and hit rates of a sample of training batches.

    ``batches``: each a mapping from feature name to its ids (a ``KeyedJaggedTensor``'s
    ``to_dict()`` values work, as does ``{feature: ids}``). ``features_of``: table name ->
    its features (as the tables' ``feature_names``; the ids of a table's features form one
    lookup, as the collections do); by default every feature is its own table.
    """
    per_table: dict[str, list[torch.Tensor]] = {}
    for batch in batches:
        values = {k: v if isinstance(v, torch.Tensor) else v.values() for k, v in batch.items()}
        groups = features_of if features_of is not None else {k: [k] for k in values}
        for table, names in groups.items():
            missing = [n for n in names if n not in values]
            if missing:
                raise KeyError(f"table {table!r}: features {missing} are not in the batch")
            per_table.setdefault(table, []).append(
                torch.cat([values[n].reshape(-1) for n in names])
            )
    return {table: _distances(ids) for table, ids in per_table.items()}


def collection_features(collection: object) -> dict[str, list[str]]:
    """Table name -> feature names of an EmbCache collection (or any torchrec collection)."""
    configs = getattr(collection, "embedding_bag_configs", None) or collection.embedding_configs
    return {c.name: list(c.feature_names) for c in configs()}
