"""Calling a sim operator library from Python (ctypes), for the kernel tests and benchmarks.

Tensors are passed as raw host pointers with dtype and shape, exactly as the C ABI in
include/recsdk_sim/api.h takes them; this module has no torch or numpy dependency. The ABI's
sizes, status codes and counter fields are read from api.h itself, so this harness cannot drift
from the header. It lives beside the emulation it drives, not in the build tool.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recsdk_build.ops.catalogue import DTYPES, OpSpec

API_HEADER = Path(__file__).resolve().parent / "include" / "recsdk_sim" / "api.h"


def _read_abi(text: str) -> tuple[dict[str, int], dict[int, str], tuple[str, ...]]:
    defines = {m[0]: int(m[1]) for m in re.findall(r"#define RECSDK_SIM_(\w+) (\d+)", text)}
    statuses = {
        int(value): name.lower().replace("_", " ")
        for name, value in re.findall(r"RECSDK_SIM_(\w+) = (\d+),", text)
    }
    body = re.search(r"typedef struct RecsdkSimCoreStats \{(.*?)\}", text, re.DOTALL)
    if body is None:
        raise RuntimeError(f"{API_HEADER}: no RecsdkSimCoreStats")
    fields = tuple(re.findall(r"uint64_t\s+(\w+);", body.group(1)))
    return defines, statuses, fields


_DEFINES, STATUS, STAT_FIELDS = _read_abi(API_HEADER.read_text(encoding="utf-8"))
MAX_DIMS = _DEFINES["MAX_DIMS"]
MAX_CORES = _DEFINES["MAX_CORES"]
MESSAGE_BYTES = _DEFINES["MESSAGE_BYTES"]


class _Tensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_DIMS),
    )


class _Attr(ctypes.Structure):
    _fields_ = (
        ("kind", ctypes.c_int32),
        ("count", ctypes.c_int32),
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
        ("ints", ctypes.POINTER(ctypes.c_int64)),
    )


class _Options(ctypes.Structure):
    _fields_ = (
        ("soc", ctypes.c_char_p),
        ("max_cores", ctypes.c_int32),
        ("no_poison", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("min_core_bytes", ctypes.c_int64),
        ("ub_bytes", ctypes.c_int64),
    )


class _CoreStats(ctypes.Structure):
    _fields_ = tuple((name, ctypes.c_uint64) for name in STAT_FIELDS)


class _Peak(ctypes.Structure):
    _fields_ = (
        ("clock_hz", ctypes.c_double),
        ("hbm_bytes_per_s", ctypes.c_double),
        ("core_dma_bytes_per_s", ctypes.c_double),
        ("vector_cores", ctypes.c_uint32),
        ("cube_cores", ctypes.c_uint32),
        ("cube_macs_b16", ctypes.c_uint32),
        ("cube_macs_f32", ctypes.c_uint32),
        ("cube_macs_b8", ctypes.c_uint32),
        ("vector_bytes_per_cycle", ctypes.c_uint32),
    )


class _Report(ctypes.Structure):
    _fields_ = (
        ("status", ctypes.c_int32),
        ("block_dim", ctypes.c_int32),
        ("tiling_key", ctypes.c_uint64),
        ("workspace_bytes", ctypes.c_uint64),
        ("tiling_bytes", ctypes.c_uint64),
        ("num_cores", ctypes.c_int32),
        ("modelled_bound", ctypes.c_int32),
        ("modelled_core", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("peak", _Peak),
        ("modelled_seconds", ctypes.c_double),
        ("modelled_cube_seconds", ctypes.c_double),
        ("modelled_vector_seconds", ctypes.c_double),
        ("modelled_dma_seconds", ctypes.c_double),
        ("modelled_hbm_seconds", ctypes.c_double),
        ("cores", _CoreStats * MAX_CORES),
        ("message", ctypes.c_char * MESSAGE_BYTES),
    )


# RecsdkSimBound, in order.
BOUNDS = ("cube", "vector", "dma", "hbm")


@dataclass(frozen=True)
class Model:
    """The report's modelled time: a roofline estimate (recsdk_sim/model.h), not a simulation."""

    seconds: float
    bound: str  # which term: cube, vector, dma (one core's share of HBM), hbm (all cores)
    core: int  # the cores[] entry that bounds it, -1 for hbm
    cube_seconds: float
    vector_seconds: float
    dma_seconds: float
    hbm_seconds: float
    peak: dict[str, float]

    @classmethod
    def from_report(cls, report: _Report) -> Model:
        return cls(
            seconds=report.modelled_seconds,
            bound=BOUNDS[report.modelled_bound] if 0 <= report.modelled_bound < 4 else "?",
            core=report.modelled_core,
            cube_seconds=report.modelled_cube_seconds,
            vector_seconds=report.modelled_vector_seconds,
            dma_seconds=report.modelled_dma_seconds,
            hbm_seconds=report.modelled_hbm_seconds,
            peak={name: getattr(report.peak, name) for name, _ in _Peak._fields_},
        )


@dataclass(frozen=True)
class TensorArg:
    """A contiguous host tensor: its address, dtype name (op.toml spelling) and shape."""

    data_ptr: int
    dtype: str
    shape: tuple[int, ...]


