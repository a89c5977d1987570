"""The patched planner plans for compute_device="npu" without any device, and plans for cpu,
cuda and mtia exactly as upstream torchrec 1.1.0 does.

Expected numbers are worked out by hand from the model's table sizes (see npu_plans.py) or
taken from the unpatched registry wheel run in a subprocess, never from the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import npu_plans
import pytest
import torch
from npu_plans import (
    CW,
    DP,
    EBC_SHARDING_TYPES,
    EBC_TABLES,
    EC_SHARDING_TYPES,
    EC_TABLES,
    LOCAL_WORLD_SIZE,
    RW,
    TW,
    TWCW,
    TWRW,
    WORLD_SIZE,
)

GiB = 1024**3
NPU_HBM = 64 * GiB  # Ascend 910B
DDR = 128 * GiB  # torchrec's default host memory per rank
# The default planner (HeuristicalStorageReservation) keeps 15% of HBM back.
NPU_USABLE_HBM = int(0.85 * NPU_HBM)


@pytest.fixture(scope="module", autouse=True)
def _npu_name() -> None:
    npu_plans.register_npu_name()


def test_topology_npu_defaults_give_every_device_64gb_of_hbm() -> None:
    from torchrec.distributed.planner import Topology

    topology = Topology(world_size=WORLD_SIZE, compute_device="npu")
    assert topology.compute_device == "npu"
    assert [d.storage.hbm for d in topology.devices] == [68_719_476_736] * WORLD_SIZE
    assert [d.storage.ddr for d in topology.devices] == [137_438_953_472] * WORLD_SIZE
    # Bandwidths are in bytes per millisecond: GB/s * 1024^3 / 1000.
    assert topology.hbm_mem_bw == pytest.approx(1600 * GiB / 1000)  # 1.6 TB/s HBM
    assert topology.intra_host_bw == pytest.approx(392 * GiB / 1000)  # HCCS
    assert topology.inter_host_bw == pytest.approx(25 * GiB / 1000)  # 200GE RoCE
    assert topology.local_world_size == WORLD_SIZE


def test_topology_npu_explicit_arguments_win() -> None:
    from torchrec.distributed.planner import Topology

    topology = Topology(
        world_size=2,
        compute_device="npu",
        hbm_cap=16 * GiB,
        hbm_mem_bw=123.0,
        intra_host_bw=45.0,
        inter_host_bw=6.0,
    )
    assert [d.storage.hbm for d in topology.devices] == [16 * GiB, 16 * GiB]
    assert (topology.hbm_mem_bw, topology.intra_host_bw, topology.inter_host_bw) == (
        123.0,
        45.0,
        6.0,
    )


def test_topology_cuda_and_cpu_defaults_are_upstream_values() -> None:
    from torchrec.distributed.planner import Topology

    cuda = Topology(world_size=2, compute_device="cuda")
    assert [d.storage.hbm for d in cuda.devices] == [32 * GiB] * 2
    assert cuda.hbm_mem_bw == pytest.approx(897 * GiB / 1000)
    assert cuda.intra_host_bw == pytest.approx(600 * GiB / 1000)
    assert cuda.inter_host_bw == pytest.approx(12.5 * GiB / 1000)
    cpu = Topology(world_size=2, compute_device="cpu")
    assert [d.storage.hbm for d in cpu.devices] == [0, 0]
    assert [d.storage.ddr for d in cpu.devices] == [DDR, DDR]


def test_topology_still_rejects_unknown_device_types() -> None:
    from torchrec.distributed.planner import Topology

    with pytest.raises(AssertionError):
        Topology(world_size=2, compute_device="xpu")


def test_kernel_bandwidths_for_npu_are_hbm_only() -> None:
    # HBM 1000, DDR 100, HBM<->DDR 10 (arbitrary units): DENSE runs at half of HBM, FUSED and
    # QUANT at full HBM, and there is no unified-memory or SSD kernel on NPU.
    assert npu_plans.kernel_bandwidths("npu") == {
        "dense": 500.0,
        "fused": 1000.0,
        "quant": 1000.0,
        "fused_uvm": None,
        "fused_uvm_caching": None,
        "key_value": None,
        "quant_uvm": None,
        "quant_uvm_caching": None,
    }


def _placement(rank: int) -> str:
    return f"rank:{rank}/npu:{rank % LOCAL_WORLD_SIZE}"


def _check_plan(
    plan: dict[str, Any], tables: dict[str, tuple], expected_types: dict[str, str]
) -> None:
    """A valid npu plan: every table planned as constrained, exactly tiled by its shards,
    shards on rank:r/npu:(r % local_world_size), and no rank over its HBM."""
    assert "error" not in plan, plan
    params = plan[""]
    assert sorted(params) == sorted(tables)
    per_rank = [0] * WORLD_SIZE
    for name, (rows, dim) in tables.items():
        entry = params[name]
        table_bytes = rows * dim * 4
        assert entry["sharding_type"] == expected_types[name], name
        if entry["sharding_type"] == DP:
            assert entry["compute_kernel"] == "dense"
            assert entry["ranks"] == list(range(WORLD_SIZE))
            assert entry["shards"] is None
            for rank in range(WORLD_SIZE):
                per_rank[rank] += table_bytes
            continue
        assert entry["compute_kernel"] == "fused"
        shards = entry["shards"]
        assert [int(s["placement"].split("/")[0][5:]) for s in shards] == entry["ranks"]
        area = 0
        for shard in shards:
            (row0, col0), (nrows, ncols) = shard["offsets"], shard["sizes"]
            assert 0 <= row0 <= row0 + nrows <= rows
            assert 0 <= col0 <= col0 + ncols <= dim
            rank = int(shard["placement"].split("/")[0][5:])
            assert shard["placement"] == _placement(rank)
            per_rank[rank] += nrows * ncols * 4
            area += nrows * ncols
        # In-bounds shards whose areas add up to the table and that do not overlap tile it.
        assert area == rows * dim, name
        boxes = [(s["offsets"], s["sizes"]) for s in shards]
        for i, ((r0, c0), (h0, w0)) in enumerate(boxes):
            for (r1, c1), (h1, w1) in boxes[i + 1 :]:
                overlap = r0 < r1 + h1 and r1 < r0 + h0 and c0 < c1 + w1 and c1 < c0 + w0
                assert not overlap, name
    assert max(per_rank) <= NPU_USABLE_HBM, per_rank


def _expected_types(
    tables: dict[str, tuple], sharding_type: str, splits_big: set[str]
) -> dict[str, str]:
    return {
        name: (RW if name == "big" and sharding_type not in splits_big else sharding_type)
        for name in tables
    }


@pytest.mark.parametrize("sharding_type", EBC_SHARDING_TYPES)
def test_ebc_plan_for_npu_per_sharding_type(sharding_type: str) -> None:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    # "big" is 61.4 GB: more than one device's usable 54.4 GB, so data-parallel and
    # table-wise cannot hold it; it is row-wise in those plans and split in all others.
    split = RW if sharding_type in (DP, TW) else None
    plan = npu_plans.plan_json(
        npu_plans.make_ebc(EBC_TABLES),
        EmbeddingBagCollectionSharder(),
        "npu",
        npu_plans.constraints_for(sharding_type, EBC_TABLES, split),
    )
    _check_plan(plan, EBC_TABLES, _expected_types(EBC_TABLES, sharding_type, {CW, TWCW, RW, TWRW}))
    big = plan[""]["big"]["shards"]
    assert len(big) >= 2
    assert all(s["sizes"][0] * s["sizes"][1] * 4 <= NPU_USABLE_HBM for s in big)
    if sharding_type == RW or split == RW:
        # 30M rows over 4 ranks: 7.5M rows each, in rank order.
        assert [s["offsets"] for s in big] == [[r * 7_500_000, 0] for r in range(4)]
        assert [s["sizes"] for s in big] == [[7_500_000, 512]] * 4
        assert [s["placement"] for s in big] == [_placement(r) for r in range(4)]
    if sharding_type == CW:
        # 512 columns in blocks of the 128-column minimum.
        assert sorted(s["offsets"][1] for s in big) == [0, 128, 256, 384]
    if sharding_type in (TWRW, TWCW):
        # Table-row/column-wise shards stay on one host (ranks 0-1 or 2-3).
        hosts = {int(s["placement"].split("/")[0][5:]) // LOCAL_WORLD_SIZE for s in big}
        assert len(hosts) == 1


@pytest.mark.parametrize("sharding_type", EC_SHARDING_TYPES)
def test_ec_plan_for_npu_per_sharding_type(sharding_type: str) -> None:
    from torchrec.distributed.embedding import EmbeddingCollectionSharder

    split = RW if sharding_type in (DP, TW, CW) else None
    plan = npu_plans.plan_json(
        npu_plans.make_ec(EC_TABLES),
        EmbeddingCollectionSharder(),
        "npu",
        npu_plans.constraints_for(sharding_type, EC_TABLES, split),
    )
    _check_plan(plan, EC_TABLES, _expected_types(EC_TABLES, sharding_type, {RW}))
    big = plan[""]["big"]["shards"]
    # 120M rows over 4 ranks: 30M rows (15.4 GB) each.
    assert [s["sizes"] for s in big] == [[30_000_000, 128]] * 4
    assert [s["placement"] for s in big] == [_placement(r) for r in range(4)]


def test_free_npu_plan_splits_the_big_table_and_uses_no_uvm() -> None:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    plan = npu_plans.plan_json(
        npu_plans.make_ebc(EBC_TABLES), EmbeddingBagCollectionSharder(), "npu"
    )
    assert "error" not in plan, plan
    params = plan[""]
    assert {p["compute_kernel"] for p in params.values()} <= {"fused", "dense"}
    assert len(params["big"]["shards"]) >= 2
    _check_plan(plan, EBC_TABLES, {name: p["sharding_type"] for name, p in params.items()})


def test_uvm_kernels_cannot_be_forced_on_npu() -> None:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner.types import ParameterConstraints

    constraints = {
        name: ParameterConstraints(compute_kernels=["fused_uvm_caching"]) for name in EBC_TABLES
    }
    sharder = EmbeddingBagCollectionSharder()
    npu = npu_plans.plan_json(npu_plans.make_ebc(EBC_TABLES), sharder, "npu", constraints)
    # The enumerator finds no (sharding type, kernel) option for any table and says so.
    assert npu == {"error": "RuntimeError"}
    # The same constraints are satisfiable on CUDA, which has unified memory.
    cuda = npu_plans.plan_json(npu_plans.make_ebc(EBC_TABLES), sharder, "cuda", constraints)
    assert "error" not in cuda
    assert {p["compute_kernel"] for p in cuda[""].values()} == {"fused_uvm_caching"}


def test_storage_reservation_for_npu_is_taken_from_hbm() -> None:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import Topology
    from torchrec.distributed.planner.storage_reservations import (
        HeuristicalStorageReservation,
    )
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ebc = EmbeddingBagCollection(
                tables=[
                    EmbeddingBagConfig(
                        name="t", num_embeddings=100, embedding_dim=8, feature_names=["f"]
                    )
                ],
                device=torch.device("meta"),
            )
            self.dense = torch.nn.Linear(10, 10)  # 110 fp32 parameters = 440 bytes

    topology = Topology(world_size=2, compute_device="npu")
    reserved = HeuristicalStorageReservation(percentage=0.15).reserve(
        topology, 512, Model(), [EmbeddingBagCollectionSharder()]
    )
    # 15% margin, dense parameters x 6 (parameter_multiplier) = 2640 bytes, and the KJT
    # buffers: 1 feature x pooling factor 1 x batch 512 x 8 bytes x 20 copies = 81920 bytes.
    expected_hbm = int(0.85 * NPU_HBM) - 2640 - 81920
    assert [d.storage.hbm for d in reserved.devices] == [expected_hbm] * 2
    assert [d.storage.ddr for d in reserved.devices] == [DDR] * 2


def test_storage_estimates_for_npu_are_hbm() -> None:
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import Topology
    from torchrec.distributed.planner.enumerators import EmbeddingEnumerator

    topology = Topology(world_size=2, compute_device="npu")
    options = EmbeddingEnumerator(topology=topology, batch_size=512).enumerate(
        npu_plans.make_ebc({"t": (1000, 64)}), [EmbeddingBagCollectionSharder()]
    )
    assert {o.compute_kernel for o in options} == {"dense", "fused"}
    assert {o.sharding_type for o in options} == {DP, TW, CW, TWCW, RW, TWRW}
    for option in options:
        for shard in option.shards:
            assert shard.storage is not None
            # The weights alone (1000 x 64 fp32 = 256000 bytes, or their share) are in HBM.
            weight_bytes = shard.size[0] * shard.size[1] * 4
            assert shard.storage.hbm >= weight_bytes, option
            assert shard.storage.ddr == 0, option


# ---- unchanged behaviour for cpu, cuda and mtia, compared with upstream torchrec 1.1.0 ----

COMPARED_DEVICES = ["cpu", "cuda", "mtia"]
SECTIONS = ["topology", "kernel_bandwidths", "sharders", "plans"]


@pytest.fixture(scope="module")
def upstream_record(upstream_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """What unpatched torchrec answers, computed in a subprocess from the registry wheel."""
    root = tmp_path_factory.mktemp("upstream")
    site = root / "site"
    with zipfile.ZipFile(upstream_wheel) as wheel:
        wheel.extractall(site)
    out = root / "upstream.json"
    env = dict(os.environ)
    # Only the unpatched torchrec ahead of the environment's site-packages (torch, fbgemm).
    env["PYTHONPATH"] = str(site)
    script = Path(npu_plans.__file__)
    result = subprocess.run(
        [sys.executable, str(script), str(out), "--devices", ",".join(COMPARED_DEVICES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert Path(data["torchrec_file"]).is_relative_to(site), data["torchrec_file"]
    assert data["patched"] is False
    return data


@pytest.fixture(scope="module")
def patched_record() -> Any:
    data = json.loads(json.dumps(npu_plans.record(COMPARED_DEVICES)))
    assert data["patched"] is True, "the torchrec under test is not the patched one"
    return data


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("device", COMPARED_DEVICES)
def test_same_as_upstream(
    upstream_record: Any, patched_record: Any, device: str, section: str
) -> None:
    upstream = upstream_record["devices"][device][section]
    patched = patched_record["devices"][device][section]
    if section == "plans":
        different = sorted(name for name in upstream if upstream[name] != patched.get(name))
        assert not different, f"{device} plans differ from upstream: {different}"
        assert sorted(upstream) == sorted(patched)
        # The comparison covers real plans, not only failures on both sides.
        planned = [name for name, plan in upstream.items() if "error" not in plan]
        assert len(planned) >= 10, planned
    else:
        assert patched == upstream
