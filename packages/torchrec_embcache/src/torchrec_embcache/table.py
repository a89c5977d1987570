"""EmbeddingTable: one dynamic table, optionally with a device cache.

This is the engine under every module of the package. Per batch it turns raw int64 ids into
``(weights, inverse)``: ``weights`` holds one row per distinct id, on the compute device,
and ``inverse`` maps every position of the batch to its row. The module then runs torch's
own embedding / embedding_bag kernel on them, so pooling and gradient accumulation are
exactly torch's; a hook on ``weights`` receives the per-row gradient and applies the fused
sparse optimiser update to exactly the touched rows.

Two storage modes:

- host table only (``cache_slots=None``): rows are gathered from the host table per batch and
  the update is applied to the host rows. Best on the CPU.
- device cache (``cache_slots=N``): N rows (with optimiser state) live on the device; the
  host plans swaps per batch (see csrc/cache_planner.h), the device executes them, and the
  update runs on the device rows. The next batch's plan can be computed while the current
  one trains (``prefetch``).

Both modes give identical results on the CPU: the same update kernel runs on the same
values, and swapping moves rows and optimiser state bit for bit.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import torch

from torchrec_embcache._ext import _C
from torchrec_embcache.config import (
    Admission,
    EvictionPolicy,
    Initializer,
    Normal,
    Optimizer,
    SparseAdagrad,
    SparseAdam,
    SparseSGD,
    make_table_config,
    optimizer_name,
)
from torchrec_embcache.counters import CacheCounters
from torchrec_embcache.errors import CacheStateError, DeviceError
from torchrec_embcache.rowdtype import (
    check_row_dtype,
    pack_weights,
    round_once,
    unpack_weights,
)

_CPU = torch.device("cpu")


class TableOptions(TypedDict, total=False):
    """EmbeddingTable's keyword options; the modules built on a table pass them through, so
    their defaults and meaning are EmbeddingTable's (see its docstring)."""

    optimizer: Optimizer | None
    initializer: Initializer | None
    seed: int
    admission: Admission | None
    eviction: EvictionPolicy | None
    cache_slots: int | None
    device: torch.device | str | None
    shard_bits: int
    row_dtype: torch.dtype
    stochastic_rounding: bool


@dataclass
class Lookup:
    """Rows of the distinct ids of a batch (``weights``) and, per position, which row."""

    weights: torch.Tensor
    inverse: torch.Tensor


