"""HstuDenseForward on sim against the float64 reference of hstu.md §2 (tests/kernels/hstu_ref.py).

Tolerances, from the dtype's machine epsilon eps (torch.finfo(dtype).eps) and the error scale
``mag`` the reference returns for every output element (sum over keys of
(s |M| (sum_d |q k| + |bias|) + |P|) |V|, what relative errors of the score, of P and of the
products can add up to):

- float32: |out - ref| <= 8 eps (mag + |ref| + tiny) against the unrounded float64 reference.
  The kernel sums Q K^T over D and P V over the keys in float32 and takes silu from the vector
  unit's Exp (the emulation's: float32 std::exp, within an ulp), each a few eps of the summed
  magnitudes.
- float16 / bfloat16: |out - ref| <= 2 eps (mag + |ref| + tiny) against the reference rounded at
  §2's points (S and P to the dtype, O once). What is left is where the kernel's float32 sums
  and the float64 reference round S or P to different neighbours (one ulp of S moves P by at
  most 1.1 s |S| eps, since |silu'| <= 1.1; one ulp of P by |P| eps) and O's own rounding;
  tiny (the smallest normal number) covers subnormal results, spaced tiny * eps.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from hstu_ref import CAUSAL, CUSTOM, JAGGED, NO_MASK, NORMAL, hstu_forward  # noqa: E402
from hstu_testlib import (  # noqa: E402
    DTYPES,
    HSTU_PLATFORMS,
    assert_within,
    bind,
    launch,
    offsets_of,
    problems,
    random_inputs,
)
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import seeds  # noqa: E402

OP = "hstu_dense_forward"
TOLERANCE = {torch.float32: 8.0, torch.float16: 2.0, torch.bfloat16: 2.0}


def hstu_dense_forward(ops, q, k, v, *options, out=None, **named):
    """What the adapter will do: out = empty_like(q), then the launch (hstu_testlib.launch).
    ``options`` and ``named``: hstu_ref.hstu_forward's arguments after v, ``offsets`` and the
    launch options."""
    a, rest = bind(q, k, v, options, named)
    out = torch.empty_like(q) if out is None else out
    return out, launch(ops(OP), [q, k, v], a, [out], **rest)


def assert_matches_reference(out, q, k, v, mask, bias, mask_type, max_seq_len, scale, layout, off):
    ref, mag = hstu_forward(
        q,
        k,
        v,
        mask,
        bias,
        mask_type,
        max_seq_len,
        scale,
        layout,
        off,
        rounding=True,
        magnitude=True,
    )
    info = torch.finfo(q.dtype)
    bound = TOLERANCE[q.dtype] * info.eps * (mag + ref.abs() + info.tiny)
    assert_within("out", out, ref, bound)


# ---- a hand-worked example ------------------------------------------------------------------
#
# Normal layout, B = 1, S = 2, N = 1, D = 8, causal, silu_scale 0 (s = 1 / S = 0.5):
#   q = k = [e0, e1] (unit rows), v = [[1..8], [10, 20, .., 80]]
#   S = q k^T = I, silu(1) = 1 / (1 + e^-1) = 0.7310585786, silu(0) = 0
#   P = silu(S) * 0.5 * tril = diag(0.3655292893, 0.3655292893)
#   O = P v = [0.36553 * [1..8], 0.36553 * [10..80]]
# With a bias of -1 everywhere Z = S - 1: silu(0) = 0 on the diagonal, silu(-1) = -0.2689414214
# below it, so P = [[0, 0], [-0.1344707107, 0]] and O = [0, -0.13447 * [1..8]].
SILU1 = 0.7310585786300049
SILU_M1 = -0.2689414213699951


@pytest.mark.parametrize("dtype", DTYPES)
def test_hand_worked_example(sim_ops, dtype) -> None:
    q = torch.zeros(1, 2, 1, 8)
    q[0, 0, 0, 0] = 1
    q[0, 1, 0, 1] = 1
    v = torch.stack([torch.arange(1, 9.0), torch.arange(10, 81.0, 10)]).view(1, 2, 1, 8)
    q, v = q.to(dtype), v.to(dtype)
    out, result = hstu_dense_forward(sim_ops, q, q, v, max_seq_len=2)
    want = (SILU1 / 2) * v.to(torch.float64)
    assert torch.allclose(out.to(torch.float64), want, rtol=2 * torch.finfo(dtype).eps, atol=0)
    assert result.block_dim == 1
    bias = torch.full((1, 1, 2, 2), -1.0).to(dtype)
    out, _ = hstu_dense_forward(sim_ops, q, q, v, attn_bias=bias, max_seq_len=2)
    want = torch.zeros(1, 2, 1, 8, dtype=torch.float64)
    want[0, 1, 0] = (SILU_M1 / 2) * torch.arange(1, 9.0, dtype=torch.float64)
    assert torch.allclose(out.to(torch.float64), want, rtol=4 * torch.finfo(dtype).eps, atol=0)


def test_seed_example(sim_ops) -> None:
    """The user's example (seed 000 §1.5): jagged, B = 2, lengths in [1, 4], N = 2, D = 8,
    float32 in [-1, 1], the built-in causal mask (a tril mask passed and ignored), silu_scale 1,
    max_seq_len = the longest length."""
    gen = torch.Generator().manual_seed(5)
    lengths = torch.randint(1, 5, (2,), generator=gen).tolist()
    off = offsets_of(lengths)
    n = max(lengths)
    q, k, v, _, _ = random_inputs(gen, (off[-1], 2, 8), torch.float32, 2, 2, n, CAUSAL, False)
    tril = 1 - torch.triu(torch.ones(2, 2, n, n), diagonal=1)
    out, _ = hstu_dense_forward(sim_ops, q, k, v, tril, None, CAUSAL, n, 1.0, JAGGED, off)
    assert_matches_reference(out, q, k, v, tril, None, CAUSAL, n, 1.0, JAGGED, off)


# ---- properties -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    problem=problems(),
    dtype=st.sampled_from(DTYPES),
    mask_type=st.sampled_from([CAUSAL, NO_MASK, CUSTOM]),
    with_bias=st.booleans(),
    silu_scale=st.sampled_from([0.0, 0.0, 1.0 / 256, 0.5]),
    platform=HSTU_PLATFORMS,
    seed=seeds,
)
def test_matches_reference(
    sim_ops, problem, dtype, mask_type, with_bias, silu_scale, platform, seed
) -> None:
    gen = torch.Generator().manual_seed(seed)
    p = problem
    s, n, d = p["max_seq_len"], p["heads"], p["dim"]
    shape = (p["batch"], s, n, d) if p["layout"] == NORMAL else (p["off"][-1], n, d)
    q, k, v, mask, bias = random_inputs(gen, shape, dtype, n, p["batch"], s, mask_type, with_bias)
    args = (q, k, v, mask, bias, mask_type, s, silu_scale, p["layout"], p["off"])
    out, _ = hstu_dense_forward(sim_ops, *args, **platform)
    assert_matches_reference(out, *args)


@pytest.mark.parametrize("mask_type", [CAUSAL, NO_MASK, CUSTOM])
def test_several_key_blocks_and_shared_query_blocks(sim_ops, mask_type) -> None:
    """Sequences longer than a key block (256), query blocks cut between vector cores (every
    core busy), empty and one-row sequences, a bias, float16."""
    gen = torch.Generator().manual_seed(11)
    lengths = [300, 1, 0, 270, 17]
    off = offsets_of(lengths)
    args = random_inputs(gen, (off[-1], 2, 16), torch.float16, 2, 5, 300, mask_type, True)
    q, k, v, mask, bias = args
    out, result = hstu_dense_forward(
        sim_ops, q, k, v, mask, bias, mask_type, 300, 0.0, JAGGED, off, min_core_bytes=1
    )
    assert result.block_dim == 24
    assert_matches_reference(out, q, k, v, mask, bias, mask_type, 300, 0.0, JAGGED, off)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_tiles_and_long_key_ranges(sim_ops, dtype) -> None:
    """Causal (the tiled forward): a sequence long enough that the keys left of its last blocks
    take two calls (> 1024), lengths that leave partial diagonal tiles and pieces starting inside
    a block, and a bias read tile by tile."""
    gen = torch.Generator().manual_seed(12)
    lengths = [1500, 33, 0, 290, 5]
    off = offsets_of(lengths)
    q, k, v, _, bias = random_inputs(gen, (off[-1], 2, 64), dtype, 2, 5, 1500, CAUSAL, True)
    out, result = hstu_dense_forward(
        sim_ops, q, k, v, None, bias, CAUSAL, 1500, 0.0, JAGGED, off, min_core_bytes=1
    )
    assert result.block_dim == 24
    assert_matches_reference(out, q, k, v, None, bias, CAUSAL, 1500, 0.0, JAGGED, off)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_largest_head_dim(sim_ops, dtype) -> None:
    """D = 512, causal: float32's Q, K and V tiles do not fit L1 beside the Matmul API's
    buffers (the untiled forward runs); 16-bit ones fit in shorter blocks (128 rows)."""
    gen = torch.Generator().manual_seed(13)
    q, k, v, _, _ = random_inputs(gen, (2, 150, 1, 512), dtype, 1, 2, 150, CAUSAL, False)
    out, _ = hstu_dense_forward(sim_ops, q, k, v, None, None, CAUSAL, 150, 0.0, NORMAL)
    assert_matches_reference(out, q, k, v, None, None, CAUSAL, 150, 0.0, NORMAL, None)


@pytest.mark.parametrize("dtype", DTYPES)
def test_largest_head_dim(sim_ops, dtype) -> None:
    """D = 512 (the largest): the P V product's N is split into two base blocks."""
    gen = torch.Generator().manual_seed(3)
    q, k, v, _, bias = random_inputs(gen, (1, 40, 2, 512), dtype, 2, 1, 40, NO_MASK, True)
    out, _ = hstu_dense_forward(sim_ops, q, k, v, None, bias, NO_MASK, 40, 0.0, NORMAL)
    assert_matches_reference(out, q, k, v, None, bias, NO_MASK, 40, 0.0, NORMAL, None)


