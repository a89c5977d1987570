"""The ``hccl`` process-group backend of the simulated device (gloo over host memory)."""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

from npu_sim import _C


def _create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> dist.Backend:
    gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
    return _C.make_hccl_backend(gloo, rank, size)


def register() -> None:
    if not dist.is_available() or hasattr(dist.Backend, "HCCL"):
        return
    # cpu is listed too so that a group created with backend="hccl" can also carry the CPU
    # tensors torchrec exchanges (split sizes), as gloo would.
    dist.Backend.register_backend("hccl", _create, devices=["npu", "cpu"])