def as_ids(ids: torch.Tensor, what: str = "ids") -> torch.Tensor:
    """Validates ids and returns them as a contiguous 1-D int64 CPU tensor."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(ids).__name__}")
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(
            f"{what} must be an integer tensor (torch.int64, or torch.int32), got {ids.dtype}"
        )
    return ids.reshape(-1).to(device=_CPU, dtype=torch.int64).contiguous()


class EmbeddingTable:
    """A dynamically growing embedding table with an optional device cache.

    Args:
        embedding_dim: width of a row.
        optimizer: SparseSGD, SparseAdagrad or SparseAdam, applied in backward.
        initializer: initial values of a new row, a function of (seed, id).
        seed: seed of the initialiser.
        admission: optional admission policy (rows only after N sightings).
        eviction: optional eviction policy (TTL in steps, capacity).
        cache_slots: rows kept on the device; None keeps all rows in host memory only.
        device: compute device ("cpu", "npu", "meta", ...).
        shard_bits: the host table has 2**shard_bits shards (parallelism of batched calls).
        row_dtype: storage of the embeddings (torch.float32, float16 or bfloat16), on the
            host and in the device cache; optimiser state stays float32. Lookups return
            float32 values (exactly the stored ones); updates are computed in float64 and
            rounded once into the row dtype.
        stochastic_rounding: 16-bit rows only: round updates stochastically (unbiased)
            instead of to nearest even.
    """

    def __init__(
        self,
        embedding_dim: int,
        *,
        optimizer: Optimizer | None = None,
        initializer: Initializer | None = None,
        seed: int = 0,
        admission: Admission | None = None,
        eviction: EvictionPolicy | None = None,
        cache_slots: int | None = None,
        device: torch.device | str | None = None,
        shard_bits: int = 5,
        row_dtype: torch.dtype = torch.float32,
        stochastic_rounding: bool = False,
    ) -> None:
        self.optimizer: Optimizer = optimizer if optimizer is not None else SparseSGD()
        self.initializer: Initializer = initializer if initializer is not None else Normal()
        self.seed = seed
        self.admission = admission
        self.eviction = eviction
        self._config = make_table_config(
            embedding_dim, self.optimizer, self.initializer, seed, admission, eviction, shard_bits
        )
        self._config.dtype = check_row_dtype(row_dtype, stochastic_rounding)
        self._config.stochastic_rounding = stochastic_rounding
        self.row_dtype = row_dtype
        self.stochastic_rounding = stochastic_rounding
        self._host = _C.HostTable(self._config)
        if cache_slots is not None and (not isinstance(cache_slots, int) or cache_slots < 1):
            raise ValueError(f"cache_slots must be a positive integer or None, got {cache_slots!r}")
        self.cache_slots = cache_slots
        self._device = torch.device(device) if device is not None else _CPU
        self._planner: _C.CachePlanner | None = None
        self._cache: torch.Tensor | None = None
        # Per slot, the sequence number of the plan that last brought a row into it: a late
        # backward must not update a slot that meanwhile holds another id.
        self._slot_seq: torch.Tensor | None = None
        self._prefetched: deque[tuple[torch.Tensor, object]] = deque()
        # Set when executing a swap plan failed half-way: host and device copies may then
        # disagree, and every later use of the cache refuses to run rather than train on them.
        self._broken: str | None = None
        # Tests set this to run the update the way non-CPU devices do (torch operations).
        self._torch_update = False
        # Serialises the training path of this table (plans, swaps, updates).
        self._lock = threading.RLock()
        self.counters = CacheCounters()
        if cache_slots is not None and self._device.type != "meta":
            self._create_cache(self._device)

    # ------------------------------------------------------------------ properties
    @property
    def embedding_dim(self) -> int:
        return int(self._config.dim)

    @property
    def row_width(self) -> int:
        """4-byte units per stored row: embedding (in the row dtype) plus float32 state."""
        return int(self._host.row_width)

    @property
    def embedding_units(self) -> int:
        """4-byte units of a stored row taken by the embedding."""
        return int(self._host.embedding_units)

    @property
    def row_bytes(self) -> int:
        """Bytes of one stored row: embedding in the row dtype plus optimiser state."""
        return 4 * self.row_width

    @property
    def host_bytes_per_row(self) -> float:
        """Host memory per stored row, index and bookkeeping included (nan when empty)."""
        rows = len(self)
        return self.memory_bytes / rows if rows else float("nan")

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def host(self) -> _C.HostTable:
        """The C++ host table (for inspection; use the methods here to change it, and
        :meth:`embeddings` to read values into a buffer)."""
        return self._host

    def __len__(self) -> int:
        """Rows stored (admitted ids)."""
        return int(self._host.size)

    @property
    def step(self) -> int:
        """Training batches seen."""
        return int(self._host.step)

    @property
    def memory_bytes(self) -> int:
        """Host memory held by the table (rows, index, bookkeeping)."""
        return int(self._host.memory_bytes)

    @property
    def learning_rate(self) -> float:
        return float(self._host.learning_rate)

    @learning_rate.setter
    def learning_rate(self, lr: float) -> None:
        if not lr > 0:
            raise ValueError(f"learning rate must be positive, got {lr!r}")
        self._host.learning_rate = float(lr)

    # ------------------------------------------------------------------ device
    def _create_cache(self, device: torch.device) -> None:
        assert self.cache_slots is not None
        self._planner = _C.CachePlanner(self._host, self.cache_slots)
        self._cache = torch.zeros(self.cache_slots, self.row_width, device=device)
        if self._planner.default_slot >= 0:
            assert self.admission is not None
            default = torch.full((1, self.embedding_dim), self.admission.default_value)
            self._cache[self._planner.default_slot, : self.embedding_units] = pack_weights(
                default, self.row_dtype
            )[0].to(device)
        self._slot_seq = torch.zeros(self.cache_slots, dtype=torch.int64)

    def to(self, device: torch.device | str) -> EmbeddingTable:
        """Moves the compute device (and the cache). The host table stays in host memory;
        on "meta" only shapes are computed and the cache is written back and released."""
        device = torch.device(device)
        with self._lock:
            if device == self._device:
                return self
            if self.cache_slots is not None:
                if device.type == "meta":
                    self.flush()
                    self._planner = None
                    self._cache = None
                    self._slot_seq = None
                elif self._cache is None:
                    self._create_cache(device)
                else:
                    self._require_no_prefetch("moving the device cache")
                    self._cache = self._cache.to(device)
            self._device = device
        return self

    def _require_no_prefetch(self, what: str) -> None:
        if self._prefetched:
            raise CacheStateError(
                f"{what} is not possible while {len(self._prefetched)} prefetched batch(es) "
                "have not run; run their forward passes first"
            )

    def check_ids_device(self, t: torch.Tensor, what: str = "ids") -> None:
        """Ids may be on the CPU (they are hashed there) or on the module's device."""
        if t.device.type == "cpu" or t.device == self._device:
            return
        if t.device.type == self._device.type and self._device.index is None:
            return
        raise DeviceError(
            f"{what} are on {t.device} but this embedding computes on {self._device}; move "
            f"them to {self._device} or to the CPU"
        )

    # ------------------------------------------------------------------ lookups
    def lookup(self, ids: torch.Tensor, train: bool) -> Lookup:
        """Rows of the distinct ids in ``ids`` (1-D int64 CPU) and the inverse map.

        ``train``: count sightings, create rows, apply eviction, and (if autograd records)
        attach the optimiser update to ``weights``'s gradient. Otherwise read-only: ids
        without a row read their initial values (or the admission default).
        """
        if self._device.type == "meta":
            raise CacheStateError("a table on the meta device holds no values to look up")
        if train:
            with self._lock:
                if self._planner is None:
                    return self._train_host(ids)
                return self._train_cached(ids)
        if self._planner is None:
            _uniq, inverse, _has, rows, _ev, _step = self._host.prepare(ids, False, True, -1)
            return Lookup(rows.to(self._device), inverse.to(self._device))
        with self._lock:  # a training thread may be swapping rows of the cache tensor
            return self._eval_cached(ids)

    def _train_host(self, ids: torch.Tensor) -> Lookup:
        uniq, inverse, has_row, rows, _evicted, _step = self._host.prepare(ids, True, True, -1)
        weights = rows.to(self._device)
        if torch.is_grad_enabled():
            weights.requires_grad_(True)
            mask = None if bool(has_row.all()) else has_row
            host = self._host

            def update(grad: torch.Tensor) -> None:
                g = grad.detach().to(device=_CPU, dtype=torch.float32).contiguous()
                host.apply_gradients(uniq, g, mask)

            weights.register_hook(update)
        return Lookup(weights, inverse.to(self._device))

    def prefetch(self, ids: torch.Tensor) -> None:
        """Starts planning a future training batch (device-cache mode; no-op otherwise).

        Batches must then be looked up in the order they were prefetched, each with exactly
        the ids given here.
        """
        if self._planner is None:
            return
        with self._lock:
            self._prefetched.append((ids, self._planner.submit(ids)))

    def _train_cached(self, ids: torch.Tensor) -> Lookup:
        self._check_usable()
        planner, cache, slot_seq = self._planner, self._cache, self._slot_seq
        assert planner is not None and cache is not None and slot_seq is not None
        if self._prefetched:
            expected, handle = self._prefetched.popleft()
            if expected.shape != ids.shape or not torch.equal(expected, ids):
                # The prefetched plan was computed for other ids; it has changed the
                # planner's state, so it is executed before the error to stay consistent.
                self._execute(handle.wait())
                raise CacheStateError(
                    "the training batch differs from the batch prefetched for it; prefetch "
                    "each batch exactly once, in the order the batches are run"
                )
        else:
            handle = planner.submit(ids)
        plan = self._execute(handle.wait())

        dev = self._device
        slots = plan.unique_slots
        slots_dev = slots.to(dev)
        weights = self._cached_weights(cache, slots_dev)
        if torch.is_grad_enabled():
            weights.requires_grad_(True)
            has_row = plan.has_row
            mask = None if bool(has_row.all()) else has_row
            seq = plan.seq
            uniq = plan.unique_ids

            def update(grad: torch.Tensor) -> None:
                with self._lock:
                    stale = bool((slot_seq[slots[has_row]] > seq).any())
                    if self._cache is not cache or stale:
                        raise CacheStateError(
                            "backward of a training batch ran after later batches had replaced "
                            "its rows in the device cache; run each batch's backward before the "
                            "next batch's forward, or give the cache more slots"
                        )
                    self._apply_to_cache(cache, slots, slots_dev, grad.detach(), mask, uniq)

            weights.register_hook(update)
        return Lookup(weights, plan.inverse.to(dev))

    def _cached_weights(self, cache: torch.Tensor, slots_dev: torch.Tensor) -> torch.Tensor:
        """float32 embeddings of the cache rows at ``slots_dev``."""
        if self.row_dtype == torch.float32:
            return cache[:, : self.embedding_dim].index_select(0, slots_dev)
        packed = cache[:, : self.embedding_units].index_select(0, slots_dev)
        return unpack_weights(packed, self.row_dtype, self.embedding_dim).float()

    def _execute(self, plan: _C.SwapPlan) -> _C.SwapPlan:
        """Runs a plan's swaps on the device: victims out to the host, new rows in."""
        try:
            return self._swap(plan)
        except BaseException as exc:
            self._broken = f"{type(exc).__name__}: {exc}"
            raise

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise CacheStateError(
                "the device cache is unusable since a swap failed half-way "
                f"({self._broken}); reload the table from a checkpoint"
            )

    def _swap(self, plan: _C.SwapPlan) -> _C.SwapPlan:
        cache, slot_seq = self._cache, self._slot_seq
        assert cache is not None and self._planner is not None and slot_seq is not None
        dev = self._device
        if plan.out_ids.numel():
            out_rows = cache.index_select(0, plan.out_slots.to(dev)).to(_CPU).contiguous()
            self._host.write_rows(plan.out_ids, out_rows)
        self._planner.written_back(plan.seq)
        if plan.in_ids.numel():
            cache.index_copy_(0, plan.in_slots.to(dev), plan.in_rows.to(dev))
            slot_seq[plan.in_slots] = plan.seq
        self._count(plan)
        return plan

    def _count(self, plan: _C.SwapPlan) -> None:
        c = self.counters
        lookups = int(plan.has_row.sum())
        c.cache_lookups += lookups
        c.cache_hits += lookups - int(plan.in_ids.numel())
        c.rows_swapped_in += int(plan.in_ids.numel())
        c.rows_swapped_out += int(plan.out_ids.numel())

    def _apply_to_cache(
        self,
        cache: torch.Tensor,
        slots: torch.Tensor,
        slots_dev: torch.Tensor,
        grad: torch.Tensor,
        mask: torch.Tensor | None,
        ids: torch.Tensor,
    ) -> None:
        if cache.device.type == "cpu" and not self._torch_update:
            g = grad.to(torch.float32).contiguous()
            self._host.apply_gradients_to(cache, slots, g, mask, ids)
            return
        if mask is not None:
            keep = mask.nonzero().squeeze(1)
            slots_dev = slots.index_select(0, keep).to(cache.device)
            grad = grad.index_select(0, keep.to(grad.device))
        step = int(self._host.next_optimizer_step())
        torch_sparse_update(
            cache,
            slots_dev,
            grad,
            self.optimizer,
            step,
            self.embedding_dim,
            lr=self.learning_rate,
            row_dtype=self.row_dtype,
            stochastic_rounding=self.stochastic_rounding,
        )

    def _eval_cached(self, ids: torch.Tensor) -> Lookup:
        self._check_usable()
        assert self._planner is not None and self._cache is not None
        self._require_no_prefetch("an evaluation lookup through the device cache")
        _uniq, inverse, rows, slots = self._planner.lookup_eval(ids)
        dev = self._device
        weights = rows.to(dev)
        resident = (slots >= 0).nonzero().squeeze(1)
        if resident.numel():
            cached = self._cached_weights(self._cache, slots.index_select(0, resident).to(dev))
            weights.index_copy_(0, resident.to(dev), cached)
        return Lookup(weights, inverse.to(dev))

    # ------------------------------------------------------------------ maintenance
    def flush(self) -> None:
        """Writes rows changed in the device cache back to the host table."""
        with self._lock:
            if self._planner is None or self._cache is None:
                return
            self._check_usable()
            self._require_no_prefetch("writing the device cache back")
            ids, slots = self._planner.dirty_rows()
            if ids.numel():
                rows = self._cache.index_select(0, slots.to(self._device)).to(_CPU).contiguous()
                self._host.write_rows(ids, rows)
                self.counters.rows_swapped_out += int(ids.numel())
            self._planner.mark_clean()

    def clear(self) -> None:
        """Drops every row and counter: the table starts over (as if newly created)."""
        with self._lock:
            self._require_no_prefetch("clearing the table")
            self._retire_host_counters()
            self._host.clear()
            self._broken = None
            if self._planner is not None:
                self._create_cache(self._device)

    def embeddings(self, ids: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
        """Each position's embedding as float32 ``[len(ids), dim]``: the fast read path.

        ``ids`` is 1-D int64 on the CPU. Read-only, without de-duplication: no sightings are
        counted, no row is created; an id without a row reads its initial values (or the
        admission default, as an untrained lookup does). ``out``, a contiguous float32 CPU
        tensor of that shape, receives the values and is returned: a buffer reused across
        calls costs no allocation. With a device cache, the rows it changed are written back
        first (:meth:`flush`), so the values are the table's current ones.
        """
        if out is not None and out.device.type != "cpu":
            raise ValueError(f"out must be a CPU tensor, got one on {out.device}")
        self.flush()
        with self._lock:
            self._check_usable()
            return self._host.lookup(as_ids(ids), out=out)

    def export(self) -> dict[str, torch.Tensor]:
        """All rows, sorted by id: ids, weight [n, dim] (in the row dtype), optimizer_state
        [n, state] (float32), and the bookkeeping (last_seen step, count of sightings)."""
        self.flush()
        ids, last_seen, count, rows = self._host.dump(False)
        units = self.embedding_units
        return {
            "ids": ids,
            "weight": unpack_weights(rows[:, :units], self.row_dtype, self.embedding_dim),
            "optimizer_state": rows[:, units:],
            "last_seen": last_seen,
            "count": count,
        }

    def pack_rows(self, weight: torch.Tensor, optimizer_state: torch.Tensor) -> torch.Tensor:
        """Stored rows [n, row_width] from embeddings (converted to the row dtype to nearest
        even; exact for values of that dtype) and float32 optimiser state."""
        w = pack_weights(weight.to("cpu"), self.row_dtype)
        return torch.cat([w, optimizer_state.to("cpu", torch.float32)], dim=1).contiguous()

    def load_state(
        self,
        *,
        ids: torch.Tensor,
        rows: torch.Tensor,
        last_seen: torch.Tensor,
        count: torch.Tensor,
        step: int,
        optimizer_step: int,
        pending: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    ) -> None:
        """Replaces the contents with exported state (see :meth:`export`); all-or-nothing."""
        host = _C.HostTable(self._config)
        long = torch.int64
        host.upsert(
            as_ids(ids),
            last_seen.to("cpu", long).contiguous(),
            count.to("cpu", long).contiguous(),
            rows.to("cpu", torch.float32).contiguous(),
        )
        p_ids, p_count, p_last = (t.to("cpu", long).contiguous() for t in pending)
        host.upsert_pending(p_ids, p_count, p_last)
        host.restore_counters(step, optimizer_step)
        self.install_host(host)

    def _retire_host_counters(self) -> None:
        """Keeps the admissions and evictions of the host table about to be replaced."""
        self.counters.admitted_before += int(self._host.admitted_total)
        self.counters.evicted_before += int(self._host.evicted_total)

    def contains(self, ids: torch.Tensor) -> torch.Tensor:
        return self._host.contains(as_ids(ids))

    def evict(self) -> torch.Tensor:
        """Runs the eviction policy now; returns the evicted ids."""
        with self._lock:
            self._require_no_prefetch("evicting")
            self.flush()
            evicted = self._host.evict_now()
            if self._planner is not None and evicted.numel():
                self._planner.forget(evicted)  # deleted rows must not stay resident
            return evicted

    # ------------------------------------------------------------------ checkpoints
    def save(self, path: str | Path, incremental: bool = False) -> int:
        """Writes a checkpoint file atomically; returns its id. An incremental checkpoint
        holds the rows changed and deleted since the previous checkpoint of this table."""
        with self._lock:
            self.flush()
            return int(self._host.save(str(path), incremental))

    def snapshot(self, incremental: bool = False) -> _C.CheckpointSnapshot:
        """This table's checkpoint in memory (the device cache written back first), for a
        write that needs no lock (``.write(path)`` returns the checkpoint id): the half of
        :meth:`save` that training waits for."""
        with self._lock:
            self.flush()
            return self._host.snapshot(incremental)

    def load_host(self, paths: Sequence[str | Path]) -> _C.HostTable:
        """Builds (and fully verifies) a host table from a checkpoint chain without touching
        this table; install it with :meth:`install_host`."""
        return _C.HostTable.load(self._config, [str(p) for p in paths])

    def install_host(self, host: _C.HostTable) -> None:
        """Replaces the host table (from :meth:`load_host`); the cache starts empty."""
        with self._lock:
            self._require_no_prefetch("loading a checkpoint")
            self._retire_host_counters()
            self._host = host
            self._broken = None  # the cache starts afresh from the loaded host table
            if self.cache_slots is not None and self._device.type != "meta":
                self._create_cache(self._device)

    def cache_ids(self) -> torch.Tensor:
        """The ids whose rows the device cache holds, least recently used first (empty without
        a cache): what a checkpoint saved with ``cache=True`` keeps of it."""
        with self._lock:
            if self._planner is None:
                return torch.empty(0, dtype=torch.int64)
            self._require_no_prefetch("listing the device cache's rows")
            return self._planner.resident_ids()

    def restore_cache(self, ids: torch.Tensor) -> int:
        """Brings the rows of ``ids`` (least recently used first, as :meth:`cache_ids` lists
        them) into the empty device cache in that recency order, so that training goes on with
        the hits and swaps it would have had; ids the table does not hold are skipped, and of
        more ids than slots the most recent are kept. Returns how many rows came in (counted
        as swapped in). No admission counter or step changes."""
        ids = as_ids(ids)
        with self._lock:
            if self._planner is None or self._cache is None:
                return 0
            self._check_usable()
            self._require_no_prefetch("restoring the device cache")
            held = int(self._planner.resident_count)
            if held:
                raise CacheStateError(
                    f"restore_cache needs an empty device cache, this one holds {held} rows: "
                    "restore right after loading a checkpoint"
                )
            kept, slots = self._planner.restore(ids)
            if kept.numel():
                rows = self._host.read_rows(kept)
                self._cache.index_copy_(0, slots.to(self._device), rows.to(self._device))
                self.counters.rows_swapped_in += int(kept.numel())
            return int(kept.numel())

    def load(self, paths: Sequence[str | Path]) -> None:
        """Loads a full checkpoint followed by incremental ones; all-or-nothing."""
        self.install_host(self.load_host(paths))

    def describe(self) -> dict[str, object]:
        return {
            "dim": self.embedding_dim,
            "optimizer": optimizer_name(self.optimizer),
            "row_width": self.row_width,
            "dtype": str(self.row_dtype).removeprefix("torch."),
        }


def torch_sparse_update(
    rows: torch.Tensor,
    slots: torch.Tensor,
    grad: torch.Tensor,
    optimizer: Optimizer,
    step: int,
    dim: int,
    lr: float | None = None,
    row_dtype: torch.dtype = torch.float32,
    stochastic_rounding: bool = False,
) -> None:
    """The fused update written with torch operations, for devices other than the CPU.

    ``rows`` is [slots, row_width] stored units; the rows at ``slots`` (distinct) get one
    optimiser step with ``grad`` [len(slots), dim]. Same formulas as csrc/optimizer.cpp: the
    state in float32; for 16-bit rows the new weight in float64, rounded once. Stochastic
    rounding here draws its uniforms from torch's generator (unbiased, but not the host's
    counter-based stream).
    """
    lr = optimizer.lr if lr is None else lr
    block = rows.index_select(0, slots)
    if row_dtype == torch.float32:
        _update_float32(block, grad.to(block.dtype), optimizer, step, dim, lr)
    else:
        units = (dim + 1) // 2
        w = unpack_weights(block[:, :units], row_dtype, dim).to(torch.float64)
        x = _update_float64(w, block[:, units:], grad.to(torch.float32), optimizer, step, dim, lr)
        u = None
        if stochastic_rounding:
            u = torch.rand(x.shape, dtype=torch.float64, device=x.device)
        block[:, :units] = pack_weights(round_once(x, row_dtype, u), row_dtype)
    rows.index_copy_(0, slots, block)


def _update_float32(
    block: torch.Tensor, grad: torch.Tensor, optimizer: Optimizer, step: int, dim: int, lr: float
) -> None:
    w = block[:, :dim]
    if isinstance(optimizer, SparseSGD):
        w.add_(grad, alpha=-lr)
    elif isinstance(optimizer, SparseAdagrad):
        state_sum = block[:, dim : 2 * dim]
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(optimizer.eps)
        w.addcdiv_(grad, std, value=-lr)
    elif isinstance(optimizer, SparseAdam):
        beta1, beta2 = optimizer.betas
        m = block[:, dim : 2 * dim]
        v = block[:, 2 * dim : 3 * dim]
        m_update = grad.sub(m).mul_(1 - beta1)
        m.add_(m_update)
        v_update = grad.pow(2).sub_(v).mul_(1 - beta2)
        v.add_(v_update)
        denom = v.sqrt().add_(optimizer.eps)
        step_size = lr * (1 - beta2**step) ** 0.5 / (1 - beta1**step)
        w.add_(-step_size * m.div(denom))
    else:  # pragma: no cover - make_table_config rejects other types
        raise TypeError(type(optimizer).__name__)


def _update_float64(
    w: torch.Tensor,
    state: torch.Tensor,
    grad: torch.Tensor,
    optimizer: Optimizer,
    step: int,
    dim: int,
    lr: float,
) -> torch.Tensor:
    """New weights (float64, not rounded yet) of 16-bit rows; updates ``state`` (float32)
    in place, operation by operation as optimizer.cpp's update_row_16."""
    g = grad.to(torch.float64)
    if isinstance(optimizer, SparseSGD):
        return w + (-lr) * g
    if isinstance(optimizer, SparseAdagrad):
        s = state[:, :dim] + grad * grad
        state[:, :dim] = s
        return w + ((-lr) * g) / (s.to(torch.float64).sqrt() + optimizer.eps)
    if isinstance(optimizer, SparseAdam):
        beta1, beta2 = optimizer.betas
        m, v = state[:, :dim], state[:, dim : 2 * dim]
        # float32 constants, as the kernel rounds them: 1 - beta in float64, then to float32
        omb1 = torch.tensor(1 - beta1, dtype=torch.float32, device=grad.device)
        omb2 = torch.tensor(1 - beta2, dtype=torch.float32, device=grad.device)
        m_new = (grad - m) * omb1 + m
        v_new = (grad * grad - v) * omb2 + v
        state[:, :dim] = m_new
        state[:, dim : 2 * dim] = v_new
        step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        denom = v_new.to(torch.float64).sqrt() + optimizer.eps
        return w + (-step_size) * (m_new.to(torch.float64) / denom)
    raise TypeError(type(optimizer).__name__)  # pragma: no cover
