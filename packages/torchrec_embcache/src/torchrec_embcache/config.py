"""Configuration of a dynamic table: optimiser, initialiser, admission and eviction.

All are small frozen dataclasses validated on construction, so a bad value fails where it
is written rather than deep inside a training step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchrec_embcache._ext import _C
from torchrec_embcache._shared.eviction import EvictionPolicy, warn_deprecated


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


# --------------------------------------------------------------------------- optimisers
# The embeddings are updated inside backward (fused), so the optimiser is part of the table
# rather than a torch.optim instance. Each mirrors the torch.optim algorithm named in its
# docstring; the tests compare against that algorithm.


@dataclass(frozen=True)
class SparseSGD:
    """torch.optim.SGD without momentum or weight decay: ``w -= lr * g``."""

    lr: float = 0.01

    def __post_init__(self) -> None:
        _positive("lr", self.lr)


@dataclass(frozen=True)
class SparseAdagrad:
    """torch.optim.Adagrad (no lr decay, no weight decay): a sum of squared gradients per
    element (each row keeps embedding_dim of them, as torch's Adagrad keeps one per weight),
    not one per row as fbgemm's row-wise Adagrad."""

    lr: float = 0.01
    eps: float = 1e-10
    initial_accumulator_value: float = 0.0

    def __post_init__(self) -> None:
        _positive("lr", self.lr)
        _positive("eps", self.eps)
        if not (
            math.isfinite(self.initial_accumulator_value) and self.initial_accumulator_value >= 0
        ):
            raise ValueError(
                f"initial_accumulator_value must be >= 0, got {self.initial_accumulator_value!r}"
            )


@dataclass(frozen=True)
class SparseAdam:
    """torch.optim.SparseAdam: lazy Adam, only rows with a gradient move.

    The bias correction uses the table's optimiser step (one per backward), as SparseAdam
    uses its per-parameter step.
    """

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def __post_init__(self) -> None:
        _positive("lr", self.lr)
        _positive("eps", self.eps)
        b1, b2 = self.betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {self.betas!r}")


Optimizer = SparseSGD | SparseAdagrad | SparseAdam


# --------------------------------------------------------------------------- initialisers
# Initial values are a pure function of (seed, id): see csrc/initializer.h.


@dataclass(frozen=True)
class Uniform:
    """Uniform in [low, high)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low <= self.high):
            raise ValueError(f"Uniform needs finite low <= high, got [{self.low}, {self.high})")


@dataclass(frozen=True)
class Normal:
    """Normal(mean, std) - the default of nn.Embedding."""

    mean: float = 0.0
    std: float = 1.0

    def __post_init__(self) -> None:
        _positive("std", self.std)


@dataclass(frozen=True)
class TruncatedNormal:
    """Normal(mean, std) restricted to [mean - 2 std, mean + 2 std] (redrawn, not clamped)."""

    mean: float = 0.0
    std: float = 1.0

    def __post_init__(self) -> None:
        _positive("std", self.std)


@dataclass(frozen=True)
class Constant:
    value: float = 0.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"Constant value must be finite, got {self.value!r}")


Initializer = Uniform | Normal | TruncatedNormal | Constant


# --------------------------------------------------------------------------- admission, eviction


@dataclass(frozen=True)
class Admission:
    """An id gets a row at its ``threshold``-th sighting (occurrence in a training batch).

    Until then it reads ``default_value`` and its gradients are dropped. Sightings within one
    batch all count; an id that reaches the threshold in a batch has its row for that batch.
    """

    threshold: int
    default_value: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, int) or self.threshold < 1:
            raise ValueError(f"admission threshold must be an integer >= 1, got {self.threshold!r}")
        if not math.isfinite(self.default_value):
            raise ValueError(f"default_value must be finite, got {self.default_value!r}")


class Eviction(EvictionPolicy):
    """Deprecated: ``EvictionPolicy("lfu", ttl_steps=..., capacity=..., interval=...)``.

    The old spelling of the eviction policy, kept working (with a DeprecationWarning): the
    capacity pass gives up the least used rows first, as before.
    """

    def __init__(
        self, ttl_steps: int | None = None, capacity: int | None = None, interval: int = 1
    ) -> None:
        warn_deprecated(
            f"torchrec_embcache.Eviction(ttl_steps={ttl_steps!r}, capacity={capacity!r}, "
            f"interval={interval!r})",
            f'EvictionPolicy("lfu", ttl_steps={ttl_steps!r}, capacity={capacity!r}, '
            f"interval={interval!r})",
        )
        if ttl_steps is None and capacity is None:
            raise ValueError("Eviction needs ttl_steps, capacity, or both")
        super().__init__("lfu", ttl_steps=ttl_steps, capacity=capacity, interval=interval)


def optimizer_name(opt: Optimizer) -> str:
    return {SparseSGD: "sgd", SparseAdagrad: "adagrad", SparseAdam: "adam"}[type(opt)]


def make_table_config(
    embedding_dim: int,
    optimizer: Optimizer,
    initializer: Initializer,
    seed: int,
    admission: Admission | None,
    eviction: EvictionPolicy | None,
    shard_bits: int = 5,
) -> _C.TableConfig:
    """Translates the Python configuration into the core's TableConfig."""
    if not isinstance(embedding_dim, int) or embedding_dim <= 0:
        raise ValueError(f"embedding_dim must be a positive integer, got {embedding_dim!r}")
    if not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    cfg = _C.TableConfig()
    cfg.dim = embedding_dim
    cfg.shard_bits = shard_bits

    optim = _C.OptimConfig()
    if isinstance(optimizer, SparseSGD):
        optim.kind = _C.OptimKind.SGD
    elif isinstance(optimizer, SparseAdagrad):
        optim.kind = _C.OptimKind.ADAGRAD
        optim.eps = optimizer.eps
        optim.initial_accumulator = optimizer.initial_accumulator_value
    elif isinstance(optimizer, SparseAdam):
        optim.kind = _C.OptimKind.ADAM
        optim.eps = optimizer.eps
        optim.beta1, optim.beta2 = optimizer.betas
    else:
        raise TypeError(
            "optimizer must be SparseSGD, SparseAdagrad or SparseAdam, got "
            f"{type(optimizer).__name__}"
        )
    optim.lr = optimizer.lr
    cfg.optim = optim

    init = _C.InitConfig()
    init.seed = seed
    if isinstance(initializer, Uniform):
        init.kind, init.p0, init.p1 = _C.InitKind.UNIFORM, initializer.low, initializer.high
    elif isinstance(initializer, Normal):
        init.kind, init.p0, init.p1 = _C.InitKind.NORMAL, initializer.mean, initializer.std
    elif isinstance(initializer, TruncatedNormal):
        init.kind, init.p0, init.p1 = (
            _C.InitKind.TRUNCATED_NORMAL,
            initializer.mean,
            initializer.std,
        )
    elif isinstance(initializer, Constant):
        init.kind, init.p0 = _C.InitKind.CONSTANT, initializer.value
    else:
        raise TypeError(
            "initializer must be Uniform, Normal, TruncatedNormal or Constant, got "
            f"{type(initializer).__name__}"
        )
    cfg.init = init

    if admission is not None:
        cfg.admit_threshold = admission.threshold
        cfg.admit_default = admission.default_value
    if eviction is not None:
        if not isinstance(eviction, EvictionPolicy):
            raise TypeError(
                "eviction must be None or EvictionPolicy(order, ttl_steps=..., capacity=..., "
                f"interval=...), got {eviction!r}"
            )
        if eviction.ttl_steps is None and eviction.capacity is None:
            raise ValueError(
                f"torchrec_embcache's eviction needs ttl_steps, capacity, or both, got {eviction!r}"
            )
        eviction.refuse(
            "torchrec_embcache",
            ("protect_batches",),
            "a training batch keeps the rows it uses, and no other batch is protected",
        )
        cfg.ttl_steps = eviction.ttl_steps or 0
        cfg.capacity = eviction.capacity or 0
        cfg.capacity_by_recency = eviction.order == "lru"
        cfg.evict_interval = eviction.interval
    return cfg
