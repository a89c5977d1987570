"""PermuteMultiEmbedding on sim against fbgemm's permute_multi_embedding_function (CPU).

The kernel moves the segments of one (source, destination) pair; the driver here cuts fbgemm's
permutes into runs of consecutive rows between one pair and launches the kernel once per run, in
order (the simplest exact plan: the adapter's planner, which also regroups runs, is checked
through the adapter by verify/ops/test_npu_ops_keyed.py).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
fbgemm_gpu = pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import PLATFORMS, SimError, arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def run_permute(
    ops,
    pooled: list[torch.Tensor],
    permutes: torch.Tensor,
    out_lengths: list[int],
    reverse: bool = False,
    **launch,
) -> tuple[list[torch.Tensor], list]:
    """fbgemm's permute_multi_embedding_function on sim, one launch per run of permutes."""
    b = pooled[0].shape[0]
    outs = [torch.zeros((b, n), dtype=pooled[0].dtype) for n in out_lengths]
    runs: list[tuple[int, int, list[list[int]]]] = []
    for in_t, out_t, in_off, out_off, length, nxt in permutes.tolist():
        if reverse:  # gradients flow from the outputs back to the inputs
            src, dst, s_off, d_off = out_t, in_t, out_off, in_off
        else:
            src, dst, s_off, d_off = in_t, out_t, in_off, out_off
        seg = [s_off, d_off, length, int(reverse and nxt < 0)]
        if runs and runs[-1][:2] == (src, dst):
            runs[-1][2].append(seg)
        else:
            runs.append((src, dst, [seg]))
    results = []
    for src, dst, segs in runs:
        table = torch.tensor(segs, dtype=torch.int32)
        accumulate = any(s[3] for s in segs)
        tensors = [arg(pooled[src].contiguous()), arg(table), arg(outs[dst])]
        results.append(ops("permute_multi_embedding").launch(tensors, [accumulate], **launch))
    return outs, results


def reference(pooled, permutes, out_lengths, reverse=False):
    shapes_in = torch.tensor([t.shape[1] for t in pooled], dtype=torch.int32)
    shapes_out = torch.tensor(out_lengths, dtype=torch.int32)
    return torch.ops.fbgemm.permute_multi_embedding_function(
        pooled, permutes, shapes_in, shapes_out, out_lengths, reverse
    )


def regroup_args(key_lengths: list[list[int]], groups: list[list[str]]):
    keys = [[f"f{t}_{k}" for k in range(len(ls))] for t, ls in enumerate(key_lengths)]
    emb = torch.empty(0)
    return torch.ops.fbgemm.kt_regroup_arguments(emb, keys, key_lengths, groups)


def test_hand_worked_regroup_with_a_repeated_key(sim_ops) -> None:
    # Two KTs: A = [f1 (2 cols), f2 (1)], B = [f3 (3)]; outputs [f3, f1], [f2, f1].
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    bt = torch.tensor([[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]])
    keys = [["f1", "f2"], ["f3"]]
    perm, _, _, out_lengths = torch.ops.fbgemm.kt_regroup_arguments(
        a, keys, [[2, 1], [3]], [["f3", "f1"], ["f2", "f1"]]
    )
    outs, _ = run_permute(sim_ops, [a, bt], perm, out_lengths)
    want0 = torch.tensor([[7.0, 8.0, 9.0, 1.0, 2.0], [10.0, 11.0, 12.0, 4.0, 5.0]])
    assert torch.equal(outs[0], want0)
    assert torch.equal(outs[1], torch.tensor([[3.0, 1.0, 2.0], [6.0, 4.0, 5.0]]))
    # Backward: f1's gradient is the sum of its two copies, f2's and f3's are copied.
    g0 = torch.arange(10.0).view(2, 5)
    g1 = torch.arange(100.0, 106.0).view(2, 3)
    grads, _ = run_permute(sim_ops, [g0, g1], perm, [3, 3], reverse=True)
    want_g0 = torch.tensor([[3.0 + 101, 4.0 + 102, 100.0], [8.0 + 104, 9.0 + 105, 103.0]])
    assert torch.equal(grads[0], want_g0)
    assert torch.equal(grads[1], torch.tensor([[0.0, 1.0, 2.0], [5.0, 6.0, 7.0]]))


