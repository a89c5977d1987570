"""Independent references for the hybrid_torchrec tests, in plain Python.

RefMapper is the documented mapping semantics written the obvious way (a dict id -> row, a
heap of free rows, victims chosen by sorting every candidate), with none of the core's
partitions, buckets or linked lists. RefCollection computes what a Hash collection should
return from RefMappers and float64 copies of its weights with torch's F.embedding_bag /
F.embedding. The hash routing reference recomputes the documented hash with Python integers.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torchrec.modules.embedding_configs import PoolingType
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

MASK64 = (1 << 64) - 1


class RefCapacityError(Exception):
    pass


@dataclass
class RefResult:
    unique_ids: list[int]
    rows: list[int]
    counts: list[int]
    inverse: list[int]
    evicted_ids: list[int]
    evicted_rows: list[int]
    num_new: int


@dataclass
class RefMapper:
    capacity: int
    policy: str | None = None  # None, "lru", "lfu"
    protect_batches: int = 1
    ttl_steps: int = 0  # 0: none; else ids unseen for more than this many steps expire
    row_of: dict[int, int] = field(default_factory=dict)
    count: dict[int, int] = field(default_factory=dict)
    last_used: dict[int, int] = field(default_factory=dict)
    touched: dict[int, int] = field(default_factory=dict)  # global touch sequence number
    free: list[int] = field(default_factory=list)  # heap
    high_water: int = 0
    step: int = 0
    clock: int = 0

    def _order_key(self, i: int) -> tuple[int, int]:
        if self.policy == "lfu":
            return (self.count[i], self.touched[i])
        return (0, self.touched[i])

    def _touch(self, i: int) -> None:
        self.clock += 1
        self.touched[i] = self.clock

    def map(self, ids: list[int], insert: bool = True) -> RefResult:
        unique = list(dict.fromkeys(ids))
        index = {u: k for k, u in enumerate(unique)}
        counts = [0] * len(unique)
        for i in ids:
            counts[index[i]] += 1
        inverse = [index[i] for i in ids]
        if not insert:
            rows = [self.row_of.get(u, -1) for u in unique]
            return RefResult(unique, rows, counts, inverse, [], [], 0)
        if len(unique) > self.capacity:
            raise RefCapacityError("batch larger than the table")
        misses = [u for u in unique if u not in self.row_of]
        step = self.step + 1
        batch = set(unique)
        expired = sorted(
            (
                i
                for i in self.row_of
                if self.ttl_steps and i not in batch and step - self.last_used[i] > self.ttl_steps
            ),
            key=lambda i: self.row_of[i],
        )
        available = len(self.free) + self.capacity - self.high_water + len(expired)
        need = len(misses) - available
        victims: list[int] = []
        if need > 0:
            if self.policy is None:
                raise RefCapacityError("full")
            candidates = [
                i
                for i in self.row_of
                if i not in batch
                and i not in expired
                and self.last_used[i] + self.protect_batches <= step
            ]
            candidates.sort(key=self._order_key)
            if len(candidates) < need:
                raise RefCapacityError("not enough evictable rows")
            victims = candidates[:need]
        self.step = step
        evicted_ids: list[int] = []
        evicted_rows: list[int] = []
        for i in expired:
            row = self.row_of.pop(i)
            heapq.heappush(self.free, row)
            for d in (self.count, self.last_used, self.touched):
                del d[i]
            evicted_ids.append(i)
            evicted_rows.append(row)
        for u in unique:
            # Only tables with a policy keep use statistics; without one an id keeps count 1
            # and the step it was inserted at.
            if u in self.row_of and self.policy is not None:
                self.count[u] += 1
                self.last_used[u] = step
                self._touch(u)
        victim_iter = iter(victims)
        for u in misses:
            if self.free:
                row = heapq.heappop(self.free)
            elif self.high_water < self.capacity:
                row = self.high_water
                self.high_water += 1
            else:
                old = next(victim_iter)
                row = self.row_of.pop(old)
                for d in (self.count, self.last_used, self.touched):
                    del d[old]
                evicted_ids.append(old)
                evicted_rows.append(row)
            self.row_of[u] = row
            self.count[u] = 1
            self.last_used[u] = step
            self._touch(u)
        rows = [self.row_of[u] for u in unique]
        return RefResult(unique, rows, counts, inverse, evicted_ids, evicted_rows, len(misses))

    def remove(self, ids: list[int]) -> list[int]:
        before = {i: self.row_of.get(i, -1) for i in ids}
        for i in dict.fromkeys(ids):
            if i in self.row_of:
                heapq.heappush(self.free, self.row_of.pop(i))
                for d in (self.count, self.last_used, self.touched):
                    del d[i]
        return [before[i] for i in ids]

    def state(self) -> tuple[list[int], list[int], list[int], list[int], int]:
        """(ids, rows, counts, last_used, step) in the documented export order."""
        if self.policy is None:
            order = sorted(self.row_of, key=lambda i: self.row_of[i])
        else:
            order = sorted(self.row_of, key=self._order_key)
        return (
            order,
            [self.row_of[i] for i in order],
            [self.count[i] for i in order],
            [self.last_used[i] for i in order],
            self.step,
        )


def fmix64(x: int) -> int:
    """murmur3's 64-bit finaliser, as documented for hash routing."""
    x &= MASK64
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK64
    return x ^ (x >> 33)


