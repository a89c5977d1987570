"""DynamicEmbedding / DynamicEmbeddingBag against plain PyTorch on the same id -> row mapping.

The reference is nn.Embedding / nn.EmbeddingBag holding, in row i, the initial values of the
i-th id, trained by torch.optim (SGD, Adagrad, SparseAdam - the lazy Adam our sparse update
implements). Batches repeat ids, so gradient accumulation of duplicates is exercised.
"""

from __future__ import annotations

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import (
    IdMap,
    random_ids,
    reference_bag,
    reference_embedding,
    sparse_optimizer,
    torch_optimizer,
)

STEPS = 20
DIM = 16
LR = 0.05


def batches(
    pool: torch.Tensor, steps: int, shape: tuple[int, ...], seed: int
) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [pool[torch.randint(0, pool.numel(), shape, generator=g)] for _ in range(steps)]


def targets(steps: int, shape: tuple[int, ...], seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=g) for _ in range(steps)]


def assert_close(actual: torch.Tensor, expected: torch.Tensor, kind: str) -> None:
    if kind == "sgd":
        # Bit-identical: same values, same sign of zero.
        assert torch.equal(actual, expected)
        assert torch.equal(actual.view(torch.int32), expected.view(torch.int32))
    else:
        # Within 1e-6 relative to the tensor's magnitude: summation order of duplicate
        # gradients differs by rounding (SparseAdam coalesces sparse gradients), and an
        # element-wise relative bound is meaningless for pooled values that cancel to ~0.
        scale = expected.abs().max().item()
        err = (actual - expected).abs().max().item()
        assert err <= 1e-6 * scale, f"max error {err:.3g} exceeds 1e-6 x {scale:.3g}"


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
def test_embedding_trains_like_torch(kind: str) -> None:
    pool = random_ids(40, seed=1)
    mapping = IdMap(pool)
    model = ec.DynamicEmbedding(DIM, optimizer=sparse_optimizer(kind, LR), seed=7)
    initial = model.table.host.lookup(mapping.ids)  # initial values, nothing inserted
    assert len(model.table) == 0
    ref = reference_embedding(initial, sparse=(kind == "adam"))
    opt = torch_optimizer(kind, ref.parameters(), LR)

    data = batches(pool, STEPS, (8, 12), seed=2)
    goal = targets(STEPS, (8, 12, DIM), seed=3)
    for ids, target in zip(data, goal, strict=True):
        assert torch.unique(ids).numel() < ids.numel()  # repeated ids in every batch
        out = model(ids)
        loss = ((out - target) ** 2).sum()
        loss.backward()

        opt.zero_grad()
        ref_out = ref(mapping(ids))
        assert_close(out.detach(), ref_out.detach(), kind)
        ((ref_out - target) ** 2).sum().backward()
        opt.step()

    exported = model.table.export()
    rows = exported["weight"]
    order = mapping(exported["ids"])
    assert_close(rows, ref.weight.detach()[order], kind)
    # Every id of the pool that appeared was stored; the others were never created.
    seen = torch.unique(torch.cat([d.reshape(-1) for d in data]))
    assert torch.equal(exported["ids"], torch.sort(seen).values)


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_trains_like_torch(kind: str, mode: str) -> None:
    pool = random_ids(30, seed=11)
    mapping = IdMap(pool)
    model = ec.DynamicEmbeddingBag(DIM, mode=mode, optimizer=sparse_optimizer(kind, LR), seed=3)
    initial = model.table.host.lookup(mapping.ids)
    ref = reference_bag(initial, mode)
    opt = torch_optimizer(kind, ref.parameters(), LR)

    g = torch.Generator().manual_seed(5)
    for _ in range(STEPS):
        # Jagged bags, including empty ones, with repeats inside and across bags.
        lengths = torch.randint(0, 6, (10,), generator=g)
        ids = pool[torch.randint(0, pool.numel(), (int(lengths.sum()),), generator=g)]
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
        target = torch.randn(10, DIM, generator=g)

        out = model(ids, offsets)
        ((out - target) ** 2).sum().backward()
        opt.zero_grad()
        rows = mapping(ids)
        ref_out = ref(rows, offsets)
        assert_close(out.detach(), ref_out.detach(), kind)
        ((ref_out - target) ** 2).sum().backward()
        if kind == "adam":
            # SparseAdam needs a sparse gradient over the rows of the batch (max pooling has
            # no sparse mode in nn.EmbeddingBag); rows whose gradient is 0 still count as
            # touched, as in EmbeddingBag(sparse=True).
            touched = torch.unique(rows)
            ref.weight.grad = torch.sparse_coo_tensor(
                touched[None], ref.weight.grad[touched], ref.weight.shape
            )
        opt.step()

    exported = model.table.export()
    assert_close(exported["weight"], ref.weight.detach()[mapping(exported["ids"])], kind)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_pooling_equals_embedding_bag_forward(mode: str) -> None:
    pool = random_ids(25, seed=21)
    mapping = IdMap(pool)
    model = ec.DynamicEmbeddingBag(DIM, mode=mode, include_last_offset=True, seed=9).eval()
    initial = model.table.host.lookup(mapping.ids)
    ref = reference_bag(initial, mode, include_last_offset=True)
    ids = pool[torch.tensor([0, 3, 3, 7, 1, 24, 24, 24, 5])]
    offsets = torch.tensor([0, 3, 3, 4, 9])  # bags of 3, 0, 1 and 5 ids
    out = model(ids, offsets)
    assert torch.equal(out, ref(mapping(ids), offsets))
    # Hand check of one bag: bag 0 is the rows of its three ids.
    rows = initial[mapping(ids[:3])]
    expected_bag0 = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0).values}[mode]
    torch.testing.assert_close(out[0], expected_bag0, rtol=1e-6, atol=1e-7)
    assert torch.equal(out[1], torch.zeros(DIM))  # empty bag pools to zeros
    assert len(model.table) == 0  # evaluation never inserts


