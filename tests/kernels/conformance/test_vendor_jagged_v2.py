"""fbgemm-ascend's jagged_to_padded_dense_v2 (several jagged dimensions, the offsets passed as a
list of tensors through CANN's ListTensorDesc), compiled unchanged against the emulation, against
fbgemm's CPU jagged_to_padded_dense.

The kernel copies the rows of each bag that fit into the dense output and writes nothing else:
its padding fill (CleanOutGT, with the high-level Fill of global memory) is never called, so the
output's padding is the operator host side's job. The driver does that part: it fills the output
with the padding value before the launch.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from test_vendor_segments import CTYPE, zipf_lengths  # noqa: E402
from vendor import Field, TilingDef, VendorOp  # noqa: E402

fbgemm = torch.ops.fbgemm
CORES = 48  # Ascend910B1 vector cores
UB_BYTES = 192 * 1024
MAX_OFFSETS = 5  # the kernel's MAX_OFFSETS_CNT


def v2_op(dtype: torch.dtype, offset_dtype: torch.dtype) -> VendorOp:
    tiling = TilingDef(
        "JaggedToPaddedDenseV2TilingData",
        "JaggedToPaddedDenseV2",
        (
            Field("int64_t", "total"),
            Field("int64_t", "innerDenseSize"),
            Field("int64_t", "outerDenseSize"),
            Field("int64_t", "offsetCnt"),
            Field("int64_t", "maxLengths", MAX_OFFSETS),
            Field("int64_t", "offsetsLens", MAX_OFFSETS),
            Field("float", "paddingValue"),
            Field("int64_t", "ubCanUsed"),
        ),
    )
    defines = (f"DTYPE_VALUES={CTYPE[dtype]}", f"DTYPE_OFFSETS={CTYPE[offset_dtype]}")
    return VendorOp("jagged_to_padded_dense_v2", tiling, 3, defines)


def list_tensor_desc(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The global-memory descriptor of a list of 1-D tensors, as CANN's framework lays it out
    (kernel_operator_list_tensor_impl.h, dav_c220): the byte offset of the pointer array, one
    record per tensor (rank in the low half, the tensor's index in the high half, then the
    shape), then the data pointers."""
    count = len(tensors)
    words = [8 + count * 2 * 8]
    for i, t in enumerate(tensors):
        words += [(i << 32) | 1, t.numel()]
    words += [t.data_ptr() for t in tensors]
    return torch.tensor(words, dtype=torch.int64)


def run_v2(vendor_build, values, offsets: list[torch.Tensor], max_lengths: list[int], pad: float):
    kernel = vendor_build(v2_op(values.dtype, offsets[0].dtype))
    dim = values.shape[1]
    rows = values.shape[0]
    batch = offsets[0].numel() - 1
    fields = {
        "total": rows,
        "innerDenseSize": dim,
        "outerDenseSize": batch,
        "offsetCnt": len(offsets),
        "maxLengths": max_lengths,
        "offsetsLens": [o.numel() for o in offsets],
        "paddingValue": pad,
        "ubCanUsed": (UB_BYTES - 16 * 1024) // 64 * 64,
    }
    out = torch.full((batch, *max_lengths, dim), pad, dtype=values.dtype)
    desc = list_tensor_desc(offsets)
    cores = max(1, min(CORES, rows))
    kernel.launch([values, desc, out], [2], fields, block_dim=cores, extra=offsets)
    expected = fbgemm.jagged_to_padded_dense(values, [o.long() for o in offsets], max_lengths, pad)
    return out, expected


def test_v2_hand_case_one_jagged_dimension(vendor_build) -> None:
    values = torch.arange(1, 9, dtype=torch.float32).view(4, 2)
    offsets = [torch.tensor([0, 1, 1, 4], dtype=torch.int64)]
    out, expected = run_v2(vendor_build, values, offsets, [2], -1.0)
    assert out.tolist() == [
        [[1, 2], [-1, -1]],
        [[-1, -1], [-1, -1]],
        [[3, 4], [5, 6]],  # the third bag's last row is cut at max_length
    ]
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


def test_v2_hand_case_two_jagged_dimensions(vendor_build) -> None:
    # 2 outer bags of 2 and 1 inner bags; inner bags of 1, 3 and 2 rows; max lengths 2 and 2
    values = torch.arange(1, 13, dtype=torch.float32).view(6, 2)
    offsets = [
        torch.tensor([0, 2, 3], dtype=torch.int64),
        torch.tensor([0, 1, 4, 6], dtype=torch.int64),
    ]
    out, expected = run_v2(vendor_build, values, offsets, [2, 2], 0.0)
    p = [0.0, 0.0]
    assert out.tolist() == [
        [[[1, 2], p], [[3, 4], [5, 6]]],  # inner bag 1's third row is cut
        [[[9, 10], [11, 12]], [p, p]],
    ]
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("dtype", "offset_dtype", "dim"),
    [
        (torch.float32, torch.int64, 128),
        (torch.float16, torch.int32, 64),
        (torch.float32, torch.int64, 3),
    ],
)
def test_v2_training_batch(vendor_build, dtype, offset_dtype, dim: int) -> None:
    lengths = zipf_lengths(2048, 3.0, 60, seed=dim)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).to(offset_dtype)
    values = torch.randn(int(lengths.sum()), dim, generator=torch.Generator().manual_seed(7)).to(
        dtype
    )
    out, expected = run_v2(vendor_build, values, [offsets], [20], 0.5)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
