"""Independent references for the embcache tests: plain PyTorch modules and optimisers over
the same id -> row mapping."""

from __future__ import annotations

import torch
import torchrec_embcache as ec
from torch import nn


def random_ids(n: int, seed: int) -> torch.Tensor:
    """n distinct ids spread over the whole int64 range (negative, huge and small)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(-(2**62), 2**62, (n * 2,), generator=g, dtype=torch.int64)
    ids = torch.cat([ids, torch.tensor([0, 1, -1, 2**63 - 1, -(2**63)])])
    ids = torch.unique(ids)
    return ids[torch.randperm(ids.numel(), generator=g)][:n]


class IdMap:
    """Maps arbitrary ids to dense row numbers 0..V-1 for the reference table.

    Row i holds the i-th smallest id. The order matters for bit-identical SGD with
    nn.EmbeddingBag: its backward accumulates a repeated row's gradients in the order its
    (unstable) sort of the row numbers yields, and the dynamic table numbers the rows of a
    batch in id order, so only an id-ordered reference sums duplicates in the same order.
    """

    def __init__(self, ids: torch.Tensor) -> None:
        self.ids = torch.sort(ids).values
        self.index = {int(v): i for i, v in enumerate(self.ids.tolist())}

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.tensor([self.index[int(v)] for v in ids.reshape(-1).tolist()]).view(ids.shape)


def lru_counts(batches: list[torch.Tensor], slots: int) -> tuple[int, int]:
    """(lookups, hits) of an LRU cache of ``slots`` rows simulated directly: a plain list, most
    recent first; a batch's distinct ids are looked up once each and become most recent in
    ascending order (its largest id first), as the device cache admits them."""
    lru: list[int] = []
    lookups = hits = 0
    for ids in batches:
        uniq = sorted(set(ids.reshape(-1).tolist()))
        lookups += len(uniq)
        hits += sum(1 for k in uniq if k in lru)
        for k in uniq:
            if k in lru:
                lru.remove(k)
            lru.insert(0, k)
        del lru[slots:]
    return lookups, hits


def reference_embedding(initial: torch.Tensor, sparse: bool = False) -> nn.Embedding:
    return nn.Embedding.from_pretrained(initial.clone(), freeze=False, sparse=sparse)


def reference_bag(
    initial: torch.Tensor, mode: str, include_last_offset: bool = False
) -> nn.EmbeddingBag:
    return nn.EmbeddingBag.from_pretrained(
        initial.clone(), freeze=False, mode=mode, include_last_offset=include_last_offset
    )


def torch_optimizer(kind: str, params, lr: float) -> torch.optim.Optimizer:
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if kind == "adagrad":
        return torch.optim.Adagrad(params, lr=lr)
    if kind == "adam":
        return torch.optim.SparseAdam(params, lr=lr)
    raise ValueError(kind)


def sparse_optimizer(
    kind: str, lr: float, adam_lr: float | None = None
) -> ec.SparseSGD | ec.SparseAdagrad | ec.SparseAdam:
    """The embcache optimizer ``kind`` ("sgd", "adagrad", "adam"); Adam at ``adam_lr`` if given."""
    if kind == "sgd":
        return ec.SparseSGD(lr=lr)
    if kind == "adagrad":
        return ec.SparseAdagrad(lr=lr)
    if kind == "adam":
        return ec.SparseAdam(lr=lr if adam_lr is None else adam_lr)
    raise ValueError(kind)
