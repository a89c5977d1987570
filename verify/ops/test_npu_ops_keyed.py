"""KeyedTensor regrouping and batched row selection on the npu device (fbgemm_npu_api's
keyed.cpp and index_select.cpp).

fbgemm's permute_multi_embedding family and batch_index_select_dim0, on npu tensors, against
fbgemm's CPU kernels on the same inputs, exactly (the values are small integers, so sums of
repeated rows are exact in every dtype and order); TorchRec's own entry points (regroup_kts, the
permute_multi_embedding helper, KTRegroupAsDict) run on npu KeyedTensors with gradients.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.requires_npu
KEYED_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::permute_multi_embedding_function",
    "fbgemm::permute_multi_embedding",
    "fbgemm::kt_regroup_arguments",
    "fbgemm::regroup_keyed_tensor",
)
INDEX_SELECT_OPS = pytest.mark.requires_npu_ops("fbgemm::batch_index_select_dim0")

NPU = "npu"
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == NPU, f"result on {actual.device}, not on npu"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert torch.equal(actual, expected), f"\nnpu:      {actual}\nexpected: {expected}"


# (keys per KT, lengths per KT, groups): a plain regroup, a key in three groups, a key left out,
# and a group of one KT's keys in order (merged into one segment by the adapter).
REGROUPS = [
    ([["a", "b"], ["c", "d"]], [[4, 3], [2, 5]], [["a", "c"], ["b", "d"]]),
    ([["a", "b"], ["c"]], [[3, 2], [4]], [["c", "a"], ["b", "a"], ["a", "c", "b"]]),
    ([["a", "b", "c"], ["d", "e"]], [[2, 2, 2], [3, 1]], [["e", "a"], ["b", "c"]]),
    ([["a", "b", "c"]], [[8, 8, 16]], [["a", "b", "c"]]),
]


def _inputs(lengths: list[list[int]], batch: int, dtype: torch.dtype) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(sum(map(sum, lengths)) + batch)
    return [(torch.randn(batch, sum(ls), generator=gen) * 8).round().to(dtype) for ls in lengths]


@KEYED_OPS
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(("keys", "lengths", "groups"), REGROUPS)
def test_permute_multi_embedding_forward_and_backward_match_fbgemm_cpu(
    keys: list[list[str]], lengths: list[list[int]], groups: list[list[str]], dtype: torch.dtype
) -> None:
    values = _inputs(lengths, 37, dtype)
    perm, in_shapes, out_shapes, out_lengths = torch.ops.fbgemm.kt_regroup_arguments(
        values[0], keys, lengths, groups
    )
    npu_args = torch.ops.fbgemm.kt_regroup_arguments(values[0].to(NPU), keys, lengths, groups)
    assert npu_args[0].device.type == NPU and npu_args[3] == out_lengths
    assert torch.equal(npu_args[0].cpu(), perm)

    leaves = [v.clone().requires_grad_() for v in values]
    want = torch.ops.fbgemm.permute_multi_embedding(
        leaves, perm, in_shapes, out_shapes, out_lengths
    )
    npu_leaves = [v.to(NPU).requires_grad_() for v in values]
    got = torch.ops.fbgemm.permute_multi_embedding(
        npu_leaves, npu_args[0], npu_args[1], npu_args[2], out_lengths
    )
    for g, w in zip(got, want, strict=True):
        assert_same(g, w.detach())
    weights = [_inputs([[n]], 37, dtype)[0] for n in out_lengths]
    sum((w * o).sum() for w, o in zip(weights, want, strict=True)).backward()
    sum((w.to(NPU) * o).sum() for w, o in zip(weights, got, strict=True)).backward()
    used = {k for g in groups for k in g}
    for t, (ks, ls) in enumerate(zip(keys, lengths, strict=True)):
        start = 0
        for k, n in zip(ks, ls, strict=True):
            got_g = npu_leaves[t].grad[:, start : start + n]
            if k in used:  # fbgemm leaves a key no group uses unwritten; the npu zeroes it
                assert_same(got_g, leaves[t].grad[:, start : start + n])
            else:
                assert_same(got_g, torch.zeros(37, n, dtype=dtype))
            start += n


@KEYED_OPS
@pytest.mark.parametrize(("keys", "lengths", "groups"), REGROUPS[:2])
def test_regroup_keyed_tensor_matches_fbgemm_cpu(keys, lengths, groups) -> None:
    values = _inputs(lengths, 19, torch.float32)
    want = torch.ops.fbgemm.regroup_keyed_tensor(values, keys, lengths, groups)
    got = torch.ops.fbgemm.regroup_keyed_tensor([v.to(NPU) for v in values], keys, lengths, groups)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    with torch.inference_mode():  # below autograd: the PrivateUse1 kernels themselves
        got = torch.ops.fbgemm.regroup_keyed_tensor(
            [v.to(NPU) for v in values], keys, lengths, groups
        )
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


@KEYED_OPS
def test_torchrec_regroups_npu_keyed_tensors() -> None:
    from torchrec.modules.regroup import KTRegroupAsDict
    from torchrec.sparse.jagged_tensor import (
        KeyedTensor,
        permute_multi_embedding,
        regroup_kts,
    )

    batch = 64
    kts_cpu = [
        KeyedTensor(["u", "v"], [16, 8], torch.randn(batch, 24)),
        KeyedTensor(["w", "x", "y"], [8, 32, 16], torch.randn(batch, 56)),
    ]
    groups = [["x", "u"], ["v", "w", "y"], ["u"]]
    want = KeyedTensor.regroup(kts_cpu, groups)  # the concat path, key u used twice
    for fn in (regroup_kts, permute_multi_embedding):
        leaves = [kt.values().to(NPU).requires_grad_() for kt in kts_cpu]
        kts = [
            KeyedTensor(kt.keys(), kt.length_per_key(), v)
            for kt, v in zip(kts_cpu, leaves, strict=True)
        ]
        got = fn(kts, groups)
        for g, w in zip(got, want, strict=True):
            assert_same(g.detach(), w)
        sum(g.sum() for g in got).backward()
        # d/dvalues of the sum of every output: the number of times each key is used.
        assert_same(
            leaves[0].grad, torch.cat([torch.full((batch, 16), 2.0), torch.ones(batch, 8)], 1)
        )
        assert_same(leaves[1].grad, torch.ones(batch, 56))

    module = KTRegroupAsDict(groups=[["x", "u"], ["v", "w", "y"]], keys=["g0", "g1"])
    kts = [KeyedTensor(kt.keys(), kt.length_per_key(), kt.values().to(NPU)) for kt in kts_cpu]
    for _ in range(2):  # the second call reuses the cached permutes
        out = module(kts)
        assert_same(out["g0"], want[0])
        assert_same(out["g1"], want[1])


@KEYED_OPS
def test_production_regroup_on_npu() -> None:
    """B = 2048, 26 tables of D = 128 in three KTs into two groups, forward and backward."""
    batch, dim = 2048, 128
    keys = [[f"t{i}" for i in range(k, k + 9)] for k in (0, 9)] + [[f"t{i}" for i in range(18, 26)]]
    lengths = [[dim] * len(k) for k in keys]
    names = [k for ks in keys for k in ks]
    groups = [names[::2], names[1::2]]
    values = _inputs(lengths, batch, torch.float32)
    want = torch.ops.fbgemm.regroup_keyed_tensor(values, keys, lengths, groups)
    leaves = [v.to(NPU).requires_grad_() for v in values]
    got = torch.ops.fbgemm.regroup_keyed_tensor(leaves, keys, lengths, groups)
    for g, w in zip(got, want, strict=True):
        assert_same(g.detach(), w)
    torch.autograd.backward(got, [w.to(NPU) for w in want])
    for leaf, v in zip(leaves, values, strict=True):
        assert_same(leaf.grad, v)


@KEYED_OPS
def test_bad_arguments_are_refused() -> None:
    x = torch.randn(4, 6).to(NPU)
    perm = torch.tensor([[0, 0, 0, 0, 6, 0]], dtype=torch.int32).to(NPU)
    shapes = torch.tensor([6], dtype=torch.int32).to(NPU)
    fn = torch.ops.fbgemm.permute_multi_embedding
    with pytest.raises(ValueError, match="reads columns"):
        fn([x], torch.tensor([[0, 0, 2, 0, 6, 0]], dtype=torch.int32).to(NPU), shapes, shapes, [6])
    with pytest.raises(ValueError, match="writes columns"):
        fn([x], perm, shapes, shapes, [5])
    with pytest.raises(ValueError, match="destination tensor 1"):
        fn([x], torch.tensor([[0, 1, 0, 0, 6, 0]], dtype=torch.int32).to(NPU), shapes, shapes, [6])
    with pytest.raises(TypeError, match="permutes must have dtype"):
        fn([x], perm.long(), shapes, shapes, [6])
    with pytest.raises(TypeError, match="pooled_embs\\[1\\] must have the dtype"):
        fn([x, x.half()], perm, shapes, shapes, [6])
    with pytest.raises(ValueError, match="rows"):
        fn([x, x[:3]], perm, shapes, shapes, [6])
    with pytest.raises(RuntimeError, match="npu tensor"):
        fn([x], perm.cpu(), shapes, shapes, [6])


@INDEX_SELECT_OPS
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("permute", [False, True])
def test_batch_index_select_dim0_matches_fbgemm_cpu(
    dtype: torch.dtype, index_dtype: torch.dtype, permute: bool
) -> None:
    rows, cols = [7, 3, 12], [4, 16, 9]
    num = [5, 5, 5] if permute else [6, 2, 9]
    gen = torch.Generator().manual_seed(11)
    inputs = torch.randint(
        -20, 21, (sum(r * c for r, c in zip(rows, cols, strict=True)),), generator=gen
    )
    inputs = inputs.to(dtype)
    # Repeats in every table: their gradients add up.
    indices = torch.cat(
        [torch.randint(0, r, (n,), generator=gen) for r, n in zip(rows, num, strict=True)]
    )
    indices = indices.to(index_dtype)
    leaf = inputs.clone().requires_grad_()
    want = torch.ops.fbgemm.batch_index_select_dim0(leaf, indices, num, rows, cols, permute)
    npu_leaf = inputs.to(NPU).requires_grad_()
    got = torch.ops.fbgemm.batch_index_select_dim0(
        npu_leaf, indices.to(NPU), num, rows, cols, permute
    )
    assert_same(got.detach(), want.detach())
    grad = torch.randint(-4, 5, want.shape, generator=gen).to(dtype)
    want.backward(grad)
    got.backward(grad.to(NPU))
    assert_same(npu_leaf.grad, leaf.grad)
    with torch.inference_mode():
        below = torch.ops.fbgemm.batch_index_select_dim0(
            inputs.to(NPU), indices.to(NPU), num, rows, cols, permute
        )
    assert_same(below, want.detach())


@INDEX_SELECT_OPS
def test_batch_index_select_dim0_refuses_what_fbgemm_refuses() -> None:
    x = torch.zeros(12).to(NPU)
    idx = torch.tensor([0, 1]).to(NPU)
    fn = torch.ops.fbgemm.batch_index_select_dim0
    with pytest.raises(RuntimeError, match="input_rows must have the same length"):
        fn(x, idx, [2], [3, 1], [4], False)
    with pytest.raises(RuntimeError, match="All input_num_indices must be greater than zero"):
        fn(x, idx, [0], [3], [4], False)
    with pytest.raises(RuntimeError, match="must be the same if permute_output_dim_0_1"):
        fn(torch.zeros(24).to(NPU), torch.tensor([0, 1, 2]).to(NPU), [2, 1], [3, 3], [4, 4], True)
    with pytest.raises(ValueError, match="inputs must hold"):
        fn(x, idx, [2], [4], [4], False)
    with pytest.raises(ValueError, match="out of range"):
        fn(x, torch.tensor([0, 3]).to(NPU), [2], [3], [4], False)
    assert fn(torch.zeros(0).to(NPU), idx, [2], [3], [4], False).numel() == 0