def hash_bucket(i: int, num_buckets: int) -> int:
    """Bucket of id i under hash routing: its hash's range among num_buckets equal ranges."""
    return (fmix64(i) * num_buckets) >> 64


class RefCollection:
    """The collection computed the plain way: dict mappings and float64 weights."""

    def __init__(self, module: torch.nn.Module, policies: dict[str, str | None] | None = None):
        self.configs = list(
            module.embedding_bag_configs()
            if hasattr(module, "embedding_bag_configs")
            else module.embedding_configs()
        )
        policies = policies or {}
        self.mappers = {
            c.name: RefMapper(c.num_embeddings, policies.get(c.name)) for c in self.configs
        }
        self.weights = {
            name: w.detach().to(torch.float64).clone().requires_grad_(True)
            for name, w in module.table_weights().items()
        }

    def table_ids(self, kjt: KeyedJaggedTensor, names: list[str]) -> list[int]:
        d = kjt.to_dict()
        return [i for name in names for i in d[name].values().tolist()]

    def map(self, kjt: KeyedJaggedTensor, train: bool) -> dict[str, torch.Tensor]:
        rows = {}
        for c in self.configs:
            r = self.mappers[c.name].map(self.table_ids(kjt, c.feature_names), insert=train)
            per_id = [r.rows[k] for k in r.inverse]
            rows[c.name] = torch.tensor(per_id, dtype=torch.int64)
            if r.evicted_rows:
                with torch.no_grad():
                    self.weights[c.name][torch.tensor(r.evicted_rows)] = 0.25  # init_fn below
        return rows

    def _feature_rows(self, kjt: KeyedJaggedTensor, train: bool) -> Iterator[Any]:
        """(table config, the feature's jagged tensor, its rows; -1 for an unknown id) for every
        feature, tables in order: a table's rows come back for its features in order."""
        rows = self.map(kjt, train)
        d = kjt.to_dict()
        for c in self.configs:
            start = 0
            for name in c.feature_names:
                jt = d[name]
                n = jt.values().numel()
                yield c, jt, rows[c.name][start : start + n]
                start += n

    def pooled(self, kjt: KeyedJaggedTensor, weighted: bool, train: bool) -> torch.Tensor:
        out = []
        for c, jt, r in self._feature_rows(kjt, train):
            known = (r >= 0).to(torch.float64)
            w = known if not weighted else known * jt.weights().to(torch.float64)
            pooled = F.embedding_bag(
                r.clamp(min=0),
                self.weights[c.name],
                jt.offsets(),
                mode="sum",
                per_sample_weights=w,
                include_last_offset=True,
            )
            if c.pooling == PoolingType.MEAN:
                pooled = pooled / jt.lengths().clamp(min=1).to(torch.float64).unsqueeze(1)
            out.append(pooled)
        return torch.cat(out, dim=1)

    def sequence(self, kjt: KeyedJaggedTensor, train: bool) -> list[torch.Tensor]:
        out = []
        for c, _jt, r in self._feature_rows(kjt, train):
            e = F.embedding(r.clamp(min=0), self.weights[c.name])
            out.append(e * (r >= 0).to(torch.float64).unsqueeze(1))
        return out


def close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """float32 results against the float64 reference."""
    torch.testing.assert_close(actual.to(torch.float64), expected.detach(), rtol=2e-5, atol=2e-6)


def constant_init(t: torch.Tensor) -> torch.Tensor:
    return t.fill_(0.25)


def backward_both(
    out: torch.Tensor, expected: torch.Tensor, opt: torch.optim.Optimizer, g: torch.Generator
) -> None:
    """Steps the module under test (through ``opt``) and leaves the float64 reference's gradients
    in its weights, both driven by the same random upstream gradient of their outputs."""
    grad = torch.randn(out.shape, generator=g, dtype=torch.float64)
    opt.zero_grad()
    (out * grad.float()).sum().backward()
    opt.step()
    (expected * grad).sum().backward()


def sgd_step_both(
    out: torch.Tensor,
    expected: torch.Tensor,
    opt: torch.optim.Optimizer,
    ref: RefCollection,
    lr: float,
    g: torch.Generator,
) -> None:
    """One SGD step of the module under test and of the float64 reference."""
    backward_both(out, expected, opt, g)
    with torch.no_grad():
        for w in ref.weights.values():
            w -= lr * w.grad
            w.grad = None
