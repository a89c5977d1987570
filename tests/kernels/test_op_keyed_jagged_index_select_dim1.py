"""KeyedJaggedIndexSelectDim1 on sim against a plain-PyTorch reference of fbgemm 1.1.0's op.

fbgemm-gpu-cpu registers only a Meta kernel for keyed_jagged_index_select_dim1, so the golden is
written here from the operator's documented semantics: lengths are [T, B] key-major, output bag
(t, j) is input bag (t, indices[j]) (the same columns for every key), and its values (and
weights) follow in that order; the Meta kernel pins the output shapes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, VALUE_DTYPES, platforms, random_values, seeds  # noqa: E402

OP = "keyed_jagged_index_select_dim1"
WEIGHT_DTYPES = [torch.float32, torch.float16]


def select(ops, values, lengths, offsets, indices, batch_size, weights=None, total=None, **launch):
    """The op as the adapter runs it: outputs sized from lengths unless ``total`` says."""
    keys = lengths.numel() // batch_size
    if total is None:
        total = int(lengths.view(keys, batch_size)[:, indices.long()].sum()) if keys else 0
    out = torch.empty(total, dtype=values.dtype)
    out_lengths = torch.empty(keys * indices.numel(), dtype=lengths.dtype)
    out_weights = None if weights is None else torch.empty(total, dtype=weights.dtype)
    tensors = [values, lengths, offsets, indices, weights, out, out_lengths, out_weights]
    result = ops(OP).launch([arg(t) for t in tensors], [batch_size, total], **launch)
    return (out, out_lengths, out_weights), result


def reference(values, lengths, offsets, indices, batch_size, weights=None, total=None):
    """Written from the semantics, bag by bag: no fbgemm CPU kernel exists to compare with."""
    keys = lengths.numel() // batch_size
    out_lengths, parts, wparts = [], [], []
    for t in range(keys):
        for j in indices.tolist():
            bag = t * batch_size + j
            start = 0 if bag == 0 else int(offsets[bag])
            n = int(lengths[bag])
            out_lengths.append(n)
            parts.append(values[start : start + n])
            if weights is not None:
                wparts.append(weights[start : start + n])

    def fit(chunks, like):
        flat = torch.cat(chunks) if chunks else like[:0]
        if total is None:
            return flat
        out = torch.zeros(total, dtype=like.dtype)
        keep = min(total, flat.numel())
        out[:keep] = flat[:keep]
        return out

    ol = torch.tensor(out_lengths, dtype=lengths.dtype)
    return fit(parts, values), ol, None if weights is None else fit(wparts, weights)


def meta_shapes(values, lengths, offsets, indices, batch_size, weights=None):
    """fbgemm's Meta kernel: the output shapes the npu op must return."""
    m = torch.device("meta")
    fbgemm = pytest.importorskip("fbgemm_gpu") and torch.ops.fbgemm
    outs = fbgemm.keyed_jagged_index_select_dim1(
        values.to(m),
        lengths.to(m),
        offsets.to(m),
        indices.to(m),
        batch_size,
        None if weights is None else weights.to(m),
        int(lengths.view(-1, batch_size)[:, indices.long()].sum()),
    )
    return [tuple(o.shape) for o in outs]


def kjt(lengths_2d, dtype=torch.int64, value_dtype=torch.int64, gen=None):
    lengths = torch.tensor(lengths_2d, dtype=dtype).flatten()
    offsets = torch.cat([torch.zeros(1, dtype=dtype), lengths.cumsum(0).to(dtype)])
    n = int(lengths.sum())
    values = (
        torch.arange(100, 100 + n, dtype=value_dtype)
        if gen is None
        else random_values(gen, (n,), value_dtype)
    )
    return values, lengths, offsets


def assert_equal(got, want) -> None:
    for name, g, w in zip(("output", "output_lengths", "output_weights"), got, want, strict=True):
        if w is None:
            assert g is None, name
        else:
            assert g.dtype == w.dtype and torch.equal(g, w), (name, g.tolist(), w.tolist())


