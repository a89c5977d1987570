"""DistributedModelParallel over two npu processes on a DLRM-shaped model at the size users
train: 13 dense and 26 sparse features, tables of 10^4 to 10^5 rows, D = 64, 1024 samples per
rank with Zipf ids, weighted and unweighted tables, sum and mean pooling; every sharding type,
three training steps, with a plain loop and with TrainPipelineSparseDist, against the unsharded
model on the CPU (see dlrm_dist.py). Nothing is shrunk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dlrm_dist
import npu_dist
import pytest
import torch

WORLD_SIZE = 2

NEEDS_EMBEDDING_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::asynchronous_complete_cumsum",
    "fbgemm::permute_2D_sparse_data",
    "fbgemm::block_bucketize_sparse_features",
    "fbgemm::bounds_check_indices",
    "fbgemm::split_embedding_codegen_lookup_sgd_function",
    "fbgemm::split_embedding_codegen_lookup_adagrad_function",
    "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function",
    "fbgemm::split_embedding_codegen_lookup_adam_function",
    "fbgemm::dense_embedding_codegen_lookup_function",
)


def _spawn(
    sharding_type: str, device_type: str, variants: tuple[str, ...], report: Path | None
) -> None:
    npu_dist.spawn_ranks(
        dlrm_dist.dlrm_worker,
        WORLD_SIZE,
        device_type,
        sharding_type,
        device_type,
        variants,
        None if report is None else str(report),
    )


@pytest.mark.requires_npu
@NEEDS_EMBEDDING_OPS
@pytest.mark.parametrize("sharding_type", list(dlrm_dist.OPTIMIZERS))
def test_dlrm_trains_on_npu_like_the_unsharded_cpu_model(
    sharding_type: str, tmp_path: Path, record_property: Any
) -> None:
    """Each rank trains a fresh sharded model twice, with a plain loop and with
    TrainPipelineSparseDist; a failure names the rank and the variant."""
    report = tmp_path / "fallbacks.json"
    _spawn(sharding_type, "npu", ("loop", "pipeline"), report)
    if report.is_file():  # npu_sim: which aten operators ran through its CPU fallback
        counts = json.loads(report.read_text(encoding="utf-8"))
        record_property("aten_cpu_fallbacks", json.dumps(counts, sort_keys=True))


def test_same_worker_on_cpu_with_gloo() -> None:
    """The harness and its reference where no npu exists (the CPU offers neither row-wise
    sharding of bags nor fbgemm's CPU Adam): table-wise, both variants."""
    _spawn("table_wise", "cpu", ("loop", "pipeline"), None)


def test_reference_optimizers_are_the_written_formulas() -> None:
    """One row by hand for each fused optimizer of the reference."""
    g = torch.tensor([[0.5, -1.0]])
    touched = torch.tensor([0])
    lr, eps = dlrm_dist.LEARNING_RATE, dlrm_dist.EPS
    for optimizer, want in {
        "sgd": [1.0 - lr * 0.5, 2.0 + lr * 1.0],
        "adagrad": [1.0 - lr * 0.5 / (0.5 + eps), 2.0 + lr * 1.0 / (1.0 + eps)],
        "rowwise_adagrad": [1.0 - lr * 0.5 / (0.625**0.5 + eps), 2.0 + lr / (0.625**0.5 + eps)],
        # First Adam step: m_hat = g, v_hat = g * g.
        "adam": [1.0 - lr * 0.5 / (0.5 + eps), 2.0 + lr * 1.0 / (1.0 + eps)],
    }.items():
        ref = dlrm_dist.Reference.__new__(dlrm_dist.Reference)
        ref.optimizer, ref.state, ref.iteration = optimizer, {}, 1
        w = torch.tensor([[1.0, 2.0]])
        ref._fused("t", w, g, touched)
        torch.testing.assert_close(w, torch.tensor([want]), rtol=1e-6, atol=1e-7, msg=optimizer)
