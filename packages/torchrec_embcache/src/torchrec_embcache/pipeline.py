"""EmbCacheTrainPipeline: torchrec's TrainPipelineBase plus swap-plan prefetching.

Each ``progress()`` fetches the next batch, hands its sparse features to every EmbCache
collection of the model (which starts computing that batch's device-cache swap plan on a
worker thread), then runs forward, backward and the optimiser step of the current batch.
Planning batch t+1 thus overlaps training batch t. Tables without a device cache ignore
the prefetch, so the pipeline works for any mix.

Unlike torchrec's TrainPipelineBase, the last batch of the iterator is trained too; the
call after it raises StopIteration, and a call after that starts on the iterator it is given
(a next epoch). The one-batch-ahead loop is the one hybrid_torchrec's pipeline runs too
(``torchrec_embcache._shared.pipeline``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torchrec.distributed.train_pipeline import TrainPipelineBase
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from torchrec_embcache._shared.pipeline import PrefetchingPipeline, train_step
from torchrec_embcache.collection import EmbCacheEmbeddingBagCollection, EmbCacheEmbeddingCollection

In = TypeVar("In")
Out = TypeVar("Out")


def _sparse_features(batch: Any) -> KeyedJaggedTensor:
    return batch.sparse_features


class EmbCacheTrainPipeline(PrefetchingPipeline[None], TrainPipelineBase[In, Out]):
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
        TrainPipelineBase.__init__(self, model, optimizer, device)
        self._collections = [
            m
            for m in model.modules()
            if isinstance(m, (EmbCacheEmbeddingBagCollection, EmbCacheEmbeddingCollection))
        ]
        self._pick = sparse_features
        self._init_prefetching()

    def _start(self, batch: Any) -> tuple[Any, None]:
        # The collections plan on their own worker threads; nothing to wait for here.
        batch = batch.to(self._device, non_blocking=True)
        if self._model.training and self._collections:
            features = self._pick(batch)
            for collection in self._collections:
                collection.prefetch(features)
        return batch, None

    def _train(self, batch: Any, ready: None) -> Any:
        return train_step(self._model, self._optimizer, batch)