@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_hand_example(sim_ops, platform) -> None:
    # Two keys, B = 3. Key 0 bags: [100, 101], [102], []; key 1 bags: [103], [104, 105, 106], [].
    # Selecting columns 1, 0, 1: key 0 -> [102], [100, 101], [102]; key 1 -> [104..106], [103],
    # [104..106].
    values, lengths, offsets = kjt([[2, 1, 0], [1, 3, 0]])
    weights = values.float() / 10
    indices = torch.tensor([1, 0, 1], dtype=torch.int64)
    got, _ = select(sim_ops, values, lengths, offsets, indices, 3, weights, **platform)
    assert got[1].tolist() == [1, 2, 1, 3, 1, 3]
    assert got[0].tolist() == [102, 100, 101, 102, 104, 105, 106, 103, 104, 105, 106]
    assert torch.equal(got[2], got[0].float() / 10)
    assert [tuple(g.shape) for g in got] == meta_shapes(
        values, lengths, offsets, indices, 3, weights
    )


def test_first_bag_starts_at_zero(sim_ops) -> None:
    # fbgemm's kernel takes bag 0's start as 0 without reading offsets[0].
    values, lengths, offsets = kjt([[2, 1], [1, 1]])
    offsets[0] = 3
    got, _ = select(sim_ops, values, lengths, offsets, torch.tensor([0, 1]), 2)
    assert got[0].tolist() == [100, 101, 102, 103, 104]


@st.composite
def cases(draw: st.DrawFn):
    keys = draw(st.integers(0, 6))
    b = draw(st.integers(1, 40))
    i = draw(st.one_of(st.integers(0, 3), st.integers(0, 60)))
    small = st.integers(0, 4)
    lengths = draw(
        st.lists(st.one_of(small, small, st.integers(0, 50)), min_size=keys * b, max_size=keys * b)
    )
    indices = draw(st.lists(st.integers(0, b - 1), min_size=i, max_size=i))
    return keys, b, lengths, indices


@settings(max_examples=80, deadline=None)
@given(
    case=cases(),
    value_dtype=st.sampled_from(VALUE_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    weight_dtype=st.sampled_from([None, *WEIGHT_DTYPES]),
    extra=st.one_of(st.none(), st.integers(-20, 20)),
    platform=platforms,
    seed=seeds,
)
def test_matches_reference(
    sim_ops, case, value_dtype, index_dtype, weight_dtype, extra, platform, seed
) -> None:
    keys, b, lengths, cols = case
    gen = torch.Generator().manual_seed(seed)
    values, lengths, offsets = kjt(
        [lengths[k * b : (k + 1) * b] for k in range(keys)] if keys else [[]],
        index_dtype,
        value_dtype,
        gen,
    )
    if keys == 0:
        lengths, offsets = lengths[:0], offsets[:1]
    weights = None if weight_dtype is None else random_values(gen, values.shape, weight_dtype)
    indices = torch.tensor(cols, dtype=index_dtype)
    natural = int(lengths.view(keys, b)[:, indices.long()].sum()) if keys else 0
    total = None if extra is None else max(0, natural + extra)
    got, _ = select(sim_ops, values, lengths, offsets, indices, b, weights, total, **platform)
    assert_equal(got, reference(values, lengths, offsets, indices, b, weights, total))


def test_long_keys_read_by_scalar(sim_ops) -> None:
    """A key of more bags than the row buffers hold: lengths and offsets read one by one."""
    gen = torch.Generator().manual_seed(5)
    b = 9000
    values, lengths, offsets = kjt(torch.randint(0, 3, (2, b), generator=gen).tolist())
    indices = torch.randint(0, b, (300,), generator=gen)
    got, result = select(
        sim_ops, values, lengths, offsets, indices, b, min_core_bytes=1, ub_bytes=48 * 1024
    )
    assert result.block_dim > 1
    assert_equal(got, reference(values, lengths, offsets, indices, b))


def gathered(values, lengths, offsets, indices, b, weights=None):
    """The reference of a large case, vectorised (the bag loop is for the small cases)."""
    t = lengths.numel() // b
    sel = (torch.arange(t).view(-1, 1) * b + indices.view(1, -1)).flatten()
    want_lengths = lengths[sel]
    starts = offsets[sel].clone()
    starts[sel == 0] = 0
    pos = torch.repeat_interleave(
        starts - torch.cat([torch.zeros(1, dtype=torch.int64), want_lengths.cumsum(0)[:-1]]),
        want_lengths,
    ) + torch.arange(int(want_lengths.sum()))
    return values[pos], want_lengths, None if weights is None else weights[pos]


@pytest.mark.parametrize("selected", [7, 2500])
@pytest.mark.parametrize(
    "platform", [{"min_core_bytes": 1}, {"min_core_bytes": 1, "ub_bytes": 40 * 1024}]
)
def test_windows_and_long_bags(sim_ops, selected, platform) -> None:
    """Keys of 2500 bags, a few of them longer than a gathered chunk takes: selecting a few
    columns copies bags by DMA (a staged key would read mostly unselected values), selecting
    a resampled batch stages each key's values and gathers from them."""
    gen = torch.Generator().manual_seed(selected)
    t, b = 3, 2500
    lengths = torch.randint(0, 4, (t * b,), generator=gen)
    lengths[torch.randint(0, t * b, (6,), generator=gen)] = 700
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    values = torch.randint(0, 1 << 40, (int(lengths.sum()),), generator=gen)
    weights = torch.rand(values.numel(), generator=gen).half()
    indices = torch.randint(0, b, (selected,), generator=gen)
    got, result = select(sim_ops, values, lengths, offsets, indices, b, weights, **platform)
    assert result.block_dim > 1
    want = gathered(values, lengths, offsets, indices, b, weights)
    assert torch.equal(got[1], want[1])
    assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])


