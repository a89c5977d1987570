"""Sparse COO tensors on the npu device: making them from npu parts, reading the parts,
coalescing, densifying, copies between devices, and sparse gradients (an embedding with
``sparse=True``, whose two uses accumulate two sparse gradients, trained by SGD).

Each case runs the same operations on CPU sparse tensors, which are the reference; the
hand-worked case pins the values themselves.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.requires_npu

NPU = "npu"


def parts(seed: int, nnz: int, dense: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of a [6, 5, *dense] tensor with repeated and out-of-order entries, and values."""
    g = torch.Generator().manual_seed(seed)
    indices = torch.stack(
        [torch.randint(0, 6, (nnz,), generator=g), torch.randint(0, 5, (nnz,), generator=g)]
    )
    values = torch.randn((nnz, *dense), generator=g, dtype=torch.float32)
    return indices, values


def same(npu: torch.Tensor, cpu: torch.Tensor) -> None:
    """``npu`` (a sparse npu tensor) has ``cpu``'s layout, shape, dims, flag and parts."""
    assert npu.device.type == "npu" and npu.is_sparse
    assert npu.shape == cpu.shape and npu.dtype == cpu.dtype
    assert (npu.sparse_dim(), npu.dense_dim(), npu._nnz()) == (
        cpu.sparse_dim(),
        cpu.dense_dim(),
        cpu._nnz(),
    )
    assert npu.is_coalesced() == cpu.is_coalesced()
    assert torch.equal(npu._indices().cpu(), cpu._indices())
    torch.testing.assert_close(npu._values().cpu(), cpu._values(), rtol=1e-6, atol=1e-6)


def test_hand_worked_coalesce_and_to_dense() -> None:
    indices = torch.tensor([[2, 0, 2], [1, 3, 1]])
    values = torch.tensor([1.5, -2.0, 0.25])
    t = torch.sparse_coo_tensor(indices.to(NPU), values.to(NPU), (3, 4))
    assert t.device.type == "npu" and not t.is_coalesced() and t._nnz() == 3
    c = t.coalesce()
    assert c.is_coalesced() and c.indices().cpu().tolist() == [[0, 2], [3, 1]]
    assert c.values().cpu().tolist() == [-2.0, 1.75]
    want = [[0.0, 0.0, 0.0, -2.0], [0.0] * 4, [0.0, 1.75, 0.0, 0.0]]
    assert t.to_dense().device.type == "npu"
    assert t.to_dense().cpu().tolist() == want


@pytest.mark.parametrize(
    ("seed", "nnz", "dense"), [(0, 17, ()), (1, 9, (3,)), (2, 0, (2,)), (3, 40, (2, 2))]
)
def test_operations_match_cpu_sparse_tensors(seed: int, nnz: int, dense: tuple[int, ...]) -> None:
    indices, values = parts(seed, nnz, dense)
    size = (6, 5, *dense)
    cpu = torch.sparse_coo_tensor(indices, values, size)
    npu = torch.sparse_coo_tensor(indices.to(NPU), values.to(NPU), size)
    same(npu, cpu)
    unsafe = torch.ops.aten._sparse_coo_tensor_unsafe(indices.to(NPU), values.to(NPU), size)
    same(unsafe, cpu)
    same(torch.sparse_coo_tensor(indices, values, size, device=NPU), cpu)  # CPU parts, moved

    same(npu.coalesce(), cpu.coalesce())
    assert torch.equal(npu.coalesce().indices().cpu(), cpu.coalesce().indices())
    assert torch.equal(npu.coalesce().values().cpu(), cpu.coalesce().values())
    torch.testing.assert_close(npu.to_dense().cpu(), cpu.to_dense(), rtol=1e-6, atol=1e-6)
    # indices()/values() refuse an uncoalesced tensor, as on the CPU.
    if not cpu.is_coalesced():
        with pytest.raises(RuntimeError, match="coalesce"):
            npu.indices()

    # Copies between devices keep everything, the uncoalesced duplicates included.
    same(cpu.to(NPU), cpu)
    back = npu.cpu()
    assert back.device.type == "cpu" and back.is_sparse
    same(npu, back)

    # Sums: sparse + sparse, sparse into sparse in place, sparse into dense in place.
    other_indices, other_values = parts(seed + 100, 7, dense)
    cpu_other = torch.sparse_coo_tensor(other_indices, other_values, size)
    npu_other = cpu_other.to(NPU)
    torch.testing.assert_close(
        (npu + npu_other).to_dense().cpu(), (cpu + cpu_other).to_dense(), rtol=1e-6, atol=1e-6
    )
    npu_acc, cpu_acc = npu.clone(), cpu.clone()
    npu_acc.add_(npu_other, alpha=0.5)
    cpu_acc.add_(cpu_other, alpha=0.5)
    assert npu_acc.device.type == "npu"
    torch.testing.assert_close(npu_acc.to_dense().cpu(), cpu_acc.to_dense(), rtol=1e-6, atol=1e-6)
    dense_npu = torch.ones(size, device=NPU)
    dense_npu.add_(npu)
    torch.testing.assert_close(dense_npu.cpu(), torch.ones(size) + cpu.to_dense())

    # zero_ keeps the shape and drops every entry.
    npu_acc.zero_()
    cpu_acc.zero_()
    same(npu_acc, cpu_acc)


