"""BlockBucketizeSparseFeatures on sim against fbgemm_gpu's CPU block_bucketize_sparse_features
(uniform blocks, total_num_blocks, keep_orig_idx, VBE, weights, positions, unbucketize_permute)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, platforms  # noqa: E402

fbgemm = torch.ops.fbgemm
OP = "block_bucketize_sparse_features"


def block_bucketize(
    ops,
    lengths,
    indices,
    bucketize_pos: bool,
    sequence: bool,
    block_sizes,
    my_size: int,
    weights=None,
    batch_size_per_feature=None,
    max_b: int = -1,
    keep_orig_idx: bool = False,
    total_num_blocks=None,
    **launch,
):
    """fbgemm's argument order; outputs sized from the shapes alone, as the adapter does."""
    n = indices.numel()
    outs = [
        torch.empty(my_size * lengths.numel(), dtype=lengths.dtype),
        torch.empty(n, dtype=indices.dtype),
        None if weights is None else torch.empty(n, dtype=weights.dtype),
        torch.empty(n, dtype=indices.dtype) if bucketize_pos else None,
        torch.empty(n, dtype=indices.dtype) if sequence else None,
    ]
    ins = [lengths, indices, block_sizes, weights, batch_size_per_feature, total_num_blocks]
    attrs = [int(bucketize_pos), int(sequence), my_size, max_b, int(keep_orig_idx)]
    result = ops(OP).launch([arg(t) for t in ins + outs], attrs, **launch)
    return tuple(outs), result


def assert_same(got, want) -> None:
    names = ("new_lengths", "new_indices", "new_weights", "new_pos", "unbucketize_permute")
    for name, g, w in zip(names, got, want, strict=True):
        if w is None:
            assert g is None, name
            continue
        assert g.dtype == w.dtype, name
        assert g.tolist() == w.tolist(), name


# ---- hand-worked example -------------------------------------------------------------------------


def test_hand_worked_example(sim_ops) -> None:
    # T = 2 tables, B = 3, my_size = 2; block sizes 5 and 4, so table 0 covers ids [0, 10) and
    # table 1 ids [0, 8); ids beyond go to bucket id % 2 with new id id // 2.
    #   bag 0 (t0): 3 -> bucket 0 (3 // 5) id 3;  9 -> bucket 1 id 9 % 5 = 4
    #   bag 1 (t0): 4 -> bucket 0 id 4
    #   bag 2 (t0): empty
    #   bag 3 (t1): 7 -> bucket 1 id 3;  0 -> bucket 0 id 0;  11 >= 8 -> bucket 1 id 5
    #   bag 4 (t1): 5 -> bucket 1 id 1
    #   bag 5 (t1): 2 -> bucket 0 id 2;  10 >= 8 -> bucket 0 id 5
    # new_lengths (bucket-major): bucket 0 [1, 1, 0, 1, 0, 2], bucket 1 [1, 0, 0, 2, 1, 0]
    # new_indices: bucket 0 [3, 4, 0, 2, 5], bucket 1 [4, 3, 5, 1]
    # weights (= input position) follow: [0, 2, 4, 7, 8, 1, 3, 5, 6]; new_pos is the position in
    # the input bag: [0, 0, 1, 0, 1, 1, 0, 2, 0]; unbucketize_permute[i] = where id i went.
    lengths = torch.tensor([2, 1, 0, 3, 1, 2])
    indices = torch.tensor([3, 9, 4, 7, 0, 11, 5, 2, 10])
    weights = torch.arange(9, dtype=torch.float32)
    got, _ = block_bucketize(
        sim_ops, lengths, indices, True, True, torch.tensor([5, 4]), 2, weights, min_core_bytes=1
    )
    assert got[0].tolist() == [1, 1, 0, 1, 0, 2, 1, 0, 0, 2, 1, 0]
    assert got[1].tolist() == [3, 4, 0, 2, 5, 4, 3, 5, 1]
    assert got[2].tolist() == [0.0, 2.0, 4.0, 7.0, 8.0, 1.0, 3.0, 5.0, 6.0]
    assert got[3].tolist() == [0, 0, 1, 0, 1, 1, 0, 2, 0]
    assert got[4].tolist() == [0, 5, 1, 6, 2, 7, 8, 3, 4]


