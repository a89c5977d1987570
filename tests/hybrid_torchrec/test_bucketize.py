"""bucketize against fbgemm's block_bucketize_sparse_features (the op torchrec's row-wise
input distribution calls) and, for hash routing, against the documented rule in Python."""

from __future__ import annotations

import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
import hybrid_torchrec as hy
import pytest
import torch
from hybrid_torchrec.workload import zipf_ids
from torchrec.distributed.embedding_sharding import bucketize_kjt_before_all2all
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from tests.hybrid_torchrec.reference import hash_bucket


def random_batch(
    seed: int, features: int, batch: int, buckets: int, dtype: torch.dtype, negative: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 6, (features * batch,), generator=g)
    blocks = torch.randint(1, 50, (features,), generator=g)
    n = int(lengths.sum())
    # Mostly ids inside the blocks, some beyond (fbgemm's modulo rule), some negative.
    ids = torch.randint(0, int(blocks.max()) * buckets * 2, (n,), generator=g)
    if negative and n:
        flip = torch.rand(n, generator=g) < 0.2
        ids = torch.where(flip, -ids - 1, ids)
    weights = torch.rand(n, generator=g)
    return lengths.to(dtype), ids.to(dtype), blocks.to(dtype), weights


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("buckets", [1, 2, 3, 8])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("negative", [False, True])
def test_block_routing_equals_fbgemm(
    dtype: torch.dtype, buckets: int, keep: bool, negative: bool
) -> None:
    features, batch = 3, 17
    lengths, ids, blocks, weights = random_batch(
        buckets * 7 + keep, features, batch, buckets, dtype, negative
    )
    expected = torch.ops.fbgemm.block_bucketize_sparse_features(
        lengths, ids, False, True, blocks, buckets, weights, keep_orig_idx=keep
    )
    ours = hy.bucketize(
        lengths,
        ids,
        buckets,
        routing="block",
        block_sizes=blocks,
        num_features=features,
        weights=weights,
        keep_ids=keep,
        return_permute=True,
    )
    assert ours.lengths.dtype == dtype and ours.ids.dtype == dtype
    assert torch.equal(ours.lengths, expected[0])
    assert torch.equal(ours.ids, expected[1])
    assert ours.weights is not None and torch.equal(ours.weights, expected[2])
    assert ours.permute is not None and torch.equal(ours.permute, expected[4])


def test_variable_batch_per_feature_equals_fbgemm() -> None:
    g = torch.Generator().manual_seed(4)
    batch_sizes = [3, 0, 7, 5]
    lengths = torch.randint(0, 5, (sum(batch_sizes),), generator=g)
    ids = torch.randint(0, 400, (int(lengths.sum()),), generator=g)
    blocks = torch.tensor([10, 20, 30, 40])
    expected = torch.ops.fbgemm.block_bucketize_sparse_features(
        lengths,
        ids,
        False,
        True,
        blocks,
        4,
        None,
        batch_size_per_feature=torch.tensor(batch_sizes),
        max_B=max(batch_sizes),
    )
    ours = hy.bucketize(
        lengths,
        ids,
        4,
        routing="block",
        block_sizes=blocks,
        batch_size_per_feature=batch_sizes,
        return_permute=True,
    )
    assert torch.equal(ours.lengths, expected[0])
    assert torch.equal(ours.ids, expected[1])
    assert ours.permute is not None and torch.equal(ours.permute, expected[4])


def test_hash_routing_matches_the_documented_rule() -> None:
    g = torch.Generator().manual_seed(9)
    features, batch, buckets = 4, 64, 5
    lengths = torch.randint(0, 8, (features * batch,), generator=g)
    ids = zipf_ids(int(lengths.sum()), 10**8, 1.05, g)
    ours = hy.bucketize(lengths, ids, buckets, num_features=features, return_permute=True)

    bags = []
    cursor = 0
    for length in lengths.tolist():
        bags.append(ids[cursor : cursor + length].tolist())
        cursor += length
    expected_lengths = []
    expected_ids = []
    for b in range(buckets):
        for bag in bags:
            mine = [i for i in bag if hash_bucket(i, buckets) == b]
            expected_lengths.append(len(mine))
            expected_ids.extend(mine)
    assert ours.lengths.tolist() == expected_lengths
    assert ours.ids.tolist() == expected_ids
    assert ours.permute is not None
    assert torch.equal(ours.ids[ours.permute], ids)
    # Balanced for arbitrary ids: every bucket gets 20% +- 3% of the distinct ids.
    distinct = hy.unique(ids).values
    shares = (
        torch.bincount(
            torch.tensor([hash_bucket(i, buckets) for i in distinct.tolist()]), minlength=buckets
        )
        / distinct.numel()
    )
    assert float((shares - 1 / buckets).abs().max()) < 0.03


# Routes recorded before the hash moved into packages/common (recsdk_ext::route_bucket): which
# rank holds an id must not change under a checkpoint.
PINNED_IDS = [0, 1, -1, 2, 4095, 4096, -4096, 123456789, -987654321, 2**31 - 1, 2**32]
PINNED_IDS += [2**63 - 1, -(2**63)]
PINNED_ROUTES = {
    2: [0, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1],
    3: [0, 2, 1, 0, 0, 2, 0, 1, 2, 1, 2, 2, 1],
    8: [0, 5, 3, 1, 1, 6, 1, 4, 7, 4, 5, 5, 4],
}


