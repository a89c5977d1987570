"""Embedding operators on the npu device: fbgemm's table-batched embedding (TBE) modules and
row-wise bucketization, through the adapter, against the same fbgemm modules and operators on
the CPU.

A TBE module built for the npu (EmbeddingLocation.DEVICE, ComputeDevice.CUDA, device "npu",
as the patched TorchRec builds it) must give the CPU module's pooled outputs, and after a
backward pass the CPU module's weights and optimizer state: the fused optimizers (exact SGD,
Adagrad, row-wise Adagrad, Adam) run inside the npu backward. The dense (data-parallel) module's
weight gradient must equal the CPU module's.
"""

from __future__ import annotations

import pytest
import torch
from tbe_reference import (
    NPU,
    AdamReference,
    assert_block_bucketize_like_cpu,
    load_same_weights,
    split_tbe,
)

pytestmark = [
    pytest.mark.requires_npu,
    pytest.mark.requires_npu_ops(
        "fbgemm::block_bucketize_sparse_features",
        "fbgemm::split_embedding_codegen_lookup_sgd_function",
        "fbgemm::split_embedding_codegen_lookup_adagrad_function",
        "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function",
        "fbgemm::split_embedding_codegen_lookup_adam_function",
        "fbgemm::dense_embedding_codegen_lookup_function",
    ),
]

