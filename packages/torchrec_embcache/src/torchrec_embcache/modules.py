"""DynamicEmbedding / DynamicEmbeddingBag: nn.Embedding / nn.EmbeddingBag over a dynamic table.

Differences from the torch modules, all following from the table being unbounded:

- ids are arbitrary int64 values (no ``num_embeddings``, no ``padding_idx``);
- there is no ``weight`` parameter: rows live in the table and are updated in backward by
  the table's sparse optimiser, so these modules contribute no parameters to a
  torch.optim optimiser;
- a lookup counts as training (rows are created, sightings counted, eviction applied) when
  the module is in training mode and autograd is enabled; otherwise it is read-only.

``module.to("meta" | "cpu" | "npu")`` moves the compute device; rows stay in host memory.
``state_dict()`` holds the rows (sorted by id) with their optimiser state and counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from torchrec_embcache.table import EmbeddingTable, TableOptions, as_ids

if TYPE_CHECKING:
    from typing_extensions import Unpack

_POOLING_MODES = ("sum", "mean", "max")


def _embedding_dim(cls: str, dims: tuple[int, ...]) -> int:
    # nn.Embedding(num_embeddings, embedding_dim) and the dynamic (embedding_dim) form are
    # both accepted, so that replacing the class is enough. num_embeddings is no bound here
    # and nothing is reserved for it (a dynamic table is often given a huge virtual size).
    if len(dims) == 1:
        return dims[0]
    if len(dims) == 2:
        if not isinstance(dims[0], int) or dims[0] <= 0:
            raise ValueError(f"{cls}: num_embeddings must be a positive integer, got {dims[0]!r}")
        return dims[1]
    raise TypeError(f"{cls} takes (embedding_dim) or (num_embeddings, embedding_dim), got {dims!r}")


class _DynamicBase(nn.Module):
    def __init__(self, embedding_dim: int, **options: Unpack[TableOptions]) -> None:
        unknown = sorted(set(options) - TableOptions.__optional_keys__)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unknown option(s) {', '.join(unknown)}; the options "
                f"are {', '.join(TableOptions.__annotations__)}"
            )
        super().__init__()
        self.embedding_dim = embedding_dim
        self.table = EmbeddingTable(embedding_dim, **options)
        # nn.Module moves buffers on .to()/.cuda()/to_empty(); this empty integer buffer
        # tells _apply where the module went (floating-point casts leave it alone).
        self.register_buffer(
            "_device_anchor",
            torch.empty(0, dtype=torch.int64, device=self.table.device),
            persistent=False,
        )

    @property
    def device(self) -> torch.device:
        return self.table.device

    def _apply(self, fn: Any, recurse: bool = True) -> _DynamicBase:  # type: ignore[override]
        super()._apply(fn, recurse)
        self.table.to(self._device_anchor.device)
        return self

    def reset_parameters(self) -> None:
        """Forgets every row: ids start again from their initial values."""
        self.table.clear()

    def _training_lookup(self) -> bool:
        return self.training and torch.is_grad_enabled()

    def _ids(self, input: torch.Tensor, what: str = "input") -> torch.Tensor:
        if input.dtype not in (torch.int64, torch.int32):
            raise TypeError(
                f"{type(self).__name__}: {what} must be an integer tensor (torch.int64, or "
                f"torch.int32), got {input.dtype}"
            )
        if self.device.type == "meta":
            return input  # shapes only
        self.table.check_ids_device(input, what)
        return as_ids(input, what)

    def prefetch(self, input: torch.Tensor) -> None:
        """Plans a future training batch ahead (device-cache mode); see EmbeddingTable."""
        if self.device.type != "meta":
            self.table.prefetch(as_ids(input))

    # state_dict support: rows are exported sorted by id, with their state and counters.
    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        rows = self.table.export()
        for key, value in rows.items():
            destination[prefix + key] = value
        destination[prefix + "step"] = torch.tensor(self.table.step)
        destination[prefix + "optimizer_step"] = torch.tensor(int(self.table.host.optimizer_step))
        pending_ids, pending_count, pending_last_seen = self.table.host.dump_pending()
        destination[prefix + "pending_ids"] = pending_ids
        destination[prefix + "pending_count"] = pending_count
        destination[prefix + "pending_last_seen"] = pending_last_seen

    _STATE_KEYS = (
        "ids",
        "weight",
        "optimizer_state",
        "last_seen",
        "count",
        "step",
        "optimizer_step",
        "pending_ids",
        "pending_count",
        "pending_last_seen",
    )

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: Any,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        present = [k for k in self._STATE_KEYS if prefix + k in state_dict]
        if len(present) != len(self._STATE_KEYS):
            missing_keys.extend(prefix + k for k in self._STATE_KEYS if k not in present)
            return
        s = {k: state_dict[prefix + k] for k in self._STATE_KEYS}
        dim = self.embedding_dim
        if s["weight"].dim() != 2 or s["weight"].shape[1] != dim:
            error_msgs.append(
                f"{prefix}weight has shape {tuple(s['weight'].shape)}, expected [n, {dim}]"
            )
            return
        state_width = self.table.row_width - self.table.embedding_units
        if s["optimizer_state"].dim() != 2 or s["optimizer_state"].shape[1] != state_width:
            error_msgs.append(
                f"{prefix}optimizer_state has shape {tuple(s['optimizer_state'].shape)}, this "
                f"table's optimiser needs [n, {state_width}]"
            )
            return
        rows = self.table.pack_rows(s["weight"], s["optimizer_state"])
        self.table.load_state(
            ids=s["ids"],
            rows=rows.contiguous(),
            last_seen=s["last_seen"],
            count=s["count"],
            step=int(s["step"]),
            optimizer_step=int(s["optimizer_step"]),
            pending=(s["pending_ids"], s["pending_count"], s["pending_last_seen"]),
        )


class DynamicEmbedding(_DynamicBase):
    """Drop-in for ``nn.Embedding`` over arbitrary int64 ids.

    Args:
        embedding_dim: size of each embedding vector; ``(num_embeddings, embedding_dim)`` is
            accepted too, as for nn.Embedding (num_embeddings does not bound the ids).
        optimizer: SparseSGD (default, lr 0.01), SparseAdagrad or SparseAdam; applied to
            the looked-up rows during backward.
        initializer: initial values of a new id's row (default Normal(0, 1), like
            nn.Embedding); deterministic for (seed, id).
        seed: initialiser seed.
        admission, eviction: optional feature admission and eviction policies.
        cache_slots: rows held on the compute device; None keeps rows in host memory only
            (best on the CPU).
        device: compute device.
        row_dtype: storage of the embeddings: torch.float32 (default), float16 or bfloat16
            (optimiser state stays float32; lookups return float32).
        stochastic_rounding: 16-bit rows: round updates stochastically (unbiased).

    Input: integer tensor of any shape. Output: ``(*input.shape, embedding_dim)``.
    """

    def __init__(self, *dims: int, **options: Unpack[TableOptions]) -> None:
        super().__init__(_embedding_dim(type(self).__name__, dims), **options)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"DynamicEmbedding: input must be a tensor, got {type(input).__name__}")
        ids = self._ids(input)
        if self.device.type == "meta":
            return torch.empty(*input.shape, self.embedding_dim, device="meta")
        lookup = self.table.lookup(ids, train=self._training_lookup())
        out = F.embedding(lookup.inverse, lookup.weights)
        return out.view(*input.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        return f"{self.embedding_dim}, rows={len(self.table)}, device={self.device}"


class DynamicEmbeddingBag(_DynamicBase):
    """Drop-in for ``nn.EmbeddingBag`` over arbitrary int64 ids.

    Same arguments as DynamicEmbedding plus ``mode`` ("sum", "mean" - the default, as in
    nn.EmbeddingBag - or "max") and ``include_last_offset``. ``forward(input, offsets=None,
    per_sample_weights=None)`` follows nn.EmbeddingBag: a 2-D input is a batch of fixed-size
    bags; a 1-D input needs ``offsets``; ``per_sample_weights`` only with mode "sum".
    Pooling and its gradient are torch's own embedding_bag kernel.
    """

    def __init__(
        self,
        *dims: int,
        mode: str = "mean",
        include_last_offset: bool = False,
        **options: Unpack[TableOptions],
    ) -> None:
        if mode not in _POOLING_MODES:
            raise ValueError(f"mode must be one of {_POOLING_MODES}, got {mode!r}")
        super().__init__(_embedding_dim(type(self).__name__, dims), **options)
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(
        self,
        input: torch.Tensor,
        offsets: torch.Tensor | None = None,
        per_sample_weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(
                f"DynamicEmbeddingBag: input must be a tensor, got {type(input).__name__}"
            )
        if input.dim() == 2:
            if offsets is not None:
                raise ValueError("offsets must be None when input is 2-D (fixed-size bags)")
            batch, length = input.shape
            offsets = torch.arange(batch, device=input.device) * length
            include_last = False
            flat_weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
        elif input.dim() == 1:
            if offsets is None:
                raise ValueError("offsets is required when input is 1-D")
            if offsets.dim() != 1:
                raise ValueError(f"offsets must be 1-D, got {offsets.dim()}-D")
            include_last = self.include_last_offset
            flat_weights = per_sample_weights
        else:
            raise ValueError(f"input must be 1-D or 2-D, got {input.dim()}-D")
        if per_sample_weights is not None and self.mode != "sum":
            raise ValueError(
                f"per_sample_weights is only supported with mode 'sum', not {self.mode!r}"
            )
        ids = self._ids(input)
        if self.device.type == "meta":
            bags = offsets.numel() - (1 if include_last else 0)
            return torch.empty(bags, self.embedding_dim, device="meta")
        self.table.check_ids_device(offsets, "offsets")
        dev = self.device
        lookup = self.table.lookup(ids, train=self._training_lookup())
        if flat_weights is not None:
            self.table.check_ids_device(flat_weights, "per_sample_weights")
            flat_weights = flat_weights.to(dev)
        return F.embedding_bag(
            lookup.inverse,
            lookup.weights,
            offsets.to(device=dev, dtype=torch.int64),
            mode=self.mode,
            per_sample_weights=flat_weights,
            include_last_offset=include_last,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.embedding_dim}, mode={self.mode!r}, rows={len(self.table)}, "
            f"device={self.device}"
        )
