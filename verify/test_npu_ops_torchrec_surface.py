"""fbgemm operators torchrec's sharding reaches, on the npu device, against fbgemm's CPU kernels.

KeyedTensor.regroup (permute_pooled_embs_auto_grad, forward and backward), the variable-batch
paths (permute_1D_sparse_data, segment_sum_csr, expand_into_jagged_permute),
permute_2D_sparse_data_input1D and the position-weighted features' offsets_range: every result
equal to fbgemm's CPU result on the same inputs, and bad arguments refused with a clear error
before any kernel runs.
"""

from __future__ import annotations

import itertools

import pytest
import torch

NPU = "npu"
pytestmark = pytest.mark.requires_npu


@pytest.fixture(scope="module", autouse=True)
def adapter() -> object:
    import fbgemm_gpu  # noqa: F401  (the CPU reference kernels)
    import fbgemm_npu_api

    return fbgemm_npu_api


fbgemm = torch.ops.fbgemm


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == NPU, f"result on {actual.device}, not on npu"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual, expected), f"\nnpu:      {actual}\nexpected: {expected}"


def pooled_case(batch: int, dims: list[int], dtype: torch.dtype = torch.float32):
    gen = torch.Generator().manual_seed(batch + len(dims))
    pooled = torch.randn(batch, sum(dims), generator=gen).mul(10).to(dtype)
    offsets = torch.tensor([0, *itertools.accumulate(dims)])
    permute = torch.randperm(len(dims), generator=gen)
    inv = torch.empty_like(permute)
    inv[permute] = torch.arange(len(dims))
    inv_offsets = torch.tensor([0, *itertools.accumulate(dims[i] for i in permute.tolist())])
    return pooled, offsets, permute, inv_offsets, inv


# ---- permute_pooled_embs ------------------------------------------------------------------------


@pytest.mark.requires_npu_ops("fbgemm::permute_pooled_embs")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_permute_pooled_embs_matches_cpu(dtype: torch.dtype) -> None:
    args = pooled_case(64, [8, 16, 4, 32, 12], dtype)
    expected = fbgemm.permute_pooled_embs(*args)
    assert_same(fbgemm.permute_pooled_embs(*(t.to(NPU) for t in args)), expected)


@pytest.mark.requires_npu_ops("fbgemm::permute_pooled_embs")
def test_permute_pooled_embs_repeats_like_cpu() -> None:
    pooled = torch.arange(40.0).view(4, 10)
    offsets, permute = torch.tensor([0, 3, 5, 10]), torch.tensor([0, 0, 2])
    expected = fbgemm.permute_pooled_embs(pooled, offsets, permute, offsets, permute)
    got = fbgemm.permute_pooled_embs(
        *(t.to(NPU) for t in (pooled, offsets, permute)), offsets, permute
    )
    assert_same(got, expected)


@pytest.mark.requires_npu_ops("fbgemm::permute_pooled_embs")
def test_permute_pooled_embeddings_module_trains_on_npu() -> None:
    """fbgemm's PermutePooledEmbeddings: forward, and the gradient through fbgemm's autograd
    kernel (the inverse permutation) equal to the CPU's."""
    from fbgemm_gpu.permute_pooled_embedding_modules import PermutePooledEmbeddings

    dims, permute = [4, 4, 8, 2], [2, 0, 3, 1]
    pooled = torch.randn(6, sum(dims), generator=torch.Generator().manual_seed(1))
    grad = torch.randn(6, sum(dims), generator=torch.Generator().manual_seed(2))
    cpu_in = pooled.clone().requires_grad_()
    cpu_out = PermutePooledEmbeddings(dims, permute)(cpu_in)
    cpu_out.backward(grad)
    npu_in = pooled.to(NPU).requires_grad_()
    npu_out = PermutePooledEmbeddings(dims, permute, device=torch.device(NPU))(npu_in)
    npu_out.backward(grad.to(NPU))
    assert_same(npu_out.detach(), cpu_out.detach())
    assert npu_in.grad is not None
    assert_same(npu_in.grad, cpu_in.grad)
    with torch.inference_mode():  # below autograd: the auto_grad operator's own npu kernel
        args = pooled_case(5, dims)
        expected = fbgemm.permute_pooled_embs_auto_grad(*args)
        assert_same(fbgemm.permute_pooled_embs_auto_grad(*(t.to(NPU) for t in args)), expected)


