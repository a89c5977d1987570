"""torchrec's INT8 and FP8 quantised communication (QCommsConfig forward and backward INT8, or
FP8 row-wise with fp8_quantize_dim) under DistributedModelParallel on two npu ranks over hccl:
the all-to-alls of the pooled embeddings and of their gradients go through fbgemm's row-wise
INT8 or FP8 codec on the npu, and the outputs and the weights after one fused-SGD step stay
within the codec's error bound of the same step without quantisation (qcomms_dist.py works the
bound out).
"""

from __future__ import annotations

import npu_dist
import pytest
import qcomms_dist


@pytest.mark.requires_npu
@pytest.mark.requires_npu_ops(
    "fbgemm::FloatToFused8BitRowwiseQuantized", "fbgemm::Fused8BitRowwiseQuantizedToFloat"
)
def test_int8_qcomms_table_wise_forward_and_backward() -> None:
    npu_dist.spawn_ranks(qcomms_dist.qcomms_worker, 2, "npu", "npu")


@pytest.mark.requires_npu
@pytest.mark.requires_npu_ops(
    "fbgemm::FloatToFP8RowwiseQuantized", "fbgemm::FP8RowwiseQuantizedToFloat"
)
def test_fp8_rowwise_qcomms_table_wise_forward_and_backward() -> None:
    npu_dist.spawn_ranks(qcomms_dist.qcomms_worker, 2, "npu", "npu", "fp8")
