"""HashEmbeddingBagCollection / HashEmbeddingCollection against an independent reference:
a plain dict id -> row per table (RefMapper) and torch's F.embedding_bag / F.embedding on
float64 copies of the weights, trained with hand-written SGD / Adagrad in float64."""

from __future__ import annotations

import copy
from functools import partial

import hybrid_torchrec as hy
import pytest
import torch
from hybrid_torchrec.workload import zipf_ids
from torchrec.models.dlrm import DLRM
from torchrec.modules.embedding_configs import DataType, EmbeddingBagConfig, PoolingType
from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from tests.hybrid_torchrec.reference import (
    RefCollection,
    RefMapper,
    backward_both,
    close,
    constant_init,
    sgd_step_both,
)

HBC = hy.HashEmbeddingBagConfig
MEAN = PoolingType.MEAN
HC = hy.HashEmbeddingConfig


def kjt_from(features: dict[str, list[list[int]]], weighted: bool = False) -> KeyedJaggedTensor:
    keys = list(features)
    lengths = [len(bag) for key in keys for bag in features[key]]
    values = [i for key in keys for bag in features[key] for i in bag]
    weights = None
    if weighted:
        weights = torch.linspace(0.5, 1.5, len(values))
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys,
        values=torch.tensor(values, dtype=torch.int64),
        lengths=torch.tensor(lengths, dtype=torch.int64),
        weights=weights,
    )


def toy_tables() -> list[EmbeddingBagConfig]:
    return [
        HBC(name="t0", embedding_dim=4, num_embeddings=16, feature_names=["f0", "f1"]),
        HBC(name="t1", embedding_dim=3, num_embeddings=16, feature_names=["f2"], pooling=MEAN),
        # A plain torchrec config works too; f0 is shared with t0 (output "f0@t2").
        EmbeddingBagConfig(name="t2", embedding_dim=2, num_embeddings=8, feature_names=["f0"]),
    ]


TOY_BATCHES = [
    {
        "f0": [[10**15, -7, 10**15], [], [3]],
        "f1": [[-7, -7], [2**63 - 1], []],
        "f2": [[-(2**63)], [5, 5, 5], [9]],
    },
    {
        "f0": [[3, 3], [44], [-7]],
        "f1": [[], [], [10**15]],
        "f2": [[5], [], [-1, -2, -3]],
    },
]


def test_ebc_layout_matches_torchrec() -> None:
    ours = hy.HashEmbeddingBagCollection(toy_tables())
    theirs = EmbeddingBagCollection(toy_tables())
    kjt = kjt_from(TOY_BATCHES[0])
    a, b = (
        ours(kjt),
        theirs(kjt_from({k: [[0] * len(x) for x in v] for k, v in TOY_BATCHES[0].items()})),
    )
    assert a.keys() == b.keys() == ["f0@t0", "f1", "f2", "f0@t2"]
    assert a.length_per_key() == b.length_per_key()
    assert a.values().shape == b.values().shape
    assert set(ours.state_dict()) >= set(theirs.state_dict())


@pytest.mark.parametrize("weighted", [False, True])
def test_ebc_matches_reference(weighted: bool) -> None:
    tables = toy_tables()
    if weighted:
        tables[1].pooling = PoolingType.SUM
    ebc = hy.HashEmbeddingBagCollection(tables, is_weighted=weighted)
    ref = RefCollection(ebc)
    for batch in TOY_BATCHES:
        kjt = kjt_from(batch, weighted)
        close(ebc(kjt).values(), ref.pooled(kjt, weighted, train=True))
    for name, mapper in ebc.mappers().items():
        ids, rows, _, _, step = ref.mappers[name].state()
        assert mapper.state().ids.tolist() == ids and mapper.state().rows.tolist() == rows
        assert mapper.step == step == 2


def test_ec_matches_reference() -> None:
    tables = [
        HC(name="a", embedding_dim=4, num_embeddings=16, feature_names=["f0", "f1"]),
        HC(name="b", embedding_dim=4, num_embeddings=16, feature_names=["f2", "f0"]),
    ]
    ec = hy.HashEmbeddingCollection(tables, need_indices=True)
    theirs = EmbeddingCollection(copy.deepcopy(tables), need_indices=True)
    ref = RefCollection(ec)
    for batch in TOY_BATCHES:
        kjt = kjt_from(batch)
        out = ec(kjt)
        assert list(out) == list(
            theirs(kjt_from({k: [[0] * len(x) for x in v] for k, v in batch.items()}))
        )
        expected = ref.sequence(kjt, train=True)
        for (name, jt), e in zip(out.items(), expected, strict=True):
            close(jt.values(), e)
            feature = name.split("@")[0]
            assert torch.equal(jt.lengths(), kjt[feature].lengths())
            assert torch.equal(jt.weights(), kjt[feature].values())