@dataclass
class LaunchResult:
    status: int
    message: str
    block_dim: int
    tiling_key: int
    workspace_bytes: int
    cores: list[dict[str, int]] = field(default_factory=list)
    model: Model | None = None

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def status_name(self) -> str:
        return STATUS.get(self.status, str(self.status))

    def total(self, counter: str) -> int:
        return sum(c[counter] for c in self.cores)

    @property
    def gm_bytes(self) -> int:
        return self.total("gm_read_bytes") + self.total("gm_write_bytes")

    @property
    def workspace_bytes_moved(self) -> int:
        """The part of gm_bytes that was the user workspace (L2-resident scratch on a device)."""
        return self.total("gm_workspace_read_bytes") + self.total("gm_workspace_write_bytes")

    def kind(self, core_type: int) -> list[dict[str, int]]:
        """The entries of one core type (0: AIV, 1: AIC)."""
        return [c for c in self.cores if c["core_type"] == core_type]

    def balance(self) -> float:
        """The busiest core's global-memory traffic over the mean across the launched cores."""
        work = [c["gm_read_bytes"] + c["gm_write_bytes"] for c in self.cores]
        mean = sum(work) / len(work) if work else 0.0
        return max(work) / mean if mean else 1.0


class SimError(RuntimeError):
    def __init__(self, result: LaunchResult) -> None:
        super().__init__(f"{result.status_name}: {result.message}")
        self.result = result


class SimOp:
    """One operator's sim library."""

    def __init__(self, library: Path, spec: OpSpec, *, global_symbols: bool = False) -> None:
        """``global_symbols`` loads the library RTLD_GLOBAL, as a program linking several
        operator libraries does (tests use it to check the libraries stay independent)."""
        self.spec = spec
        mode = ctypes.RTLD_GLOBAL if global_symbols else ctypes.RTLD_LOCAL
        self._lib = ctypes.CDLL(str(library), mode=mode)
        self._fn = getattr(self._lib, f"recsdk_sim_{spec.name}")
        self._fn.restype = ctypes.c_int32
        self._fn.argtypes = (
            ctypes.POINTER(_Tensor),
            ctypes.c_int32,
            ctypes.POINTER(_Attr),
            ctypes.c_int32,
            ctypes.POINTER(_Options),
            ctypes.POINTER(_Report),
        )

    def launch_named(
        self,
        tensors: Mapping[str, TensorArg | None],
        attrs: Mapping[str, int | float | bool | Sequence[int]],
        **launch: Any,
    ) -> LaunchResult:
        """launch() with tensors and attributes by their op.toml names, in any order: a tensor
        left out is an absent optional; an attribute left out takes its op.toml default."""
        tensor_names = [t.name for t in self.spec.tensors]
        attr_names = [a.name for a in self.spec.attrs]
        unknown = sorted(set(tensors) - set(tensor_names)) + sorted(set(attrs) - set(attr_names))
        if unknown:
            raise ValueError(f"{self.spec.name}: op.toml names no {', '.join(unknown)}")
        values = []
        for a in self.spec.attrs:
            if a.name not in attrs and a.default is None:
                raise ValueError(f"{self.spec.name}: attribute {a.name} has no default; give it")
            values.append(attrs.get(a.name, a.default))
        return self.launch([tensors.get(n) for n in tensor_names], values, **launch)

    def launch(
        self,
        tensors: Sequence[TensorArg | None],
        attrs: Sequence[int | float | bool | Sequence[int]] = (),
        *,
        soc: str | None = None,
        max_cores: int = 0,
        poison: bool = True,
        min_core_bytes: int = 0,
        ub_bytes: int = 0,
        check: bool = True,
    ) -> LaunchResult:
        """Run the operator; ``tensors`` are inputs then outputs (None: absent optional)."""
        c_tensors = (_Tensor * max(1, len(tensors)))()
        for slot, t in zip(c_tensors, tensors, strict=False):
            if t is None:
                slot.data, slot.dtype, slot.ndim = None, 0, -1
                continue
            if len(t.shape) > MAX_DIMS:
                raise ValueError("too many dimensions")
            slot.data = t.data_ptr or None
            slot.dtype = DTYPES[t.dtype][0]
            slot.ndim = len(t.shape)
            for i, d in enumerate(t.shape):
                slot.shape[i] = d
        c_attrs = (_Attr * max(1, len(attrs)))()
        keep: list[object] = []
        for slot, value, spec in zip(c_attrs, attrs, self.spec.attrs, strict=False):
            slot.kind = spec.kind
            if spec.type == "int_list":
                assert isinstance(value, Sequence)
                arr = (ctypes.c_int64 * max(1, len(value)))(*value)
                keep.append(arr)
                slot.count = len(value)
                slot.ints = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
            elif spec.type == "float":
                slot.f = float(value)  # type: ignore[arg-type]
            else:
                slot.i = int(value)  # type: ignore[call-overload]
        options = _Options(
            soc.encode() if soc else None,
            max_cores,
            0 if poison else 1,
            0,
            min_core_bytes,
            ub_bytes,
        )
        report = _Report()
        self._fn(
            c_tensors,
            len(tensors),
            c_attrs,
            len(attrs),
            ctypes.byref(options),
            ctypes.byref(report),
        )
        result = LaunchResult(
            status=report.status,
            message=report.message.decode(errors="replace"),
            block_dim=report.block_dim,
            tiling_key=report.tiling_key,
            workspace_bytes=report.workspace_bytes,
            cores=[
                {name: getattr(report.cores[i], name) for name in STAT_FIELDS}
                for i in range(report.num_cores)
            ],
            model=Model.from_report(report),
        )
        if check and not result.ok:
            raise SimError(result)
        return result