def test_parts_alias_the_tensor() -> None:
    """_indices()/_values() are the tensor's own parts (as on the CPU), so writing them writes
    the tensor."""
    indices, values = parts(5, 6, ())
    npu = torch.sparse_coo_tensor(indices.to(NPU), values.to(NPU), (6, 5))
    cpu = torch.sparse_coo_tensor(indices, values, (6, 5))
    npu._values().mul_(2)
    cpu._values().mul_(2)
    torch.testing.assert_close(npu.to_dense().cpu(), cpu.to_dense())
    coalesced = npu.coalesce()
    assert coalesced.values().data_ptr() == coalesced._values().data_ptr()


def test_a_second_device_keeps_its_sparse_tensors() -> None:
    if torch.npu.device_count() < 2:  # type: ignore[attr-defined]
        pytest.skip("needs two npu devices")
    indices, values = parts(7, 5, ())
    t = torch.sparse_coo_tensor(indices.to("npu:1"), values.to("npu:1"), (6, 5))
    assert t.device == torch.device("npu", 1)
    assert t._values().device == torch.device("npu", 1)
    assert t.coalesce().device == torch.device("npu", 1)
    cpu = torch.sparse_coo_tensor(indices, values, (6, 5))
    torch.testing.assert_close(t.to_dense().cpu(), cpu.to_dense())


def _train_sparse_embedding(device: str) -> tuple[torch.Tensor, list[torch.Tensor]]:
    torch.manual_seed(0)
    table = torch.nn.Embedding(11, 4, sparse=True).to(device)
    optimizer = torch.optim.SGD(table.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(3)
    grads = []
    for _ in range(3):
        optimizer.zero_grad()
        # Two lookups of the same table: autograd accumulates two sparse gradients.
        first = torch.randint(0, 11, (5, 3), generator=g)
        second = torch.randint(0, 11, (7,), generator=g)
        loss = (table(first.to(device)).sum(1) ** 2).sum() + table(second.to(device)).pow(3).sum()
        loss.backward()
        grad = table.weight.grad
        assert grad is not None and grad.is_sparse and grad.device.type == device
        grads.append(grad.to_dense().cpu())
        optimizer.step()
    return table.weight.detach().cpu(), grads


def test_sparse_embedding_gradients_accumulate_and_train_as_on_cpu() -> None:
    cpu_weight, cpu_grads = _train_sparse_embedding("cpu")
    npu_weight, npu_grads = _train_sparse_embedding(NPU)
    for a, b in zip(npu_grads, cpu_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(npu_weight, cpu_weight, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(importlib.util.find_spec("npu_sim") is None, reason="npu_sim's own counters")
def test_the_simulator_counts_sparse_fallbacks() -> None:
    import npu_sim

    npu_sim.reset_fallback_stats()
    indices, values = parts(9, 4, ())
    torch.sparse_coo_tensor(indices.to(NPU), values.to(NPU), (6, 5)).coalesce()
    counts = npu_sim.fallback_stats()
    assert counts.get("aten::_coalesce (sparse)", 0) >= 1, counts