@st.composite
def regroup_cases(draw: st.DrawFn):
    tables = draw(st.integers(1, 4))
    key_lengths = [
        draw(st.lists(st.integers(1, 40), min_size=1, max_size=5)) for _ in range(tables)
    ]
    names = [f"f{t}_{k}" for t, ls in enumerate(key_lengths) for k in range(len(ls))]
    n_groups = draw(st.integers(1, 4))
    groups = [
        draw(st.lists(st.sampled_from(names), min_size=1, max_size=6)) for _ in range(n_groups)
    ]
    return key_lengths, groups


@settings(max_examples=60, deadline=None)
@given(
    case=regroup_cases(),
    b=st.one_of(st.integers(1, 5), st.integers(1, 700)),
    dtype=st.sampled_from(FLOAT_DTYPES),
    platform=platforms,
    seed=seeds,
)
def test_forward_and_backward_match_fbgemm(sim_ops, case, b, dtype, platform, seed) -> None:
    key_lengths, groups = case
    gen = torch.Generator().manual_seed(seed)
    pooled = [(torch.randn(b, sum(ls), generator=gen) * 10).to(dtype) for ls in key_lengths]
    perm, _, _, out_lengths = regroup_args(key_lengths, groups)
    outs, _ = run_permute(sim_ops, pooled, perm, out_lengths, **platform)
    for got, want in zip(outs, reference(pooled, perm, out_lengths), strict=True):
        assert torch.equal(got, want)
    grads = [(torch.randn(b, n, generator=gen) * 10).to(dtype) for n in out_lengths]
    in_lengths = [t.shape[1] for t in pooled]
    got_g, _ = run_permute(sim_ops, grads, perm, in_lengths, reverse=True, **platform)
    want_g = torch.ops.fbgemm.permute_multi_embedding_function(
        grads,
        perm,
        torch.tensor(out_lengths, dtype=torch.int32),
        torch.tensor(in_lengths, dtype=torch.int32),
        in_lengths,
        True,
    )
    # fbgemm leaves the gradient of a key no group uses unwritten: compare the columns it sets.
    used = {k for g in groups for k in g}
    for t, ls in enumerate(key_lengths):
        start = 0
        for k, n in enumerate(ls):
            if f"f{t}_{k}" in used:
                got = got_g[t][:, start : start + n]
                want = want_g[t][:, start : start + n]
                assert torch.equal(got, want), (t, k)
            start += n


def test_wide_keys_and_many_rows_use_column_pieces(sim_ops) -> None:
    # A key wider than a copy buffer of the smallest UB, and more rows than one DMA's 4095 blocks.
    b = 9000
    pooled = [torch.randn(b, 3000), torch.randn(b, 5)]
    perm, _, _, out_lengths = regroup_args([[2990, 10], [5]], [["f1_0", "f0_1", "f0_0"], ["f0_0"]])
    for platform in (PLATFORMS[0], PLATFORMS[2]):
        outs, _ = run_permute(sim_ops, pooled, perm, out_lengths, **platform)
        for got, want in zip(outs, reference(pooled, perm, out_lengths), strict=True):
            assert torch.equal(got, want)


def test_traffic_is_the_segments_once(sim_ops) -> None:
    """The production shape: B = 4096, 26 tables of D = 128 in 3 KTs regrouped into 2 outputs:
    every output column read once and written once, spread evenly over the cores."""
    b, d = 4096, 128
    key_lengths = [[d] * 9, [d] * 9, [d] * 8]
    names = [f"f{t}_{k}" for t, ls in enumerate(key_lengths) for k in range(len(ls))]
    groups = [names[::2], names[1::2]]
    gen = torch.Generator().manual_seed(7)
    pooled = [torch.randn(b, sum(ls), generator=gen) for ls in key_lengths]
    perm, _, _, out_lengths = regroup_args(key_lengths, groups)
    outs, results = run_permute(sim_ops, pooled, perm, out_lengths)
    for got, want in zip(outs, reference(pooled, perm, out_lengths), strict=True):
        assert torch.equal(got, want)
    moved = sum(r.gm_bytes for r in results)
    minimum = 2 * b * sum(out_lengths) * 4
    table_bytes = sum(perm.shape[0] * 16 * len(r.cores) for r in results)  # segment tables
    assert moved <= minimum + table_bytes
    assert moved <= 1.02 * minimum


def test_adding_segment_in_a_copy_launch_traps(sim_ops) -> None:
    x = torch.ones(4, 8)
    y = torch.zeros(4, 8)
    table = torch.tensor([[0, 0, 8, 1]], dtype=torch.int32)
    with pytest.raises(SimError, match="trap"):
        sim_ops("permute_multi_embedding").launch([arg(x), arg(table), arg(y)], [False])
