"""The multi-device merges on two simulated npu devices in one process (fbgemm_npu_api's
merge.cpp): merge_pooled_embeddings, all_to_one_device and sum_reduce_to_one, against fbgemm's
CPU kernels on the same inputs, exactly; and torchrec's inference modules that call them
(EmbeddingsAllToOne, EmbeddingsAllToOneReduce, SeqEmbeddingsAllToOne).

npu_sim simulates NPU_SIM_DEVICE_COUNT devices (default 8); a copy between two of them is the
runtime's device-to-device copy, and the combines run the concat_slab and sum_stacked kernels on
the target device.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.requires_npu
MERGE_OPS = pytest.mark.requires_npu_ops(
    "fbgemm::merge_pooled_embeddings",
    "fbgemm::all_to_one_device",
    "fbgemm::sum_reduce_to_one",
)
CPU = torch.device("cpu")
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.fixture(scope="module", autouse=True)
def adapter() -> object:
    import fbgemm_gpu  # noqa: F401  (the CPU reference kernels)
    import fbgemm_npu_api

    if torch.npu.device_count() < 2:
        pytest.skip("needs two simulated npu devices (NPU_SIM_DEVICE_COUNT >= 2)")
    return fbgemm_npu_api


def values(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype in (torch.int32, torch.int64):
        return torch.randint(-1000, 1000, shape, generator=gen, dtype=dtype)
    return (torch.randn(shape, generator=gen) * 10).to(dtype)


def assert_same(actual: torch.Tensor, expected: torch.Tensor, device: str) -> None:
    assert actual.device == torch.device(device), f"result on {actual.device}, not {device}"
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual, expected), f"\nnpu:      {actual}\nexpected: {expected}"


@MERGE_OPS
@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, torch.int64])
@pytest.mark.parametrize("cat_dim", [0, 1])
@pytest.mark.parametrize("target", ["npu:0", "npu:1"])
def test_merge_pooled_embeddings(dtype, cat_dim, target) -> None:
    """Three devices' worth of pooled outputs (two inputs on npu:1, one on npu:0, one empty)."""
    widths, batch = [3, 5, 0, 4], 6
    host = [
        values((batch, w) if cat_dim == 1 else (w, batch), dtype, seed=i)
        for i, w in enumerate(widths)
    ]
    devices = ["npu:1", "npu:0", "npu:1", "npu:1"]
    tensors = [t.to(d) for t, d in zip(host, devices, strict=True)]
    got = torch.ops.fbgemm.merge_pooled_embeddings(tensors, batch, torch.device(target), cat_dim)
    want = torch.ops.fbgemm.merge_pooled_embeddings(host, batch, CPU, cat_dim)
    assert_same(got, want, target)


@MERGE_OPS
def test_merge_at_a_served_size() -> None:
    """Two devices' pooled outputs of a batch of 512, 13 features of D 64 each, merged on npu:0
    by torchrec's EmbeddingsAllToOne (what table-wise inference sharding ends with)."""
    from torchrec.distributed.dist_data import EmbeddingsAllToOne

    host = [values((512, 7 * 64), torch.float32, 1), values((512, 6 * 64), torch.float32, 2)]
    tensors = [host[0].to("npu:0"), host[1].to("npu:1")]
    module = EmbeddingsAllToOne(torch.device("npu:0"), world_size=2, cat_dim=1)
    assert_same(module(tensors), torch.cat(host, dim=1), "npu:0")


@MERGE_OPS
def test_merge_refuses_what_fbgemm_refuses() -> None:
    a, b = torch.ones(2, 3, device="npu:0"), torch.ones(4, 3, device="npu:1")
    with pytest.raises(ValueError, match="cat dim does not match"):
        torch.ops.fbgemm.merge_pooled_embeddings([a, b], 2, torch.device("npu:0"), 1)
    with pytest.raises(ValueError, match="cat_dim must be 0 or 1"):
        torch.ops.fbgemm.merge_pooled_embeddings([a, b], 3, torch.device("npu:0"), 2)
    with pytest.raises(ValueError, match="must be 2-D"):
        torch.ops.fbgemm.merge_pooled_embeddings([a.view(-1)], 2, torch.device("npu:0"), 1)
    with pytest.raises(RuntimeError, match="target_device_index"):
        torch.ops.fbgemm.merge_pooled_embeddings([a], 2, torch.device("npu", 99), 1)


@MERGE_OPS
def test_all_to_one_device() -> None:
    host = [values((3, 4), torch.float32, 3), values((5,), torch.float16, 4)]
    tensors = [host[0].to("npu:1"), host[1].to("npu:0")]
    out = torch.ops.fbgemm.all_to_one_device(tensors, torch.device("npu:0"))
    for got, want in zip(out, host, strict=True):
        assert_same(got, want, "npu:0")
    # An input already on the target comes back as itself, as fbgemm's CUDA kernel returns it.
    assert out[1].data_ptr() == tensors[1].data_ptr()
    # torchrec's sequence-embedding gather calls it.
    from torchrec.distributed.dist_data import SeqEmbeddingsAllToOne

    moved = SeqEmbeddingsAllToOne(torch.device("npu:1"), world_size=2)(tensors)
    for got, want in zip(moved, host, strict=True):
        assert_same(got, want, "npu:1")
    with pytest.raises(RuntimeError, match="npu"):
        torch.ops.fbgemm.all_to_one_device([tensors[0], host[0]], torch.device("npu:0"))


@MERGE_OPS
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("target", ["npu:0", "npu:1"])
def test_sum_reduce_to_one(dtype, target) -> None:
    host = [values((9, 37), dtype, seed=10 + i) for i in range(3)]
    tensors = [host[0].to("npu:0"), host[1].to("npu:1"), host[2].to("npu:1")]
    got = torch.ops.fbgemm.sum_reduce_to_one(tensors, torch.device(target))
    assert_same(got, torch.ops.fbgemm.sum_reduce_to_one(host, CPU), target)
    # A new tensor: the inputs are left as they were.
    for t, h in zip(tensors, host, strict=True):
        assert torch.equal(t.cpu(), h)


@MERGE_OPS
def test_sum_reduce_through_torchrec() -> None:
    """Row-wise inference sharding's gather: EmbeddingsAllToOneReduce on two devices' partial
    pooled sums."""
    from torchrec.distributed.dist_data import EmbeddingsAllToOneReduce

    host = [values((256, 128), torch.float32, 20), values((256, 128), torch.float32, 21)]
    tensors = [host[0].to("npu:0"), host[1].to("npu:1")]
    got = EmbeddingsAllToOneReduce(torch.device("npu:1"), world_size=2)(tensors)
    assert_same(got, torch.ops.fbgemm.sum_reduce_to_one(host, CPU), "npu:1")


@MERGE_OPS
def test_sum_reduce_refuses_mismatched_inputs() -> None:
    a = torch.ones(2, 3, device="npu:0")
    with pytest.raises(ValueError, match="shape of input_tensors\\[0\\]"):
        torch.ops.fbgemm.sum_reduce_to_one([a, torch.ones(3, 2, device="npu:1")], a.device)
    with pytest.raises(TypeError, match="dtype"):
        torch.ops.fbgemm.sum_reduce_to_one(
            [a, torch.ones(2, 3, dtype=torch.float16, device="npu:1")], a.device
        )
