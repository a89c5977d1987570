"""Device-free checks of the npu decisions in the embedding kernels and train pipelines.

No npu device is needed: fbgemm's TBE classes are replaced, inside the torchrec module that
builds them, by stand-ins that record the arguments torchrec passes, and the pipelines get a
stand-in device module. What is checked is torchrec's routing: which fbgemm compute device and
embedding location each device type gets, where data-parallel tables are allocated, and which
devices get streams. The expected routing for cpu, cuda and mtia is upstream's.
"""

from __future__ import annotations

import types
from typing import Any

import npu_plans
import pytest
import torch
from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
    ComputeDevice,
    DenseTableBatchedEmbeddingBagsCodegen,
    EmbeddingLocation,
)


@pytest.fixture(scope="module", autouse=True)
def _npu_name() -> None:
    npu_plans.register_npu_name()


def _grouped_config(kernel: str) -> Any:
    from torchrec.distributed.embedding_types import (
        EmbeddingComputeKernel,
        GroupedEmbeddingConfig,
        ShardedEmbeddingTable,
    )
    from torchrec.modules.embedding_configs import DataType, PoolingType

    compute_kernel = EmbeddingComputeKernel(kernel)
    tables = [
        ShardedEmbeddingTable(
            num_embeddings=rows,
            embedding_dim=dim,
            name=name,
            feature_names=[f"f_{name}"],
            local_rows=rows,
            local_cols=dim,
            compute_kernel=compute_kernel,
        )
        for name, rows, dim in (("t0", 10, 4), ("t1", 20, 8))
    ]
    return GroupedEmbeddingConfig(
        data_type=DataType.FP32,
        pooling=PoolingType.SUM,
        is_weighted=False,
        has_feature_processor=False,
        compute_kernel=compute_kernel,
        embedding_tables=tables,
    )


