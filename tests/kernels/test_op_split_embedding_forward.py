"""SplitEmbeddingForward on sim against fbgemm_gpu's CPU TBE forward and torch's embedding_bag."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
import torch.nn.functional as F  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm
SUM, MEAN, NONE = 0, 1, 2
WEIGHT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# The shared platforms, and a tiny unified buffer whose groups and batches wrap every few rows.
PLATFORMS = st.one_of(platforms, st.just({"max_cores": 2, "ub_bytes": 8 * 1024}))


def split_embedding_forward(
    ops,
    weights,
    weights_offsets,
    d_offsets,
    indices,
    offsets,
    pooling_mode: int,
    total_d: int,
    max_d: int,
    indice_weights=None,
    out=None,
    **launch,
):
    """What the adapter does: allocate out from shapes and attributes, launch."""
    if out is None:
        t = max(1, weights_offsets.numel())
        if pooling_mode == NONE:
            shape = (indices.numel(), max_d)
        else:
            shape = ((offsets.numel() - 1) // t, total_d)
        out = torch.empty(shape, dtype=torch.float32)
    tensors = [weights, weights_offsets, d_offsets, indices, offsets, indice_weights, out]
    result = ops("split_embedding_forward").launch(
        [arg(x) for x in tensors], [pooling_mode, total_d, max_d], **launch
    )
    return out, result


# ---- hand-worked examples ------------------------------------------------------------------
#
# Two tables in one flat buffer, weights = 0, 1, ..., 21:
#   table 0: D 3, 4 rows at weights_offsets 0:  row r = [3r, 3r+1, 3r+2]
#   table 1: D 5, 2 rows at weights_offsets 12: row r = [12+5r, ..., 16+5r]
# d_offsets = [0, 3, 8] (total_d 8), B = 2, so the bags are k = t * 2 + b:
#   indices = [1, 3 | (empty) | 0 | 1, 1], offsets = [0, 2, 2, 3, 5]
#   bag 0 (t0, b0): rows 1, 3 = [3, 4, 5] + [9, 10, 11] = [12, 14, 16]  (mean / 2: [6, 7, 8])
#   bag 1 (t0, b1): empty                               = [0, 0, 0]     (mean: zeros too)
#   bag 2 (t1, b0): row 0                               = [12 .. 16]
#   bag 3 (t1, b1): row 1 twice                         = [34 .. 42]    (mean: [17 .. 21])
# out[b] = bag(t0, b) ++ bag(t1, b). With indice weights [0.5, 2, 1, 3, -1]:
#   bag 0: 0.5 * [3, 4, 5] + 2 * [9, 10, 11] = [19.5, 22, 24.5]  (mean: [9.75, 11, 12.25])
#   bag 3: 3 * row 1 - row 1 = 2 * row 1 = [34 .. 42]             (mean: [17 .. 21])
# fbgemm divides the weighted sum by the bag length in mean mode, and so does the kernel.
EXAMPLE_SUM = [[12, 14, 16, 12, 13, 14, 15, 16], [0, 0, 0, 34, 36, 38, 40, 42]]
EXAMPLE_MEAN = [[6, 7, 8, 12, 13, 14, 15, 16], [0, 0, 0, 17, 18, 19, 20, 21]]
EXAMPLE_WSUM = [[19.5, 22, 24.5, 12, 13, 14, 15, 16], [0, 0, 0, 34, 36, 38, 40, 42]]
EXAMPLE_WMEAN = [[9.75, 11, 12.25, 12, 13, 14, 15, 16], [0, 0, 0, 17, 18, 19, 20, 21]]


def example_inputs(dtype=torch.int64):
    weights = torch.arange(22, dtype=torch.float32)
    weights_offsets = torch.tensor([0, 12])
    d_offsets = torch.tensor([0, 3, 8], dtype=torch.int32)
    indices = torch.tensor([1, 3, 0, 1, 1], dtype=dtype)
    offsets = torch.tensor([0, 2, 2, 3, 5], dtype=dtype)
    return weights, weights_offsets, d_offsets, indices, offsets


@pytest.mark.parametrize(
    ("mode", "weighted", "want"),
    [
        (SUM, False, EXAMPLE_SUM),
        (MEAN, False, EXAMPLE_MEAN),
        (SUM, True, EXAMPLE_WSUM),
        (MEAN, True, EXAMPLE_WMEAN),
    ],
)
def test_documented_example(sim_ops, mode, weighted, want) -> None:
    iw = torch.tensor([0.5, 2.0, 1.0, 3.0, -1.0]) if weighted else None
    out, _ = split_embedding_forward(sim_ops, *example_inputs(), mode, 8, 5, iw)
    assert out.tolist() == want
    assert out.tolist() == fbgemm_pooled(*example_inputs(), [4, 2], mode, iw).tolist()


def test_pruned_index_adds_nothing_but_counts_in_the_mean(sim_ops) -> None:
    # Bag 0 = [-1, 3]: sum = row 3 = [9, 10, 11], mean = [4.5, 5, 5.5]; bag 3 = [-1, -1]: zeros.
    weights, wo, do, _, offsets = example_inputs(torch.int32)
    indices = torch.tensor([-1, 3, 0, -1, -1], dtype=torch.int32)
    out, _ = split_embedding_forward(sim_ops, weights, wo, do, indices, offsets, MEAN, 8, 5)
    assert out.tolist() == [[4.5, 5, 5.5, 12, 13, 14, 15, 16], [0] * 8]
    out, _ = split_embedding_forward(sim_ops, weights, wo, do, indices, offsets, SUM, 8, 5)
    assert out.tolist() == [[9, 10, 11, 12, 13, 14, 15, 16], [0] * 8]


def test_nobag_example(sim_ops) -> None:
    # Two tables of D 2 (weights 0..5 = table 0 rows [0, 1], [2, 3]; table 1 row [4, 5]), B = 1:
    # bag 0 (table 0) = indices [1, -1], bag 1 (table 1) = [0]; each index gets its own row.
    weights = torch.arange(6, dtype=torch.float16)
    out, _ = split_embedding_forward(
        sim_ops,
        weights,
        torch.tensor([0, 4]),
        torch.tensor([0, 2, 4], dtype=torch.int32),
        torch.tensor([1, -1, 0]),
        torch.tensor([0, 2, 3]),
        NONE,
        4,
        2,
    )
    assert out.tolist() == [[2, 3], [0, 0], [4, 5]]


def test_nobag_positions_outside_the_bags_are_zero(sim_ops) -> None:
    weights = torch.arange(6, dtype=torch.float32)
    wo, do = torch.tensor([0, 4]), torch.tensor([0, 2, 4], dtype=torch.int32)
    indices = torch.tensor([1, 1, 0, 0, 0])
    offsets = torch.tensor([1, 3, 4])  # position 0 and position 4 belong to no bag
    out, _ = split_embedding_forward(sim_ops, weights, wo, do, indices, offsets, NONE, 4, 2)
    assert out.tolist() == [[0, 0], [2, 3], [0, 1], [4, 5], [0, 0]]
    # Pooled modes just ignore such indices.
    out, _ = split_embedding_forward(sim_ops, weights, wo, do, indices, offsets, SUM, 4, 2)
    assert out.tolist() == [[2, 4, 4, 5]]


def test_zero_width_and_unused_empty_tables(sim_ops) -> None:
    # Table 0: D 0 (no columns, never read, its indices unchecked); table 1: no rows (unused);
    # table 2: D 2, rows [0, 1], [2, 3].
    weights = torch.arange(4, dtype=torch.float32)
    wo = torch.tensor([0, 0, 0])
    do = torch.tensor([0, 0, 3, 5], dtype=torch.int32)
    indices = torch.tensor([99, 1, 0])
    offsets = torch.tensor([0, 1, 1, 3])
    out, _ = split_embedding_forward(sim_ops, weights, wo, do, indices, offsets, SUM, 5, 3)
    assert out.tolist() == [[0, 0, 0, 2, 4]]


# ---- references ---------------------------------------------------------------------------------


def layout(dims, rows):
    sizes = [d * r for d, r in zip(dims, rows, strict=True)]
    wo = [sum(sizes[:t]) for t in range(len(sizes))]
    do = [sum(dims[:t]) for t in range(len(dims) + 1)]
    return wo, do


def table_of_positions(offsets, t_count: int, n: int) -> list[int]:
    """Table of each index position (-1: in no bag)."""
    b = (offsets.numel() - 1) // t_count
    table = [-1] * n
    for t in range(t_count):
        for p in range(int(offsets[t * b]), int(offsets[(t + 1) * b])):
            table[p] = t
    return table


def extended(weights, weights_offsets, d_offsets, rows):
    """Every table with a zero row appended, and each table's row index of that zero row.

    fbgemm's CPU op raises on index -1 where its GPU kernels (and this kernel) skip a pruned
    row while still counting it in a mean; sending -1 to a zero row gives the same result.
    fbgemm's CPU op has no bfloat16 weights: those go in as their exact float32 values.
    """
    if weights.dtype == torch.bfloat16:
        weights = weights.float()
    parts = []
    for t, r in enumerate(rows):
        d = int(d_offsets[t + 1] - d_offsets[t])
        base = int(weights_offsets[t])
        parts += [weights[base : base + r * d], torch.zeros(d, dtype=weights.dtype)]
    return torch.cat(parts)


def remap_pruned(indices, offsets, rows):
    table = table_of_positions(offsets, len(rows), indices.numel())
    mapped = indices.clone()
    for p, t in enumerate(table):
        if t >= 0 and int(indices[p]) == -1:
            mapped[p] = rows[t]
    return mapped


def fbgemm_lookup(weights, dims, rows, indices, offsets, mode, iw):
    wo, do = layout(dims, rows)
    return fbgemm.split_embedding_codegen_lookup_sgd_function_cpu(
        host_weights=weights,
        weights_placements=torch.zeros(len(dims), dtype=torch.int32),
        weights_offsets=torch.tensor(wo, dtype=torch.int64),
        D_offsets=torch.tensor(do, dtype=torch.int32),
        total_D=sum(dims),
        max_D=max(dims),
        hash_size_cumsum=torch.tensor([sum(rows[:t]) for t in range(len(rows) + 1)]),
        total_hash_size_bits=0,
        indices=indices,
        offsets=offsets,
        pooling_mode=mode,
        indice_weights=iw,
        feature_requires_grad=None,
        gradient_clipping=False,
        max_gradient=1.0,
        stochastic_rounding=False,
        learning_rate=0.0,
        output_dtype=0,
    )


def fbgemm_pooled(weights, weights_offsets, d_offsets, indices, offsets, rows, mode, iw):
    dims = [int(d_offsets[t + 1] - d_offsets[t]) for t in range(len(rows))]
    ext = extended(weights, weights_offsets, d_offsets, rows)
    mapped = remap_pruned(indices, offsets, rows)
    return fbgemm_lookup(ext, dims, [r + 1 for r in rows], mapped, offsets, mode, iw)


def torch_pooled(weights, weights_offsets, d_offsets, indices, offsets, rows, mode, iw):
    """torch.nn.functional.embedding_bag table by table (mean with weights: weighted sum / L)."""
    t_count = len(rows)
    b = (offsets.numel() - 1) // t_count
    ext = extended(weights, weights_offsets, d_offsets, rows).float()
    mapped = remap_pruned(indices, offsets, rows).long()
    cols = []
    for t in range(t_count):
        d = int(d_offsets[t + 1] - d_offsets[t])
        start = sum(int(d_offsets[u + 1] - d_offsets[u]) * (rows[u] + 1) for u in range(t))
        table = ext[start : start + d * (rows[t] + 1)].view(rows[t] + 1, d)
        bag_offsets = offsets[t * b : (t + 1) * b + 1].long()
        lo, hi = int(bag_offsets[0]), int(bag_offsets[-1])
        psw = None if iw is None else iw[lo:hi]
        bag_mode = "mean" if mode == MEAN and iw is None else "sum"
        pooled = F.embedding_bag(
            mapped[lo:hi],
            table,
            bag_offsets - lo,
            mode=bag_mode,
            per_sample_weights=psw,
            include_last_offset=True,
        )
        if mode == MEAN and iw is not None:
            pooled = pooled / (bag_offsets[1:] - bag_offsets[:-1]).clamp(min=1).unsqueeze(1)
        cols.append(pooled)
    return torch.cat(cols, dim=1)


def nobag_references(weights, weights_offsets, d_offsets, indices, offsets, rows, d):
    """Row i = its index's row: fbgemm (each table alone, every index its own bag) and torch."""
    n = indices.numel()
    ext = extended(weights, weights_offsets, d_offsets, rows)
    mapped = remap_pruned(indices, offsets, rows)
    table = table_of_positions(offsets, len(rows), n)
    want_fb = torch.zeros(n, d)
    want_torch = torch.zeros(n, d)
    start = 0
    for t, r in enumerate(rows):
        tab = ext[start : start + (r + 1) * d]
        start += (r + 1) * d
        pos = [p for p in range(n) if table[p] == t]
        if not pos:
            continue
        lo, hi = pos[0], pos[-1] + 1
        steps = torch.arange(hi - lo + 1, dtype=indices.dtype)
        want_fb[lo:hi] = fbgemm_lookup(tab, [d], [r + 1], mapped[lo:hi], steps, SUM, None)
        want_torch[lo:hi] = tab.float().view(r + 1, d)[mapped[lo:hi].long()]
    return want_fb, want_torch


