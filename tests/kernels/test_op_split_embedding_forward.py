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
    vbe=None,
    **launch,
):
    """What the adapter does: allocate out from shapes and attributes, launch.

    vbe: (b_offsets, vbe_output_offsets, vbe_b_offsets_rank, vbe_output_size) for variable batch
    per feature.
    """
    vbe_tensors = [None, None, None] if vbe is None else list(vbe[:3])
    vbe_size = -1 if vbe is None else vbe[3]
    if out is None:
        t = max(1, weights_offsets.numel())
        if vbe is not None:
            shape = (vbe_size,)
        elif pooling_mode == NONE:
            shape = (indices.numel(), max_d)
        else:
            shape = ((offsets.numel() - 1) // t, total_d)
        out = torch.empty(shape, dtype=torch.float32)
    tensors = [weights, weights_offsets, d_offsets, indices, offsets, indice_weights]
    tensors += [*vbe_tensors, out]
    result = ops("split_embedding_forward").launch(
        [arg(x) for x in tensors], [pooling_mode, total_d, max_d, vbe_size], **launch
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


@pytest.mark.parametrize("weight_dtype", [torch.float32, torch.float16])
def test_a_row_repeated_within_a_batch_is_fetched_once(sim_ops, weight_dtype) -> None:
    """8 bags of 6 indices on one core: all 48 distinct, or only rows 3 and 7 (weighted mean,
    so that each occurrence scales its own copy). The second fetches 2 rows, not 48: 46 DMAs
    fewer, everything else alike."""
    gen = torch.Generator().manual_seed(8)
    rows, d, b, length = 60, 16, 8, 6
    weights = torch.randn(rows * d, generator=gen).to(weight_dtype)
    wo, do = torch.tensor([0]), torch.tensor([0, d], dtype=torch.int32)
    offsets = torch.arange(b + 1) * length
    iw = torch.randn(b * length, generator=gen)
    counts = []
    for indices in (torch.randperm(rows, generator=gen)[: b * length], torch.tensor([3, 7] * 24)):
        args = (weights, wo, do, indices, offsets)
        out, result = split_embedding_forward(sim_ops, *args, MEAN, d, d, iw, max_cores=1)
        torch.testing.assert_close(
            out, fbgemm_pooled(*args, [rows], MEAN, iw), rtol=1e-5, atol=1e-5
        )
        counts.append(result.total("dma_transfers"))
    assert counts[0] - counts[1] == b * length - 2, counts


@pytest.mark.parametrize("vbe", [False, True])
def test_cores_share_the_rows_not_the_bags(sim_ops, vbe) -> None:
    """Table 0's bags hold 12 rows each, table 1's none: split by bag count, half the cores would
    fetch every row and the rest none; split by cost (rows and bags), each core fetches about as
    many rows as the next (8 cores: 12 * 96 / 8 = 144 rows each)."""
    gen = torch.Generator().manual_seed(7)
    dims, rows, b, length = [16, 16], [40, 40], 96, 12
    wo, do = layout(dims, rows)
    weights = torch.randn(sum(d * r for d, r in zip(dims, rows, strict=True)), generator=gen)
    lengths = torch.tensor([length] * b + [0] * b)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    indices = torch.randint(0, rows[0], (b * length,), generator=gen)
    args = (weights, torch.tensor(wo), torch.tensor(do, dtype=torch.int32), indices, offsets)
    launch = {"max_cores": 8, "min_core_bytes": 1}
    want = fbgemm_pooled(*args, rows, SUM, None)
    if vbe:  # one rank: the VBE layout of [B, D_t] blocks, feature after feature
        meta = (
            torch.tensor([0, b, 2 * b], dtype=torch.int32),
            torch.tensor([0, b * dims[0], b * sum(dims)]),
            torch.tensor([[0, b], [0, b]], dtype=torch.int32),
            b * sum(dims),
        )
        out, result = split_embedding_forward(
            sim_ops, *args, SUM, sum(dims), max(dims), vbe=meta, **launch
        )
        want = torch.cat([want[:, : dims[0]].flatten(), want[:, dims[0] :].flatten()])
    else:
        out, result = split_embedding_forward(sim_ops, *args, SUM, sum(dims), max(dims), **launch)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert result.block_dim == 8
    fetched = [c["dma_transfers"] for c in result.cores]
    # Every core also reads offsets and indices and writes its rows: a few DMAs beside its rows.
    assert max(fetched) - min(fetched) < 30, fetched
    times = [c["model_core"] for c in result.cores]  # the cost model's time of each core
    assert max(times) < 1.15 * min(times), times


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


# ---- variable batch per feature (VBE) ----------------------------------------------------------


def vbe_metadata(batch_size_per_feature_per_rank: list[list[int]], dims: list[int]):
    """fbgemm's VBEMetadata (generate_vbe_metadata): b_offsets, output offsets, rank offsets."""
    bfr = torch.tensor(batch_size_per_feature_per_rank, dtype=torch.int64)
    b_offsets = torch.cat([torch.zeros(1, dtype=torch.int64), bfr.sum(1).cumsum(0)]).int()
    sizes = bfr.t() * torch.tensor(dims).view(1, -1)
    out_offsets = torch.cat([torch.zeros(1, dtype=torch.int64), sizes.flatten().cumsum(0)])
    rank_offsets = torch.cat([torch.zeros(len(dims), 1, dtype=torch.int64), bfr.cumsum(1)], 1)
    return b_offsets, out_offsets, rank_offsets.int(), int(out_offsets[-1])


def vbe_reference(weights, wo, do, indices, offsets, rows, mode, iw, bfr):
    """What fbgemm's CPU invoker does with VBE: pad every feature's bags to max_B with empty
    ones, run the CPU op (fbgemm_pooled), then copy each (rank, feature) block into the flat
    per-rank, per-feature output."""
    t_count = len(rows)
    dims = [int(do[t + 1] - do[t]) for t in range(t_count)]
    b_offsets, out_offsets, rank_offsets, size = vbe_metadata(bfr, dims)
    max_b = max(1, int((b_offsets[1:] - b_offsets[:-1]).max())) if t_count else 1
    padded = torch.empty(t_count * max_b + 1, dtype=offsets.dtype)
    for t in range(t_count):
        lo, hi = int(b_offsets[t]), int(b_offsets[t + 1])
        padded[t * max_b : t * max_b + hi - lo] = offsets[lo:hi]
        padded[t * max_b + hi - lo : (t + 1) * max_b] = offsets[hi]
    padded[-1] = offsets[-1]
    pooled = fbgemm_pooled(weights, wo, do, indices, padded, rows, mode, iw)
    out = torch.empty(size)
    ranks = rank_offsets.size(1) - 1
    for r in range(ranks):
        for t in range(t_count):
            o0, o1 = int(out_offsets[r * t_count + t]), int(out_offsets[r * t_count + t + 1])
            b0, b1 = int(rank_offsets[t][r]), int(rank_offsets[t][r + 1])
            out[o0:o1] = pooled[b0:b1, int(do[t]) : int(do[t + 1])].flatten()
    return out


# The documented example's tables with batch sizes per feature per rank [[1, 2], [2, 0]]:
# feature 0 has 3 bags (rank 0: b0; rank 1: b1, b2), feature 1 has 2 (both on rank 0).
#   bags: f0 b0 = rows 1, 3; f0 b1 = empty; f0 b2 = row 0; f1 b0 = row 0; f1 b1 = row 1 twice
#   b_offsets = [0, 3, 5]; rank offsets f0 [0, 1, 3], f1 [0, 2, 2]
#   blocks (rank-major): r0 f0 [1, 3] | r0 f1 [2, 5] | r1 f0 [2, 3] | r1 f1 empty
#   vbe_output_offsets = [0, 3, 13, 19, 19]
VBE_BFR = [[1, 2], [2, 0]]
VBE_INDICES = [1, 3, 0, 0, 1, 1]
VBE_OFFSETS = [0, 2, 2, 3, 4, 6]
VBE_SUM = [12, 14, 16, 12, 13, 14, 15, 16, 34, 36, 38, 40, 42, 0, 0, 0, 0, 1, 2]
VBE_MEAN = [6, 7, 8, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 0, 0, 0, 0, 1, 2]


@pytest.mark.parametrize(("mode", "want"), [(SUM, VBE_SUM), (MEAN, VBE_MEAN)])
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_vbe_documented_example(sim_ops, mode, want, platform) -> None:
    weights, wo, do, _, _ = example_inputs()
    indices, offsets = torch.tensor(VBE_INDICES), torch.tensor(VBE_OFFSETS)
    meta = vbe_metadata(VBE_BFR, [3, 5])
    assert meta[1].tolist() == [0, 3, 13, 19, 19]
    out, _ = split_embedding_forward(
        sim_ops, weights, wo, do, indices, offsets, mode, 8, 5, vbe=meta, **platform
    )
    assert out.tolist() == want
    ref = vbe_reference(weights, wo, do, indices, offsets, [4, 2], mode, None, VBE_BFR)
    assert ref.tolist() == want


def test_vbe_matches_fbgemm_module(sim_ops) -> None:
    """The layout against fbgemm's own CPU TBE module called with batch_size_per_feature_per_rank
    (its D must be a multiple of 4)."""
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import (
        EmbeddingLocation,
        PoolingMode,
    )
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        ComputeDevice,
        SplitTableBatchedEmbeddingBagsCodegen,
    )

    gen = torch.Generator().manual_seed(11)
    specs = [(7, 4), (3, 8), (5, 12)]
    bfr = [[2, 0, 3], [1, 4, 0], [0, 0, 2]]
    tbe = SplitTableBatchedEmbeddingBagsCodegen(
        [(r, d, EmbeddingLocation.HOST, ComputeDevice.CPU) for r, d in specs],
        optimizer=EmbOptimType.EXACT_SGD,
        pooling_mode=PoolingMode.MEAN,
    )
    bags = sum(sum(x) for x in bfr)
    lengths = torch.randint(0, 4, (bags,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    feature = torch.arange(3).repeat_interleave(torch.tensor([sum(x) for x in bfr]))
    limit = torch.tensor([r for r, _ in specs])[feature.repeat_interleave(lengths)]
    indices = (torch.rand(int(offsets[-1]), generator=gen) * limit).long()
    with torch.no_grad():
        want = tbe(indices, offsets, batch_size_per_feature_per_rank=bfr)
    weights = tbe.weights_host.detach()
    dims = [d for _, d in specs]
    out, _ = split_embedding_forward(
        sim_ops,
        weights,
        tbe.weights_offsets,
        tbe.D_offsets,
        indices,
        offsets,
        MEAN,
        sum(dims),
        max(dims),
        vbe=vbe_metadata(bfr, dims),
    )
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)


@st.composite
def vbe_cases(draw: st.DrawFn) -> dict:
    t = draw(st.integers(1, 4))
    ranks = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(0, 40), min_size=t, max_size=t))
    rows = draw(st.lists(st.integers(1, 12), min_size=t, max_size=t))
    bfr = [draw(st.lists(st.integers(0, 4), min_size=ranks, max_size=ranks)) for _ in range(t)]
    lengths, indices = [], []
    for f in range(t):
        for _ in range(sum(bfr[f])):
            n = draw(st.integers(0, 5))
            lengths.append(n)
            valid = st.integers(0, rows[f] - 1)
            indices += draw(st.lists(st.one_of(valid, valid, st.just(-1)), min_size=n, max_size=n))
    return {"dims": dims, "rows": rows, "bfr": bfr, "lengths": lengths, "indices": indices}