def test_production_size_zipf(sim_ops) -> None:
    """26 keys x B = 4096 with Zipf lengths, int64 ids and fp32 weights, selecting a
    permutation of the batch with repeats (torchrec's variable-stride permute / ITEP shape)."""
    gen = torch.Generator().manual_seed(11)
    t, b = 26, 4096
    lengths = (torch.rand(t * b, generator=gen).pow(-1.0 / 1.2).long() - 1).clamp(max=200)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    n = int(lengths.sum())
    values = torch.randint(0, 1 << 40, (n,), generator=gen)
    weights = torch.rand(n, generator=gen)
    indices = torch.randint(0, b, (b,), generator=gen)  # a resampling: repeats and omissions
    got, result = select(sim_ops, values, lengths, offsets, indices, b, weights)
    assert result.block_dim > 1
    want = gathered(values, lengths, offsets, indices, b, weights)
    assert torch.equal(got[1], want[1])
    assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])


@pytest.mark.parametrize(
    ("lengths", "offsets", "indices"),
    [
        ([1, 1, 1, 1], [0, 1, 2, 3, 4], [2]),  # a column past B
        ([1, 1, 1, 1], [0, 1, 2, 3, 4], [-1]),  # a negative column
        ([1, 1, 1, 1], [0, 1, 2, 4, 4], [1]),  # key 1's bag 1 reaches past values
        ([1, -1, 1, 1], [0, 1, 2, 3, 4], [1]),  # a negative length
    ],
)
@pytest.mark.parametrize("platform", [{}, {"min_core_bytes": 1}])
def test_bad_inputs_trap(sim_ops, lengths, offsets, indices, platform) -> None:
    i64 = torch.int64
    with pytest.raises(SimError, match="trap"):
        select(
            sim_ops,
            torch.arange(4, dtype=i64),
            torch.tensor(lengths, dtype=i64),
            torch.tensor(offsets, dtype=i64),
            torch.tensor(indices, dtype=i64),
            2,
            total=1,
            **platform,
        )


def test_shapes_refused(sim_ops) -> None:
    values, lengths, offsets = kjt([[1, 2, 3]])
    with pytest.raises(SimError, match="multiple of batch_size"):
        select(sim_ops, values, lengths, offsets, torch.tensor([0]), 2, total=0)
    with pytest.raises(SimError, match="offsets must have"):
        select(sim_ops, values, lengths, offsets[:-1], torch.tensor([0]), 3, total=0)
