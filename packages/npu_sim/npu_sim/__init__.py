"""npu_sim: a simulated Ascend ``npu`` device for torch, on host memory.

``import npu_sim`` registers torch's PrivateUse1 backend under the name ``npu`` with an
allocator over host memory and the core tensor kernels (everything else runs through a CPU
fallback), sparse COO tensors on the device (their parts are npu tensors; other operators on
them fall back to torch's SparseCPU kernels), installs ``torch.npu`` (the device module, also
returned by ``torch.get_device_module("npu")``) and an ``hccl`` process-group backend that
runs collectives on gloo over the same host memory. Code written for Ascend NPUs then runs, and
is tested, on any Linux host.

It is a simulator: kernels execute synchronously on the CPU, streams and events are trivially
complete, and nothing here is faster than the CPU. It refuses to load next to the real
torch_npu and never calls itself torch_npu.
"""

from __future__ import annotations

import importlib.util

import torch

__all__ = ["fallback_stats", "host_view", "reset_fallback_stats"]

if importlib.util.find_spec("torch_npu") is not None:
    raise ImportError(
        "npu_sim refuses to load: the real torch_npu is installed in this environment, and "
        "both would claim the 'npu' device. Use torch_npu on Ascend hosts; npu_sim is for hosts "
        "without an NPU."
    )

_backend = torch._C._get_privateuse1_backend_name()
if _backend not in ("privateuseone", "npu"):
    raise ImportError(
        f"npu_sim cannot load: torch's PrivateUse1 backend is already named {_backend!r}"
    )

# Loading the extension registers the allocator, device guard and kernels.
from npu_sim import _C, _device, _hccl  # noqa: E402

if _backend != "npu":
    torch.utils.rename_privateuse1_backend("npu")
    _C.register_hooks()
    torch._register_device_module("npu", _device)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True
    )
    _hccl.register()

host_view = _C.host_view


def fallback_stats() -> dict[str, int]:
    """aten operators that ran through the CPU fallback since the last reset, with counts
    (those run for sparse arguments are named with a " (sparse)" suffix)."""
    return dict(_C.fallback_stats())


def reset_fallback_stats() -> None:
    _C.reset_fallback_stats()
