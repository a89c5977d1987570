"""What the TBE and sparse-operator tests on the npu device compare with: fbgemm's modules built
for either device from one description, the same starting weights in both, Adam written out
(fbgemm's CPU module refuses Adam), and exact comparisons of npu results with CPU ones.

Imported by the test modules and by the distributed workers (npu_dist.py), so it imports
fbgemm only inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

NPU = "npu"
OPTIMIZERS = ("sgd", "adagrad", "rowwise_adagrad", "adam")


def emb_optim_type(optimizer: str) -> Any:
    """fbgemm's EmbOptimType of one of the fused optimizers the tests train with."""
    from fbgemm_gpu.split_embedding_configs import EmbOptimType

    return {
        "sgd": EmbOptimType.EXACT_SGD,
        "adagrad": EmbOptimType.EXACT_ADAGRAD,
        "rowwise_adagrad": EmbOptimType.EXACT_ROWWISE_ADAGRAD,
        "adam": EmbOptimType.ADAM,
    }[optimizer]


def split_tbe(
    specs: list[tuple[int, int]],
    device: str,
    optimizer: str,
    *,
    learning_rate: float,
    pooling: str = "sum",
) -> Any:
    """A SplitTableBatchedEmbeddingBagsCodegen over ``specs`` (rows, dim): on the npu placed
    as the patched TorchRec places it (DEVICE location, CUDA compute), on the CPU as HOST/CPU."""
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import (
        EmbeddingLocation,
        PoolingMode,
    )
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        ComputeDevice,
        SplitTableBatchedEmbeddingBagsCodegen,
    )

    on_npu = device == NPU
    location = EmbeddingLocation.DEVICE if on_npu else EmbeddingLocation.HOST
    compute = ComputeDevice.CUDA if on_npu else ComputeDevice.CPU
    return SplitTableBatchedEmbeddingBagsCodegen(
        embedding_specs=[(rows, dim, location, compute) for rows, dim in specs],
        optimizer=emb_optim_type(optimizer),
        learning_rate=learning_rate,
        eps=1e-6,
        pooling_mode={"sum": PoolingMode.SUM, "mean": PoolingMode.MEAN}[pooling],
        device=torch.device(device),
    )


def load_same_weights(specs: list[tuple[int, int]], seed: int, *modules: Any) -> None:
    """Uniform(-0.5, 0.5) weights drawn table by table from ``seed``, copied into every module."""
    g = torch.Generator().manual_seed(seed)
    values = [torch.rand(rows, dim, generator=g) - 0.5 for rows, dim in specs]
    for module in modules:
        with torch.no_grad():
            for table, value in zip(module.split_embedding_weights(), values, strict=True):
                table.copy_(value.to(table.device))


@dataclass
class AdamReference:
    """fbgemm's sparse Adam written out: per table the exact gradient of a sum-pooled
    embedding_bag, then Adam with bias correction on the rows the batch touched only (the
    other rows and their moments stay as they are)."""

    specs: list[tuple[int, int]]
    batch: int
    weights: list[torch.Tensor]
    lr: float
    eps: float = 1e-6
    beta1: float = 0.9
    beta2: float = 0.999
    m1: list[torch.Tensor] = field(init=False)
    m2: list[torch.Tensor] = field(init=False)

    def __post_init__(self) -> None:
        self.weights = [w.cpu().clone() for w in self.weights]
        self.m1 = [torch.zeros_like(w) for w in self.weights]
        self.m2 = [torch.zeros_like(w) for w in self.weights]

    def step(
        self, step: int, indices: torch.Tensor, offsets: torch.Tensor, grad: torch.Tensor
    ) -> None:
        """One update (``step`` counts from 1) for a batch laid out table-major, as TBE takes
        it, and the upstream gradient of its pooled output [batch, sum of dims]."""
        column = 0
        for t, (_rows, dim) in enumerate(self.specs):
            lo, hi = int(offsets[t * self.batch]), int(offsets[(t + 1) * self.batch])
            table_indices = indices[lo:hi]
            table_offsets = offsets[t * self.batch : (t + 1) * self.batch] - lo
            w = self.weights[t].clone().requires_grad_(True)
            pooled = torch.nn.functional.embedding_bag(table_indices, w, table_offsets, mode="sum")
            pooled.backward(grad[:, column : column + dim])
            column += dim
            touched = torch.unique(table_indices)
            g = w.grad[touched]
            m1, m2 = self.m1[t], self.m2[t]
            m1[touched] = self.beta1 * m1[touched] + (1 - self.beta1) * g
            m2[touched] = self.beta2 * m2[touched] + (1 - self.beta2) * g * g
            m_hat = m1[touched] / (1 - self.beta1**step)
            v_hat = m2[touched] / (1 - self.beta2**step)
            self.weights[t][touched] -= self.lr * m_hat / (v_hat.sqrt() + self.eps)


def assert_equal_on_npu(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """``actual`` lives on the npu and equals ``expected`` bit for bit (dtype and shape too)."""
    assert actual.device.type == NPU, f"{what}: result on {actual.device}"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, what
    if not torch.equal(actual, expected):
        bad = (actual != expected).nonzero()
        first = bad[0].tolist()
        raise AssertionError(f"{what}: {bad.shape[0]} element(s) differ, first at {first}")


def assert_block_bucketize_like_cpu(
    lengths: torch.Tensor,
    indices: torch.Tensor,
    block_sizes: torch.Tensor,
    weights: torch.Tensor | None,
    **args: Any,
) -> None:
    """fbgemm::block_bucketize_sparse_features on the npu gives what fbgemm's CPU kernel gives,
    every output (an output the CPU leaves None is None on the npu too)."""
    want = torch.ops.fbgemm.block_bucketize_sparse_features(
        lengths, indices, block_sizes=block_sizes, weights=weights, **args
    )
    got = torch.ops.fbgemm.block_bucketize_sparse_features(
        lengths.to(NPU),
        indices.to(NPU),
        block_sizes=block_sizes.to(NPU),
        weights=None if weights is None else weights.to(NPU),
        **args,
    )
    names = ["new_lengths", "new_indices", "new_weights", "new_pos", "unbucketize_permute"]
    for name, a, b in zip(names, got, want, strict=True):
        if b is None:
            assert a is None, name
            continue
        assert_equal_on_npu(a, b, f"block_bucketize {name}")
