"""The patched sharders offer npu the CUDA-like sharding types with FUSED/DENSE kernels only,
count its storage as HBM, and plans place shards on rank:r/npu:(r % local_size).

Expected values are written out by hand; upstream's answers for cpu, cuda and mtia are
compared with the unpatched wheel in test_npu_planner.py.
"""

from __future__ import annotations

import types

import npu_plans
import pytest
import torch

DP, TW, CW, TWCW, RW, TWRW, GRID = (
    "data_parallel",
    "table_wise",
    "column_wise",
    "table_column_wise",
    "row_wise",
    "table_row_wise",
    "grid_shard",
)
WEIGHTS = torch.empty(1000, 64)  # 1000 x 64 fp32 = 256000 bytes


@pytest.fixture(scope="module", autouse=True)
def _npu_name() -> None:
    npu_plans.register_npu_name()


def _kernels(sharder: object, sharding_types: list[str]) -> dict[str, list[str]]:
    return {st: sharder.compute_kernels(st, "npu") for st in sharding_types}  # type: ignore[attr-defined]


def _fused_but_dp(sharding_types: list[str]) -> dict[str, list[str]]:
    # What every fused sharder must offer on npu: the dense kernel for data-parallel tables,
    # fbgemm's fused TBE for every sharded type.
    return {st: ["dense"] if st == DP else ["fused"] for st in sharding_types}


def test_ebc_sharder_offers_cuda_like_sharding_with_fused_and_dense_kernels() -> None:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    sharder = EmbeddingBagCollectionSharder()
    types_ = sharder.sharding_types("npu")
    # GRID_SHARD is listed as on CUDA; the planner only uses it when constraints ask for it.
    assert types_ == [DP, TW, CW, TWCW, RW, TWRW, GRID]
    assert _kernels(sharder, types_) == _fused_but_dp(types_)
    assert sharder.storage_usage(WEIGHTS, "npu", "fused") == {"hbm": 256000}
    assert sharder.storage_usage(WEIGHTS, "npu", "dense") == {"hbm": 256000}
    # Unified-memory kernels stay CUDA-only, as they are for cpu upstream.
    with pytest.raises(AssertionError):
        sharder.storage_usage(WEIGHTS, "npu", "fused_uvm_caching")


def test_ec_sharder_offers_its_sharding_types_with_fused_and_dense_kernels() -> None:
    from torchrec.distributed.embedding import EmbeddingCollectionSharder

    sharder = EmbeddingCollectionSharder()
    types_ = sharder.sharding_types("npu")
    assert types_ == [DP, TW, CW, RW]
    assert _kernels(sharder, types_) == _fused_but_dp(types_)
    assert sharder.storage_usage(WEIGHTS, "npu", "fused") == {"hbm": 256000}


def test_fused_sharders_offer_row_wise_and_no_uvm_for_npu() -> None:
    from torchrec.distributed.fused_embedding import FusedEmbeddingCollectionSharder
    from torchrec.distributed.fused_embeddingbag import FusedEmbeddingBagCollectionSharder

    fused_ebc = FusedEmbeddingBagCollectionSharder()
    types_ = fused_ebc.sharding_types("npu")
    assert types_ == [DP, TW, CW, TWCW, RW, TWRW]
    assert _kernels(fused_ebc, types_) == _fused_but_dp(types_)
    assert fused_ebc.storage_usage(WEIGHTS, "npu", "fused") == {"hbm": 256000}

    fused_ec = FusedEmbeddingCollectionSharder()
    types_ = fused_ec.sharding_types("npu")
    assert types_ == [DP, TW, CW, RW]
    assert _kernels(fused_ec, types_) == _fused_but_dp(types_)


def test_quant_sharder_counts_npu_storage_in_hbm() -> None:
    from torchrec.distributed.quant_embeddingbag import QuantEmbeddingBagCollectionSharder

    sharder = QuantEmbeddingBagCollectionSharder()
    assert sharder.compute_kernels(TW, "npu") == ["quant"]
    # Quantised tables carry 4 bytes of scale/bias per row: 256000 + 1000 * 4.
    assert sharder.storage_usage(WEIGHTS, "npu", "quant") == {"hbm": 260000}