def test_eval_reads_zeros_for_unknown_ids_and_changes_nothing() -> None:
    ebc = hy.HashEmbeddingBagCollection(toy_tables())
    ref = RefCollection(ebc)
    kjt = kjt_from(TOY_BATCHES[0])
    close(ebc(kjt).values(), ref.pooled(kjt, False, train=True))
    ebc.eval()
    before = {n: m.state() for n, m in ebc.mappers().items()}
    unseen = kjt_from(TOY_BATCHES[1])
    close(ebc(unseen).values(), ref.pooled(unseen, False, train=False))
    for name, mapper in ebc.mappers().items():
        assert torch.equal(mapper.state().ids, before[name].ids)
        assert mapper.step == 1


def test_sgd_training_matches_reference() -> None:
    ebc = hy.HashEmbeddingBagCollection(toy_tables())
    ref = RefCollection(ebc)
    opt = torch.optim.SGD(ebc.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(0)
    for batch in TOY_BATCHES * 2:
        kjt = kjt_from(batch)
        out = ebc(kjt).values()
        expected = ref.pooled(kjt, False, train=True)
        close(out, expected)
        sgd_step_both(out, expected, opt, ref, 0.5, g)
    for name, w in ebc.table_weights().items():
        close(w, ref.weights[name])


@pytest.mark.parametrize("policy, ttl", [("lru", None), ("lfu", None), ("lfu", 2)])
def test_eviction_resets_rows_and_optimizer_state(policy: str, ttl: int | None) -> None:
    """A table of 6 rows fed 4 distinct ids per batch out of 12: rows change hands every
    batch. Adagrad state of evicted rows (and of rows freed by a TTL) restarts at
    initial_accumulator_value."""
    tables = [
        HBC(
            name="small",
            embedding_dim=3,
            num_embeddings=6,
            feature_names=["f"],
            init_fn=constant_init,
            eviction=hy.EvictionPolicy(policy, ttl_steps=ttl),
        )
    ]
    ebc = hy.HashEmbeddingBagCollection(tables)
    ref = RefCollection(ebc, {"small": policy})
    ref.mappers["small"] = RefMapper(6, policy, ttl_steps=ttl or 0)
    lr, acc0, eps = 0.3, 0.1, 1e-10
    opt = torch.optim.Adagrad(ebc.parameters(), lr=lr, initial_accumulator_value=acc0, eps=eps)
    seen: list[tuple[str, list[int]]] = []
    ebc.register_eviction_hook(lambda name, rows: seen.append((name, rows.tolist())))
    ebc.register_eviction_hook(hy.optimizer_reset_hook(opt, ebc.table_weights()))
    ref_sum = torch.full((6, 3), acc0, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    evictions = 0
    for _ in range(12):
        ids = torch.randperm(12, generator=g)[:4] * 1000 - 5000
        kjt = kjt_from({"f": [ids[:3].tolist(), [int(ids[3])]]})
        before_ref = copy.deepcopy(ref.mappers["small"])
        out = ebc(kjt).values()
        expected = ref.pooled(kjt, False, train=True)
        close(out, expected)
        evicted = before_ref.map(ids.tolist()).evicted_rows
        if evicted:
            evictions += 1
            assert seen[-1] == ("small", evicted)
            ref_sum[torch.tensor(evicted)] = acc0
        backward_both(out, expected, opt, g)
        with torch.no_grad():
            w = ref.weights["small"]
            ref_sum += w.grad * w.grad
            w -= lr * w.grad / (ref_sum.sqrt() + eps)
            w.grad = None
        close(ebc.table_weights()["small"], ref.weights["small"])
    assert evictions >= 5


def test_a_negative_length_is_refused_naming_the_feature_and_bag() -> None:
    # Before, it reached the device kernel, which traps on npu without saying which bag.
    config = hy.HashEmbeddingBagConfig(
        name="t", embedding_dim=4, num_embeddings=16, feature_names=["f", "g"]
    )
    ebc = hy.HashEmbeddingBagCollection([config])
    kjt = KeyedJaggedTensor(
        keys=["f", "g"], values=torch.tensor([1, 2, 3]), lengths=torch.tensor([2, 0, 2, -1])
    )
    with pytest.raises(ValueError, match=r"feature 'g': bag 1 has length -1"):
        ebc(kjt)
    assert ebc.mappers()["t"].state().ids.numel() == 0  # refused before any id was mapped


def test_full_table_without_eviction_raises_and_keeps_mapping() -> None:
    tables = [HBC(name="tiny", embedding_dim=2, num_embeddings=3, feature_names=["f"])]
    ebc = hy.HashEmbeddingBagCollection(tables)
    ebc(kjt_from({"f": [[1, 2], [3]]}))
    with pytest.raises(hy.CapacityError, match=r"table 'tiny' is full: capacity 3 rows"):
        ebc(kjt_from({"f": [[1], [4]]}))
    assert ebc.mappers()["tiny"].state().ids.tolist() == [1, 2, 3]


def test_state_dict_round_trip_continues_identically() -> None:
    g = torch.Generator().manual_seed(4)
    tables = [
        HBC(name="u", embedding_dim=8, num_embeddings=300, feature_names=["f0", "f1"]),
        HBC(
            name="v",
            embedding_dim=8,
            num_embeddings=64,
            feature_names=["f2"],
            eviction=hy.EvictionPolicy("lfu"),
        ),
    ]

    def batch() -> KeyedJaggedTensor:
        lengths = torch.randint(0, 5, (3 * 16,), generator=g)
        values = zipf_ids(int(lengths.sum()), 10**6, 1.05, g)
        return KeyedJaggedTensor.from_lengths_sync(["f0", "f1", "f2"], values, lengths)

    def step(
        model: torch.nn.Module, opt: torch.optim.Optimizer, kjt: KeyedJaggedTensor
    ) -> torch.Tensor:
        out = model(kjt).values()
        opt.zero_grad()
        out.square().sum().backward()
        opt.step()
        return out.detach()

    a = hy.HashEmbeddingBagCollection(copy.deepcopy(tables))
    opt_a = torch.optim.SGD(a.parameters(), lr=0.1)
    for _ in range(4):
        step(a, opt_a, batch())
    state = a.state_dict()
    assert state["id_mappers.u.ids"].numel() == a.mappers()["u"].size > 0

    b = hy.HashEmbeddingBagCollection(copy.deepcopy(tables))
    b.load_state_dict(state)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
    for k in range(3):
        kjt = batch()
        # Evicted rows are re-initialised by init_fn from torch's generator: same seed, same
        # values.
        torch.manual_seed(k)
        out_a = step(a, opt_a, kjt)
        torch.manual_seed(k)
        assert torch.equal(out_a, step(b, opt_b, kjt))
    for name in ("u", "v"):
        for x, y in zip(a.mappers()[name].state(), b.mappers()[name].state(), strict=True):
            assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y

    torch.save(state, buffer := __import__("io").BytesIO())
    buffer.seek(0)
    c = hy.HashEmbeddingBagCollection(copy.deepcopy(tables))
    c.load_state_dict(torch.load(buffer))
    assert torch.equal(c.mappers()["v"].state().ids, state["id_mappers.v.ids"])


def test_load_state_dict_reports_missing_and_bad_mappings() -> None:
    tables = [HBC(name="t", embedding_dim=2, num_embeddings=4, feature_names=["f"])]
    ebc = hy.HashEmbeddingBagCollection(tables)
    plain = EmbeddingBagCollection(
        [EmbeddingBagConfig(name="t", embedding_dim=2, num_embeddings=4, feature_names=["f"])]
    )
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*id_mappers.t.ids"):
        ebc.load_state_dict(plain.state_dict())
    state = ebc.state_dict()
    state["id_mappers.t.ids"] = torch.tensor([1, 2])
    state["id_mappers.t.rows"] = torch.tensor([0, 0])
    state["id_mappers.t.counts"] = torch.tensor([1, 1])
    state["id_mappers.t.last_used"] = torch.tensor([0, 0])
    with pytest.raises(RuntimeError, match=r"id_mappers\.t: mapping of table 't': row 0 is given"):
        ebc.load_state_dict(state)
    # The weights load into torchrec's own EBC (the mapping is extra state it ignores).
    plain.load_state_dict(ebc.state_dict(), strict=False)


def test_identity_mapping_reproduces_torchrec_ebc() -> None:
    """Drop-in: with ids = rows, the Hash EBC computes exactly what torchrec's EBC does."""
    configs = [
        EmbeddingBagConfig(name="a", embedding_dim=4, num_embeddings=50, feature_names=["x", "y"]),
        EmbeddingBagConfig(name="b", embedding_dim=6, num_embeddings=30, feature_names=["z"]),
    ]
    configs[1].pooling = MEAN
    theirs = EmbeddingBagCollection(copy.deepcopy(configs))
    ours = hy.HashEmbeddingBagCollection(copy.deepcopy(configs))
    state = theirs.state_dict()
    for c in configs:
        n = c.num_embeddings
        state[f"id_mappers.{c.name}.ids"] = torch.arange(n)
        state[f"id_mappers.{c.name}.rows"] = torch.arange(n)
        state[f"id_mappers.{c.name}.counts"] = torch.ones(n, dtype=torch.int64)
        state[f"id_mappers.{c.name}.last_used"] = torch.zeros(n, dtype=torch.int64)
        state[f"id_mappers.{c.name}.step"] = torch.tensor(0)
    ours.load_state_dict(state)
    g = torch.Generator().manual_seed(8)
    lengths = torch.randint(0, 6, (3 * 32,), generator=g)
    values = torch.randint(0, 30, (int(lengths.sum()),), generator=g)
    kjt = KeyedJaggedTensor.from_lengths_sync(["x", "y", "z"], values, lengths)
    assert torch.equal(ours(kjt).values(), theirs(kjt).values())
    # And it sits in torchrec's DLRM in place of the EBC.
    dlrm = DLRM(
        embedding_bag_collection=hy.HashEmbeddingBagCollection(
            [HBC(name=n, embedding_dim=4, num_embeddings=40, feature_names=[n]) for n in "pq"]
        ),
        dense_in_features=3,
        dense_arch_layer_sizes=[8, 4],
        over_arch_layer_sizes=[5, 1],
    )
    sparse = KeyedJaggedTensor.from_lengths_sync(
        ["p", "q"], torch.tensor([10**12, -3, 7, 10**12]), torch.tensor([2, 0, 1, 1])
    )
    logits = dlrm(torch.randn(2, 3, generator=g), sparse)
    logits.sum().backward()
    assert logits.shape == (2, 1)


def test_meta_device_then_materialised() -> None:
    tables = [
        HBC(
            name="t", embedding_dim=4, num_embeddings=10, feature_names=["f"], init_fn=constant_init
        )
    ]
    ebc = hy.HashEmbeddingBagCollection(tables, device=torch.device("meta"))
    assert ebc.table_weights()["t"].device.type == "meta"
    ebc = ebc.to_empty(device="cpu")
    ebc.reset_parameters()
    assert torch.equal(ebc.table_weights()["t"], torch.full((10, 4), 0.25))
    out = ebc(kjt_from({"f": [[5, -5]]}))
    assert torch.equal(out.values(), torch.full((1, 4), 0.5))


def test_reset_parameters_forgets_ids() -> None:
    ebc = hy.HashEmbeddingBagCollection(toy_tables())
    ebc(kjt_from(TOY_BATCHES[0]))
    ebc.reset_parameters()
    assert all(m.size == 0 for m in ebc.mappers().values())


def test_fp16_tables() -> None:
    tables = [
        HBC(
            name="h",
            embedding_dim=4,
            num_embeddings=10,
            feature_names=["f"],
            data_type=DataType.FP16,
        )
    ]
    ebc = hy.HashEmbeddingBagCollection(tables)
    assert ebc.table_weights()["h"].dtype == torch.float16
    ref = RefCollection(ebc)
    kjt = kjt_from({"f": [[3, 4, 3], [9]]})
    out = ebc(kjt).values()
    assert out.dtype == torch.float32
    torch.testing.assert_close(
        out.double(), ref.pooled(kjt, False, True).detach(), rtol=2e-3, atol=2e-3
    )


def test_configuration_errors() -> None:
    with pytest.raises(ValueError, match="Duplicate table name t"):
        hy.HashEmbeddingBagCollection(
            [
                HBC(name="t", embedding_dim=2, num_embeddings=2),
                HBC(name="t", embedding_dim=2, num_embeddings=2),
            ]
        )
    with pytest.raises(ValueError, match="weighted features need SUM"):
        hy.HashEmbeddingBagCollection(
            [HBC(name="t", embedding_dim=2, num_embeddings=2, pooling=MEAN)],
            is_weighted=True,
        )
    with pytest.raises(ValueError, match="same embedding dimension"):
        hy.HashEmbeddingCollection(
            [
                HC(name="a", embedding_dim=2, num_embeddings=2),
                HC(name="b", embedding_dim=3, num_embeddings=2),
            ]
        )
    config = HBC(
        name="c",
        embedding_dim=2,
        num_embeddings=7,
        eviction=hy.EvictionPolicy("lru", protect_batches=3),
    )
    assert config.capacity == 7
    assert partial(HBC, name="d", embedding_dim=2)(num_embeddings=3).eviction is None