class _Built(Exception):
    """Raised by the TBE stand-in once it has recorded its arguments."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("recorded")
        self.kwargs = kwargs


def _record_split_tbe(*args: Any, **kwargs: Any) -> None:
    raise _Built(kwargs)


@pytest.mark.parametrize(
    ("device", "kernel", "compute_device", "location"),
    [
        # npu takes fbgemm's GPU path with weights in device memory.
        ("npu:1", "fused", ComputeDevice.CUDA, EmbeddingLocation.DEVICE),
        # upstream routing, unchanged:
        ("cuda:0", "fused", ComputeDevice.CUDA, EmbeddingLocation.DEVICE),
        (
            "cuda:0",
            "fused_uvm_caching",
            ComputeDevice.CUDA,
            EmbeddingLocation.MANAGED_CACHING,
        ),
        ("mtia:0", "fused", ComputeDevice.MTIA, EmbeddingLocation.HOST),
        ("cpu", "fused", ComputeDevice.CPU, EmbeddingLocation.HOST),
    ],
)
@pytest.mark.parametrize("module", ["BatchedFusedEmbeddingBag", "BatchedFusedEmbedding"])
def test_fused_kernels_choose_fbgemm_compute_device_and_location(
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    device: str,
    kernel: str,
    compute_device: ComputeDevice,
    location: EmbeddingLocation,
) -> None:
    from torchrec.distributed import batched_embedding_kernel as bek

    monkeypatch.setattr(bek, "SplitTableBatchedEmbeddingBagsCodegen", _record_split_tbe)
    # Device strings are parsed here, after the "npu" name is registered (not at collection).
    with pytest.raises(_Built) as built:
        getattr(bek, module)(_grouped_config(kernel), device=torch.device(device))
    specs = built.value.kwargs["embedding_specs"]
    assert specs == [(10, 4, location, compute_device), (20, 8, location, compute_device)]
    assert built.value.kwargs["device"] == torch.device(device)


class _HostDenseTBE(DenseTableBatchedEmbeddingBagsCodegen):
    """The real dense TBE, built on the CPU as torchrec asks, recording where it is moved.

    Moving is recorded but not done: there is no npu memory here.
    """

    moves: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.init_kwargs = dict(kwargs)
        super().__init__(*args, **kwargs)
        self.moves = []

    def to(self, *args: Any, **kwargs: Any) -> _HostDenseTBE:  # type: ignore[override]
        self.moves.append((args, kwargs))
        return self


@pytest.mark.parametrize("module", ["BatchedDenseEmbeddingBag", "BatchedDenseEmbedding"])
def test_dense_tables_for_npu_are_built_on_host_then_moved(
    monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    from torchrec.distributed import batched_embedding_kernel as bek

    monkeypatch.setattr(bek, "DenseTableBatchedEmbeddingBagsCodegen", _HostDenseTBE)
    npu1 = torch.device("npu", 1)
    lookup = getattr(bek, module)(_grouped_config("dense"), device=npu1)
    emb = lookup.emb_module
    assert isinstance(emb, _HostDenseTBE)
    # fbgemm 1.1.0's dense TBE has no device argument: torchrec builds it on the host ...
    assert emb.init_kwargs["use_cpu"] is True
    assert emb.init_kwargs["use_mtia"] is False
    # ... moves it to the requested npu device, and points fbgemm's VBE metadata there,
    assert emb.moves == [((npu1,), {})]
    assert emb.current_device == npu1
    # while feature_dims, host metadata, stays on the CPU.
    assert emb.feature_dims.device == torch.device("cpu")
    # 10 x 4 + 20 x 8 weights, one slice per table.
    assert emb.weights.numel() == 200
    assert sorted(lookup._param_per_table) == ["t0", "t1"]


def test_dense_tables_for_cpu_are_not_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchrec.distributed import batched_embedding_kernel as bek

    monkeypatch.setattr(bek, "DenseTableBatchedEmbeddingBagsCodegen", _HostDenseTBE)
    lookup = bek.BatchedDenseEmbeddingBag(_grouped_config("dense"), device=torch.device("cpu"))
    emb = lookup.emb_module
    assert emb.init_kwargs["use_cpu"] is True
    assert emb.moves == []
    assert emb.current_device == torch.device("cpu")


class _FakeStream:
    def __init__(self, priority: int = 0) -> None:
        self.priority = priority


def _fake_device_module() -> types.SimpleNamespace:
    return types.SimpleNamespace(Stream=_FakeStream, stream=lambda s: s)


def test_sparse_dist_pipeline_creates_streams_for_npu(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchrec.distributed.train_pipeline import TrainPipelineSparseDist

    fake = _fake_device_module()
    asked: list[Any] = []

    def get_device_module(device: Any = None) -> Any:
        asked.append(device)
        return fake

    monkeypatch.setattr(torch, "get_device_module", get_device_module)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    npu0 = torch.device("npu", 0)
    pipeline = TrainPipelineSparseDist(model, optimizer, npu0)
    # Two high-priority side streams (H2D copy and input dist) on the npu device module.
    assert isinstance(pipeline._memcpy_stream, _FakeStream)
    assert isinstance(pipeline._data_dist_stream, _FakeStream)
    assert (pipeline._memcpy_stream.priority, pipeline._data_dist_stream.priority) == (-1, -1)
    assert pipeline._stream_context is fake.stream
    assert set(asked) == {npu0}

    asked.clear()
    cpu_pipeline = TrainPipelineSparseDist(model, optimizer, torch.device("cpu"))
    assert cpu_pipeline._memcpy_stream is None
    assert cpu_pipeline._data_dist_stream is None
    assert asked == []


def test_base_pipeline_and_record_stream_for_npu(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchrec.distributed.train_pipeline import TrainPipelineBase
    from torchrec.distributed.train_pipeline.utils import recursive_record_stream

    fake = _fake_device_module()
    monkeypatch.setattr(torch, "get_device_module", lambda device=None: fake)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    pipeline = TrainPipelineBase(model, optimizer, torch.device("npu", 0))
    assert isinstance(pipeline._memcpy_stream, _FakeStream)

    recorded: list[Any] = []

    class Tensorish(torch.Tensor):
        @property
        def device(self) -> torch.device:  # type: ignore[override]
            return torch.device("npu", 0)

        def record_stream(self, stream: Any) -> None:  # type: ignore[override]
            recorded.append(stream)

    stream = _FakeStream()
    recursive_record_stream(torch.zeros(1).as_subclass(Tensorish), stream)
    assert recorded == [stream]
    # A CPU tensor has no stream to record on (upstream behaviour).
    recursive_record_stream(torch.zeros(1), stream)
    assert recorded == [stream]
