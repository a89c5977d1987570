"""torchrec_embcache in the installed stack: a torchrec DLRM whose sparse arch is an
EmbCacheEmbeddingBagCollection trains, and matches an independent reference.

The reference is the same DLRM built on torchrec's own EmbeddingBagCollection, its tables
holding (row i = id i) the initial rows of the dynamic tables, trained by torch.optim.SGD
over all parameters. With SGD the dynamic tables apply exactly torch's update (w - lr*g, one
rounding) to exactly the rows torch's dense update changes, so losses and rows must be
identical; the npu variant allows rounding differences of the device.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version

import pytest
import torch


@dataclass(frozen=True)
class Shape:
    features: int
    batch: int
    dim: int
    num: int  # ids per feature: 0 .. num - 1
    steps: int
    max_ids_per_bag: int = 3
    zipf: bool = False  # else uniform ids

    @property
    def keys(self) -> list[str]:
        return [f"cat_{i}" for i in range(self.features)]


DENSE = 13
# Hand-sized, to pin the semantics (bit-identical on the CPU).
TOY = Shape(features=4, batch=32, dim=8, num=64, steps=8)
# What users train: 26 sparse features, a batch of 1024, D = 64, Zipf ids over 20,000 ids per
# feature (hot ids repeat within and across batches); three steps.
REAL = Shape(features=26, batch=1024, dim=64, num=20_000, steps=3, max_ids_per_bag=8, zipf=True)
FEATURES, BATCH, DIM, NUM, STEPS, KEYS = (
    TOY.features,
    TOY.batch,
    TOY.dim,
    TOY.num,
    TOY.steps,
    TOY.keys,
)


def test_installed_wheel_versions() -> None:
    import torchrec_embcache

    assert version("torchrec_embcache") == "1.1.0+npu"
    assert torchrec_embcache.__version__ == "1.1.0+npu"
    info = torchrec_embcache._C.build_info
    assert info["torch_version"] == torch.__version__.split("+")[0]
    assert bool(info["cxx11_abi"]) == bool(torch._C._GLIBCXX_USE_CXX11_ABI)


def batches(device: torch.device, shape: Shape = TOY) -> list:
    from torchrec.datasets.utils import Batch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    g = torch.Generator().manual_seed(2024)
    zipf = 1.0 / torch.arange(1, shape.num + 1, dtype=torch.float64) ** 1.05
    out = []
    for _ in range(shape.steps):
        lengths = torch.randint(
            0, shape.max_ids_per_bag + 1, (shape.features * shape.batch,), generator=g
        )
        n = int(lengths.sum())
        if shape.zipf:
            values = torch.multinomial(zipf, n, replacement=True, generator=g)
        else:
            values = torch.randint(0, shape.num, (n,), generator=g)
        out.append(
            Batch(
                dense_features=torch.randn(shape.batch, DENSE, generator=g).to(device),
                # Ids stay on the host: the dynamic tables hash them there.
                sparse_features=KeyedJaggedTensor.from_lengths_sync(shape.keys, values, lengths),
                labels=torch.randint(0, 2, (shape.batch,), generator=g).to(device),
            )
        )
    return out


def build(device: torch.device, cache_slots: int | None, lr: float, shape: Shape = TOY):
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    from torchrec.models.dlrm import DLRM, DLRMTrain
    from torchrec_embcache import (
        EmbCacheEmbeddingBagCollection,
        EmbCacheEmbeddingBagConfig,
        SparseSGD,
    )

    def dlrm(ebc: torch.nn.Module, dense_device: torch.device) -> DLRMTrain:
        torch.manual_seed(7)  # the same dense initialisation for both models
        model = DLRM(
            embedding_bag_collection=ebc,
            dense_in_features=DENSE,
            dense_arch_layer_sizes=[32, shape.dim],
            over_arch_layer_sizes=[32, 1],
        )
        return DLRMTrain(model).to(dense_device)

    def configs(config_class: type, **extra: object) -> list:
        # One table per feature, the same for our collection and torchrec's reference.
        return [
            config_class(
                name=f"t_{k}",
                embedding_dim=shape.dim,
                num_embeddings=shape.num,
                feature_names=[k],
                **extra,
            )
            for k in shape.keys
        ]

    ours = EmbCacheEmbeddingBagCollection(
        configs(EmbCacheEmbeddingBagConfig, cache_slots=cache_slots),
        device=device,
        optimizer=SparseSGD(lr=lr),
    )
    reference = EmbeddingBagCollection(configs(EmbeddingBagConfig))
    with torch.no_grad():
        for name, bag in reference.embedding_bags.items():
            bag.weight.copy_(ours.embedding_bags[name].table.host.lookup(torch.arange(shape.num)))
    return dlrm(ours, device), dlrm(reference, torch.device("cpu"))


def train(model: torch.nn.Module, data: list, lr: float) -> list[torch.Tensor]:
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for batch in data:
        optimizer.zero_grad()
        loss, _ = model(batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().cpu())
    return losses


def table_rows(ours: torch.nn.Module, reference: torch.nn.Module, name: str):
    table = ours.model.sparse_arch.embedding_bag_collection.embedding_bags[name].table
    exported = table.export()
    weight = reference.model.sparse_arch.embedding_bag_collection.embedding_bags[name].weight
    return exported["ids"], exported["weight"], weight.detach()[exported["ids"]]


@pytest.mark.parametrize("cache_slots", [None, 48], ids=["host-table", "device-cache"])
def test_dlrm_trains_with_embcache_ebc_on_cpu(cache_slots: int | None) -> None:
    lr = 0.1
    cpu = torch.device("cpu")
    ours, reference = build(cpu, cache_slots, lr)
    # Dense parameters only: the dynamic tables update themselves in backward.
    assert len(list(ours.parameters())) + FEATURES == len(list(reference.parameters()))
    got = train(ours, batches(cpu), lr)
    expected = train(reference, batches(cpu), lr)
    assert all(torch.isfinite(x) for x in got)
    assert got[-1] != got[0]  # it learned something
    for a, b in zip(got, expected, strict=True):
        assert torch.equal(a, b)
    for k in KEYS:
        ids, rows, ref_rows = table_rows(ours, reference, f"t_{k}")
        assert ids.numel() > 0
        assert torch.equal(rows, ref_rows)


@pytest.mark.requires_npu
def test_dlrm_trains_with_embcache_ebc_on_npu() -> None:
    lr = 0.1
    npu = torch.device("npu")
    ours, reference = build(npu, cache_slots=48, lr=lr)
    got = train(ours, batches(npu), lr)
    expected = train(reference, batches(torch.device("cpu")), lr)
    torch.testing.assert_close(torch.stack(got), torch.stack(expected), rtol=1e-4, atol=1e-5)
    for k in KEYS:
        _, rows, ref_rows = table_rows(ours, reference, f"t_{k}")
        torch.testing.assert_close(rows, ref_rows, rtol=1e-4, atol=1e-5)


@pytest.mark.requires_npu
def test_dlrm_trains_with_embcache_ebc_on_npu_at_batch_1024() -> None:
    """26 features, batch 1024, D = 64, Zipf ids; 2048 device slots per table hold one batch's
    distinct ids but not three batches', so rows are swapped out and back in between steps."""
    lr = 0.1
    npu = torch.device("npu")
    ours, reference = build(npu, cache_slots=2048, lr=lr, shape=REAL)
    data = batches(npu, REAL)
    per_batch = max(
        int(torch.unique(b.sparse_features[k].values()).numel()) for b in data for k in REAL.keys
    )
    over_steps = max(
        int(torch.unique(torch.cat([b.sparse_features[k].values() for b in data])).numel())
        for k in REAL.keys
    )
    assert per_batch <= 2048 < over_steps, (per_batch, over_steps)
    got = train(ours, data, lr)
    expected = train(reference, batches(torch.device("cpu"), REAL), lr)
    torch.testing.assert_close(torch.stack(got), torch.stack(expected), rtol=1e-4, atol=1e-5)
    for k in REAL.keys:
        _, rows, ref_rows = table_rows(ours, reference, f"t_{k}")
        torch.testing.assert_close(rows, ref_rows, rtol=1e-4, atol=1e-5, msg=k)


