"""Huawei's fbgemm-ascend A2 kernels, compiled unchanged against the AscendC emulation.

The wheel is downloaded at test time (``pip download --no-deps``) into a cache directory and the
kernel sources of ``fbgemm_ascend/opp/A2/vendors/<op>/op_impl/ai_core/tbe/<op>_impl/dynamic/``
are extracted beside it; nothing of it is committed. Each kernel is compiled as the CANN operator
compiler would: its own sources untouched, ``-D`` macros for the dtypes (``DTYPE_*``,
``ORIG_DTYPE_*``) and ``-include`` of a tiling-data header written here in the op_host idiom
(``BEGIN_TILING_DATA_DEF`` ...), with this directory's ``harness.h`` as the launcher. The tiling
values are computed by each test (our own tiling, from the kernel's use of the fields).
"""

from __future__ import annotations

import ctypes
import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import kernel_testlib  # noqa: E402
from kernel_testlib import KERNELS, simbuild, simrun  # noqa: E402

WHEEL_SPEC = "fbgemm-ascend==1.5.0"
VENDOR_PREFIX = "fbgemm_ascend/opp/A2/vendors/"


class VendorUnavailable(RuntimeError):
    """The wheel could not be downloaded (no registry access)."""


def fetch_wheel(cache: Path) -> Path:
    """The fbgemm-ascend wheel in ``cache`` (downloaded once)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("fbgemm_ascend-1.5.0-*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache)]
    proc = subprocess.run([*cmd, WHEEL_SPEC], capture_output=True, text=True, timeout=600)
    found = sorted(cache.glob("fbgemm_ascend-1.5.0-*.whl"))
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise VendorUnavailable(f"pip download {WHEEL_SPEC} failed: {tail[0]}")
    return found[0]


def extract_kernels(wheel: Path, dest: Path) -> Path:
    """The A2 vendor kernel sources of the wheel under ``dest`` (extracted once)."""
    marker = dest / ".extracted"
    if not marker.is_file():
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if (
                    name.startswith(VENDOR_PREFIX)
                    and "/op_impl/ai_core/tbe/" in name
                    and "/dynamic/" in name
                    and name.endswith((".cpp", ".h"))
                ):
                    z.extract(name, dest)
        marker.write_text(wheel.name, encoding="utf-8")
    return dest / VENDOR_PREFIX


def kernel_dir(vendors: Path, op: str) -> Path:
    return vendors / op / "op_impl" / "ai_core" / "tbe" / f"{op}_impl" / "dynamic"


# ---- tiling data --------------------------------------------------------------------------------

_CTYPES = {
    "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8,
    "int16_t": ctypes.c_int16,
    "uint16_t": ctypes.c_uint16,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "float": ctypes.c_float,
    "bool": ctypes.c_bool,
    "size_t": ctypes.c_size_t,
}


@dataclass(frozen=True)
class Field:
    ctype: str
    name: str
    count: int = 0  # > 0: an array field (TILING_DATA_FIELD_DEF_ARR)


@dataclass(frozen=True)
class TilingDef:
    """An operator's tiling struct: its class name, the op type it is registered for, fields."""

    struct: str
    op_type: str
    fields: tuple[Field, ...]

    def header(self) -> str:
        """The tiling header in the op_host idiom, expanded by register/tilingdata_base.h."""
        lines = [
            '#include "kernel_operator.h"',
            '#include "register/tilingdata_base.h"',
            f"BEGIN_TILING_DATA_DEF({self.struct})",
        ]
        for f in self.fields:
            if f.count:
                lines.append(f"TILING_DATA_FIELD_DEF_ARR({f.ctype}, {f.count}, {f.name});")
            else:
                lines.append(f"TILING_DATA_FIELD_DEF({f.ctype}, {f.name});")
        lines += [
            "END_TILING_DATA_DEF;",
            f"REGISTER_TILING_DATA_CLASS({self.op_type}, {self.struct})",
            # What the operator compiler's generated header implies for the op being compiled.
            f"REGISTER_TILING_DEFAULT({self.struct});",
            "",
        ]
        return "\n".join(lines)

    def pack(self, values: dict[str, object]) -> bytes:
        """The struct's bytes (pack 8, natural alignment: the layout the kernel reads)."""
        unknown = set(values) - {f.name for f in self.fields}
        if unknown:
            raise ValueError(f"{self.struct}: no field {sorted(unknown)}")
        fields = []
        for f in self.fields:
            t = _CTYPES[f.ctype]
            fields.append((f.name, t * f.count if f.count else t))
        cls = type(self.struct, (ctypes.Structure,), {"_pack_": 8, "_fields_": fields})
        inst = cls()
        for name, value in values.items():
            f = next(f for f in self.fields if f.name == name)
            if f.count:
                arr = getattr(inst, name)
                for i, v in enumerate(value):  # type: ignore[arg-type]
                    arr[i] = v
            else:
                setattr(inst, name, value)
        return bytes(inst)


# ---- build and launch ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VendorOp:
    name: str
    tiling: TilingDef
    args: int  # GM_ADDR arguments before workspace and tiling
    defines: tuple[str, ...] = ()  # -D macros the operator compiler would set


