"""Gradient accumulation for the fused optimisers of hybrid sharded collections.

A fused table updates its rows (and its optimiser state) inside the backward of its lookup,
so gradients never stand anywhere to be accumulated. Within :func:`accumulate_gradients` the
lookups' outputs are cut from the tables instead: each micro-batch's forward reads the
unchanged rows, and its backward stops at the cut, leaving the gradient of the lookup's
output. On leaving, each lookup runs once on all micro-batches' features joined and takes
all their output gradients in one backward: the one fused update of the joined batch, which
is the update one step on the concatenated batch makes (Adagrad's state included; only the
order in which the kernel sums the gradients of one row may differ).

Data-parallel tables are not fused: their gradients accumulate in ``.grad`` as torch's do,
and the dense optimiser steps when the caller says.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.hooks import RemovableHandle
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor


class _Deferred:
    """One fused lookup's micro-batches: their features and the cut outputs, whose ``grad``
    the backward fills."""

    def __init__(self, lookup: nn.Module, pooled: bool) -> None:
        self.lookup = lookup
        self.pooled = pooled
        self.features: list[KeyedJaggedTensor] = []
        self.cuts: list[torch.Tensor] = []

    def cut(self, _module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor:
        self.features.append(args[0])
        cut = output.detach().requires_grad_()
        self.cuts.append(cut)
        return cut

    def apply(self) -> None:
        if not self.features:
            return
        grads = [c.grad if c.grad is not None else torch.zeros_like(c) for c in self.cuts]
        # Pooled outputs are [samples, columns]: the joined batch's samples in order.
        grad = torch.cat(grads) if self.pooled else _join_sequence_grads(self.features, grads)
        with torch.enable_grad():
            output = self.lookup(join_batches(self.features))
        output.backward(grad)


def join_batches(batches: list[KeyedJaggedTensor]) -> KeyedJaggedTensor:
    """The batches as one: every key's samples of the first batch, then of the second..."""
    if len(batches) == 1:
        return batches[0]
    keys = batches[0].keys()
    dicts = [b.to_dict() for b in batches]
    weighted = batches[0].weights_or_none() is not None
    return KeyedJaggedTensor(
        keys=keys,
        values=torch.cat([d[k].values() for k in keys for d in dicts]),
        lengths=torch.cat([d[k].lengths() for k in keys for d in dicts]),
        weights=torch.cat([d[k].weights() for k in keys for d in dicts]) if weighted else None,
    )


def _join_sequence_grads(
    batches: list[KeyedJaggedTensor], grads: list[torch.Tensor]
) -> torch.Tensor:
    """Sequence lookups return one flat tensor, the ids' rows in key order: the joined
    batch's gradient takes every key's rows of each micro-batch in turn."""
    counts = [b.values().numel() for b in batches]
    if sum(counts) == 0:
        return torch.cat(grads)
    dim = sum(g.numel() for g in grads) // sum(counts)
    per_batch = [
        g.view(n, dim).split(b.length_per_key())
        for g, n, b in zip(grads, counts, batches, strict=True)
    ]
    keys = range(len(batches[0].keys()))
    return torch.cat([parts[k] for k in keys for parts in per_batch]).view(-1)


def _fused_lookups(model: nn.Module) -> list[tuple[nn.Module, bool]]:
    from hybrid_torchrec.distributed.sharders import _Hybrid

    found = []
    for module in model.modules():
        if isinstance(module, _Hybrid):
            for lookup in module._lookups:  # type: ignore[attr-defined]
                # Data-parallel lookups are DDP-wrapped and train through .grad.
                if not isinstance(lookup, DistributedDataParallel):
                    found.append((lookup, not module._is_sequence))
    return found


@contextlib.contextmanager
def accumulate_gradients(model: nn.Module) -> Iterator[None]:
    """Defers the fused optimisers of the hybrid sharded collections in ``model``: run the
    forward and backward of N micro-batches inside, and on leaving the tables take one update,
    that of the N micro-batches as one batch (the sum of their losses). Every rank must run the
    same number of micro-batches. On an exception inside, nothing is applied.

    The dense optimiser is the caller's: step it after leaving (its gradients accumulated in
    ``.grad`` meanwhile)."""
    deferred = [_Deferred(lookup, pooled) for lookup, pooled in _fused_lookups(model)]
    if not deferred:
        raise ValueError("the model has no fused hybrid sharded collection to accumulate for")
    handles: list[RemovableHandle] = [d.lookup.register_forward_hook(d.cut) for d in deferred]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
    for d in deferred:
        d.apply()