def test_two_dim_input_and_per_sample_weights() -> None:
    pool = random_ids(12, seed=31)
    mapping = IdMap(pool)
    model = ec.DynamicEmbeddingBag(DIM, mode="sum", optimizer=ec.SparseSGD(lr=LR), seed=4)
    initial = model.table.host.lookup(mapping.ids)
    ref = reference_bag(initial, "sum")
    opt = torch.optim.SGD(ref.parameters(), lr=LR)
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        ids = pool[torch.randint(0, pool.numel(), (6, 4), generator=g)]
        w = torch.rand(6, 4, generator=g)
        out = model(ids, per_sample_weights=w)
        out.pow(2).sum().backward()
        opt.zero_grad()
        ref_out = ref(mapping(ids), per_sample_weights=w)
        ref_out.pow(2).sum().backward()
        opt.step()
        assert torch.equal(out.detach(), ref_out.detach())
    exported = model.table.export()
    assert torch.equal(exported["weight"], ref.weight.detach()[mapping(exported["ids"])])


def test_int32_ids_are_accepted_like_nn_embedding() -> None:
    model = ec.DynamicEmbedding(4, seed=1).eval()
    ids = torch.tensor([3, 9, 3])
    assert torch.equal(model(ids.int()), model(ids))


def test_ids_of_other_dtypes_are_refused() -> None:
    model = ec.DynamicEmbedding(4)
    with pytest.raises(TypeError, match="integer tensor"):
        model(torch.tensor([1.0, 2.0]))
    bag = ec.DynamicEmbeddingBag(4)
    with pytest.raises(TypeError, match="integer tensor"):
        bag(torch.tensor([1.0, 2.0]), torch.tensor([0]))


def test_per_sample_weights_need_sum_mode() -> None:
    bag = ec.DynamicEmbeddingBag(4, mode="mean")
    with pytest.raises(ValueError, match="only supported with mode 'sum'"):
        bag(torch.tensor([1, 2]), torch.tensor([0]), per_sample_weights=torch.ones(2))


def test_ids_on_a_foreign_device_are_refused() -> None:
    model = ec.DynamicEmbedding(4).to("meta")
    out = model(torch.tensor([[1, 2]]))
    assert out.device.type == "meta" and out.shape == (1, 2, 4)
    model.to_empty(device="cpu")  # as for any torch module on meta
    assert model(torch.tensor([3])).device.type == "cpu"
    with pytest.raises(ec.DeviceError, match="meta"):
        model(torch.tensor([1, 2], device="meta"))


def test_nn_embedding_constructor_form_is_accepted() -> None:
    # (num_embeddings, embedding_dim) as for nn.Embedding; ids are not bounded by it.
    model = ec.DynamicEmbedding(10, 3).eval()
    assert model(torch.tensor([5, 10**12])).shape == (2, 3)
    bag = ec.DynamicEmbeddingBag(10, 4, mode="sum")
    assert bag.embedding_dim == 4 and bag.mode == "sum"
    with pytest.raises(TypeError, match="num_embeddings, embedding_dim"):
        ec.DynamicEmbedding(1, 2, 3)


def test_a_misspelt_option_is_named() -> None:
    # The modules pass their options through to EmbeddingTable; a typo is caught before it.
    with pytest.raises(TypeError, match=r"DynamicEmbeddingBag: unknown option.* optimiser.*seed"):
        ec.DynamicEmbeddingBag(4, optimiser=ec.SparseSGD())
