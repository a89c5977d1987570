"""fbgemm_npu_api: npu kernels for fbgemm's operators and mxrec's rank-1 gather.

``import fbgemm_npu_api`` is the whole interface: it imports fbgemm_gpu (which defines the
fbgemm schemas) and loads the extension, which registers PrivateUse1 kernels for them and
defines ``torch.ops.mxrec.gather_for_rank1`` / ``index_select_for_rank1_backward``.

On cann hosts the operators' CANN packages must be found by the runtime: the loader prepends
the installed package tree to ASCEND_CUSTOM_OPP_PATH. The sim build (``backend() == "sim"``)
runs the operators' sim libraries bundled in this package and changes no environment.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import fbgemm_gpu  # noqa: F401  (defines the fbgemm schemas the extension registers kernels for)
import torch  # noqa: F401

__all__ = ["backend"]


def _point_cann_at_operator_packages() -> None:
    # Only the npu variant ships operator packages (``opp/``, with vendors/config.ini naming
    # them in load_priority). CANN reads ASCEND_CUSTOM_OPP_PATH when it loads operators, so
    # this runs before the extension is loaded.
    opp = Path(__file__).resolve().parent / "opp"
    config = opp / "vendors" / "config.ini"
    if not config.is_file():
        return
    paths = [p for p in os.environ.get("ASCEND_CUSTOM_OPP_PATH", "").split(":") if p]
    if str(opp) not in paths:
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = ":".join([str(opp), *paths])
    # The extension declares each operator's aclnn entry points weak: loading every vendor's
    # op_api library globally first resolves them; an operator whose package is missing then
    # fails its call with an error naming it, instead of the whole adapter failing to load.
    for line in config.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("load_priority="):
            for vendor in filter(None, line.split("=", 1)[1].strip().split(",")):
                lib = opp / "vendors" / vendor / "op_api" / "lib" / "libcust_opapi.so"
                if lib.is_file():
                    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)


def _variant() -> str:
    marker = Path(__file__).resolve().parent / "_variant"
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else "sim"


if _variant() == "npu":
    # The npu variant links against libtorch_npu and runs on its streams: torch_npu must be
    # loaded (and have initialised the device) first.
    import torch_npu  # noqa: F401

_point_cann_at_operator_packages()

from fbgemm_npu_api import _C  # noqa: E402  (loading it registers the kernels)


def backend() -> str:
    """The backend compiled into the extension: ``"sim"`` or ``"npu"``."""
    return str(_C.backend())
