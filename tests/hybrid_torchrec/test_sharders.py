"""What the hybrid sharders offer the planner and what they refuse, with the reason, before
anything is built (one rank, a gloo group on the CPU)."""

from __future__ import annotations

from pathlib import Path

import hybrid_torchrec as hy
import pytest
import torch
import torch.distributed as dist
from hybrid_torchrec.distributed import (
    HostEnvError,
    HybridHashEmbeddingBagCollectionSharder,
    UnsupportedShardingError,
    get_default_hybrid_sharders,
)
from hybrid_torchrec.distributed.host_dist import ShardMapper
from torchrec.distributed.types import ParameterSharding, ShardingEnv
from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor


@pytest.fixture(scope="module")
def host_env(gloo_world: None) -> ShardingEnv:
    return ShardingEnv.from_process_group(dist.group.WORLD)


def _plan(sharding_type: str, *tables: str) -> dict[str, ParameterSharding]:
    return {
        t: ParameterSharding(sharding_type=sharding_type, compute_kernel="fused", ranks=[0])
        for t in tables
    }


def _hash_ebc(**options: object) -> hy.HashEmbeddingBagCollection:
    config = hy.HashEmbeddingBagConfig(
        name="t", embedding_dim=8, num_embeddings=16, feature_names=["f"], **options
    )
    return hy.HashEmbeddingBagCollection([config], device=torch.device("meta"))


def test_default_sharders_cover_the_four_collections(host_env: ShardingEnv) -> None:
    sharders = get_default_hybrid_sharders(host_env)
    assert [s.module_type for s in sharders] == [
        EmbeddingBagCollection,
        EmbeddingCollection,
        hy.HashEmbeddingBagCollection,
        hy.HashEmbeddingCollection,
    ]
    # "cuda": cuda-like in unpatched torchrec too (npu is, with the project's patches).
    offered = [s.sharding_types("cuda") for s in sharders]
    plain = ["data_parallel", "table_wise", "column_wise", "row_wise"]
    hashed = ["table_wise", "column_wise", "row_wise"]
    # torchrec's EC sharder lists its types in another order, and offers no table-row-wise;
    # the sets are what matter.
    assert [sorted(o) for o in offered] == [
        sorted([*plain, "table_row_wise"]),
        sorted(plain),
        sorted(hashed),
        sorted(hashed),
    ]
    # The CPU gets what torchrec offers the CPU, less what the hybrid sharders refuse.
    assert "row_wise" not in sharders[0].sharding_types("cpu")


@pytest.mark.parametrize(
    ("sharding_type", "reason"),
    [
        ("table_row_wise", "routed by hash"),
        ("table_column_wise", "not verified"),
        ("data_parallel", "every rank's ids"),
    ],
)
def test_hash_sharder_refuses_with_the_reason(
    host_env: ShardingEnv, sharding_type: str, reason: str
) -> None:
    sharder = HybridHashEmbeddingBagCollectionSharder(host_env)
    with pytest.raises(UnsupportedShardingError, match=reason) as info:
        sharder.shard(_hash_ebc(), _plan(sharding_type, "t"), host_env, torch.device("cpu"))
    assert "'t'" in str(info.value) and "table_wise, column_wise, row_wise" in str(info.value)


def test_shard_mapper_hands_the_rows_of_evicted_ids_to_on_evict() -> None:
    """A rank's shard evicts like an unsharded table; the rows a batch takes from evicted ids
    reach ``on_evict`` (the sharded collection resets them before that batch's lookup)."""
    mapper = hy.IdMapper(2, hy.EvictionPolicy("lru"), name="t")
    noted: list[tuple[str, list[int]]] = []
    shard = ShardMapper({"f": "t"}, {"t": mapper}, lambda t, rows: noted.append((t, rows.tolist())))

    def rows_of(ids: list[int]) -> list[int]:
        kjt = KeyedJaggedTensor.from_lengths_sync(
            keys=["f"], values=torch.tensor(ids), lengths=torch.tensor([len(ids)])
        )
        return shard(kjt, insert=True).values().tolist()

    assert rows_of([10]) == [0] and rows_of([20]) == [1] and noted == []
    # Full: 30 takes the row of 10, the least recently used, and is mapped to it.
    assert rows_of([30, 30]) == [0, 0]
    assert noted == [("t", [0])]
    assert mapper.state().ids.tolist() == [20, 30]


@pytest.mark.parametrize("sharding_type", ["row_wise", "table_row_wise"])
def test_mean_pooling_is_refused_row_wise_only(host_env: ShardingEnv, sharding_type: str) -> None:
    table = EmbeddingBagConfig(name="t", embedding_dim=8, num_embeddings=16, feature_names=["f"])
    table.pooling = PoolingType.MEAN
    ebc = EmbeddingBagCollection([table], device=torch.device("meta"))
    sharder = get_default_hybrid_sharders(host_env)[0]
    with pytest.raises(UnsupportedShardingError, match=f"MEAN pooling with {sharding_type} "):
        sharder.shard(ebc, _plan(sharding_type, "t"), host_env)


def test_host_env_must_be_gloo(host_env: ShardingEnv) -> None:
    with pytest.raises(HostEnvError, match="ShardingEnv over a process group"):
        get_default_hybrid_sharders(ShardingEnv(world_size=1, rank=0, pg=None))

    class FakeEnv(ShardingEnv):
        pass

    env = FakeEnv(world_size=1, rank=0, pg=host_env.process_group)
    get_default_hybrid_sharders(env)  # gloo: accepted
    other = ShardingEnv(world_size=2, rank=1, pg=host_env.process_group)
    sharder = HybridHashEmbeddingBagCollectionSharder(host_env)
    with pytest.raises(HostEnvError, match="same ranks"):
        sharder.shard(_hash_ebc(), _plan("table_wise", "t"), other)


def test_distributed_types_live_apart_from_the_implementations() -> None:
    """torchrec's layout: hybrid_torchrec.distributed.types holds the interface and imports no
    implementation module; the old import paths name the same objects."""
    import re

    from hybrid_torchrec import distributed
    from hybrid_torchrec.distributed import host_dist, sharders, types

    assert sharders.HostWork is types.HostWork
    assert sharders.HostEnvError is distributed.HostEnvError is types.HostEnvError
    assert sharders.UnsupportedShardingError is types.UnsupportedShardingError
    assert host_dist.UnknownIdError is distributed.UnknownIdError is types.UnknownIdError
    assert distributed.HASH_SHARDING_TYPES is types.HASH_SHARDING_TYPES
    source = Path(types.__file__).read_text()
    assert {
        a or b for a, b in re.findall(r"^(?:from ([\w.]+) import|import ([\w.]+)$)", source, re.M)
    } <= {
        "__future__",
        "typing",
        "torch",
        "torchrec.distributed.types",
        "hybrid_torchrec.errors",
    }
