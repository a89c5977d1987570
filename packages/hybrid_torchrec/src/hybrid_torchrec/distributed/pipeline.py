"""HybridTrainPipeline: the host work of batch i+1 overlaps the device step of batch i.

The host work of a batch is what the hybrid sharded collections do before their lookups: the
input distribution over the host process group, the id mapping of each rank's shards and the
copy of the row numbers to the device. The pipeline runs it for the next batch on a host
thread while the calling thread runs the current batch's forward, backward and optimiser step.
The results are those of the plain loop: the mapping of batch i+1 does not depend on the
weights batch i updates, and the rows it takes from evicted ids are reset only when batch i+1's
device step starts, after batch i has trained on them.

One host thread, so that every rank issues the host group's collectives in the same order; the
id mapping inside it uses the core's own pool (``hybrid_torchrec.set_num_threads``).

The one-batch-ahead loop is the one torchrec_embcache's pipeline runs too
(``hybrid_torchrec._shared.pipeline``): a batch fetched ahead is trained even when the next
call passes another iterator, and after StopIteration a call starts on the iterator it gets.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from torch import nn
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from hybrid_torchrec._shared.pipeline import PrefetchingPipeline, train_step
from hybrid_torchrec.distributed.sharders import (
    HybridShardedEmbeddingBagCollection,
    HybridShardedEmbeddingCollection,
)
from hybrid_torchrec.distributed.types import HostWork


def _sparse_features(batch: Any) -> KeyedJaggedTensor:
    return batch.sparse_features


class HybridTrainPipeline(PrefetchingPipeline[Future[list[HostWork]]]):
    """Trains ``model`` one batch per :meth:`progress`.

    Args:
        model: a DistributedModelParallel model (or any module) whose hybrid sharded
            collections all take the same KeyedJaggedTensor of the batch; ``model(batch)``
            returns ``(loss, output)``, as for torchrec's pipelines.
        optimizer: the optimiser of the dense parameters (the tables train with their fused
            optimisers in the backward); None when there are none.
        sparse_features: the batch's KeyedJaggedTensor (default ``batch.sparse_features``).
        to_device: moves the rest of the batch to the device (default: unchanged); it runs
            on the calling thread.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None,
        sparse_features: Callable[[Any], KeyedJaggedTensor] = _sparse_features,
        to_device: Callable[[Any], Any] | None = None,
    ) -> None:
        self._model = model
        self._optimizer = optimizer
        self._sparse_features = sparse_features
        self._to_device = to_device or (lambda batch: batch)
        self._collections = [
            m
            for m in model.modules()
            if isinstance(
                m, (HybridShardedEmbeddingBagCollection, HybridShardedEmbeddingCollection)
            )
        ]
        if not self._collections:
            raise ValueError("the model has no hybrid sharded collection to pipeline")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hybrid-host")
        self._init_prefetching()

    def _host_work(self, batch: Any) -> list[HostWork]:
        features = self._sparse_features(batch)
        with torch.no_grad():
            return [c.host_work(features) for c in self._collections]

    def _start(self, batch: Any) -> tuple[Any, Future[list[HostWork]]]:
        return batch, self._executor.submit(self._host_work, batch)

    def _wait(self, pending: Future[list[HostWork]]) -> list[HostWork]:
        return pending.result()

    def _train(self, batch: Any, ready: list[HostWork]) -> Any:
        for collection, result in zip(self._collections, ready, strict=True):
            collection.prefetch(result)
        return train_step(self._model, self._optimizer, self._to_device(batch))

    def close(self) -> None:
        """Waits for host work in flight and stops the host thread."""
        self._drain()
        self._executor.shutdown(wait=True)