@pytest.mark.requires_npu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_low_precision_rows_on_npu_match_the_host_kernel(dtype: torch.dtype) -> None:
    """16-bit rows in the npu device cache: the update there (torch operations in float64,
    rounded once to nearest even) equals the host's fused kernel bit for bit, with Adam
    state in float32, Zipf ids and a cache smaller than the working set."""
    import torchrec_embcache as ec

    g = torch.Generator().manual_seed(11)
    zipf = 1.0 / torch.arange(1, 3001, dtype=torch.float64) ** 1.05
    data = [torch.multinomial(zipf, 2048, replacement=True, generator=g) for _ in range(4)]
    coefs = [torch.randint(-8, 9, (256, 64), generator=g) / 8 for _ in data]
    exported = []
    for device, slots in (("cpu", None), ("npu", 1500)):
        model = ec.DynamicEmbeddingBag(
            64,
            mode="sum",
            optimizer=ec.SparseAdam(lr=0.01),
            row_dtype=dtype,
            cache_slots=slots,
            device=device,
            seed=5,
        )
        for ids, c in zip(data, coefs, strict=True):
            (model(ids.view(256, 8)) * c.to(device)).sum().backward()
        exported.append(model.table.export())
    host, npu = exported
    assert npu["weight"].dtype == dtype
    assert torch.equal(host["weight"].view(torch.int16), npu["weight"].view(torch.int16))
    assert torch.equal(host["optimizer_state"], npu["optimizer_state"])
