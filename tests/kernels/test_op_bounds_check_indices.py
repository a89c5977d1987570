"""BoundsCheckIndices on sim against fbgemm_gpu's CPU bounds_check_indices (all modes, VBE)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, bounds_check_indices  # noqa: E402
from strategies import INDEX_DTYPES, platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm
FATAL, WARNING, IGNORE, NONE = 0, 1, 2, 3


@st.composite
def cases(draw: st.DrawFn) -> dict:
    t = draw(st.integers(1, 5))
    vbe = draw(st.booleans())
    if vbe:
        batches = draw(st.lists(st.integers(0, 6), min_size=t, max_size=t))
        total_b = sum(batches)
    else:
        b = draw(st.integers(0, 6))
        batches = [b] * t
        total_b = b * t
    lengths = draw(st.lists(st.integers(0, 6), min_size=total_b, max_size=total_b))
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    num = offsets[-1]
    # Corrupt some offsets (negative, decreasing, past the end, wrong last element).
    bad_offsets = draw(
        st.lists(st.tuples(st.integers(0, total_b), st.integers(-3, num + 4)), max_size=3)
    )
    for k, v in bad_offsets:
        offsets[k] = v
    rows = draw(st.lists(st.integers(0, 20), min_size=t, max_size=t))
    # Indices: mostly in range, some -1 (pruned), some out of range either side.
    index_values = st.one_of(
        st.integers(0, 19), st.integers(0, 19), st.just(-1), st.integers(-30, 40)
    )
    indices = draw(st.lists(index_values, min_size=num, max_size=num))
    return {
        "rows": rows,
        "offsets": offsets,
        "indices": indices,
        "b_offsets": [sum(batches[:i]) for i in range(t + 1)] if vbe else None,
        "max_b": max(batches) if vbe else -1,
    }


def tensors_of(case: dict, index_dtype, offset_dtype):
    """(rows, indices, offsets, warning, b_offsets) of a case, fresh: the operator edits some."""
    b_offsets = case["b_offsets"]
    return (
        torch.tensor(case["rows"], dtype=torch.int64),
        torch.tensor(case["indices"], dtype=index_dtype),
        torch.tensor(case["offsets"], dtype=offset_dtype),
        torch.tensor([7], dtype=torch.int64),
        None if b_offsets is None else torch.tensor(b_offsets, dtype=torch.int32),
    )


def run_fbgemm(case: dict, mode: int, index_dtype, offset_dtype, version: int):
    rows, indices, offsets, warning, b_offsets = tensors_of(case, index_dtype, offset_dtype)
    error = None
    try:
        fbgemm.bounds_check_indices(
            rows,
            indices,
            offsets,
            mode,
            warning,
            None,
            b_offsets,
            case["max_b"],
            bounds_check_version=version,
        )
    except RuntimeError as exc:
        error = exc
    return indices, offsets, warning, error


@settings(max_examples=200, deadline=None)
@given(
    case=cases(),
    mode=st.sampled_from([FATAL, WARNING, IGNORE, NONE]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    offset_dtype=st.sampled_from(INDEX_DTYPES),
    version=st.sampled_from([1, 2]),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(
    sim_ops, case, mode, index_dtype, offset_dtype, version, platform, seed
) -> None:
    want_idx, want_off, want_warn, error = run_fbgemm(
        case, mode, index_dtype, offset_dtype, version
    )
    rows, indices, offsets, warning, b_offsets = tensors_of(case, index_dtype, offset_dtype)
    args = (rows, indices, offsets, mode, warning, None, b_offsets, case["max_b"], version)
    if error is not None:  # fatal mode: fbgemm raises, the kernel traps
        assert mode == FATAL
        with pytest.raises(SimError, match="trap"):
            bounds_check_indices(sim_ops, *args, **platform)
        return
    bounds_check_indices(sim_ops, *args, **platform)
    assert indices.tolist() == want_idx.tolist()
    assert offsets.tolist() == want_off.tolist()
    assert warning.tolist() == want_warn.tolist()


def test_documented_example(sim_ops) -> None:
    rows = torch.tensor([10, 5])
    indices = torch.tensor([1, 12, -1, 3, 7, -5, 4])
    offsets = torch.tensor([0, 5, 3, 9, 6])
    warning = torch.tensor([0])
    bounds_check_indices(sim_ops, rows, indices, offsets, WARNING, warning)
    assert indices.tolist() == [1, 0, -1, 3, 7, 0, 4]
    assert offsets.tolist() == [0, 5, 5, 7, 7]
    assert warning.tolist() == [5]


def test_weights_length_checked(sim_ops) -> None:
    rows = torch.tensor([10])
    with pytest.raises(SimError, match="weights size 2 is not equal to indices size 3"):
        bounds_check_indices(
            sim_ops,
            rows,
            torch.tensor([1, 2, 3]),
            torch.tensor([0, 3]),
            WARNING,
            torch.tensor([0]),
            torch.ones(2),
        )


def test_rejects_uneven_batches(sim_ops) -> None:
    with pytest.raises(SimError, match=r"offsets size 4 is not equal to B \(1\) \* T \(2\) \+ 1"):
        bounds_check_indices(
            sim_ops,
            torch.tensor([10, 5]),
            torch.tensor([1, 2, 3]),
            torch.tensor([0, 1, 2, 3]),
            WARNING,
            torch.tensor([0]),
        )


def test_large_spread_over_cores(sim_ops) -> None:
    """Many bags and indices on every core, with corrections spread across slice borders."""
    gen = torch.Generator().manual_seed(3)
    t, b = 7, 300
    lengths = torch.randint(0, 9, (t * b,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    n = int(offsets[-1])
    offsets[torch.randint(0, t * b, (40,), generator=gen)] += torch.randint(
        -30, 30, (40,), generator=gen
    )
    rows = torch.randint(1, 1000, (t,), generator=gen)
    indices = torch.randint(-5, 1100, (n,), generator=gen)
    case = {
        "rows": rows.tolist(),
        "offsets": offsets.tolist(),
        "indices": indices.tolist(),
        "b_offsets": None,
        "max_b": -1,
    }
    want_idx, want_off, want_warn, _ = run_fbgemm(case, WARNING, torch.int64, torch.int64, 1)
    warning = torch.tensor([0])
    bounds_check_indices(
        sim_ops, rows, indices, offsets, WARNING, warning, min_core_bytes=1, ub_bytes=16 * 1024
    )
    assert (
        torch.equal(indices, want_idx)
        and torch.equal(offsets, want_off)
        and torch.equal(warning, want_warn)
    )