def test_hash_routes_are_unchanged_on_pinned_ids() -> None:
    ids = torch.tensor(PINNED_IDS)
    lengths = torch.ones(len(PINNED_IDS), dtype=torch.int64)  # one id per bag
    for buckets, want in PINNED_ROUTES.items():
        assert [hash_bucket(i, buckets) for i in PINNED_IDS] == want
        ours = hy.bucketize(lengths, ids, buckets)
        got = ours.lengths.view(buckets, len(PINNED_IDS)).argmax(dim=0)
        assert got.tolist() == want


def test_hash_buckets_nest_when_the_bucket_count_doubles() -> None:
    """Bucket r of W holds buckets 2r and 2r+1 of 2W: what resharding W -> 2W relies on."""
    ids = zipf_ids(20_000, 10**8, 1.05, torch.Generator().manual_seed(1))
    lengths = torch.tensor([ids.numel()])
    for w in (1, 2, 3):
        coarse = hy.bucketize(lengths, ids, w, return_permute=True)
        fine = hy.bucketize(lengths, ids, 2 * w, return_permute=True)
        assert coarse.permute is not None and fine.permute is not None
        coarse_bucket = torch.repeat_interleave(torch.arange(w), coarse.lengths)[coarse.permute]
        fine_bucket = torch.repeat_interleave(torch.arange(2 * w), fine.lengths)[fine.permute]
        assert torch.equal(fine_bucket // 2, coarse_bucket)


def test_independent_of_thread_count() -> None:
    g = torch.Generator().manual_seed(5)
    features, batch = 26, 4096
    lengths = torch.randint(0, 20, (features * batch,), generator=g)
    ids = zipf_ids(int(lengths.sum()), 10**8, 1.05, g)
    before = hy.get_num_threads()
    outs = []
    try:
        for threads in (1, 2, 3):
            hy.set_num_threads(threads)
            outs.append(hy.bucketize(lengths, ids, 8, num_features=features, return_permute=True))
    finally:
        hy.set_num_threads(before)
    for other in outs[1:]:
        assert torch.equal(outs[0].lengths, other.lengths)
        assert torch.equal(outs[0].ids, other.ids)
        assert outs[0].permute is not None and other.permute is not None
        assert torch.equal(outs[0].permute, other.permute)


def test_argument_errors() -> None:
    lengths = torch.tensor([1, 2])
    ids = torch.tensor([1, 2, 3])
    with pytest.raises(ValueError, match="block_sizes"):
        hy.bucketize(lengths, ids, 2, routing="block")
    with pytest.raises(ValueError, match="keeps the original ids"):
        hy.bucketize(lengths, ids, 2, keep_ids=False)
    with pytest.raises(ValueError, match="lengths add up to 3 but there are 2 ids"):
        hy.bucketize(lengths, ids[:2], 2)
    with pytest.raises(ValueError, match="negative length"):
        hy.bucketize(torch.tensor([-1, 4]), ids, 2)
    with pytest.raises(ValueError, match="block size of feature 0"):
        hy.bucketize(lengths, ids, 2, routing="block", block_sizes=torch.tensor([0]))
    with pytest.raises(ValueError, match="do not split into 3 features"):
        hy.bucketize(lengths, ids, 2, num_features=3)


def make_kjt(variable: bool, weighted: bool) -> KeyedJaggedTensor:
    g = torch.Generator().manual_seed(3)
    keys = ["a", "b", "c"]
    strides = [4, 2, 5] if variable else [4, 4, 4]
    lengths = torch.randint(0, 4, (sum(strides),), generator=g)
    values = torch.randint(0, 90, (int(lengths.sum()),), generator=g)
    weights = torch.rand(values.numel(), generator=g) if weighted else None
    if variable:
        return KeyedJaggedTensor(
            keys=keys,
            values=values,
            weights=weights,
            lengths=lengths,
            stride_per_key_per_rank=[[s] for s in strides],
        )
    return KeyedJaggedTensor(keys=keys, values=values, weights=weights, lengths=lengths, stride=4)


@pytest.mark.parametrize("variable", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_bucketize_kjt_equals_torchrec(variable: bool, weighted: bool) -> None:
    kjt = make_kjt(variable, weighted)
    blocks = torch.tensor([10, 15, 30])
    expected, expected_permute = bucketize_kjt_before_all2all(
        kjt, num_buckets=3, block_sizes=blocks, output_permute=True
    )
    ours, permute = hy.bucketize_kjt(
        kjt, 3, routing="block", block_sizes=blocks, output_permute=True
    )
    assert ours.keys() == expected.keys()
    assert torch.equal(ours.lengths(), expected.lengths())
    assert torch.equal(ours.values(), expected.values())
    if weighted:
        assert torch.equal(ours.weights(), expected.weights())
    assert ours.stride() == expected.stride()
    assert ours.stride_per_key_per_rank() == expected.stride_per_key_per_rank()
    assert permute is not None and expected_permute is not None
    assert torch.equal(permute, expected_permute)
