"""The prefetching train loop both packages' pipelines share: one batch ahead.

Each ``progress(iterator)`` takes the batch fetched by the previous call, waits for the host
work started on it (:meth:`PrefetchingPipeline._wait`), fetches the next batch and starts its
host work (:meth:`PrefetchingPipeline._start`), then trains the current batch
(:meth:`PrefetchingPipeline._train`): the next batch's host work overlaps this batch's device
step. What the host work is, and where it runs, is the package's: hybrid_torchrec maps the ids
of the next batch on a host thread, torchrec_embcache plans the next batch's device-cache swaps.

The last batch of an iterator is trained too; the call after it raises StopIteration. A batch
fetched ahead is trained even when the next call passes another iterator (torchrec's pipelines
do the same: a batch whose host work has started is not dropped); once nothing is ahead (the
first call, or after StopIteration) a call starts on the iterator it is given, so one pipeline
trains epoch after epoch.

This module is installed into each package as ``<package>._shared.pipeline``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import torch

__all__ = ["PrefetchingPipeline", "train_step"]

Pending = TypeVar("Pending")

_END = object()


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None, batch: Any) -> Any:
    """One step of torchrec's pipelines: ``model(batch)`` returns ``(losses, output)``; in
    training mode the summed losses are back-propagated and ``optimizer`` (the dense
    parameters'; None when there are none) steps. Returns ``output``."""
    training = model.training
    if training and optimizer is not None:
        optimizer.zero_grad()
    losses, output = model(batch)
    if training:
        torch.sum(losses, dim=0).backward()
        if optimizer is not None:
            optimizer.step()
    return output


class PrefetchingPipeline(ABC, Generic[Pending]):
    """The one-batch-ahead loop; a subclass says what the host work of a batch is.

    A subclass calls :meth:`_init_prefetching` in its ``__init__`` and implements the abstract
    :meth:`_start` and :meth:`_train` (and :meth:`_wait` when its host work runs elsewhere).
    """

    def _init_prefetching(self) -> None:
        self._ahead: tuple[Any, Pending] | None = None

    @abstractmethod
    def _start(self, batch: Any) -> tuple[Any, Pending]:
        """Starts the host work of a freshly fetched batch; returns the batch as :meth:`_train`
        will take it, and a handle on the work."""

    def _wait(self, pending: Pending) -> Any:
        """Waits for the host work of the batch about to train; returns its result."""
        return pending

    @abstractmethod
    def _train(self, batch: Any, ready: Any) -> Any:
        """Trains one batch whose host work is done (``ready``: what :meth:`_wait` returned);
        returns the model's output."""

    def _fetch(self, iterator: Iterator[Any]) -> tuple[Any, Pending] | None:
        batch = next(iterator, _END)
        return None if batch is _END else self._start(batch)

    def progress(self, dataloader_iter: Iterator[Any]) -> Any:
        """Trains the next batch; returns the model's output. Raises StopIteration when the
        iterator is exhausted."""
        if self._ahead is None:
            self._ahead = self._fetch(dataloader_iter)
            if self._ahead is None:
                raise StopIteration
        batch, pending = self._ahead
        ready = self._wait(pending)
        # The next batch's host work starts now and overlaps this batch's step.
        self._ahead = self._fetch(dataloader_iter)
        return self._train(batch, ready)

    def _drain(self) -> None:
        """Waits for the host work of a batch fetched ahead, and forgets the batch."""
        if self._ahead is not None:
            self._wait(self._ahead[1])
            self._ahead = None
