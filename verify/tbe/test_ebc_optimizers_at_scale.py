"""torchrec's fused optimizers through its own EmbeddingBagCollection at a production-like
shape: 24 tables of 10^3 to 1.6 * 10^4 rows, D of 64 and 128, 2048 samples per rank
with Zipf ids (hot rows repeat thousands of times), sharded table-wise by
DistributedModelParallel over two npu ranks, a third of the tables each with SGD, exact
row-wise Adagrad and Adam (set per table with apply_optimizer_in_backward), two steps; the
owned tables' outputs and weights against fbgemm's CPU TBE (SGD, row-wise Adagrad) and Adam
in float64 on both ranks' batches (see ebc_optimizers_dist.py). The tables are smaller than
the 10^4 to 10^5 rows of test_npu_tbe_at_scale.py (the verify time budget; the other sizes
are not shrunk).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ebc_optimizers_dist
import npu_dist
import pytest
import torch

pytestmark = [
    pytest.mark.requires_npu,
    pytest.mark.requires_npu_ops(
        "fbgemm::split_embedding_codegen_lookup_sgd_function",
        "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function",
        "fbgemm::split_embedding_codegen_lookup_adam_function",
    ),
]


def test_ebc_fused_optimizers_train_like_fbgemm_cpu(tmp_path: Path, record_property: Any) -> None:
    report = tmp_path / "fallbacks.json"
    npu_dist.spawn_ranks(ebc_optimizers_dist.ebc_optimizers_worker, 2, "npu", str(report))
    if report.is_file():  # npu_sim: which aten operators ran through its CPU fallback
        counts = json.loads(report.read_text(encoding="utf-8"))
        record_property("aten_cpu_fallbacks", json.dumps(counts, sort_keys=True))


def test_the_workers_premises() -> None:
    """The shape the docstring claims, and a positive loss gradient for Adagrad and Adam: their
    weights stay within 0.1 + 2 steps * lr, so |out| <= 8 ids * 0.2 and w + out / 2 > 0."""
    d = ebc_optimizers_dist
    spec = d.table_specs()
    assert len(spec) == 24 and {dim for _, dim, _ in spec.values()} == {64, 128}
    assert {opt for _, _, opt in spec.values()} == set(d.OPTIMIZERS)
    assert d.BATCH_PER_RANK >= 2048
    w = d.initial_weights("t0")
    assert float(w.abs().max()) <= 0.1 and torch.equal(w, d.initial_weights("t0"))
    assert float(d.loss_weights(0, 1, "t0").min()) >= 1.0
    bound = 0.1 + d.STEPS * max(d.LEARNING_RATES["adam"], d.LEARNING_RATES["rowwise_adagrad"])
    assert 1.0 - d.MAX_IDS_PER_BAG * bound / 2 > 0
