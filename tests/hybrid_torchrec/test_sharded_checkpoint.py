"""Directory checkpoints of sharded Hash collections (the checkpoint format shared with
torchrec_embcache) across world sizes, on CPU gloo ranks: saved on 2 ranks (synchronously, with
one rank failing, in the background while training goes on), loaded on 1 and on 4 ranks with
every id's vector equal to the saving ranks' rows. In the same processes, training resumed
from a checkpoint of 2 ranks on 2, 1 and 4 ranks (evicting tables, Adagrad) ends bit for bit
where the uninterrupted run does: rows, Adagrad's state, the mappings' statistics and the ids
evicted at every step (verify/lib/hybrid_state_dist.py says what each rank checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torchrec")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify" / "lib"))
import hybrid_state_dist as worker
import npu_dist


def test_a_checkpoint_of_2_ranks_loads_and_resumes_on_1_and_on_4(tmp_path: Path) -> None:
    npu_dist.spawn_ranks(worker.run_directory_checkpoint_save, 2, "cpu", str(tmp_path))
    npu_dist.spawn_ranks(worker.run_directory_checkpoint_load, 1, "cpu", str(tmp_path))
    npu_dist.spawn_ranks(worker.run_directory_checkpoint_load, 4, "cpu", str(tmp_path))