# ---- property tests -----------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn, nobag: bool = False) -> dict:
    t = draw(st.integers(1, 5))
    if nobag:
        dims = [draw(st.integers(1, 70))] * t
    else:
        dims = draw(st.lists(st.integers(1, 70), min_size=t, max_size=t))
    rows = draw(st.lists(st.integers(1, 20), min_size=t, max_size=t))
    b = draw(st.integers(0, 8))
    lengths = draw(st.lists(st.integers(0, 6), min_size=t * b, max_size=t * b))
    pruned = draw(st.booleans())
    indices = []
    for k, n in enumerate(lengths):
        valid = st.integers(0, rows[k // b] - 1)
        values = st.one_of(valid, valid, st.just(-1)) if pruned else valid
        indices += draw(st.lists(values, min_size=n, max_size=n))
    return {"dims": dims, "rows": rows, "b": b, "lengths": lengths, "indices": indices}


def build(case: dict, weight_dtype, index_dtype, seed: int, weighted: bool):
    gen = torch.Generator().manual_seed(seed)
    wo, do = layout(case["dims"], case["rows"])
    size = sum(d * r for d, r in zip(case["dims"], case["rows"], strict=True))
    weights = torch.randn(size, generator=gen).to(weight_dtype)
    offsets = [0]
    for n in case["lengths"]:
        offsets.append(offsets[-1] + n)
    indices = torch.tensor(case["indices"], dtype=index_dtype)
    iw = torch.randn(indices.numel(), generator=gen) if weighted else None
    return (
        weights,
        torch.tensor(wo, dtype=torch.int64),
        torch.tensor(do, dtype=torch.int32),
        indices,
        torch.tensor(offsets, dtype=index_dtype),
        iw,
    )


@settings(max_examples=80, deadline=None)
@given(
    case=cases(),
    mode=st.sampled_from([SUM, MEAN]),
    weight_dtype=st.sampled_from(WEIGHT_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    weighted=st.booleans(),
    platform=PLATFORMS,
    seed=seeds,
)
def test_pooled_matches_fbgemm(
    sim_ops, case, mode, weight_dtype, index_dtype, weighted, platform, seed
) -> None:
    weights, wo, do, indices, offsets, iw = build(case, weight_dtype, index_dtype, seed, weighted)
    dims, rows = case["dims"], case["rows"]
    out, _ = split_embedding_forward(
        sim_ops, weights, wo, do, indices, offsets, mode, sum(dims), max(dims), iw, **platform
    )
    want = fbgemm_pooled(weights, wo, do, indices, offsets, rows, mode, iw)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    if case["b"] > 0:
        other = torch_pooled(weights, wo, do, indices, offsets, rows, mode, iw)
        torch.testing.assert_close(out, other, rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    case=cases(nobag=True),
    weight_dtype=st.sampled_from(WEIGHT_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    platform=PLATFORMS,
    seed=seeds,
)
def test_nobag_matches_fbgemm(sim_ops, case, weight_dtype, index_dtype, platform, seed) -> None:
    weights, wo, do, indices, offsets, _ = build(case, weight_dtype, index_dtype, seed, False)
    d, t = case["dims"][0], len(case["dims"])
    out, _ = split_embedding_forward(
        sim_ops, weights, wo, do, indices, offsets, NONE, d * t, d, **platform
    )
    want_fb, want_torch = nobag_references(weights, wo, do, indices, offsets, case["rows"], d)
    assert torch.equal(out, want_fb)  # a copy: exact
    assert torch.equal(out, want_torch)


def test_large_spread_over_cores(sim_ops) -> None:
    """Many bags per core, tables wider than a UB slot (column chunks), group and batch wraps."""
    gen = torch.Generator().manual_seed(5)
    dims, rows, b = [1, 37, 2500, 8, 130], [50, 300, 20, 1000, 64], 97
    wo, do = layout(dims, rows)
    weights = torch.randn(sum(d * r for d, r in zip(dims, rows, strict=True)), generator=gen)
    lengths = torch.randint(0, 12, (len(dims) * b,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    table = torch.arange(len(dims)).repeat_interleave(b).repeat_interleave(lengths)
    limit = torch.tensor(rows)[table]
    indices = (torch.rand(table.numel(), generator=gen) * limit).long()
    indices[torch.randint(0, indices.numel(), (30,), generator=gen)] = -1
    iw = torch.randn(indices.numel(), generator=gen)
    args = (weights.half(), torch.tensor(wo), torch.tensor(do, dtype=torch.int32), indices, offsets)
    for mode, w in ((MEAN, iw), (SUM, None)):
        out, result = split_embedding_forward(
            sim_ops, *args, mode, sum(dims), max(dims), w, min_core_bytes=1, ub_bytes=16 * 1024
        )
        assert result.block_dim > 1
        want = fbgemm_pooled(*args, rows, mode, w)
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-4)


def test_large_nobag_spread_over_cores(sim_ops) -> None:
    gen = torch.Generator().manual_seed(6)
    t, d, b = 3, 1200, 40
    rows = [30, 5, 60]
    wo, do = layout([d] * t, rows)
    weights = torch.randn(sum(rows) * d, generator=gen).to(torch.bfloat16)
    lengths = torch.randint(0, 5, (t * b,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int32), lengths.cumsum(0).int()])
    table = torch.arange(t).repeat_interleave(b).repeat_interleave(lengths)
    indices = (torch.rand(table.numel(), generator=gen) * torch.tensor(rows)[table]).int()
    args = (weights, torch.tensor(wo), torch.tensor(do, dtype=torch.int32), indices, offsets)
    out, result = split_embedding_forward(
        sim_ops, *args, NONE, t * d, d, min_core_bytes=1, ub_bytes=16 * 1024
    )
    assert result.block_dim > 1
    want_fb, _ = nobag_references(*args, rows, d)
    assert torch.equal(out, want_fb)


# ---- traps (bad contents) and rejections (bad shapes) ---------------------------------------


@pytest.mark.parametrize(
    ("what", "mode"),
    [
        ("index past its table", SUM),
        ("index below -1", MEAN),
        ("index past its table", NONE),
        ("bag offsets decrease", SUM),
        ("bag past N", MEAN),
        ("negative offset", SUM),
        ("d_offsets do not end at total_d", SUM),
        ("d_offsets decrease", MEAN),
        ("weights_offsets past W", SUM),
        ("nobag table of another D", NONE),
        ("nobag boundaries decrease", NONE),
    ],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_contents_trap(sim_ops, what, mode, platform) -> None:
    weights = torch.arange(12, dtype=torch.float32)
    wo = torch.tensor([0, 6])
    do = torch.tensor([0, 2, 4], dtype=torch.int32)  # two tables of D 2 and 3 rows
    indices = torch.tensor([0, 2, 1, 2, 0, 1])
    offsets = torch.tensor([0, 2, 3, 5, 6])  # B = 2
    total_d, max_d = 4, 2
    if what == "index past its table":
        indices[4] = 3
    elif what == "index below -1":
        indices[0] = -2
    elif what == "bag offsets decrease":
        offsets[1] = 4
    elif what == "bag past N":
        offsets[3] = 7
    elif what == "negative offset":
        offsets[0] = -1
    elif what == "d_offsets do not end at total_d":
        total_d = 5
    elif what == "d_offsets decrease":
        do[1] = 5
    elif what == "weights_offsets past W":
        wo[1] = 20
    elif what == "nobag table of another D":
        do[1] = 1
    elif what == "nobag boundaries decrease":
        offsets[2], offsets[4] = 5, 4  # table 1 would start after table 2
    out = torch.empty((indices.numel(), max_d) if mode == NONE else (2, total_d))
    with pytest.raises(SimError, match="trap"):
        split_embedding_forward(
            sim_ops, weights, wo, do, indices, offsets, mode, total_d, max_d, out=out, **platform
        )


def test_features_sharing_a_table_and_tables_out_of_order(sim_ops) -> None:
    # fbgemm gives every feature mapped to one table that table's offset, so offsets repeat and
    # need not grow with the feature. weights = 0..11, D 3: rows [0,1,2], [3,4,5], [6,7,8], [9..11].
    # Shared (offsets [0, 0], 4 rows each): f0 = rows 1 + 3 = [12, 14, 16], f1 = row 2 = [6, 7, 8].
    weights = torch.arange(12.0)
    do = torch.tensor([0, 3, 6], dtype=torch.int32)
    indices, offsets = torch.tensor([1, 3, 2]), torch.tensor([0, 2, 3])
    out, _ = split_embedding_forward(
        sim_ops, weights, torch.tensor([0, 0]), do, indices, offsets, SUM, 6, 3
    )
    assert out.tolist() == [[12, 14, 16, 6, 7, 8]]
    # Out of order (f0's table at 6, two rows; f1's at 0, two rows): f0 row 1 = [9, 10, 11],
    # f1 row 1 = [3, 4, 5]; index 2 of either would be outside its table.
    indices, offsets = torch.tensor([1, 1]), torch.tensor([0, 1, 2])
    out, _ = split_embedding_forward(
        sim_ops, weights, torch.tensor([6, 0]), do, indices, offsets, SUM, 6, 3
    )
    assert out.tolist() == [[9, 10, 11, 3, 4, 5]]
    with pytest.raises(SimError, match="trap"):
        split_embedding_forward(
            sim_ops, weights, torch.tensor([6, 0]), do, torch.tensor([1, 2]), offsets, SUM, 6, 3
        )


def test_index_of_unused_zero_row_table_traps(sim_ops) -> None:
    weights, wo, do = (
        torch.arange(3.0),
        torch.tensor([0, 3]),
        torch.tensor([0, 3, 6], dtype=torch.int32),
    )
    with pytest.raises(SimError, match="trap"):  # table 1 has no rows: (W - 3) / 3 = 0
        split_embedding_forward(
            sim_ops, weights, wo, do, torch.tensor([0, 0]), torch.tensor([0, 1, 2]), SUM, 6, 3
        )


def good_args():
    weights, wo, do, indices, offsets = example_inputs()
    return {
        "weights": weights,
        "weights_offsets": wo,
        "d_offsets": do,
        "indices": indices,
        "offsets": offsets,
        "pooling_mode": SUM,
        "total_d": 8,
        "max_d": 5,
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"offsets": torch.tensor([0, 2, 2, 3, 5], dtype=torch.int32)}, "no kernel variant"),
        ({"offsets": torch.tensor([0, 2, 5])[:2]}, r"offsets size 2 is not B \* T \(T = 2\) \+ 1"),
        ({"d_offsets": torch.tensor([0, 8], dtype=torch.int32)}, "d_offsets size 2 is not T"),
        (
            {"weights_offsets": torch.tensor([], dtype=torch.int64)},
            "weights_offsets must have T >= 1",
        ),
        ({"indice_weights": torch.ones(4)}, "indice_weights size 4 is not equal to indices size 5"),
        ({"pooling_mode": 3}, "pooling_mode 3 is not"),
        ({"total_d": -1, "out": torch.empty(2, 0)}, "total_d and max_d must be >= 0"),
        ({"out": torch.empty(2, 7)}, r"out must be \[B, total_d\] = \[2, 8\], got \[2, 7\]"),
        (
            {"indice_weights": torch.ones(5), "pooling_mode": NONE},
            "indice_weights need pooling_mode",
        ),
        ({"pooling_mode": NONE}, r"total_d 8 is not T \* max_d = 10"),
        (
            {"pooling_mode": NONE, "total_d": 10, "out": torch.empty(5, 4)},
            r"out must be \[N, max_d\] = \[5, 5\]",
        ),
        ({"indice_weights": torch.ones(5, dtype=torch.float16)}, "supported: float32"),
        ({"weights": torch.arange(22, dtype=torch.int32)}, "'weights' has dtype int32"),
    ],
)
def test_rejections(sim_ops, change, message) -> None:
    kwargs = good_args()
    kwargs.update(change)
    with pytest.raises(SimError, match=message):
        split_embedding_forward(sim_ops, **kwargs)
