"""Sharding plans and sharder answers of the verification models, as plain JSON data.

The same code runs in two places:
- inside the test process, against the patched torchrec that is installed;
- as a script in a subprocess whose PYTHONPATH starts with the unpatched registry wheel,
  to record what upstream torchrec 1.1.0 answers (``python npu_plans.py OUT --devices ...``).

It therefore uses only torchrec API that exists unpatched, and needs no device: the planner
works from a Topology alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch
from npu_dist import make_collection
from torch import nn

WORLD_SIZE = 4
LOCAL_WORLD_SIZE = 2

DP = "data_parallel"
TW = "table_wise"
CW = "column_wise"
TWCW = "table_column_wise"
RW = "row_wise"
TWRW = "table_row_wise"

# "big" tables hold 61.4 GB of fp32 weights. One Ascend 910B has 64 GB of HBM, of which the
# planner's default reservation leaves 85% (54.4 GB), so "big" must be split over devices.
BIG_BYTES = 30_000_000 * 512 * 4
assert BIG_BYTES == 120_000_000 * 128 * 4 == 61_440_000_000

# name -> (rows, dim). "big" splits by columns only in the EBC (512 = 4 x the 128-column
# minimum of column-wise shards); the EC needs equal dims, so its "big" splits by rows only.
EBC_TABLES: dict[str, tuple] = {
    "small_0": (4_096, 64),
    "small_1": (8_192, 128),
    "mid": (1_000_000, 128),
    "big": (30_000_000, 512),
}
EC_TABLES: dict[str, tuple] = {
    "small_0": (4_096, 128),
    "small_1": (8_192, 128),
    "mid": (1_000_000, 128),
    "big": (120_000_000, 128),
}
# Tables that fit everywhere, for comparing whole plans with upstream on every device type.
MODERATE_TABLES: dict[str, tuple] = {
    "a": (10_000, 64),
    "b": (200_000, 128),
    "c": (3_000_000, 256),
    "d": (500, 32),
}

EBC_SHARDING_TYPES = [DP, TW, CW, TWCW, RW, TWRW]
EC_SHARDING_TYPES = [DP, TW, CW, RW]


def register_npu_name() -> None:
    """Let torch parse "npu" devices (placements rank:r/npu:i) without an NPU runtime.

    torch_npu names the PrivateUse1 backend "npu" when it is imported; planning only needs
    the name, not a device. The rename is process-wide and cannot be undone, so this is only
    done when no other name was given to PrivateUse1.
    """
    name = torch._C._get_privateuse1_backend_name()
    if name == "npu":
        return
    if name != "privateuseone":
        raise RuntimeError(f"PrivateUse1 is already named {name!r}; cannot name it 'npu'")
    torch.utils.rename_privateuse1_backend("npu")


def make_ebc(tables: dict[str, tuple]) -> nn.Module:
    return make_collection("ebc", tables, torch.device("meta"))


def make_ec(tables: dict[str, tuple]) -> nn.Module:
    return make_collection("ec", tables, torch.device("meta"))


def constraints_for(
    sharding_type: str, tables: dict[str, tuple], split_big_as: str | None = None
) -> dict[str, Any]:
    """Every table gets ``sharding_type``; "big" gets ``split_big_as`` when given."""
    from torchrec.distributed.planner.types import ParameterConstraints

    return {
        name: ParameterConstraints(
            sharding_types=[split_big_as if name == "big" and split_big_as else sharding_type]
        )
        for name in tables
    }


def plan_to_json(plan: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for module_path, module_plan in sorted(plan.plan.items()):
        params: dict[str, Any] = {}
        for name, ps in sorted(module_plan.items()):
            shards = None
            if ps.sharding_spec is not None:
                shards = [
                    {
                        "offsets": list(shard.shard_offsets),
                        "sizes": list(shard.shard_sizes),
                        "placement": str(shard.placement),
                    }
                    for shard in ps.sharding_spec.shards
                ]
            params[name] = {
                "sharding_type": ps.sharding_type,
                "compute_kernel": ps.compute_kernel,
                "ranks": list(ps.ranks) if ps.ranks is not None else None,
                "shards": shards,
            }
        out[module_path] = params
    return out


def plan_json(
    module: nn.Module,
    sharder: Any,
    compute_device: str,
    constraints: dict[str, Any] | None = None,
    **topology_kwargs: Any,
) -> dict[str, Any]:
    """The plan as JSON data, or {"error": <exception class>} when planning fails."""
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology

    topology = Topology(
        world_size=WORLD_SIZE,
        local_world_size=LOCAL_WORLD_SIZE,
        compute_device=compute_device,
        **topology_kwargs,
    )
    planner = EmbeddingShardingPlanner(topology=topology, constraints=constraints)
    try:
        plan = planner.plan(module, [sharder])
    except Exception as exc:  # recorded, so that upstream and patched failures compare too
        return {"error": type(exc).__name__}
    return plan_to_json(plan)


def _sharders() -> dict[str, Callable[[], Any]]:
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.fused_embedding import FusedEmbeddingCollectionSharder
    from torchrec.distributed.fused_embeddingbag import FusedEmbeddingBagCollectionSharder
    from torchrec.distributed.quant_embeddingbag import QuantEmbeddingBagCollectionSharder

    return {
        "ebc": EmbeddingBagCollectionSharder,
        "ec": EmbeddingCollectionSharder,
        "fused_ebc": FusedEmbeddingBagCollectionSharder,
        "fused_ec": FusedEmbeddingCollectionSharder,
        "quant_ebc": QuantEmbeddingBagCollectionSharder,
    }


ALL_KERNELS = [
    "dense",
    "fused",
    "fused_uvm",
    "fused_uvm_caching",
    "key_value",
    "quant",
    "quant_uvm",
    "quant_uvm_caching",
]


def sharder_menus(device: str) -> dict[str, Any]:
    """Sharding types, kernels and storage accounting every sharder reports for ``device``."""
    weights = torch.empty(100, 8)  # 3200 bytes of fp32
    out: dict[str, Any] = {}
    for key, make in _sharders().items():
        sharder = make()
        try:
            types = sharder.sharding_types(device)
        except Exception as exc:
            out[key] = {"error": type(exc).__name__}
            continue
        kernels = {st: sharder.compute_kernels(st, device) for st in types}
        storage: dict[str, Any] = {}
        for kernel in ALL_KERNELS:
            try:
                storage[kernel] = sharder.storage_usage(weights, device, kernel)
            except Exception as exc:
                storage[kernel] = {"error": type(exc).__name__}
        out[key] = {"sharding_types": types, "compute_kernels": kernels, "storage": storage}
    return out


def topology_json(device: str) -> dict[str, Any]:
    from torchrec.distributed.planner import Topology

    topology = Topology(
        world_size=WORLD_SIZE, local_world_size=LOCAL_WORLD_SIZE, compute_device=device
    )
    return {
        "hbm": [d.storage.hbm for d in topology.devices],
        "ddr": [d.storage.ddr for d in topology.devices],
        "hbm_mem_bw": topology.hbm_mem_bw,
        "ddr_mem_bw": topology.ddr_mem_bw,
        "hbm_to_ddr_mem_bw": topology.hbm_to_ddr_mem_bw,
        "intra_host_bw": topology.intra_host_bw,
        "inter_host_bw": topology.inter_host_bw,
    }


def kernel_bandwidths(device: str) -> dict[str, Any]:
    from torchrec.distributed.planner.constants import kernel_bw_lookup

    return {kernel: kernel_bw_lookup(device, kernel, 1000.0, 100.0, 10.0) for kernel in ALL_KERNELS}


def plan_cases() -> dict[str, Callable[[str], dict[str, Any]]]:
    """Named planning cases; each maps a compute device type to the plan's JSON."""
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    cases: dict[str, Callable[[str], dict[str, Any]]] = {}

    def add(name: str, build: Callable[[str], dict[str, Any]]) -> None:
        cases[name] = build

    for label, tables in (("big", EBC_TABLES), ("moderate", MODERATE_TABLES)):
        add(
            f"ebc/{label}/free",
            lambda d, t=tables: plan_json(make_ebc(t), EmbeddingBagCollectionSharder(), d),
        )
        for st in EBC_SHARDING_TYPES:
            split = RW if label == "big" and st in (DP, TW) else None
            add(
                f"ebc/{label}/{st}",
                lambda d, t=tables, st=st, split=split: plan_json(
                    make_ebc(t), EmbeddingBagCollectionSharder(), d, constraints_for(st, t, split)
                ),
            )
    ec_moderate = {name: (rows, 64) for name, (rows, _) in MODERATE_TABLES.items()}
    for label, tables in (("big", EC_TABLES), ("moderate", ec_moderate)):
        add(
            f"ec/{label}/free",
            lambda d, t=tables: plan_json(make_ec(t), EmbeddingCollectionSharder(), d),
        )
        for st in EC_SHARDING_TYPES:
            split = RW if label == "big" and st in (DP, TW, CW) else None
            add(
                f"ec/{label}/{st}",
                lambda d, t=tables, st=st, split=split: plan_json(
                    make_ec(t), EmbeddingCollectionSharder(), d, constraints_for(st, t, split)
                ),
            )
    return cases


def record(devices: Sequence[str]) -> dict[str, Any]:
    """Everything compared with upstream, for each device type."""
    import torchrec

    patched = importlib.util.find_spec("torchrec.distributed._device_compat") is not None
    cases = plan_cases()
    return {
        "torchrec_file": torchrec.__file__,
        "patched": patched,
        "devices": {
            device: {
                "topology": topology_json(device),
                "kernel_bandwidths": kernel_bandwidths(device),
                "sharders": sharder_menus(device),
                "plans": {name: build(device) for name, build in cases.items()},
            }
            for device in devices
        },
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--devices", default="cpu,cuda,mtia")
    args = parser.parse_args(argv)
    data = record([d for d in args.devices.split(",") if d])
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
