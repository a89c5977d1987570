"""fbgemm operators torchrec's sharding reaches, on the npu device, against fbgemm's CPU kernels.

KeyedTensor.regroup (permute_pooled_embs_auto_grad, forward and backward), the variable-batch
paths (permute_1D_sparse_data, segment_sum_csr, expand_into_jagged_permute),
permute_2D_sparse_data_input1D and the position-weighted features' offsets_range; the
operators that run an existing kernel with other arguments (torch_plugin/csrc/variants.cpp:
permute_pooled_embs' split and duplicate variants, batch_index_select_dim0_tensor,
group_index_select_dim0, jagged_index_select_2d_forward_v2, jagged_2d_to_dense,
block_bucketize_sparse_features_inference): every result
equal to fbgemm's CPU result on the same inputs, and bad arguments refused with a clear error
before any kernel runs.
"""

from __future__ import annotations

import itertools

import pytest
import torch

NPU = "npu"
pytestmark = pytest.mark.requires_npu


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


# ---- variants on existing kernels (torch_plugin/csrc/variants.cpp) -----------------------------


def grads_match(op, args: tuple, grad: torch.Tensor) -> None:
    """op on npu and on the CPU, forward and the gradient of args[0], equal."""
    cpu_in = args[0].clone().requires_grad_()
    cpu_out = op(cpu_in, *args[1:])
    cpu_out.backward(grad)
    npu_in = args[0].to(NPU).requires_grad_()
    npu_out = op(npu_in, *(t.to(NPU) for t in args[1:]))
    npu_out.backward(grad.to(NPU))
    assert_same(npu_out.detach(), cpu_out.detach())
    assert npu_in.grad is not None
    assert_same(npu_in.grad, cpu_in.grad)


@pytest.mark.requires_npu_ops("fbgemm::permute_pooled_embs_auto_grad_split")
def test_permute_pooled_embs_split_variants_match_cpu() -> None:
    args = pooled_case(16, [8, 4, 12, 4, 2])
    for name in ("permute_pooled_embs_split", "permute_pooled_embs_auto_grad_split"):
        op = getattr(fbgemm, name)
        assert_same(op(*(t.to(NPU) for t in args)), op(*args))
    grad = torch.randn(16, 30, generator=torch.Generator().manual_seed(4))
    grads_match(fbgemm.permute_pooled_embs_auto_grad_split, args, grad)
    # fbgemm's module, as torchrec's column-wise and grid sharding build it.
    from fbgemm_gpu.permute_pooled_embedding_modules_split import PermutePooledEmbeddingsSplit

    dims, permute = [8, 4, 12, 4, 2], [3, 0, 4, 1, 2]
    grads_match(
        lambda x: PermutePooledEmbeddingsSplit(dims, permute, device=x.device)(x), (args[0],), grad
    )


@pytest.mark.requires_npu_ops("fbgemm::permute_duplicate_pooled_embs")
def test_permute_duplicate_pooled_embs_matches_cpu() -> None:
    """Repeated and unused blocks, more and fewer entries than blocks, a block past the
    columns: every block of offset_dim_list can be named."""
    pooled = torch.randn(6, 10, generator=torch.Generator().manual_seed(5))
    offsets = torch.tensor([0, 2, 3, 7, 10])
    for permute in ([2, 0, 0, 3], [1], [3, 3, 3, 3, 3, 3, 0], [4, 0, 4], [0, 1, 2, 3, 4]):
        perm = torch.tensor(permute)
        for name in ("permute_duplicate_pooled_embs", "permute_duplicate_pooled_embs_split"):
            op = getattr(fbgemm, name)
            expected = op(pooled, offsets, perm, offsets, perm)
            got = op(pooled.to(NPU), offsets.to(NPU), perm.to(NPU), offsets, perm)
            assert_same(got, expected)
    bad = torch.tensor([5]).to(NPU)  # fbgemm's CPU op reads outside its blocks here
    with pytest.raises(ValueError, match=r"permute_list\[0\] = 5 is not a block"):
        fbgemm.permute_duplicate_pooled_embs(pooled.to(NPU), offsets.to(NPU), bad, bad, bad)