@pytest.mark.requires_npu_ops("fbgemm::permute_pooled_embs")
def test_keyed_tensor_regroup_on_npu() -> None:
    from torchrec.sparse.jagged_tensor import KeyedTensor

    gen = torch.Generator().manual_seed(3)
    kts = [
        KeyedTensor(["a", "b"], [4, 8], torch.randn(5, 12, generator=gen)),
        KeyedTensor(["c", "d", "e"], [2, 4, 6], torch.randn(5, 12, generator=gen)),
    ]
    groups = [["e", "a"], ["c", "b", "d"]]
    expected = KeyedTensor.regroup(kts, groups)
    on_npu = [KeyedTensor(kt.keys(), kt.length_per_key(), kt.values().to(NPU)) for kt in kts]
    got = KeyedTensor.regroup(on_npu, groups)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert_same(g, e)


@pytest.mark.requires_npu_ops("fbgemm::permute_pooled_embs")
def test_permute_pooled_embs_refuses_bad_lists() -> None:
    pooled, offsets, permute, inv_offsets, inv = (t.to(NPU) for t in pooled_case(4, [2, 3, 4]))
    # fbgemm's own check and message.
    with pytest.raises(RuntimeError, match="offset_dim_list needs to have long/int64 type"):
        fbgemm.permute_pooled_embs(pooled, offsets.int(), permute, inv_offsets, inv)
    with pytest.raises(RuntimeError, match="permute_list needs to have long/int64 type"):
        fbgemm.permute_pooled_embs(pooled, offsets, permute.int(), inv_offsets, inv)
    # Where fbgemm's CPU op would index outside its blocks: refused, naming the entry.
    bad = torch.tensor([0, 3, 1]).to(NPU)
    with pytest.raises(ValueError, match=r"permute_list\[1\] = 3 is not a block"):
        fbgemm.permute_pooled_embs(pooled, offsets, bad, inv_offsets, inv)


# ---- permute_1D_sparse_data / permute_2D_sparse_data_input1D ------------------------------------


@pytest.mark.requires_npu_ops("fbgemm::permute_1D_sparse_data")
@pytest.mark.parametrize("weighted", [False, True])
def test_permute_1d_sparse_data_matches_cpu(weighted: bool) -> None:
    gen = torch.Generator().manual_seed(4)
    lengths = torch.randint(0, 6, (40,), generator=gen)
    n = int(lengths.sum())
    values = torch.randint(0, 1000, (n,), generator=gen)
    weights = torch.rand(n, generator=gen) if weighted else None
    permute = torch.randperm(40, generator=gen).int()
    expected = fbgemm.permute_1D_sparse_data(permute, lengths, values, weights)
    got = fbgemm.permute_1D_sparse_data(
        permute.to(NPU),
        lengths.to(NPU),
        values.to(NPU),
        None if weights is None else weights.to(NPU),
    )
    assert_same(got[0], expected[0])
    assert_same(got[1], expected[1])
    if weighted:
        assert_same(got[2], expected[2])
    else:
        assert got[2] is None


@pytest.mark.requires_npu_ops("fbgemm::permute_1D_sparse_data")
def test_permute_1d_sparse_data_moves_integer_weights() -> None:
    """TorchRec passes bucketized positions (int64) as weights; fbgemm's CPU op permutes float
    weights only, so the reference is the same permutation applied to them as values."""
    lengths = torch.tensor([2, 0, 3, 1])
    values = torch.arange(6) * 10
    positions = torch.arange(6) + 100
    permute = torch.tensor([2, 3, 0, 1], dtype=torch.int32)
    _, want_values, _ = fbgemm.permute_1D_sparse_data(permute, lengths, values, None)
    _, want_positions, _ = fbgemm.permute_1D_sparse_data(permute, lengths, positions, None)
    got = fbgemm.permute_1D_sparse_data(
        permute.to(NPU), lengths.to(NPU), values.to(NPU), positions.to(NPU)
    )
    assert_same(got[1], want_values)
    assert_same(got[2], want_positions)


@pytest.mark.requires_npu_ops("fbgemm::permute_2D_sparse_data_input1D")
def test_permute_2d_sparse_data_input1d_matches_cpu() -> None:
    gen = torch.Generator().manual_seed(5)
    stride = 7
    lengths = torch.randint(0, 4, (5 * stride,), generator=gen)
    values = torch.randn(int(lengths.sum()), generator=gen)
    permute = torch.tensor([3, 1, 4, 0, 2], dtype=torch.int32)
    expected = fbgemm.permute_2D_sparse_data_input1D(permute, lengths, values, stride)
    got = fbgemm.permute_2D_sparse_data_input1D(
        permute.to(NPU), lengths.to(NPU), values.to(NPU), stride
    )
    assert_same(got[0], expected[0])
    assert_same(got[1], expected[1])


