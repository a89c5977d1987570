"""EmbCache collections against torchrec's EmbeddingBagCollection / EmbeddingCollection,
inside torchrec's DLRM, and with the train pipelines."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("torchrec")

import torchrec_embcache as ec
from torchrec import (
    EmbeddingBagCollection,
    EmbeddingBagConfig,
    EmbeddingCollection,
    EmbeddingConfig,
)
from torchrec.datasets.utils import Batch
from torchrec.distributed.train_pipeline import TrainPipelineBase
from torchrec.models.dlrm import DLRM, DLRMTrain
from torchrec.modules.embedding_configs import PoolingType
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
from torchrec_embcache import (
    EmbCacheEmbeddingBagCollection,
    EmbCacheEmbeddingBagConfig,
    EmbCacheEmbeddingCollection,
    EmbCacheEmbeddingConfig,
    EmbCacheTrainPipeline,
)

NUM = 50  # ids are drawn from [0, NUM): the torchrec reference needs a dense range


def random_kjt(
    keys: list[str], batch: int, gen: torch.Generator, weighted: bool = False
) -> KeyedJaggedTensor:
    lengths = torch.randint(0, 4, (len(keys) * batch,), generator=gen)
    values = torch.randint(0, NUM, (int(lengths.sum()),), generator=gen)
    weights = torch.rand(values.numel(), generator=gen) if weighted else None
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys, values=values, lengths=lengths, weights=weights
    )


def copy_rows_into(reference: torch.nn.Module, ours: torch.nn.Module, attr: str) -> None:
    """Gives each torchrec table the initial rows of our table for ids 0..NUM-1."""
    ids = torch.arange(NUM)
    with torch.no_grad():
        for name, module in getattr(reference, attr).items():
            module.weight.copy_(getattr(ours, attr)[name].table.host.lookup(ids))


def bag_configs(cls: type, pooling: PoolingType = PoolingType.SUM) -> list[EmbeddingBagConfig]:
    return [
        cls(
            name="t1",
            embedding_dim=4,
            num_embeddings=NUM,
            feature_names=["f1", "f2"],
            pooling=pooling,
        ),
        cls(name="t2", embedding_dim=3, num_embeddings=NUM, feature_names=["f3"], pooling=pooling),
        cls(name="t3", embedding_dim=2, num_embeddings=NUM, feature_names=["f1"], pooling=pooling),
    ]


@pytest.mark.parametrize(
    ("pooling", "weighted"),
    [(PoolingType.SUM, False), (PoolingType.MEAN, False), (PoolingType.SUM, True)],
)
def test_ebc_output_equals_torchrec(pooling: PoolingType, weighted: bool) -> None:
    ours = EmbCacheEmbeddingBagCollection(
        bag_configs(EmbCacheEmbeddingBagConfig, pooling), is_weighted=weighted
    )
    ref = EmbeddingBagCollection(bag_configs(EmbeddingBagConfig, pooling), is_weighted=weighted)
    copy_rows_into(ref, ours, "embedding_bags")
    kjt = random_kjt(
        ["f1", "f2", "f3"], batch=5, gen=torch.Generator().manual_seed(1), weighted=weighted
    )
    ours.eval()
    got, expected = ours(kjt), ref(kjt)
    # f1 feeds two tables, so torchrec names its outputs "f1@t1" and "f1@t3".
    assert got.keys() == expected.keys() == ["f1@t1", "f2", "f3", "f1@t3"]
    assert got.length_per_key() == expected.length_per_key()
    torch.testing.assert_close(got.values(), expected.values(), rtol=1e-6, atol=1e-7)


def test_variable_batch_kjt_equals_torchrec() -> None:
    # Variable batch per feature (f1 and f3 have 2 samples, f2 has 3); inverse indices
    # expand every feature to the 3 output rows.
    kjt = KeyedJaggedTensor(
        keys=["f1", "f2", "f3"],
        values=torch.tensor([1, 2, 3, 4, 5, 6, 7, 8]),
        lengths=torch.tensor([1, 2, 1, 1, 1, 1, 1]),
        stride_per_key_per_rank=[[2], [3], [2]],
        inverse_indices=(["f1", "f2", "f3"], torch.tensor([[0, 1, 1], [0, 1, 2], [1, 0, 0]])),
    )
    ours = EmbCacheEmbeddingBagCollection(bag_configs(EmbCacheEmbeddingBagConfig)[:2]).eval()
    ref = EmbeddingBagCollection(bag_configs(EmbeddingBagConfig)[:2])
    copy_rows_into(ref, ours, "embedding_bags")
    got, expected = ours(kjt), ref(kjt)
    assert got.values().shape == (3, 4 + 4 + 3)
    assert torch.equal(got.values(), expected.values())


def test_ec_output_equals_torchrec() -> None:
    def configs(cls: type) -> list[EmbeddingConfig]:
        return [
            cls(name="t1", embedding_dim=4, num_embeddings=NUM, feature_names=["f1", "f2"]),
            cls(name="t2", embedding_dim=4, num_embeddings=NUM, feature_names=["f3"]),
        ]

    ours = EmbCacheEmbeddingCollection(configs(EmbCacheEmbeddingConfig), need_indices=True)
    ref = EmbeddingCollection(configs(EmbeddingConfig), need_indices=True)
    copy_rows_into(ref, ours, "embeddings")
    kjt = random_kjt(["f1", "f2", "f3"], batch=4, gen=torch.Generator().manual_seed(2))
    got, expected = ours.eval()(kjt), ref(kjt)
    assert got.keys() == expected.keys()
    for key in expected:
        assert torch.equal(got[key].values(), expected[key].values())
        assert torch.equal(got[key].lengths(), expected[key].lengths())
        assert torch.equal(got[key].weights(), expected[key].weights())


def test_default_initialisation_follows_torchrec_range() -> None:
    ours = EmbCacheEmbeddingBagCollection(
        [EmbeddingBagConfig(name="t", embedding_dim=64, num_embeddings=400, feature_names=["f"])]
    )
    rows = ours.embedding_bags["t"].table.host.lookup(torch.arange(1000))
    bound = (1 / 400) ** 0.5
    assert float(rows.abs().max()) <= bound and float(rows.abs().max()) > 0.9 * bound


def test_a_negative_length_is_refused_naming_the_feature_and_bag() -> None:
    # Before: "Expected i < index_size" from an indexing kernel (a trap on npu).
    config = ec.EmbCacheEmbeddingBagConfig(
        name="t", embedding_dim=4, num_embeddings=16, feature_names=["f", "g"]
    )
    ebc = ec.EmbCacheEmbeddingBagCollection([config])
    kjt = KeyedJaggedTensor(
        keys=["f", "g"], values=torch.tensor([1, 2, 3]), lengths=torch.tensor([2, 0, 2, -1])
    )
    with pytest.raises(ValueError, match=r"feature 'g': bag 1 has length -1"):
        ebc(kjt)


def test_weighted_mean_pooling_is_refused() -> None:
    # torch's embedding_bag takes per-sample weights only for sums.
    with pytest.raises(ValueError, match="SUM pooling"):
        EmbCacheEmbeddingBagCollection(
            bag_configs(EmbCacheEmbeddingBagConfig, PoolingType.MEAN), is_weighted=True
        )


def test_custom_init_fn_is_refused() -> None:
    config = EmbeddingBagConfig(
        name="t",
        embedding_dim=4,
        num_embeddings=10,
        feature_names=["f"],
        init_fn=torch.nn.init.zeros_,
    )
    with pytest.raises(ValueError, match="initializer="):
        EmbCacheEmbeddingBagCollection([config])


def test_meta_device_gives_shapes() -> None:
    ours = EmbCacheEmbeddingBagCollection(
        bag_configs(EmbCacheEmbeddingBagConfig), device=torch.device("meta")
    )
    kjt = random_kjt(["f1", "f2", "f3"], batch=3, gen=torch.Generator().manual_seed(3))
    out = ours(kjt)
    assert out.values().device.type == "meta" and out.values().shape == (3, 4 + 4 + 3 + 2)


def ec_configs(cls: type, cache_slots: int | None = None) -> list[EmbeddingConfig]:
    extra = {} if cache_slots is None else {"cache_slots": cache_slots}
    return [
        cls(name="t1", embedding_dim=4, num_embeddings=NUM, feature_names=["f1", "f2"], **extra),
        cls(name="t2", embedding_dim=4, num_embeddings=NUM, feature_names=["f3"], **extra),
    ]


def test_configs_add_their_options_after_torchrecs_fields() -> None:
    # Positional arguments and field order stay torchrec's; the options come last.
    options = [
        "optimizer",
        "initializer",
        "seed",
        "cache_slots",
        "admission",
        "eviction",
        "stochastic_rounding",
        "shard_bits",
    ]
    for ours, theirs in (
        (EmbCacheEmbeddingBagConfig, EmbeddingBagConfig),
        (EmbCacheEmbeddingConfig, EmbeddingConfig),
    ):
        names = [f.name for f in dataclasses.fields(ours)]
        assert names == [f.name for f in dataclasses.fields(theirs)] + options
        config = ours(10, 4, "t", seed=7, cache_slots=3)
        assert (config.num_embeddings, config.embedding_dim, config.name) == (10, 4, "t")
        assert (config.seed, config.cache_slots, config.optimizer) == (7, 3, None)
        assert isinstance(config, theirs)


def test_shard_count_is_set_through_the_torchrec_config() -> None:
    """A small table need not pay for 32 partly filled shards: shard_bits reaches the host
    table, and the values do not depend on it."""
    kjt = random_kjt(["f1", "f2", "f3"], batch=4, gen=torch.Generator().manual_seed(4))
    outputs, memory = [], []
    for bits in (5, 0):
        configs = [
            dataclasses.replace(c, shard_bits=bits) for c in bag_configs(EmbCacheEmbeddingBagConfig)
        ]
        bags = EmbCacheEmbeddingBagCollection(configs)
        outputs.append(bags(kjt).values())
        tables = bags._tables()
        assert {t.table.host.num_shards for t in tables.values()} == {2**bits}
        memory.append(sum(t.table.memory_bytes for t in tables.values()))
    assert torch.equal(outputs[0], outputs[1])
    assert memory[1] < memory[0]


def test_state_dict_keys_follow_torchrecs_module_names() -> None:
    kjt = random_kjt(["f1", "f2", "f3"], batch=4, gen=torch.Generator().manual_seed(4))
    bags = EmbCacheEmbeddingBagCollection(bag_configs(EmbCacheEmbeddingBagConfig))
    bags(kjt)
    embs = EmbCacheEmbeddingCollection(ec_configs(EmbCacheEmbeddingConfig))
    embs(kjt)
    for module, attr, tables in ((bags, "embedding_bags", 3), (embs, "embeddings", 2)):
        keys = list(module.state_dict())
        assert {k.split(".")[0] for k in keys} == {attr}
        assert len({k.split(".")[1] for k in keys}) == tables
        assert f"{attr}.t1.weight" in keys and f"{attr}.t1.ids" in keys


@pytest.mark.parametrize("kind", ["bags", "embeddings"])
def test_collections_share_device_reset_and_prefetch(kind: str) -> None:
    def build() -> torch.nn.Module:
        if kind == "bags":
            configs = bag_configs(EmbCacheEmbeddingBagConfig)
            for config in configs:
                config.cache_slots = 64
            return EmbCacheEmbeddingBagCollection(configs, seed=3)
        return EmbCacheEmbeddingCollection(ec_configs(EmbCacheEmbeddingConfig, 64), seed=3)

    kjts = [random_kjt(["f1", "f2", "f3"], 4, torch.Generator().manual_seed(s)) for s in (5, 6)]
    planned, plain = build(), build()
    assert planned.device == torch.device("cpu")
    outputs = []
    for module, prefetch in ((planned, True), (plain, False)):
        if prefetch:
            module.prefetch(kjts[0])
        first = module(kjts[0])
        if prefetch:
            module.prefetch(kjts[1])
        second = module(kjts[1])
        outputs.append((first, second))
    # Planning ahead changes when rows move, not what the lookups return.
    for got, expected in zip(outputs[0], outputs[1], strict=True):
        if kind == "bags":
            assert torch.equal(got.values(), expected.values())
        else:
            for key in expected:
                assert torch.equal(got[key].values(), expected[key].values())
    tables = planned.embedding_bags if kind == "bags" else planned.embeddings
    assert all(len(t.table) > 0 for t in tables.values())
    planned.reset_parameters()
    assert all(len(t.table) == 0 for t in tables.values())
    empty = (
        EmbCacheEmbeddingBagCollection([]) if kind == "bags" else EmbCacheEmbeddingCollection([])
    )
    assert empty.device == torch.device("cpu")


# ---------------------------------------------------------------------- DLRM

DENSE, SPARSE, BATCH, DIM = 13, 4, 16, 8
KEYS = [f"c{i}" for i in range(SPARSE)]


def dlrm_batches(steps: int, seed: int) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    return [
        Batch(
            dense_features=torch.randn(BATCH, DENSE, generator=g),
            sparse_features=random_kjt(KEYS, BATCH, g),
            labels=torch.randint(0, 2, (BATCH,), generator=g),
        )
        for _ in range(steps)
    ]


def make_dlrm(ebc: torch.nn.Module) -> DLRMTrain:
    torch.manual_seed(0)  # identical dense initialisation for every model built here
    return DLRMTrain(
        DLRM(
            embedding_bag_collection=ebc,
            dense_in_features=DENSE,
            dense_arch_layer_sizes=[16, DIM],
            over_arch_layer_sizes=[16, 1],
        )
    )


def ours_and_reference(lr: float, cache_slots: int | None) -> tuple[DLRMTrain, DLRMTrain]:
    ours_ebc = EmbCacheEmbeddingBagCollection(
        [
            EmbCacheEmbeddingBagConfig(
                name=f"t_{k}",
                embedding_dim=DIM,
                num_embeddings=NUM,
                feature_names=[k],
                cache_slots=cache_slots,
            )
            for k in KEYS
        ],
        optimizer=ec.SparseSGD(lr=lr),
    )
    ref_ebc = EmbeddingBagCollection(
        [
            EmbeddingBagConfig(
                name=f"t_{k}", embedding_dim=DIM, num_embeddings=NUM, feature_names=[k]
            )
            for k in KEYS
        ]
    )
    copy_rows_into(ref_ebc, ours_ebc, "embedding_bags")
    return make_dlrm(ours_ebc), make_dlrm(ref_ebc)


@pytest.mark.parametrize("cache_slots", [None, 40])
def test_dlrm_trains_like_torchrec_with_sgd(cache_slots: int | None) -> None:
    lr = 0.1
    ours, ref = ours_and_reference(lr, cache_slots)
    opt_ours = torch.optim.SGD(ours.parameters(), lr=lr)  # dense parameters only
    opt_ref = torch.optim.SGD(ref.parameters(), lr=lr)  # dense parameters and embedding tables
    assert len(list(ours.parameters())) + SPARSE == len(list(ref.parameters()))
    for batch in dlrm_batches(15, seed=4):
        for model, opt in ((ours, opt_ours), (ref, opt_ref)):
            opt.zero_grad()
            loss, _ = model(batch)
            loss.backward()
            opt.step()
        assert torch.equal(model_loss(ours, batch), model_loss(ref, batch))
    for k in KEYS:
        table = ours.model.sparse_arch.embedding_bag_collection.embedding_bags[f"t_{k}"].table
        exported = table.export()
        ref_weight = ref.model.sparse_arch.embedding_bag_collection.embedding_bags[f"t_{k}"].weight
        assert torch.equal(exported["weight"], ref_weight.detach()[exported["ids"]])


def model_loss(model: DLRMTrain, batch: Batch) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        loss, _ = model(batch)
    model.train()
    return loss


@pytest.mark.parametrize("pipeline_cls", [TrainPipelineBase, EmbCacheTrainPipeline])
def test_train_pipelines_run_the_embcache_model(pipeline_cls: type) -> None:
    data = dlrm_batches(12, seed=5)
    manual, _ = ours_and_reference(0.05, cache_slots=None)
    piped, _ = ours_and_reference(0.05, cache_slots=40)  # the cache makes prefetch matter
    opt_manual = torch.optim.SGD(manual.parameters(), lr=0.05)
    losses_manual = []
    for batch in data:
        opt_manual.zero_grad()
        loss, _ = manual(batch)
        loss.backward()
        opt_manual.step()
        losses_manual.append(loss.detach())

    pipeline = pipeline_cls(
        piped, torch.optim.SGD(piped.parameters(), lr=0.05), torch.device("cpu")
    )
    it = iter(data)
    losses_piped = []
    while True:
        try:
            loss, _, _ = pipeline.progress(it)
        except StopIteration:
            break
        losses_piped.append(loss)
    # torchrec's base pipeline leaves the last batch untrained; ours trains every batch.
    expected = losses_manual if pipeline_cls is EmbCacheTrainPipeline else losses_manual[:-1]
    assert len(losses_piped) == len(expected)
    for a, b in zip(losses_piped, expected, strict=True):
        assert torch.equal(a, b)