@settings(max_examples=50, deadline=None)
@given(
    case=vbe_cases(),
    mode=st.sampled_from([SUM, MEAN]),
    weight_dtype=st.sampled_from(WEIGHT_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    weighted=st.booleans(),
    platform=PLATFORMS,
    seed=seeds,
)
def test_vbe_matches_fbgemm(
    sim_ops, case, mode, weight_dtype, index_dtype, weighted, platform, seed
) -> None:
    weights, wo, do, indices, offsets, iw = build(case, weight_dtype, index_dtype, seed, weighted)
    dims, rows, bfr = case["dims"], case["rows"], case["bfr"]
    meta = vbe_metadata(bfr, dims)
    out, _ = split_embedding_forward(
        sim_ops,
        weights,
        wo,
        do,
        indices,
        offsets,
        mode,
        sum(dims),
        max(dims),
        iw,
        vbe=meta,
        **platform,
    )
    want = vbe_reference(weights, wo, do, indices, offsets, rows, mode, iw, bfr)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_vbe_production_like(sim_ops) -> None:
    """Dozens of tables, per-feature batch sizes in the thousands over 2 ranks, D 64-128,
    Zipf-like ids, spread over cores; against the padded fbgemm CPU reference."""
    gen = torch.Generator().manual_seed(12)
    t = 24
    dims = [64 if f % 3 else 128 for f in range(t)]
    rows = [int(x) for x in torch.randint(200, 2000, (t,), generator=gen)]
    bfr = [[int(x) for x in torch.randint(500, 2048, (2,), generator=gen)] for _ in range(t)]
    bags = sum(sum(x) for x in bfr)
    lengths = torch.randint(0, 4, (bags,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    per_bag = torch.tensor(rows).repeat_interleave(torch.tensor([sum(x) for x in bfr]))
    limit = per_bag.repeat_interleave(lengths)
    indices = (torch.rand(limit.numel(), generator=gen) ** 3 * limit).long()
    wo, do = layout(dims, rows)
    weights = torch.randn(sum(d * r for d, r in zip(dims, rows, strict=True)), generator=gen)
    args = (weights, torch.tensor(wo), torch.tensor(do, dtype=torch.int32), indices, offsets)
    out, result = split_embedding_forward(
        sim_ops, *args, SUM, sum(dims), max(dims), vbe=vbe_metadata(bfr, dims)
    )
    assert result.block_dim > 1
    want = vbe_reference(*args, rows, SUM, None, bfr)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "what",
    [
        "b_offsets do not end at total_B",
        "b_offsets decrease",
        "rank offsets do not end at the feature's batch",
        "output block of the wrong size",
        "output offsets do not end at the output size",
    ],
)
def test_vbe_bad_metadata_traps(sim_ops, what) -> None:
    weights, wo, do, _, _ = example_inputs()
    indices, offsets = torch.tensor(VBE_INDICES), torch.tensor(VBE_OFFSETS)
    b_offsets, out_offsets, rank_offsets, size = vbe_metadata(VBE_BFR, [3, 5])
    if what == "b_offsets do not end at total_B":
        b_offsets[2] = 4
    elif what == "b_offsets decrease":
        b_offsets[1] = 6
    elif what == "rank offsets do not end at the feature's batch":
        rank_offsets[0][2] = 2
    elif what == "output block of the wrong size":
        out_offsets[1] = 6
    else:
        out_offsets[4] = 18
    with pytest.raises(SimError, match="trap"):
        split_embedding_forward(
            sim_ops,
            weights,
            wo,
            do,
            indices,
            offsets,
            SUM,
            8,
            5,
            vbe=(b_offsets, out_offsets, rank_offsets, size),
            min_core_bytes=1,
        )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("none mode", "needs pooling_mode sum or mean"),
        ("missing rank offsets", "b_offsets, vbe_output_offsets and vbe_b_offsets_rank together"),
        ("2-D out", r"out must be \[vbe_output_size\] = \[19\]"),
        ("short output offsets", r"vbe_output_offsets size 4 is not R \* T \+ 1 = 5"),
        ("b_offsets size", r"b_offsets size 2 is not T \+ 1 = 3"),
    ],
)
def test_vbe_rejections(sim_ops, change, message) -> None:
    weights, wo, do, _, _ = example_inputs()
    indices, offsets = torch.tensor(VBE_INDICES), torch.tensor(VBE_OFFSETS)
    b_offsets, out_offsets, rank_offsets, size = vbe_metadata(VBE_BFR, [3, 5])
    mode, out = SUM, None
    meta = [b_offsets, out_offsets, rank_offsets, size]
    if change == "none mode":
        mode = NONE
        out = torch.empty(size)
    elif change == "missing rank offsets":
        meta[2] = None
    elif change == "2-D out":
        out = torch.empty(1, size)
    elif change == "short output offsets":
        meta[1] = out_offsets[:4]
    else:
        meta[0] = b_offsets[:2]
    with pytest.raises(SimError, match=message):
        split_embedding_forward(
            sim_ops, weights, wo, do, indices, offsets, mode, 8, 5, out=out, vbe=tuple(meta)
        )
