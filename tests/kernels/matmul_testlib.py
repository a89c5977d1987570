"""Building and calling the Cube test kernels (tests/kernels/sim_checks/matmul_kernels.cpp) from
Python: tests/kernels/test_sim_matmul.py and kernels/bench/bench_matmul.py use it."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

from kernel_testlib import KERNELS, build_test_library, simrun

SRC = Path(__file__).resolve().parent / "sim_checks" / "matmul_kernels.cpp"
TILING_FIELDS = tuple(
    re.findall(
        r"int32_t (\w+) = 0;",
        (KERNELS / "sim" / "include" / "kernel_tiling" / "kernel_tiling.h").read_text(
            encoding="utf-8"
        ),
    )
)


def build_matmul_library(root: Path) -> Path:
    """matmul_kernels.cpp as a library linking the sim runtime in root/runtime."""
    return build_test_library(SRC, root)


class MmCase(ctypes.Structure):
    _fields_ = (
        ("kernel", ctypes.c_char_p),
        ("soc", ctypes.c_char_p),
        *(
            (name, ctypes.c_int64)
            for name in (
                "a_dtype",
                "c_dtype",
                "trans_a",
                "trans_b",
                "m",
                "n",
                "k",
                "has_bias",
                "atomic",
                "repeat",
                "k_split",
                "blocks",
                "tiles",
                "extra",
            )
        ),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("c", ctypes.c_void_p),
        ("ws", ctypes.c_void_p),
        ("ws_bytes", ctypes.c_int64),
        ("out", ctypes.c_void_p),
        ("out_len", ctypes.c_int64),
    )


class Lib:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.dll = ctypes.CDLL(str(path))
        self.dll.recsdk_sim_mm_tiling.restype = ctypes.c_int32
        self.dll.recsdk_sim_mm_run.restype = ctypes.c_int32
        assert self.dll.recsdk_sim_mm_tiling_size() == 4 * len(TILING_FIELDS)

    def tiling(self, case: MmCase) -> dict[str, int]:
        raw = (ctypes.c_int32 * len(TILING_FIELDS))()
        err = ctypes.create_string_buffer(512)
        if self.dll.recsdk_sim_mm_tiling(ctypes.byref(case), raw, err, len(err)) != 0:
            raise ValueError(err.value.decode())
        return dict(zip(TILING_FIELDS, raw, strict=True))

    def run(self, case: MmCase, tiling: dict[str, int]) -> simrun.LaunchResult:
        raw = (ctypes.c_int32 * len(TILING_FIELDS))(*(tiling[f] for f in TILING_FIELDS))
        report = simrun._Report()
        self.dll.recsdk_sim_mm_run(ctypes.byref(case), raw, ctypes.byref(report))
        return simrun.LaunchResult(
            status=report.status,
            message=report.message.decode(errors="replace"),
            block_dim=report.block_dim,
            tiling_key=0,
            workspace_bytes=0,
            cores=[
                {name: getattr(report.cores[i], name) for name in simrun.STAT_FIELDS}
                for i in range(report.num_cores)
            ],
            model=simrun.Model.from_report(report),
        )


# RecsdkSimDType of the torch dtypes the kernels take.
DTYPES = {"torch.float32": 0, "torch.float16": 1, "torch.bfloat16": 2}


def make_case(
    kernel,
    a,
    b,
    c,
    *,
    trans_a=False,
    trans_b=False,
    bias=None,
    atomic=0,
    repeat=1,
    k_split=1,
    blocks=2,
    tiles=4,
    extra=0,
    ws=None,
    out=None,
    soc="Ascend910B1",
    shape=None,
):
    if shape is None:
        m = a.shape[1] if trans_a else a.shape[0]
        k = a.shape[0] if trans_a else a.shape[1]
        n = b.shape[0] if trans_b else b.shape[1]
    else:
        m, n, k = shape
    case = MmCase(
        kernel=kernel.encode(),
        soc=soc.encode(),
        a_dtype=DTYPES[str(a.dtype)],
        c_dtype=DTYPES[str(c.dtype)],
        trans_a=int(trans_a),
        trans_b=int(trans_b),
        m=m,
        n=n,
        k=k,
        has_bias=int(bias is not None),
        atomic=atomic,
        repeat=repeat,
        k_split=k_split,
        blocks=blocks,
        tiles=tiles,
        extra=extra,
        a=a.data_ptr(),
        b=b.data_ptr(),
        bias=bias.data_ptr() if bias is not None else None,
        c=c.data_ptr(),
        ws=ws.data_ptr() if ws is not None else None,
        ws_bytes=ws.numel() * ws.element_size() if ws is not None else 0,
        out=out.data_ptr() if out is not None else None,
        out_len=out.numel() if out is not None else 0,
    )
    # ctypes keeps no reference to the tensors: the caller holds them for the run.
    return case