def test_mask_and_bias_may_count_only_the_nonempty_batch(sim_ops) -> None:
    """RecSDK takes B as the first index of the last offset (trailing repeats are not batches):
    mask and bias of that leading size are accepted in the jagged layout."""
    gen = torch.Generator().manual_seed(4)
    off = [0, 3, 7, 7, 7]  # B = 4, of which 2 before the trailing repeats
    q, k, v, mask, bias = random_inputs(gen, (7, 1, 16), torch.float32, 1, 2, 4, CUSTOM, True)
    out, _ = hstu_dense_forward(sim_ops, q, k, v, mask, bias, CUSTOM, 4, 0.0, JAGGED, off)
    assert_matches_reference(out, q, k, v, mask, bias, CUSTOM, 4, 0.0, JAGGED, off)


def test_masks_are_ignored_unless_custom(sim_ops) -> None:
    gen = torch.Generator().manual_seed(8)
    q, k, v, _, _ = random_inputs(gen, (2, 9, 2, 8), torch.float32, 2, 2, 9, NO_MASK, False)
    junk = torch.full((3, 1, 1, 1), float("nan"))  # any shape, never read
    for mask_type in (CAUSAL, NO_MASK):
        out, _ = hstu_dense_forward(sim_ops, q, k, v, junk, None, mask_type, 9)
        assert_matches_reference(out, q, k, v, None, None, mask_type, 9, 0.0, NORMAL, None)


