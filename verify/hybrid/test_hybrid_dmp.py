"""hybrid_torchrec under DistributedModelParallel on npu devices: 2 and 4 ranks (hccl for the
device, gloo for the host), every sharding type the hybrid sharders offer, EBC and EC with
row-number ids and the Hash collections with arbitrary int64 ids, SGD and Adagrad, three
steps; outputs, updated rows, Adagrad's state and the id mappings against the unsharded model
in float64 with a plain dict id -> row (hybrid_dist.py says what each rank checks).

The 2-rank launch also runs HybridTrainPipeline against the plain loop (outputs, weights and
mappings identical). One launch per world size runs all its cases, to keep the process
start-ups (about 10 s each on the simulated device) out of CI time.

Tables have one feature each: with two features of one table (TBE weights_offsets [0, 0]) the
npu split_embedding_forward kernel traps, where fbgemm's CPU kernel accepts the same call (the
npu kernel seems to take a feature's rows from the next feature's weights offset).
"""

from __future__ import annotations

import itertools

import hybrid_dist
import npu_dist
import pytest

Case = hybrid_dist.Case
KINDS = ("ebc", "ec")
# (hashed, sharding type): Hash tables are not offered data-parallel nor table-row-wise, and
# torchrec shards EmbeddingCollection without table-row-wise.
LAYOUTS = [
    (True, "table_wise"),
    (True, "row_wise"),
    (True, "column_wise"),
    (False, "table_wise"),
    (False, "row_wise"),
    (False, "column_wise"),
    (False, "data_parallel"),
]
EBC_ONLY_LAYOUTS = [(False, "table_row_wise")]


def layouts(kind: str) -> list[tuple[bool, str]]:
    return LAYOUTS + (EBC_ONLY_LAYOUTS if kind == "ebc" else [])


# Two ranks: every layout with both optimizers.
CASES_2 = [
    Case(kind, hashed, st, opt)
    for kind in KINDS
    for (hashed, st), opt in itertools.product(layouts(kind), ("sgd", "adagrad"))
]
# Four ranks: every layout once, the optimizers alternating (each layout EBC and EC share meets
# both across them; table-row-wise, EBC only, gets Adagrad here and both with two ranks).
CASES_4 = [
    Case(kind, hashed, st, ("sgd", "adagrad")[(i + k) % 2])
    for k, kind in enumerate(KINDS)
    for i, (hashed, st) in enumerate(layouts(kind))
]

# Hash tables with LRU eviction (hybrid_dist.EVICT_ROWS_PER_RANK rows a rank, more ids than
# rows over the steps): evicted ids' rows are reset on the device (init_fn values, zero Adagrad
# state) before the new ids use them. Each sharding type with two ranks, row-wise (the tightest
# shards) with four.
EVICTING_2 = [
    Case("ebc", True, "table_wise", "adagrad", evicting=True),
    Case("ec", True, "row_wise", "adagrad", evicting=True),
    Case("ebc", True, "column_wise", "adagrad", evicting=True),
    Case("ebc", True, "row_wise", "sgd", evicting=True),
]
EVICTING_4 = [Case("ebc", True, "row_wise", "adagrad", evicting=True)]

NEEDS_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::asynchronous_complete_cumsum",
    "fbgemm::bounds_check_indices",
    "fbgemm::split_embedding_codegen_lookup_sgd_function",
    "fbgemm::split_embedding_codegen_lookup_adagrad_function",
    "fbgemm::dense_embedding_codegen_lookup_function",
)


# HybridTrainPipeline against the plain loop (in the 2-rank launch): row-wise bags with
# Adagrad, table-wise sequences with SGD, and row-wise bags with eviction (the mapping of batch
# i + 1 evicts while batch i trains; its resets wait for batch i + 1's device step).
PIPELINE_CASES = [
    Case("ebc", True, "row_wise", "adagrad"),
    Case("ec", True, "table_wise", "sgd"),
    Case("ebc", True, "row_wise", "adagrad", evicting=True),
]


@pytest.mark.requires_npu
@NEEDS_OPS
@pytest.mark.parametrize(
    ("world_size", "cases", "pipeline_cases"),
    [(2, CASES_2 + EVICTING_2, PIPELINE_CASES), (4, CASES_4 + EVICTING_4, [])],
    ids=["2", "4"],
)
def test_hybrid_dmp_trains_like_the_unsharded_reference(
    world_size: int, cases: list[Case], pipeline_cases: list[Case]
) -> None:
    npu_dist.spawn_ranks(hybrid_dist.worker, world_size, "npu", cases, None, pipeline_cases)


def test_case_lists_cover_every_layout_kind_and_optimizer() -> None:
    for cases in (CASES_2, CASES_4):
        assert {(c.kind, c.hashed, c.sharding_type) for c in cases} == {
            (k, h, st) for k in KINDS for h, st in layouts(k)
        }
    for cases, checked in ((CASES_2, LAYOUTS + EBC_ONLY_LAYOUTS), (CASES_4, LAYOUTS)):
        for hashed, st in checked:
            assert {c.optimizer for c in cases if (c.hashed, c.sharding_type) == (hashed, st)} == {
                "sgd",
                "adagrad",
            }


def test_reference_by_hand() -> None:
    """The float64 reference on one bag, worked by hand: rows start at c (Hash tables), one
    SGD step of the mean loss over 2 ranks."""
    import torch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    case = Case("ebc", True, "row_wise", "sgd")
    ref = hybrid_dist.Reference(case)
    c16, _ = hybrid_dist._base("t0", 16)
    c8, _ = hybrid_dist._base("t1", 8)

    def kjt(a: list[int], c: list[int]) -> KeyedJaggedTensor:
        return KeyedJaggedTensor.from_lengths_sync(
            keys=["a", "c"],
            values=torch.tensor(a + c),
            lengths=torch.tensor([len(a), 0, 0, len(c), 0, 0]),
        )

    # Rank 0: bag [5, 5]; rank 1: bag [5]. Outputs 2c and c; loss (0.5|2c|^2 + 0.5|c|^2) / 2;
    # d/d row5 = (2 * 2c + c) / 2 = 2.5c.
    outs = ref.step([kjt([5, 5], [-9]), kjt([5], [])])
    torch.testing.assert_close(outs[0]["a"][0], 2 * c16)
    torch.testing.assert_close(outs[1]["a"][0], c16)
    torch.testing.assert_close(ref.rows["t0"][5], c16 - hybrid_dist.LR * 2.5 * c16)
    # Rank 0's t1 bag [-9]: output c8, gradient c8 / 2.
    torch.testing.assert_close(ref.rows["t1"][-9], c8 - hybrid_dist.LR * 0.5 * c8)