def test_module_sharder_default_storage_is_hbm_for_npu() -> None:
    from torchrec.distributed.types import ModuleSharder

    class PlainSharder(ModuleSharder[torch.nn.Module]):
        def shard(self, module, params, env, device=None, module_fqn=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        @property
        def module_type(self) -> type[torch.nn.Module]:
            return torch.nn.Linear

    sharder = PlainSharder()
    assert sharder.storage_usage(WEIGHTS, "npu", "default") == {"hbm": 256000}
    assert sharder.storage_usage(WEIGHTS, "cuda", "default") == {"hbm": 256000}
    assert sharder.storage_usage(WEIGHTS, "cpu", "default") == {"ddr": 256000}
    assert sharder.storage_usage(WEIGHTS, "mtia", "default") == {"ddr": 256000}
    with pytest.raises(AssertionError):
        sharder.storage_usage(WEIGHTS, "xpu", "default")


def test_placements_carry_the_local_npu_index() -> None:
    from torchrec.distributed.planner.utils import placement as planner_placement
    from torchrec.distributed.sharding_plan import placement

    for place in (placement, planner_placement):
        assert [place("npu", r, 2) for r in range(4)] == [
            "rank:0/npu:0",
            "rank:1/npu:1",
            "rank:2/npu:0",
            "rank:3/npu:1",
        ]
        assert place("npu", 5, 8) == "rank:5/npu:5"
        # Upstream behaviour for the other device types.
        assert place("cuda", 3, 2) == "rank:3/cuda:1"
        assert place("mtia", 3, 2) == "rank:3/mtia:1"
        assert place("cpu", 3, 2) == "rank:3/cpu"


def _shards(parameter_sharding: object) -> list[tuple[list[int], list[int], str]]:
    spec = parameter_sharding.sharding_spec  # type: ignore[attr-defined]
    return [(s.shard_offsets, s.shard_sizes, str(s.placement)) for s in spec.shards]


def test_construct_module_sharding_plan_for_npu() -> None:
    from torchrec.distributed.sharding_plan import (
        column_wise,
        construct_module_sharding_plan,
        data_parallel,
        row_wise,
        table_wise,
    )

    ebc = npu_plans.make_ebc(
        {"t_tw": (100, 16), "t_rw": (10, 8), "t_cw": (40, 256), "t_dp": (30, 4)}
    )
    plan = construct_module_sharding_plan(
        ebc,
        {
            "t_tw": table_wise(rank=3),
            "t_rw": row_wise(),
            "t_cw": column_wise(ranks=[1, 2]),
            "t_dp": data_parallel(),
        },
        local_size=2,
        world_size=4,
        device_type="npu",
    )
    # Without an in-backward optimizer on the weights, manual plans pick DENSE (upstream rule).
    assert plan["t_tw"].compute_kernel == "dense"
    assert _shards(plan["t_tw"]) == [([0, 0], [100, 16], "rank:3/npu:1")]
    # 10 rows over 4 ranks: blocks of ceil(10 / 4) = 3 rows, the last one 1 row.
    assert plan["t_rw"].sharding_type == RW
    assert _shards(plan["t_rw"]) == [
        ([0, 0], [3, 8], "rank:0/npu:0"),
        ([3, 0], [3, 8], "rank:1/npu:1"),
        ([6, 0], [3, 8], "rank:2/npu:0"),
        ([9, 0], [1, 8], "rank:3/npu:1"),
    ]
    # 256 columns over 2 ranks: two 128-column shards.
    assert _shards(plan["t_cw"]) == [
        ([0, 0], [40, 128], "rank:1/npu:1"),
        ([0, 128], [40, 128], "rank:2/npu:0"),
    ]
    assert plan["t_dp"].sharding_type == DP
    assert plan["t_dp"].compute_kernel == "dense"


def test_default_device_detection_finds_a_usable_npu(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchrec.distributed import _device_compat
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan, table_wise

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delattr(torch, "npu", raising=False)
    assert _device_compat.default_accelerator_type() == "cpu"
    assert _device_compat.default_device() == torch.device("cpu")

    fake_npu = types.SimpleNamespace(is_available=lambda: False, current_device=lambda: 1)
    monkeypatch.setattr(torch, "npu", fake_npu, raising=False)
    assert _device_compat.default_accelerator_type() == "cpu"

    fake_npu.is_available = lambda: True
    assert _device_compat.default_accelerator_type() == "npu"
    # torch.get_device_module needs a registered module; default_device only asks for the
    # current index, so route the lookup to the fake.
    monkeypatch.setattr(torch, "get_device_module", lambda device=None: fake_npu)
    assert _device_compat.default_device() == torch.device("npu", 1)

    plan = construct_module_sharding_plan(
        npu_plans.make_ebc({"t": (10, 8)}), {"t": table_wise(rank=1)}, local_size=2, world_size=2
    )
    assert _shards(plan["t"]) == [([0, 0], [10, 8], "rank:1/npu:1")]


def test_device_classes() -> None:
    from torchrec.distributed import _device_compat as dc

    assert [dc.is_cuda_like(t) for t in ("cuda", "npu", "mtia", "cpu")] == [
        True,
        True,
        False,
        False,
    ]
    assert [dc.has_streams(t) for t in ("cuda", "npu", "mtia", "cpu")] == [True, True, True, False]
    assert [dc.is_hbm_device(t) for t in ("cuda", "npu", "mtia", "cpu")] == [
        True,
        True,
        False,
        False,
    ]
    assert [dc.supports_managed_memory(t) for t in ("cuda", "npu", "mtia", "cpu")] == [
        True,
        False,
        False,
        False,
    ]
    assert dc.is_cuda_like(torch.device("npu", 1)) and dc.is_cuda_like("npu:1")
    assert not dc.is_planner_device("xpu")


def test_torchrec_never_imports_torch_npu() -> None:
    import re
    from pathlib import Path

    import torchrec

    # The device module is found through torch (torch.get_device_module, torch.npu); whoever
    # runs torchrec imports torch_npu first. Scan every module of the installed package.
    pattern = re.compile(r"^\s*(import|from)\s+torch_npu\b", re.MULTILINE)
    root = Path(torchrec.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*.py"))
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert (root / "distributed" / "_device_compat.py").is_file()