# (rows, dim): fbgemm's TBE modules need dims divisible by 4.
TABLES = [(13, 8), (7, 4), (21, 12)]
BATCH = 5


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """indices, offsets and per-index weights for TABLES x BATCH bags, with duplicate rows
    inside bags and across bags, and empty bags."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 5, (len(TABLES) * BATCH,), generator=g)
    lengths[3] = 0
    indices = []
    for k, n in enumerate(lengths.tolist()):
        rows = TABLES[k // BATCH][0]
        # Few distinct rows: duplicates are the point of the exact optimizers.
        indices.append(torch.randint(0, min(rows, 4), (n,), generator=g))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    flat = torch.cat(indices).to(torch.int64)
    weights = torch.rand(flat.numel(), generator=g) + 0.5
    return flat, offsets, weights


def _split_tbe(device: str, optimizer: str, pooling: str):  # type: ignore[no-untyped-def]
    return split_tbe(TABLES, device, optimizer, learning_rate=0.05, pooling=pooling)


def _load_same_weights(*modules) -> None:  # type: ignore[no-untyped-def]
    load_same_weights(TABLES, 7, *modules)


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "rowwise_adagrad"])
@pytest.mark.parametrize(("pooling", "weighted"), [("sum", False), ("mean", False), ("sum", True)])
def test_split_tbe_trains_on_npu_like_on_cpu(optimizer: str, pooling: str, weighted: bool) -> None:
    cpu = _split_tbe("cpu", optimizer, pooling)
    dev = _split_tbe(NPU, optimizer, pooling)
    _load_same_weights(cpu, dev)
    for step in range(2):  # the second step sees the first one's optimizer state
        indices, offsets, per_index = _batch(step)
        extra = {"per_sample_weights": per_index} if weighted else {}
        out_cpu = cpu(indices, offsets, **extra)
        out_npu = dev(indices.to(NPU), offsets.to(NPU), **{k: v.to(NPU) for k, v in extra.items()})
        assert out_npu.device.type == NPU
        torch.testing.assert_close(out_npu.cpu(), out_cpu, rtol=1e-5, atol=1e-6)
        grad = torch.randn(out_cpu.shape, generator=torch.Generator().manual_seed(step))
        out_cpu.backward(grad)
        out_npu.backward(grad.to(NPU))
    for t, (a, b) in enumerate(
        zip(dev.split_embedding_weights(), cpu.split_embedding_weights(), strict=True)
    ):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-5, atol=1e-6, msg=f"table {t} weights")
    for t, (a, b) in enumerate(
        zip(dev.split_optimizer_states(), cpu.split_optimizer_states(), strict=True)
    ):
        assert len(a) == len(b) == (0 if optimizer == "sgd" else 1)
        for k, (sa, sb) in enumerate(zip(a, b, strict=True)):
            torch.testing.assert_close(
                sa.cpu().view(-1),
                sb.view(-1),
                rtol=1e-5,
                atol=1e-6,
                msg=f"table {t} optimizer state {k}",
            )


def test_split_tbe_adam_on_npu_matches_a_plain_pytorch_adam() -> None:
    """fbgemm's CPU TBE module refuses Adam, so the reference is written out: per table, the
    exact gradient from torch's embedding_bag, then Adam with bias correction on the rows the
    batch touched (fbgemm's sparse Adam leaves the other rows and their moments alone)."""
    lr, eps, beta1, beta2 = 0.05, 1e-6, 0.9, 0.999
    dev = _split_tbe(NPU, "adam", "sum")
    _load_same_weights(dev)
    ref = AdamReference(TABLES, BATCH, dev.split_embedding_weights(), lr, eps, beta1, beta2)
    for step in range(1, 3):
        indices, offsets, _ = _batch(step)
        out = dev(indices.to(NPU), offsets.to(NPU))
        grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(step))
        out.backward(grad.to(NPU))
        ref.step(step, indices, offsets, grad)
    weights, m1, m2 = ref.weights, ref.m1, ref.m2
    states = dev.split_optimizer_states()
    for t, w in enumerate(dev.split_embedding_weights()):
        torch.testing.assert_close(w.cpu(), weights[t], rtol=1e-5, atol=1e-6, msg=f"table {t}")
        # The kernel works in float32 throughout (1 - beta2 = 0.001 is rounded to float), the
        # reference partly in float64 scalars: the second moment differs in the 5th digit.
        torch.testing.assert_close(states[t][0].cpu(), m1[t], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(states[t][1].cpu(), m2[t], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("pooling", ["sum", "mean"])
def test_dense_tbe_gradient_on_npu_equals_cpu(pooling: str) -> None:
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import PoolingMode
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        DenseTableBatchedEmbeddingBagsCodegen,
    )

    mode = {"sum": PoolingMode.SUM, "mean": PoolingMode.MEAN}[pooling]
    cpu = DenseTableBatchedEmbeddingBagsCodegen(TABLES, pooling_mode=mode, use_cpu=True)
    dev = DenseTableBatchedEmbeddingBagsCodegen(TABLES, pooling_mode=mode, use_cpu=True)
    dev = dev.to(NPU)
    with torch.no_grad():
        dev.weights.copy_(cpu.weights.to(NPU))
    indices, offsets, _ = _batch(3)
    out_cpu = cpu(indices, offsets)
    out_npu = dev(indices.to(NPU), offsets.to(NPU))
    torch.testing.assert_close(out_npu.cpu(), out_cpu, rtol=1e-5, atol=1e-6)
    grad = torch.randn(out_cpu.shape, generator=torch.Generator().manual_seed(11))
    out_cpu.backward(grad)
    out_npu.backward(grad.to(NPU))
    assert dev.weights.grad is not None and dev.weights.grad.device.type == NPU
    torch.testing.assert_close(dev.weights.grad.cpu(), cpu.weights.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize(
    ("sequence", "bucketize_pos", "weighted"),
    [(False, False, False), (True, False, False), (False, True, True), (True, True, True)],
)
def test_block_bucketize_matches_fbgemm_cpu(
    dtype: torch.dtype, sequence: bool, bucketize_pos: bool, weighted: bool
) -> None:
    g = torch.Generator().manual_seed(5)
    features, batch, my_size = 3, 4, 3
    lengths = torch.randint(0, 5, (features * batch,), generator=g).to(dtype)
    n = int(lengths.sum())
    # Some ids beyond my_size * block_size go to bucket id % my_size.
    indices = torch.randint(0, 40, (n,), generator=g).to(dtype)
    block_sizes = torch.tensor([5, 9, 4], dtype=dtype)
    weights = torch.rand(n, generator=g) if weighted else None
    args = dict(bucketize_pos=bucketize_pos, sequence=sequence, my_size=my_size)
    assert_block_bucketize_like_cpu(lengths, indices, block_sizes, weights, **args)


def test_block_bucketize_refuses_uneven_row_blocks() -> None:
    lengths = torch.tensor([1, 1], device=NPU)
    indices = torch.tensor([0, 3], device=NPU)
    with pytest.raises(ValueError, match=r"block_bucketize_pos .* not supported on npu"):
        torch.ops.fbgemm.block_bucketize_sparse_features(
            lengths,
            indices,
            False,
            False,
            torch.tensor([2, 2], device=NPU),
            2,
            block_bucketize_pos=[torch.tensor([0, 1, 4]), torch.tensor([0, 2, 4])],
        )


def test_tbe_lookup_refuses_uvm_tables() -> None:
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation

    dev = _split_tbe(NPU, "sgd", "sum")
    # What a managed (UVM) table looks like to the lookup: its rows in uvm_weights.
    dev.weights_placements.fill_(EmbeddingLocation.MANAGED.value)
    dev.weights_uvm = torch.zeros(16, device=NPU)
    indices, offsets, _ = _batch(0)
    with pytest.raises(ValueError, match=r"only EmbeddingLocation\.DEVICE"):
        dev(indices.to(NPU), offsets.to(NPU))


def test_tbe_lookup_refuses_half_weights_with_a_fused_optimizer() -> None:
    from fbgemm_gpu.split_embedding_configs import EmbOptimType, SparseType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        ComputeDevice,
        SplitTableBatchedEmbeddingBagsCodegen,
    )

    dev = SplitTableBatchedEmbeddingBagsCodegen(
        embedding_specs=[
            (rows, dim, EmbeddingLocation.DEVICE, ComputeDevice.CUDA) for rows, dim in TABLES
        ],
        optimizer=EmbOptimType.EXACT_SGD,
        weights_precision=SparseType.FP16,
        stochastic_rounding=False,
        device=torch.device(NPU),
    )
    indices, offsets, _ = _batch(0)
    with pytest.raises(TypeError, match="update float32 weights; dev_weights is Half"):
        dev(indices.to(NPU), offsets.to(NPU))


def test_tbe_lookup_names_a_wrong_offsets_length() -> None:
    dev = _split_tbe(NPU, "sgd", "sum")
    indices, offsets, _ = _batch(0)
    with pytest.raises((ValueError, RuntimeError), match="offsets"):
        torch.ops.fbgemm.split_embedding_codegen_lookup_sgd_function(
            placeholder_autograd_tensor=dev.placeholder_autograd_tensor,
            dev_weights=dev.weights_dev,
            uvm_weights=dev.weights_uvm,
            lxu_cache_weights=dev.lxu_cache_weights,
            weights_placements=dev.weights_placements,
            weights_offsets=dev.weights_offsets,
            D_offsets=dev.D_offsets,
            total_D=dev.total_D,
            max_D=dev.max_D,
            hash_size_cumsum=dev.hash_size_cumsum,
            total_hash_size_bits=dev.total_hash_size_bits,
            indices=indices.to(NPU),
            offsets=offsets[:-2].to(NPU),
            pooling_mode=0,
            indice_weights=None,
            feature_requires_grad=None,
            lxu_cache_locations=dev.lxu_cache_locations_empty,
            gradient_clipping=False,
            max_gradient=1.0,
            stochastic_rounding=False,
            learning_rate=0.1,
        )
