"""Fused8BitRowwiseToFloat on sim against fbgemm_gpu's CPU Fused8BitRowwiseQuantizedToFloat."""

from __future__ import annotations

import struct

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def dequantize(ops, q, **launch):
    out = torch.empty(*q.shape[:-1], q.shape[-1] - 8, dtype=torch.float32)
    result = ops("fused8bit_rowwise_to_float").launch([arg(q), arg(out)], [], **launch)
    return out, result


def same(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def row(values: list[int], scale: float, bias: float) -> list[int]:
    return values + list(struct.pack("<ff", scale, bias))


def test_hand_example(sim_ops) -> None:
    # bytes 0, 1, 255 at scale 0.5 and bias -1: -1, -0.5, 126.5 (exact, so any rounding agrees).
    q = torch.tensor([row([0, 1, 255], 0.5, -1.0)], dtype=torch.uint8)
    got, _ = dequantize(sim_ops, q)
    assert got.tolist() == [[-1.0, -0.5, 126.5]]


def test_one_rounding_as_fbgemm(sim_ops) -> None:
    """Every byte against scales and biases where a multiply then an add (two roundings) gives
    another last bit than fbgemm's fused multiply-add: the kernel must round once."""
    gen = torch.Generator().manual_seed(11)
    scales = torch.rand(64, generator=gen) * 0.1
    biases = -torch.rand(64, generator=gen) * 10
    rows = [row(list(range(256)), float(s), float(b)) for s, b in zip(scales, biases, strict=True)]
    q = torch.tensor(rows, dtype=torch.uint8)
    want = fbgemm.Fused8BitRowwiseQuantizedToFloat(q)
    qs = q[:, :256].float()
    twice = qs * scales[:, None] + biases[:, None]
    assert not torch.equal(twice, want)  # the case this test is about exists
    got, _ = dequantize(sim_ops, q)
    same(got, want)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(
        [(1, 9), (7, 11), (5, 21), (33, 16), (4, 3, 28), (2, 2, 2, 45), (9, 136)]
    ),
    platform=platforms,
    seed=seeds,
)
def test_random_bytes_match_fbgemm(sim_ops, shape, platform, seed) -> None:
    """Any bytes: scales and biases of every magnitude (subnormal, huge, inf, NaN), results that
    overflow, cancel or fall subnormal."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    got, _ = dequantize(sim_ops, q, **platform)
    same(got, fbgemm.Fused8BitRowwiseQuantizedToFloat(q))


@settings(max_examples=30, deadline=None)
@given(
    d=st.sampled_from([1, 3, 13, 64, 128, 200]),
    rows=st.integers(1, 40),
    spread=st.sampled_from([1e-30, 1e-3, 1.0, 1e30]),
    seed=seeds,
)
def test_round_trip_matches_fbgemm(sim_ops, d, rows, spread, seed) -> None:
    """What the INT8 codec sends: fbgemm's quantised rows of real data."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, d, generator=gen) * spread
    q = fbgemm.FloatToFused8BitRowwiseQuantized(x)
    got, _ = dequantize(sim_ops, q)
    same(got, fbgemm.Fused8BitRowwiseQuantizedToFloat(q))


@pytest.mark.parametrize("shape", [(0, 16), (3, 8)])
def test_empty(sim_ops, shape) -> None:
    q = torch.zeros(shape, dtype=torch.uint8)
    got, _ = dequantize(sim_ops, q)
    same(got, fbgemm.Fused8BitRowwiseQuantizedToFloat(q))


def test_production_size(sim_ops) -> None:
    """26*4096 rows of D = 128 from fbgemm's quantiser, spread over the cores, each byte read
    and each float written once."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(26 * 4096, 128, generator=gen)
    q = fbgemm.FloatToFused8BitRowwiseQuantized(x)
    got, result = dequantize(sim_ops, q)
    same(got, fbgemm.Fused8BitRowwiseQuantizedToFloat(q))
    assert result.block_dim > 1
    reads = sum(c["gm_read_bytes"] for c in result.cores)
    writes = sum(c["gm_write_bytes"] for c in result.cores)
    # Beyond the rows: the tiling data each core reads.
    assert q.numel() <= reads <= 1.001 * q.numel()
    assert got.numel() * 4 <= writes <= 1.001 * got.numel() * 4
