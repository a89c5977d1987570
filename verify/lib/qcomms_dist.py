"""Worker processes for verify/dmp/test_npu_qcomms.py: torchrec's INT8 quantised communication
(QCommsConfig forward and backward INT8) on npu ranks over hccl, and its FP8 row-wise
communication (forward and backward FP8 with fp8_quantize_dim 32: e4m3 rows forward, e5m2 rows
backward, each row scaled so that its largest magnitude maps to the format's max_pos).

Each rank shards npu_dist's EmbeddingBagCollection table-wise with the INT8 codecs on its
all-to-alls, loads the known weights, runs its local batch forward and one fused-SGD step, and
compares against the same step without quantisation (the CPU reference and npu_dist's expected
update) within the INT8 codec's error bound: a row-wise INT8 value is within half a step,
(row max - row min) / 510, of the original. The rows the codec cuts are parts of the all-to-all
tensor, so the bound uses the range of every pooled value of the global batch (a row's range is
at most that); gradients (the loss is 0.5 * sum(out^2), so d loss / d out = out) pass one more
codec on the way back, and each weight row moves by lr times the sum of its bags' gradients.
FP8 row-wise rounds each value to 3 (forward) or 2 (backward) mantissa bits after scaling, so a
value is within 2^-4 (2^-3) of its row's largest magnitude, at most that of every value.
"""

from __future__ import annotations

import npu_dist
import torch

SHARDING = "table_wise"
# fbgemm's INT8 codec cuts the all-to-all into rows of 32 values (QuantizationContext's
# default row_dim) and refuses a rank's chunk of another length: a rank's chunk is batch size
# (3) times its tables' dims, so every dim is 32.
TABLES = {"t0": (40, 32), "t1": (24, 32), "t2": (60, 32)}


def _global_outputs(tables: dict[str, tuple], weights: dict[str, torch.Tensor], world: int):
    """Every rank's unquantised pooled outputs, from the CPU reference module."""
    reference = npu_dist.make_module("ebc", tables, torch.device("cpu"))
    with torch.no_grad():
        for name, weight in weights.items():
            reference.embedding_bags[name].weight.copy_(weight)
        return reference, [
            reference(npu_dist.local_batch(r, tables)).to_dict() for r in range(world)
        ]


def _bag_counts(tables: dict[str, tuple], world: int) -> dict[str, torch.Tensor]:
    """How many bags of the global batch contain each row (with repeats): a row's update is
    lr times the sum of that many gradients."""
    counts = {name: torch.zeros(rows) for name, (rows, _) in tables.items()}
    for r in range(world):
        batch = npu_dist.local_batch(r, tables)
        for key, jt in batch.to_dict().items():
            for ids in jt.to_dense():
                for i in ids.tolist():
                    counts[key.removeprefix("f_")][i] += 1
    return counts


def _bounds(every: torch.Tensor, precision: str) -> tuple[float, float]:
    """The forward error bound of a pooled value and of a gradient (an output, within the
    forward bound, quantised once more)."""
    if precision == "int8":
        spread = float(every.max() - every.min())
        fwd = spread / 510 * (1 + 1e-5) + 1e-6
        return fwd, fwd + (spread + 2 * fwd) / 510 * (1 + 1e-5) + 1e-6
    top = float(every.abs().max())
    fwd = top * 2.0**-4 * (1 + 1e-5) + 1e-6
    return fwd, fwd + (top + fwd) * 2.0**-3 * (1 + 1e-5) + 1e-6


def qcomms_worker(
    rank: int, world_size: int, port: int, device_type: str = "npu", precision: str = "int8"
) -> None:
    """One rank; device_type "cpu" (gloo) runs the same checks anywhere, which tests the
    harness and its bound where no npu exists (INT8 only: fbgemm-gpu-cpu has no CPU FP8
    row-wise kernel). precision "int8" or "fp8" (row-wise, fp8_quantize_dim 32)."""
    import torch.distributed as dist
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.fbgemm_qcomm_codec import (
        CommType,
        QCommsConfig,
        get_qcomm_codecs_registry,
    )
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.planner.types import ParameterConstraints

    provider, device = npu_dist.start_rank(rank, world_size, port, device_type)
    try:
        tables = TABLES
        weights = npu_dist.reference_weights(tables)
        if precision == "fp8":
            config = QCommsConfig(
                forward_precision=CommType.FP8,
                backward_precision=CommType.FP8,
                fp8_quantize_dim=32,
            )
        else:
            config = QCommsConfig(forward_precision=CommType.INT8, backward_precision=CommType.INT8)
        registry = get_qcomm_codecs_registry(config)
        sharder = EmbeddingBagCollectionSharder(
            fused_params=npu_dist.fused_params("sgd"), qcomm_codecs_registry=registry
        )
        planner = EmbeddingShardingPlanner(
            topology=Topology(
                world_size=world_size, local_world_size=world_size, compute_device=device_type
            ),
            constraints={name: ParameterConstraints(sharding_types=[SHARDING]) for name in tables},
        )
        model = npu_dist.make_module("ebc", tables, torch.device("meta"))
        plan = planner.plan(model, [sharder])
        dmp = DistributedModelParallel(model, device=device, plan=plan, sharders=[sharder])
        with torch.no_grad():
            assert npu_dist._load_weights(dmp.state_dict(), weights) > 0

        _, outputs = _global_outputs(tables, weights, world_size)
        every = torch.cat([v.flatten() for out in outputs for v in out.values()])
        fwd_bound, grad_bound = _bounds(every, precision)

        got = dmp(npu_dist.local_batch(rank, tables).to(device))
        have = {k: v.cpu() for k, v in got.to_dict().items()}
        want = outputs[rank]
        assert sorted(have) == sorted(want)
        errors = [float((have[k] - want[k]).abs().max()) for k in want]
        assert max(errors) <= fwd_bound, (errors, fwd_bound)
        # The codec did run: 8 bits cannot carry these floats exactly.
        assert max(errors) > 0, "the pooled outputs came through unquantised"

        npu_dist._loss(dict(got.to_dict())).backward()
        # Gradients: each is an output (within fwd_bound), quantised once more (_bounds).
        want_weights = npu_dist.expected_update("ebc", tables, weights, world_size, "sgd")
        counts = _bag_counts(tables, world_size)
        checked = 0
        for key, local, expected in npu_dist._local_pieces(dmp.state_dict(), want_weights):
            table = key.split(".")[-2]
            bound = npu_dist.LEARNING_RATE * counts[table][:, None] * grad_bound + 1e-6
            diff = (local.detach().cpu() - expected).abs()
            assert bool((diff <= bound).all()), (key, float(diff.max()))
            checked += 1
        assert checked > 0
        npu_dist.finish_rank(provider, None, rank)
    finally:
        dist.destroy_process_group()
