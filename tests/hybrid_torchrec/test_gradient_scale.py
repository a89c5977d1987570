"""The hybrid sharded Hash collection scales its gradients as torchrec's sharded EBC does: both
trained side by side on 2 and 4 CPU ranks (gloo) on the same batches, with torchrec's
GRADIENT_DIVISION on (its default: the gradients divided by the world size) and off
(verify/lib/embcache_gradient_scale.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torchrec")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify" / "lib"))
import embcache_gradient_scale as worker
import npu_dist


@pytest.mark.parametrize("world", [2, 4])
def test_gradients_scale_as_torchrec_sharded_ebc(world: int) -> None:
    npu_dist.spawn_ranks(worker.run_hybrid, world, "cpu")


def test_one_rank_failing_raises_the_same_error_on_every_rank() -> None:
    # Then a plan refused on rank 0 (where torchrec plans) is raised on both ranks too.
    # The last rank's table shard is full (CapacityError): before, the other rank went on into
    # the output all-to-all and waited there (here until the 60 s timeout, failing the test).
    npu_dist.spawn_ranks(worker.run_hybrid_rank_fails, 2, "cpu")
