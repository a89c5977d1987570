"""FloatToFused8BitRowwise on sim against fbgemm_gpu's CPU FloatToFused8BitRowwiseQuantized."""

from __future__ import annotations

import struct

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm


def quantize(ops, x, **launch):
    out = torch.empty(*x.shape[:-1], x.shape[-1] + 8, dtype=torch.uint8)
    result = ops("float_to_fused8bit_rowwise").launch([arg(x), arg(out)], [], **launch)
    return out, result


def test_hand_example(sim_ops) -> None:
    # Row [0, 1, 2, 5.1]: range 5.1, bytes round(x * 255 / (5.1 + 1e-8)) = 0, 50, 100, 255;
    # a constant row: all bytes 0, scale 0, bias the value.
    x = torch.tensor([[0.0, 1.0, 2.0, 5.1], [3.0, 3.0, 3.0, 3.0]])
    got, _ = quantize(sim_ops, x)
    assert got[0, :4].tolist() == [0, 50, 100, 255]
    assert got[1, :4].tolist() == [0, 0, 0, 0]
    scale, bias = struct.unpack("<ff", bytes(got[0, 4:].tolist()))
    assert scale == pytest.approx(0.02, abs=1e-7)
    assert bias == 0.0
    assert struct.unpack("<ff", bytes(got[1, 4:].tolist())) == (0.0, 3.0)
    assert torch.equal(got, fbgemm.FloatToFused8BitRowwiseQuantized(x))


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from([(1, 1), (7, 3), (5, 13), (33, 8), (4, 3, 20), (2, 2, 2, 37), (9, 128)]),
    spread=st.sampled_from([1e-3, 1.0, 1e4]),
    platform=platforms,
    seed=seeds,
)
def test_matches_fbgemm(sim_ops, shape, spread, platform, seed) -> None:
    """Byte for byte, scale and bias included, for any D (the scale and bias land at any byte
    offset), leading dims kept."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen) * spread + torch.randn(1, generator=gen)
    got, _ = quantize(sim_ops, x, **platform)
    assert torch.equal(got, fbgemm.FloatToFused8BitRowwiseQuantized(x))


@pytest.mark.parametrize("shape", [(0, 16), (3, 0)])
def test_empty(sim_ops, shape) -> None:
    """No rows; rows of D = 0 (fbgemm writes scale -inf and bias FLT_MAX, its starting min/max)."""
    x = torch.empty(shape)
    got, _ = quantize(sim_ops, x)
    assert torch.equal(got, fbgemm.FloatToFused8BitRowwiseQuantized(x))


def test_longest_row_in_ub(sim_ops) -> None:
    """A row and its output stay in UB whole (the row's min and max need all of it): with 48 KiB
    of UB, 32 bytes of it slack, D = 5456 fills it exactly (floats and their int32 values, 2 x
    21824 bytes, and D + 8 = 5464 output bytes in 5472) and D = 5457 is one block over."""
    x = torch.randn(2, 5456, generator=torch.Generator().manual_seed(5))
    got, _ = quantize(sim_ops, x, ub_bytes=48 * 1024)
    assert torch.equal(got, fbgemm.FloatToFused8BitRowwiseQuantized(x))
    with pytest.raises(SimError, match="5457 input and 5465 output elements takes 49184 bytes"):
        quantize(sim_ops, torch.zeros(1, 5457), ub_bytes=48 * 1024)


def test_production_size(sim_ops) -> None:
    """TorchRec's QComms all-to-all of pooled embeddings: B*T = 26*4096 rows of D = 128, spread
    over the cores, each byte read and written once."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(26 * 4096, 128, generator=gen) * torch.rand(26 * 4096, 1, generator=gen)
    got, result = quantize(sim_ops, x)
    assert torch.equal(got, fbgemm.FloatToFused8BitRowwiseQuantized(x))
    assert result.block_dim > 1
    reads = sum(c["gm_read_bytes"] for c in result.cores)
    writes = sum(c["gm_write_bytes"] for c in result.cores)
    # Beyond the rows: the tiling data each core reads.
    assert x.numel() * 4 <= reads <= 1.001 * x.numel() * 4
    assert got.numel() <= writes <= 1.001 * got.numel()