class VendorKernel:
    """One vendor kernel, built for one set of defines."""

    def __init__(self, library: Path, op: VendorOp) -> None:
        self.op = op
        self._lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
        self._fn = self._lib.recsdk_sim_conformance
        self._fn.restype = ctypes.c_int32

    def launch(
        self,
        tensors: Sequence[torch.Tensor | None],
        outputs: Sequence[int],
        tiling: dict[str, object],
        block_dim: int,
        tiling_key: int = 0,
        workspace: int = 0,
        soc: str = "Ascend910B1",
        check: bool = True,
        extra: Sequence[torch.Tensor] = (),
    ) -> simrun.LaunchResult:
        """Run the kernel on ``tensors`` (None: a null GM_ADDR); ``outputs``: the indices the
        kernel may write; ``extra``: read-only global memory the kernel reaches only through
        pointers stored in its arguments (the tensors of a ListTensorDesc)."""
        if len(tensors) != self.op.args:
            raise ValueError(f"{self.op.name}: {self.op.args} tensors expected")
        tensors = [*tensors, *extra]
        n = len(tensors)
        ptrs = (ctypes.c_void_p * n)()
        sizes = (ctypes.c_uint64 * n)()
        writable = (ctypes.c_int32 * n)()
        for i, t in enumerate(tensors):
            if t is None:
                continue
            assert t.is_contiguous()
            ptrs[i] = t.data_ptr() or None
            sizes[i] = t.numel() * t.element_size()
            writable[i] = 1 if i in outputs else 0
        data = self.op.tiling.pack(tiling)
        report = simrun._Report()
        self._fn(
            ptrs,
            sizes,
            writable,
            n,
            data,
            ctypes.c_uint64(len(data)),
            block_dim,
            ctypes.c_uint64(tiling_key),
            ctypes.c_uint64(workspace),
            soc.encode(),
            ctypes.byref(report),
        )
        result = simrun.LaunchResult(
            status=report.status,
            message=report.message.decode(errors="replace"),
            block_dim=report.block_dim,
            tiling_key=report.tiling_key,
            workspace_bytes=report.workspace_bytes,
            cores=[
                {name: getattr(report.cores[i], name) for name in simrun.STAT_FIELDS}
                for i in range(report.num_cores)
            ],
        )
        if check and not result.ok:
            raise simrun.SimError(result)
        return result


def entry_source(op: VendorOp, kdir: Path) -> str:
    args = ", ".join(f"a[{i}]" for i in range(op.args))
    return "\n".join(
        [
            f'#include "{HERE / "harness.h"}"',
            f'#include "{kdir / (op.name + ".cpp")}"',
            "static void RecsdkConfCall(GM_ADDR* a, GM_ADDR ws, GM_ADDR tiling) {",
            f"    {op.name}({args}, ws, tiling);",
            "}",
            f'RECSDK_CONF_ENTRY("{op.name}", RecsdkConfCall)',
            "",
        ]
    )


def build(op: VendorOp, vendors: Path, root: Path) -> VendorKernel:
    """Compile ``op``'s kernel (cached by a digest of its sources, defines, tiling and the
    emulation) into ``root/conformance-<op>/`` and load it."""
    compiler = simbuild.find_host_compiler()
    simbuild.build_runtime(KERNELS, root, compiler)
    kdir = kernel_dir(vendors, op.name)
    digest = hashlib.sha256()
    for path in sorted(kdir.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode() + path.read_bytes())
    header = op.tiling.header()
    source = entry_source(op, kdir)
    for text in (header, source, *op.defines, (HERE / "harness.h").read_text()):
        digest.update(text.encode())
    digest.update(simbuild.shared_digest(KERNELS, compiler).encode())
    out = root / f"conformance-{op.name}"  # beside root/runtime, as the rpath expects
    out.mkdir(parents=True, exist_ok=True)
    lib = out / f"{op.name}-{digest.hexdigest()[:16]}.so"
    if not lib.is_file():
        tiling_h = out / f"{op.name}_tiling_data.h"
        tiling_h.write_text(header, encoding="utf-8")
        src = out / f"{op.name}_conformance.cpp"
        src.write_text(source, encoding="utf-8")
        tmp = lib.with_suffix(".tmp")
        cmd = [
            compiler.path,
            *simbuild.SIM_CXXFLAGS,
            # The vendor sources are not ours: their warnings would bury the emulation's errors.
            "-w",
            f"-I{KERNELS / 'sim' / 'include'}",
            f"-I{KERNELS / 'common'}",
            f"-I{kdir}",
            "-include",
            str(tiling_h),
            *(f"-D{d}" for d in op.defines),
            str(src),
            "-o",
            str(tmp),
            *simbuild.runtime_link_flags(KERNELS, root / simbuild.RUNTIME_DIR),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if " error: " in line]
            shown = "\n".join(errors[:30]) if errors else proc.stderr[-6000:]
            raise RuntimeError(f"compiling {op.name} failed:\n{shown}")
        tmp.replace(lib)
    return VendorKernel(lib, op)


__all__ = ["Field", "TilingDef", "VendorOp", "VendorUnavailable", "build", "kernel_testlib"]