@pytest.mark.requires_npu_ops("fbgemm::permute_duplicate_pooled_embs_auto_grad")
def test_permute_duplicate_pooled_embs_autograd_like_cpu() -> None:
    pooled = torch.randn(4, 6, generator=torch.Generator().manual_seed(6))
    offsets, perm = torch.tensor([0, 2, 3, 6]), torch.tensor([2, 0, 0])
    inv_offsets, inv = torch.tensor([0, 3, 5, 6]), torch.tensor([1, 2, 0])
    x = pooled.to(NPU).requires_grad_()
    lists = [t.to(NPU) for t in (offsets, perm, inv_offsets, inv)]
    out = fbgemm.permute_duplicate_pooled_embs_auto_grad(x, *lists)
    assert_same(
        out.detach(),
        fbgemm.permute_duplicate_pooled_embs_auto_grad(pooled, offsets, perm, inv_offsets, inv),
    )
    # fbgemm's refusal, with its message.
    with pytest.raises(RuntimeError, match="does not support allow_duplicates in backward"):
        out.sum().backward()
    # The split build's backward runs the operator with the inverse lists, as fbgemm's does.
    perm, inv = torch.tensor([2, 0, 1]), torch.tensor([1, 2, 0])
    grad = torch.randn(4, 6, generator=torch.Generator().manual_seed(7))
    grads_match(
        fbgemm.permute_duplicate_pooled_embs_auto_grad_split,
        (pooled, offsets, perm, inv_offsets, inv),
        grad,
    )


@pytest.mark.requires_npu_ops("fbgemm::batch_index_select_dim0_tensor")
@pytest.mark.parametrize("permute", [False, True])
def test_batch_index_select_dim0_tensor_matches_cpu(permute: bool) -> None:
    gen = torch.Generator().manual_seed(8)
    rows, cols = [5, 3, 7], [4, 8, 2]
    num = [6, 6, 6] if permute else [2, 6, 4]
    inputs = torch.randn(sum(r * c for r, c in zip(rows, cols, strict=True)), generator=gen)
    indices = torch.cat(
        [torch.randint(0, r, (n,), generator=gen) for r, n in zip(rows, num, strict=True)]
    )
    lists = (torch.tensor(num), torch.tensor(rows), torch.tensor(cols))

    def op(x: torch.Tensor, idx: torch.Tensor, *ls: torch.Tensor) -> torch.Tensor:
        return fbgemm.batch_index_select_dim0_tensor(x, idx, *ls, permute)

    expected = op(inputs, indices, *lists)
    grads_match(op, (inputs, indices, *lists), torch.randn(expected.shape, generator=gen))
    with torch.inference_mode():
        assert_same(op(inputs.to(NPU), indices.to(NPU), *lists), expected)
    # fbgemm's check, with its message.
    with pytest.raises(RuntimeError, match="input_rows must have the same length"):
        op(inputs.to(NPU), indices.to(NPU), lists[0], lists[1][:2], lists[2])


@pytest.mark.requires_npu_ops("fbgemm::jagged_2d_to_dense")
def test_jagged_2d_to_dense_matches_cpu() -> None:
    """torchrec's GAUC metric: below autograd (the npu kernel of the operator) and with gradients
    (fbgemm's autograd kernel over the npu forward/backward)."""
    gen = torch.Generator().manual_seed(9)
    offsets = torch.tensor([0, 3, 3, 8, 9])
    values = torch.randn(9, 4, generator=gen)
    for max_len in (1, 4, 7):
        expected = fbgemm.jagged_2d_to_dense(values, offsets, max_len)
        with torch.inference_mode():  # below autograd: the operator's own npu kernel
            assert_same(
                fbgemm.jagged_2d_to_dense(values.to(NPU), offsets.to(NPU), max_len), expected
            )
        grads_match(
            lambda v, o, n=max_len: fbgemm.jagged_2d_to_dense(v, o, n),
            (values, offsets),
            torch.randn(expected.shape, generator=gen),
        )