def test_hand_worked_total_num_blocks_and_vbe(sim_ops) -> None:
    # One table, block size 3, total_num_blocks 4 over my_size 2: 2 blocks (6 ids) per bucket,
    # ids [0, 12) in the blocks: 1 -> bucket 0 id 1, 7 -> bucket 1 id 1, 11 -> bucket 1 id 5;
    # 13 beyond: bucket (13 % 4) // 2 = 0, id 13 // 4 = 3. VBE: batch size 2 of 3 bags, the third
    # (past the batch) is empty. keep_orig_idx keeps 1, 7, 11, 13.
    lengths = torch.tensor([2, 2, 0], dtype=torch.int32)
    indices = torch.tensor([1, 7, 11, 13], dtype=torch.int32)
    block_sizes = torch.tensor([3], dtype=torch.int32)
    for keep, ids in ((False, [1, 3, 1, 5]), (True, [1, 13, 7, 11])):
        got, _ = block_bucketize(
            sim_ops,
            lengths,
            indices,
            False,
            True,
            block_sizes,
            2,
            batch_size_per_feature=torch.tensor([2], dtype=torch.int32),
            max_b=2,
            keep_orig_idx=keep,
            total_num_blocks=torch.tensor([4], dtype=torch.int32),
        )
        assert got[0].tolist() == [1, 1, 0, 1, 1, 0]
        assert got[1].tolist() == ids
        assert got[4].tolist() == [0, 2, 3, 1]


# ---- property tests against fbgemm ---------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> dict:
    t = draw(st.integers(1, 5))
    my_size = draw(st.integers(1, 5))
    vbe = draw(st.booleans())
    if vbe:
        batches = draw(st.lists(st.integers(0, 5), min_size=t, max_size=t))
    else:
        batches = [draw(st.integers(0, 5))] * t
    bags = sum(batches)
    small = st.integers(0, 4)
    lengths = draw(
        st.lists(st.one_of(small, small, st.integers(0, 40)), min_size=bags, max_size=bags)
    )
    n = sum(lengths)
    block_sizes = draw(st.lists(st.one_of(st.integers(1, 12), st.just(0)), min_size=t, max_size=t))
    tnb = (
        [my_size * k for k in draw(st.lists(st.integers(1, 3), min_size=t, max_size=t))]
        if draw(st.booleans())
        else None
    )
    span = max(block_sizes) * my_size * 3 + 1
    # In the blocks, beyond them (hashed ids), negative (unsigned to fbgemm) and huge (int32
    # indices keep the low 32 bits).
    ids = st.one_of(
        st.integers(0, span),
        st.integers(0, span),
        st.integers(-50, 4 * span),
        st.integers(-(2**63), 2**63 - 1),
    )
    return {
        "batches": batches if vbe else None,
        "lengths": lengths,
        "indices": draw(st.lists(ids, min_size=n, max_size=n)),
        "block_sizes": block_sizes,
        "tnb": tnb,
        "my_size": my_size,
        "max_b": max(batches) if vbe else -1,
    }


def tensors(case: dict, len_dtype, idx_dtype, with_weights: bool) -> dict:
    n = len(case["indices"])
    return {
        "lengths": torch.tensor(case["lengths"], dtype=len_dtype),
        "indices": torch.tensor(case["indices"], dtype=torch.int64).to(idx_dtype),  # int32 wraps
        "block_sizes": torch.tensor(case["block_sizes"], dtype=idx_dtype),
        "weights": (torch.randn(n) * 10).float() if with_weights else None,
        "batch_size_per_feature": (
            None if case["batches"] is None else torch.tensor(case["batches"], dtype=len_dtype)
        ),
        "total_num_blocks": None
        if case["tnb"] is None
        else torch.tensor(case["tnb"], dtype=idx_dtype),
    }


@settings(max_examples=500, deadline=None)
@given(
    case=cases(),
    len_dtype=st.sampled_from(INDEX_DTYPES),
    idx_dtype=st.sampled_from(INDEX_DTYPES),
    with_weights=st.booleans(),
    bucketize_pos=st.booleans(),
    sequence=st.booleans(),
    keep_orig_idx=st.booleans(),
    platform=platforms,
)
def test_matches_fbgemm(
    sim_ops,
    case,
    len_dtype,
    idx_dtype,
    with_weights,
    bucketize_pos,
    sequence,
    keep_orig_idx,
    platform,
) -> None:
    x = tensors(case, len_dtype, idx_dtype, with_weights)
    head = (x["lengths"], x["indices"], bucketize_pos, sequence, x["block_sizes"])
    head += (case["my_size"], x["weights"], x["batch_size_per_feature"], case["max_b"])
    tail = (keep_orig_idx, x["total_num_blocks"])
    # fbgemm's schema has block_bucketize_pos (uneven row blocks) between max_B and
    # keep_orig_idx; the kernel has no such argument.
    want = fbgemm.block_bucketize_sparse_features(*head, None, *tail)
    got, _ = block_bucketize(sim_ops, *head, *tail, **platform)
    assert_same(got, want)


