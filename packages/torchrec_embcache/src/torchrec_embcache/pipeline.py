"""EmbCacheTrainPipeline: torchrec's TrainPipelineBase plus swap-plan prefetching.

Each ``progress()`` fetches the next batch, hands its sparse features to every EmbCache
collection of the model (which starts computing that batch's device-cache swap plan on a
worker thread), then runs forward, backward and the optimiser step of the current batch.
Planning batch t+1 thus overlaps training batch t. Tables without a device cache ignore
the prefetch, so the pipeline works for any mix.

Unlike torchrec's TrainPipelineBase, the last batch of the iterator is trained too; the
call after it raises StopIteration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
from torchrec.distributed.train_pipeline import TrainPipelineBase
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from torchrec_embcache.collection import EmbCacheEmbeddingBagCollection, EmbCacheEmbeddingCollection

In = TypeVar("In")
Out = TypeVar("Out")


def _sparse_features(batch: Any) -> KeyedJaggedTensor:
    return batch.sparse_features


class EmbCacheTrainPipeline(TrainPipelineBase[In, Out]):
    """Args:
    model: returns ``(losses, output)`` for a batch, like torchrec's pipelines expect.
    optimizer: optimiser of the dense parameters (tables update themselves in backward).
    device: device batches are moved to.
    sparse_features: picks from a batch the KeyedJaggedTensor that the model passes
        unchanged to its EmbCache collections (default: ``batch.sparse_features``).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device,
        sparse_features: Callable[[Any], KeyedJaggedTensor] = _sparse_features,
    ) -> None:
        super().__init__(model, optimizer, device)
        self._collections = [
            m
            for m in model.modules()
            if isinstance(m, (EmbCacheEmbeddingBagCollection, EmbCacheEmbeddingCollection))
        ]
        self._pick = sparse_features
        self._batch: Any = None
        self._started = False

    def _prefetch(self, batch: Any) -> None:
        if self._model.training and self._collections:
            features = self._pick(batch)
            for collection in self._collections:
                collection.prefetch(features)

    def _fetch(self, it: Iterator[Any]) -> Any:
        try:
            batch = next(it)
        except StopIteration:
            return None
        batch = batch.to(self._device, non_blocking=True)
        self._prefetch(batch)
        return batch

    def progress(self, dataloader_iter: Iterator[In]) -> Out:
        if not self._started:
            self._started = True
            self._batch = self._fetch(dataloader_iter)
        current = self._batch
        if current is None:
            raise StopIteration
        self._batch = self._fetch(dataloader_iter)  # planned while `current` trains
        training = self._model.training
        if training:
            self._optimizer.zero_grad()
        losses, output = self._model(current)
        if training:
            torch.sum(losses, dim=0).backward()
            self._optimizer.step()
        return output
