"""hybrid_torchrec's state beyond one step on npu ranks (hybrid_state_dist.py has the workers).

* Gradient accumulation (2 ranks): three micro-batches inside ``accumulate_gradients`` equal
  the float64 reference's one step on the three batches joined (rows and Adagrad's state),
  for row-wise Hash bags, column-wise Hash sequences and table-wise row-number bags.
* Resharding (2 -> 4 -> 2 ranks): a model trained on 2 ranks saves a directory checkpoint
  (save_sharded_checkpoint, the format shared with torchrec_embcache); 4 ranks load it (each
  rank keeping the ids of its hash range), give the same outputs for the same batch, hold
  every id exactly where the layout says, and save again; 2 ranks load that and give the
  outputs once more. At every hop each id's use statistics (count, last use, the mapper's
  step) and the fused optimiser's state of its row (Adagrad's sums) equal the saving ranks'
  (50 s on the sim build of aca74de with this tree's hybrid_torchrec).
"""

from __future__ import annotations

from pathlib import Path

import hybrid_state_dist
import npu_dist
import pytest
from hybrid_dist import Case

NEEDS_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::asynchronous_complete_cumsum",
    "fbgemm::bounds_check_indices",
    "fbgemm::split_embedding_codegen_lookup_sgd_function",
    "fbgemm::split_embedding_codegen_lookup_adagrad_function",
)

ACCUMULATION_CASES = [
    Case("ebc", True, "row_wise", "adagrad"),
    Case("ec", True, "column_wise", "adagrad"),
    Case("ebc", False, "table_wise", "adagrad"),
]
CHECKPOINT_CASES = [
    Case("ebc", True, "row_wise", "adagrad"),
    Case("ec", True, "column_wise", "sgd"),
]


@pytest.mark.requires_npu
@NEEDS_OPS
def test_accumulation_is_one_step_on_the_joined_batches() -> None:
    npu_dist.spawn_ranks(hybrid_state_dist.worker, 2, "npu", ACCUMULATION_CASES, [], None, None)


@pytest.mark.requires_npu
@NEEDS_OPS
def test_checkpoints_reshard_2_to_4_to_2(tmp_path: Path) -> None:
    hops = [(2, None, tmp_path / "w2"), (4, tmp_path / "w2", tmp_path / "w4")]
    hops.append((2, tmp_path / "w4", tmp_path / "w2again"))
    for world_size, load_dir, save_dir in hops:
        npu_dist.spawn_ranks(
            hybrid_state_dist.worker,
            world_size,
            "npu",
            [],
            CHECKPOINT_CASES,
            None if load_dir is None else str(load_dir),
            str(save_dir),
        )