@pytest.mark.parametrize(
    ("my_size", "launch"),
    [
        (5, {"min_core_bytes": 1, "ub_bytes": 16 * 1024}),
        (64, {"min_core_bytes": 1, "ub_bytes": 48 * 1024, "max_cores": 7}),
        (1024, {}),  # near the UB limit for int64 ids with weights and positions
    ],
)
def test_large_spread_over_cores(sim_ops, my_size, launch) -> None:
    """Many bags on every core, count tiles and staging areas filled and flushed many times."""
    gen = torch.Generator().manual_seed(my_size)
    t, b = 6, 250
    lengths = torch.randint(0, 12, (t * b,), generator=gen, dtype=torch.int32)
    n = int(lengths.sum())
    block_sizes = torch.randint(1, 50, (t,), generator=gen)
    indices = torch.randint(-10, 60 * my_size, (n,), generator=gen)
    weights = torch.randn(n, generator=gen)
    args = (lengths, indices, True, True, block_sizes, my_size, weights)
    want = fbgemm.block_bucketize_sparse_features(*args)
    got, result = block_bucketize(sim_ops, *args, **launch)
    assert_same(got, want)
    if launch.get("min_core_bytes") == 1:
        assert result.block_dim > 1


@pytest.mark.parametrize(
    ("dtype", "block_sizes", "my_size"),
    [
        (torch.int32, [-3, 7], 3),  # a negative block size is a huge unsigned one to fbgemm
        (torch.int32, [2**30, 2**29 + 3], 4),  # block_size * my_size wraps in 32 bits
        (torch.int64, [-1, 2**62], 3),
        (torch.int64, [2**61, 5], 4),
    ],
)
@pytest.mark.parametrize("keep_orig_idx", [False, True])
def test_extreme_block_sizes_and_ids(sim_ops, dtype, block_sizes, my_size, keep_orig_idx) -> None:
    lengths = torch.tensor([2, 3, 1, 2])
    ids = torch.tensor([5, -1, 2**31 - 1, -(2**31), 7, 3, 100, -7]).to(dtype)
    args = (lengths, ids, True, True, torch.tensor(block_sizes, dtype=dtype), my_size)
    want = fbgemm.block_bucketize_sparse_features(*args, None, None, -1, None, keep_orig_idx)
    got, _ = block_bucketize(sim_ops, *args, keep_orig_idx=keep_orig_idx, min_core_bytes=1)
    assert_same(got, want)


def test_no_ids_and_no_bags(sim_ops) -> None:
    for lengths in (torch.zeros(6, dtype=torch.int64), torch.zeros(0, dtype=torch.int64)):
        indices = torch.zeros(0, dtype=torch.int64)
        got, _ = block_bucketize(
            sim_ops, lengths, indices, True, True, torch.tensor([4, 4, 4]), 3, min_core_bytes=1
        )
        want = fbgemm.block_bucketize_sparse_features(
            lengths, indices, True, True, torch.tensor([4, 4, 4]), 3
        )
        assert_same(got, want)


# ---- rejections (tiling) and traps (data the tiling cannot see) ---------------------------------


def _raw(sim_ops, tensors, attrs, **launch):
    return sim_ops(OP).launch([arg(t) for t in tensors], attrs, **launch)