# ---- segment_sum_csr --------------------------------------------------------------------------


@pytest.mark.requires_npu_ops("fbgemm::segment_sum_csr")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float16])
def test_segment_sum_csr_matches_cpu(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(6)
    csr = torch.tensor([0, *torch.randint(0, 30, (200,), generator=gen).cumsum(0).tolist()]).int()
    values = torch.randint(-50, 50, (int(csr[-1]) * 2,), generator=gen).to(dtype)
    expected = fbgemm.segment_sum_csr(2, csr, values)
    assert_same(fbgemm.segment_sum_csr(2, csr.to(NPU), values.to(NPU)), expected)


@pytest.mark.requires_npu_ops("fbgemm::segment_sum_csr")
def test_segment_sum_csr_refuses_bad_offsets() -> None:
    values = torch.ones(10).to(NPU)
    with pytest.raises(RuntimeError, match="expected scalar type Int but found Long"):
        fbgemm.segment_sum_csr(1, torch.tensor([0, 2, 5]).to(NPU), values)
    with pytest.raises(ValueError, match="non-decreasing"):
        fbgemm.segment_sum_csr(1, torch.tensor([0, 5, 2], dtype=torch.int32).to(NPU), values)
    with pytest.raises(ValueError, match="past the end of values"):
        fbgemm.segment_sum_csr(3, torch.tensor([0, 2, 4], dtype=torch.int32).to(NPU), values)


# ---- offsets_range / expand_into_jagged_permute -----------------------------------------------


@pytest.mark.requires_npu_ops("fbgemm::offsets_range")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_offsets_range_matches_cpu(dtype: torch.dtype) -> None:
    lengths = torch.randint(0, 9, (300,), generator=torch.Generator().manual_seed(7))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]]).to(dtype)
    size = int(lengths.sum())
    expected = fbgemm.offsets_range(offsets, size)
    assert_same(fbgemm.offsets_range(offsets.to(NPU), size), expected)


@pytest.mark.requires_npu_ops("fbgemm::offsets_range")
def test_offsets_range_refuses_what_the_cpu_op_leaves_undefined() -> None:
    with pytest.raises(RuntimeError, match="to have one of the following scalar types: Long, Int"):
        fbgemm.offsets_range(torch.tensor([0.0, 2.0]).to(NPU), 4)
    with pytest.raises(ValueError, match=r"offsets\[0\] = 1 must be 0"):
        fbgemm.offsets_range(torch.tensor([1, 2]).to(NPU), 4)
    with pytest.raises(ValueError, match="non-decreasing"):
        fbgemm.offsets_range(torch.tensor([0, 3, 2]).to(NPU), 4)


@pytest.mark.requires_npu_ops("fbgemm::expand_into_jagged_permute")
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_expand_into_jagged_permute_matches_cpu(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(8)
    lengths = torch.randint(0, 20, (48,), generator=gen)
    permute = torch.randperm(48, generator=gen)
    zero = torch.zeros(1, dtype=torch.int64)
    input_offset = torch.cat([zero, lengths.cumsum(0)]).to(dtype)
    output_offset = torch.cat([zero, lengths[permute].cumsum(0)]).to(dtype)
    size = int(output_offset[-1])
    args = (permute.to(dtype), input_offset, output_offset)
    expected = fbgemm.expand_into_jagged_permute(*args, size)
    assert_same(fbgemm.expand_into_jagged_permute(*(t.to(NPU) for t in args), size), expected)


@pytest.mark.requires_npu_ops("fbgemm::expand_into_jagged_permute")
def test_expand_into_jagged_permute_refuses_bad_arguments() -> None:
    permute, offsets = torch.tensor([1, 0]).to(NPU), torch.tensor([0, 2, 5]).to(NPU)
    with pytest.raises(RuntimeError, match=r"Expected permute.numel\(\) > 0"):
        fbgemm.expand_into_jagged_permute(permute[:0], offsets[:1], offsets[:1], 0)
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        fbgemm.expand_into_jagged_permute(permute, offsets.int(), offsets, 5)
    with pytest.raises(ValueError, match=r"permute\[1\] = 2 is not a segment"):
        fbgemm.expand_into_jagged_permute(torch.tensor([1, 2]).to(NPU), offsets, offsets, 5)