# ---- a production-like batch ----------------------------------------------------------------


def test_production_like_jagged_batch(sim_ops) -> None:
    """Jagged B = 32, N = 4, D = 128, causal, lengths skewed towards short ones (1024 * u^2, one
    of 1024): no dimension shrunk. bfloat16 (the training dtype of seed 001's fast runs). The
    cores' Cube cycles and vector work are balanced within 10%, the Cube issues at most 1/0.9
    of the multiply-adds the causal mask keeps, and the tensors' traffic is at most twice the
    minimum."""
    gen = torch.Generator().manual_seed(2024)
    b, n, d, s = 32, 4, 128, 1024
    lengths = (s * torch.rand(b, generator=gen) ** 2).long().clamp(min=1)
    lengths[0] = s
    off = offsets_of(lengths.tolist())
    q, k, v, _, _ = random_inputs(gen, (off[-1], n, d), torch.bfloat16, n, b, s, CAUSAL, False)
    out, result = hstu_dense_forward(sim_ops, q, k, v, None, None, CAUSAL, s, 0.0, JAGGED, off)
    assert result.block_dim == 24
    cube = [c["cube_cycles"] for c in result.kind(1)]
    vector = [c["vector_repeats"] for c in result.kind(0)]
    assert max(cube) <= 1.1 * sum(cube) / len(cube)
    assert max(vector) <= 1.1 * sum(vector) / len(vector)
    kept = sum(x * (x + 1) // 2 for x in lengths.tolist()) * n * d * 2  # Q K^T and P V
    issued = result.total("cube_macs")
    assert kept / issued >= 0.9
    # What moved to and from Q, K, V and O (not the workspace) over reading and writing each once:
    # the diagonal tiles in L1 and the long key calls keep it within 2 (bench_hstu.py prints it).
    minimum = 4 * q.numel() * q.element_size()
    assert (result.gm_bytes - result.workspace_bytes_moved) / minimum <= 2.0
    assert_matches_reference(out, q, k, v, None, None, CAUSAL, s, 0.0, JAGGED, off)


# ---- argument checks (hstu.md §3.4, §4) -----------------------------------------------------


def _call(sim_ops, shape=(1, 4, 1, 8), dtype=torch.float32, **kw):
    q = torch.zeros(shape, dtype=dtype)
    args = dict(k=q, v=q, max_seq_len=shape[1] if len(shape) == 4 else 4)
    args.update(kw)
    return hstu_dense_forward(sim_ops, q, **args)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(mask_type=1), "mask_type 1 (upper triangular) is not supported"),
        (dict(mask_type=4), "mask_type must be 0 (causal), 2 (none) or 3 (custom), got 4"),
        (dict(mask_type=-1), "mask_type must be 0 (causal), 2 (none) or 3 (custom), got -1"),
        (dict(mask_type=CUSTOM), "mask_type 3 (custom) needs mask [B, N, S, S]"),
        (dict(max_seq_len=5), "the normal layout needs max_seq_len == S = q.size(1) = 4, got 5"),
        (dict(layout=2), 'layout must be 0 ("normal") or 1 ("jagged"), got 2'),
        (dict(layout=JAGGED, seq_offset=[0, 4]), "q must be [T, N, D] in the jagged layout"),
        (
            dict(attn_bias=torch.zeros(1, 1, 4, 3)),
            "attn_bias must be [B, N, S, S] = [1, 1, 4, 4] (S = max_seq_len), got [1, 1, 4, 3]",
        ),
        (
            dict(mask_type=CUSTOM, mask=torch.zeros(2, 1, 4, 4)),
            "mask must be [B, N, S, S] = [1, 1, 4, 4]",
        ),
        (
            dict(attn_bias=torch.zeros(1, 1, 4, 4, dtype=torch.float16)),
            "no kernel variant for the dtype combination",
        ),
        (dict(k=torch.zeros(1, 4, 1, 16)), "k and v must have q's shape [1, 4, 1, 8]"),
        (dict(out=torch.zeros(1, 4, 1, 16)), "out must have q's shape [1, 4, 1, 8]"),
        (dict(silu_scale=float("inf")), "silu_scale must be finite"),
    ],
)
def test_invalid_arguments(sim_ops, kw, message) -> None:
    with pytest.raises(SimError, match="invalid argument") as err:
        _call(sim_ops, **kw)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        (
            (1, 4, 1, 255),
            "the head dimension D (q.size(3)) must be a multiple of 8 in [8, 512], got 255",
        ),
        (
            (1, 4, 1, 4),
            "the head dimension D (q.size(3)) must be a multiple of 8 in [8, 512], got 4",
        ),
        ((1, 4, 1, 520), "must be a multiple of 8 in [8, 512], got 520"),
        ((1, 4, 17, 8), "the head count N (q.size(2)) must be in [1, 16], got 17"),
        ((1, 4, 255, 8), "the head count N (q.size(2)) must be in [1, 16], got 255"),
        ((1, 20481, 1, 8), "max_seq_len must be in [1, 20480], got 20481"),
        ((2049, 1, 1, 8), "the batch size B must be in [1, 2048], got 2049"),
        ((0, 4, 1, 8), "q must not be empty, got [0, 4, 1, 8]"),
        ((1, 4, 0, 8), "q must not be empty"),
    ],
)
def test_invalid_shapes(sim_ops, shape, message) -> None:
    with pytest.raises(SimError, match="invalid argument") as err:
        _call(sim_ops, shape=shape, dtype=torch.float16)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("seq_offset", "rows", "message"),
    [
        ([0], 4, "seq_offset must have at least 2 entries (B + 1), got 1"),
        ([], 4, "seq_offset must have at least 2 entries (B + 1), got 0"),
        ([1, 4], 4, "seq_offset must start at 0, got 1"),
        (
            [0, 3, 2, 4],
            4,
            "seq_offset must be non-decreasing: seq_offset[2] = 2 < seq_offset[1] = 3",
        ),
        ([0, 3], 4, "seq_offset must end at T = q.size(0) = 4, got 3"),
        ([0, 4, 9], 9, "sequence 1 has length 5 > max_seq_len 4"),
        ([0] * 2050 + [1], 1, "the batch size B must be in [1, 2048], got 2050"),
        ([0, 0], 0, "q must not be empty, got [0, 2, 8]"),
    ],
)
def test_invalid_offsets(sim_ops, seq_offset, rows, message) -> None:
    q = torch.zeros(rows, 2, 8)
    with pytest.raises(SimError, match="invalid argument") as err:
        hstu_dense_forward(sim_ops, q, q, q, None, None, CAUSAL, 4, 0.0, JAGGED, seq_offset)
    assert message in str(err.value)


def test_offsets_tensor_is_required_and_must_match(sim_ops) -> None:
    q = torch.zeros(5, 1, 8)
    off = [0, 2, 5]
    with pytest.raises(SimError, match=r"offsets \(the device copy of seq_offset\) is required"):
        sim_ops(OP).launch(
            [arg(t) for t in (q, q, q, None, None, None, torch.empty_like(q))],
            [CAUSAL, 4, 0.0, 1, off],
        )
    with pytest.raises(SimError, match=r"offsets must be \[B \+ 1\] = \[3\] like seq_offset"):
        hstu_dense_forward(
            sim_ops, q, q, q, None, None, CAUSAL, 4, 0.0, JAGGED, off, offsets=torch.zeros(2).long()
        )
    # Values that differ from the attribute: the kernel traps (it cannot trust its addresses).
    wrong = torch.tensor([0, 3, 5])
    with pytest.raises(SimError, match="trap"):
        hstu_dense_forward(sim_ops, q, q, q, None, None, CAUSAL, 4, 0.0, JAGGED, off, offsets=wrong)


def test_unified_buffer_too_small(sim_ops) -> None:
    with pytest.raises(SimError, match="cannot hold one score row"):
        _call(sim_ops, ub_bytes=8 * 1024)