L6 = torch.tensor([1, 0, 2, 1, 0, 1])
IDS = torch.tensor([1, 2, 3, 4, 5])
BS = torch.tensor([4, 4])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"block_sizes": torch.tensor([4, 4], dtype=torch.int32)},
            "block_sizes has dtype int32 but must",
        ),
        ({"block_sizes": torch.tensor([4, 4, 4, 4])}, r"lengths size 6 is not a multiple of T = 4"),
        ({"block_sizes": torch.zeros(0, dtype=torch.int64)}, "block_sizes must not be empty"),
        ({"my_size": 0}, r"my_size must be in \[1, 4095\], got 0"),
        ({"my_size": 5000}, r"my_size must be in \[1, 4095\], got 5000"),
        ({"my_size": 4000, "ub_bytes": 40 * 1024}, "my_size 4000 is too large"),
        ({"weights": torch.ones(4)}, "weights size 4 is not equal to indices size 5"),
        (
            {"batch_size_per_feature": torch.tensor([3, 2, 1])},
            "batch_size_per_feature must have T = 2",
        ),
        (
            {"total_num_blocks": torch.tensor([2])},
            "total_num_blocks must have T = 2 entries, got 1",
        ),
    ],
)
def test_rejects_bad_arguments(sim_ops, kwargs, message) -> None:
    args = {"block_sizes": BS, "my_size": 2, **kwargs}
    launch = {k: args.pop(k) for k in ("ub_bytes",) if k in args}
    with pytest.raises(SimError, match=message):
        block_bucketize(
            sim_ops,
            L6,
            IDS,
            True,
            True,
            args.pop("block_sizes"),
            args.pop("my_size"),
            **args,
            **launch,
        )


def test_rejects_other_dtypes_of_the_per_table_tensors(sim_ops) -> None:
    """batch_size_per_feature has the dtype of lengths, total_num_blocks that of indices (fbgemm
    reads them so); other dtypes have no kernel."""
    bad = [
        {"batch_size_per_feature": torch.tensor([3, 3], dtype=torch.int32)},
        {"total_num_blocks": torch.tensor([2, 2], dtype=torch.int32)},
    ]
    for kwargs in bad:
        with pytest.raises(SimError, match="no kernel variant for the dtype combination"):
            block_bucketize(sim_ops, L6, IDS, False, False, BS, 2, **kwargs)


def test_rejects_mismatched_outputs(sim_ops) -> None:
    n = IDS.numel()
    new_lengths = torch.empty(12, dtype=torch.int64)
    new_indices = torch.empty(n, dtype=torch.int64)
    extra = torch.empty(n, dtype=torch.int64)
    base = [L6, IDS, BS, None, None, None]
    with pytest.raises(SimError, match="new_pos must be given exactly when bucketize_pos is set"):
        _raw(sim_ops, [*base, new_lengths, new_indices, None, extra, None], [0, 0, 2, -1, 0])
    with pytest.raises(SimError, match="unbucketize_permute must be given exactly when sequence"):
        _raw(sim_ops, [*base, new_lengths, new_indices, None, None, None], [0, 1, 2, -1, 0])
    with pytest.raises(
        SimError, match=r"new_lengths must have shape \[my_size \* lengths size\] = \[18\]"
    ):
        _raw(sim_ops, [*base, new_lengths, new_indices, None, None, None], [0, 0, 3, -1, 0])
    with pytest.raises(SimError, match=r"new_indices must have shape \[5\], got \[4\]"):
        _raw(sim_ops, [*base, new_lengths, new_indices[:4], None, None, None], [0, 0, 2, -1, 0])
    with pytest.raises(SimError, match="new_weights must be given exactly when weights are"):
        _raw(
            sim_ops, [*base, new_lengths, new_indices, torch.empty(n), None, None], [0, 0, 2, -1, 0]
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lengths": torch.tensor([1, 0, 2, 1, 0, 2])},  # sum(lengths) != N
        {"lengths": torch.tensor([3, -1, 2, 1, 0, 0])},  # a negative length
        {"batch_size_per_feature": torch.tensor([3, 4])},  # more bags than lengths
        {"batch_size_per_feature": torch.tensor([2, 2])},  # ids in bags past the batches
        # id 10 of table 1: 3 blocks of 4 ids, 10 // 4 = bucket 2 of 2
        {"total_num_blocks": torch.tensor([2, 3]), "indices": torch.tensor([1, 2, 3, 4, 10])},
        {"total_num_blocks": torch.tensor([1, 2])},  # 1 // my_size = 0 blocks per bucket
    ],
)
def test_traps_where_fbgemm_breaks(sim_ops, kwargs) -> None:
    args = {"lengths": L6, "indices": IDS, **kwargs}
    lengths, indices = args.pop("lengths"), args.pop("indices")
    with pytest.raises(SimError, match="trap"):
        block_bucketize(sim_ops, lengths, indices, False, False, BS, 2, **args, min_core_bytes=1)