@pytest.mark.requires_npu_ops("fbgemm::group_index_select_dim0")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_group_index_select_dim0_matches_cpu(dtype: torch.dtype) -> None:
    """torchrec's process_pooled_embeddings (EmbeddingBagCollection with inverse indices):
    forward and the gradients of every group (repeated indices add up). fbgemm's CPU backward
    takes every input to have the first one's rank, so each group here has one rank."""
    gen = torch.Generator().manual_seed(10)
    groups = [
        [torch.randn(6, d, generator=gen).to(dtype) for d in (4, 8, 2)],
        [torch.randn(5, 2, d, generator=gen).to(dtype) for d in (3, 1)],
    ]
    for inputs in groups:
        indices = [torch.randint(0, x.size(0), (9,), generator=gen) for x in inputs]
        indices[1] = indices[1].int()
        cpu_in = [x.clone().requires_grad_() for x in inputs]
        cpu_out = fbgemm.group_index_select_dim0(cpu_in, indices)
        grads = [torch.randn(o.shape, generator=gen).to(dtype) for o in cpu_out]
        torch.autograd.backward(cpu_out, grads)
        npu_in = [x.to(NPU).requires_grad_() for x in inputs]
        npu_out = fbgemm.group_index_select_dim0(npu_in, [i.to(NPU) for i in indices])
        torch.autograd.backward(npu_out, [g.to(NPU) for g in grads])
        for got, want in zip(npu_out, cpu_out, strict=True):
            assert_same(got.detach(), want.detach())
        for got, want in zip(npu_in, cpu_in, strict=True):
            assert got.grad is not None
            # Repeated indices: the cores' order of additions, not index_add's.
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
            torch.testing.assert_close(got.grad.cpu(), want.grad, atol=tol, rtol=tol)
        with torch.inference_mode():
            got = fbgemm.group_index_select_dim0(
                [x.to(NPU) for x in inputs], [i.to(NPU) for i in indices]
            )
            for g, want in zip(got, cpu_out, strict=True):
                assert_same(g, want.detach())
    # torchrec's own caller: pooled embeddings of 3 features expanded by inverse indices.
    from torchrec.modules.embedding_modules import process_pooled_embeddings

    pooled = [torch.randn(4, d, generator=gen).to(dtype) for d in (4, 8, 2)]
    inverse = torch.randint(0, 4, (3, 7), generator=gen)
    assert_same(
        process_pooled_embeddings([p.to(NPU) for p in pooled], inverse.to(NPU)),
        process_pooled_embeddings(pooled, inverse),
    )


@pytest.mark.requires_npu_ops("fbgemm::jagged_index_select_2d_forward")
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float16])
def test_jagged_index_select_2d_forward_v2_matches_cpu(dtype: torch.dtype) -> None:
    """torchrec's jagged_index_select_with_empty: KJT values (ids, [N, 1]) of selected bags."""
    from torchrec.modules.utils import jagged_index_select_with_empty

    gen = torch.Generator().manual_seed(11)
    lengths = torch.tensor([3, 0, 2, 5, 1, 4])
    high = 1 << 40 if dtype == torch.int64 else 1000
    values = torch.randint(0, high, (int(lengths.sum()), 3), generator=gen).to(dtype)
    ids = torch.tensor([3, 0, 1, 5, 3])
    in_off = torch.cumsum(lengths, 0)
    out_off = torch.cumsum(lengths[ids], 0)
    expected = fbgemm.jagged_index_select_2d_forward_v2(values, ids, in_off, out_off)
    got = fbgemm.jagged_index_select_2d_forward_v2(
        *(t.to(NPU) for t in (values, ids, in_off, out_off))
    )
    assert_same(got, expected)
    if dtype == torch.int64:
        flat = values[:, 0].contiguous()
        want = jagged_index_select_with_empty(flat, ids, in_off, out_off)
        have = jagged_index_select_with_empty(*(t.to(NPU) for t in (flat, ids, in_off, out_off)))
        assert_same(have, want)


@pytest.mark.requires_npu_ops("fbgemm::block_bucketize_sparse_features_inference")
def test_block_bucketize_inference_matches_cpu() -> None:
    lengths = torch.tensor([2, 3, 1, 2])
    indices = torch.tensor([1, 9, 4, 13, 7, 2, 11, 5])
    block_sizes = torch.tensor([5, 7])
    kw = {"bucketize_pos": True, "sequence": True, "block_sizes": block_sizes, "my_size": 2}
    expected = fbgemm.block_bucketize_sparse_features_inference(lengths, indices, **kw)
    got = fbgemm.block_bucketize_sparse_features_inference(
        lengths.to(NPU), indices.to(NPU), **{**kw, "block_sizes": block_sizes.to(NPU)}
    )
    assert len(got) == len(expected) == 6
    for g, e in zip(got, expected, strict=True):
        assert (g is None) == (e is None)
        if e is not None:
            assert_same(g, e)
    with pytest.raises(NotImplementedError, match="return_bucket_mapping=True"):
        fbgemm.block_bucketize_sparse_features_inference(
            lengths.to(NPU),
            indices.to(NPU),
            **{**kw, "block_sizes": block_sizes.to(NPU)},
            return_bucket_mapping=True,
        )
