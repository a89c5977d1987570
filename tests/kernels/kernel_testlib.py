"""Helpers for the kernel tests: building sim libraries once, torch tensors as sim arguments."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from recsdk_build.ops import catalogue, simbuild
from recsdk_build.pipeline.lock import shared_dir_lock

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
# The emulator's ctypes harness lives beside the emulation (kernels/sim/simrun.py).
if str(KERNELS / "sim") not in sys.path:
    sys.path.insert(0, str(KERNELS / "sim"))
import simrun  # noqa: E402
from simrun import SimError  # noqa: E402, F401  (re-exported for the operator tests)

CHECKS_SRC = Path(__file__).resolve().parent / "sim_checks" / "check_kernels.cpp"


def build_checks_library(root: Path) -> Path:
    """The emulator's self-test kernels (sim_checks/check_kernels.cpp)."""
    return build_test_library(CHECKS_SRC, root)


def build_test_library(src: Path, root: Path) -> Path:
    """A test kernel source built like an operator library: in ``root/checks/``, linking the sim
    runtime in ``root/runtime/``, exporting only its ``recsdk_sim_*`` entry; rebuilt only when
    it, a header beside it, the emulation or kernels/common change."""
    compiler = simbuild.find_host_compiler()
    simbuild.build_runtime(KERNELS, root, compiler)
    digest = hashlib.sha256(src.read_bytes())
    for header in sorted(src.parent.glob("*.h")):
        digest.update(header.name.encode() + header.read_bytes())
    digest.update(simbuild.shared_digest(KERNELS, compiler).encode())
    out_dir = root / "checks"
    lib = out_dir / f"{src.stem}-{digest.hexdigest()[:16]}.so"
    if lib.is_file():
        return lib
    # Parallel test workers share the cache: one compiles, the others wait and reuse.
    with shared_dir_lock(out_dir):
        if not lib.is_file():
            tmp = out_dir / f".{lib.name}.{os.getpid()}.tmp"
            include = [f"-I{KERNELS / 'sim' / 'include'}", f"-I{KERNELS / 'common'}"]
            cmd = [compiler.path, *simbuild.SIM_CXXFLAGS, *include, str(src), "-o", str(tmp)]
            cmd += simbuild.runtime_link_flags(KERNELS, root / simbuild.RUNTIME_DIR)
            subprocess.run(cmd, check=True)
            tmp.replace(lib)
    return lib


def vector_case(dll, name: str, data, out_bytes: int) -> tuple[int, str, object]:
    """Run case ``name`` of a vector sample library (samples/vector_sample.h) on a copy of the
    numpy array ``data``; (status, the checker's message, the ``out_bytes`` bytes written)."""
    import ctypes

    import numpy as np

    inp = np.ascontiguousarray(data).copy()
    out = np.zeros(out_bytes, dtype=np.uint8)
    report = simrun._Report()
    status = dll.recsdk_sim_vector_case(
        name.encode(),
        ctypes.c_void_p(inp.ctypes.data),
        ctypes.c_uint32(inp.nbytes),
        ctypes.c_void_p(out.ctypes.data),
        ctypes.c_uint32(out_bytes),
        ctypes.byref(report),
    )
    return status, report.message.decode(), out


# Where `recsdk-build all` (the README's first command) leaves the ops stage's sim libraries.
STAGE_LIBRARIES = REPO / "build" / "ops" / "sim"


class OpLibraries:
    """Sim libraries of the operators: the ops stage's own when its stamp records exactly these
    inputs (same sources, emulation, generator and compiler: the same library, built once per
    checkout), else built on first use into a persistent cache directory."""

    def __init__(self, cache: Path, stage_libraries: Path | None = STAGE_LIBRARIES) -> None:
        self.cache = cache
        self.stage_libraries = stage_libraries
        self.specs = catalogue.load_catalogue(KERNELS)
        self.compiler = simbuild.find_host_compiler()
        self._shared = simbuild.shared_digest(KERNELS, self.compiler)
        self._ops: dict[str, simrun.SimOp] = {}
        self._results: dict[str, simbuild.SimBuildResult] = {}

    def __call__(self, name: str) -> simrun.SimOp:
        if name not in self._ops:
            spec = self.specs[name]
            result = self._from_stage(spec)
            if result is None:
                simbuild.build_runtime(KERNELS, self.cache, self.compiler)
                result = simbuild.build_op(
                    spec, KERNELS, self.cache / name, self.compiler, shared=self._shared
                )
            self._ops[name] = simrun.SimOp(result.library, spec)
            self._results[name] = result
        return self._ops[name]

    def _from_stage(self, spec: catalogue.OpSpec) -> simbuild.SimBuildResult | None:
        if self.stage_libraries is None:
            return None
        out = self.stage_libraries / spec.name
        header = out / simbuild.header_name(spec)
        digest = simbuild.op_digest(spec, KERNELS, self._shared)
        if not (simbuild.is_current(spec, out, digest) and header.is_file()):
            return None
        return simbuild.SimBuildResult(spec, out / simbuild.library_name(spec), header, False)

    def build(self, name: str) -> simbuild.SimBuildResult:
        """The library and adapter header of an operator (built on first use)."""
        self(name)
        return self._results[name]


def arg(t) -> simrun.TensorArg | None:
    """A contiguous torch tensor as a sim argument (None stays None: an absent optional)."""
    if t is None:
        return None
    assert t.is_contiguous()
    return simrun.TensorArg(t.data_ptr(), str(t.dtype).removeprefix("torch."), tuple(t.shape))


# ---- torch-level calls of the sim operators (what the adapter of issue #5 will do) -------------

# Platform variations: the default tiling, every core busy on tiny inputs, small unified
# buffers (so chunk loops run on small data), fewer cores, another SoC.
PLATFORMS = (
    {},
    {"min_core_bytes": 1},
    {"min_core_bytes": 1, "ub_bytes": 48 * 1024},
    {"min_core_bytes": 64, "ub_bytes": 40 * 1024, "max_cores": 3},
    {"min_core_bytes": 1, "soc": "Ascend910B3"},
)


def complete_cumsum(ops, x, **launch):
    import torch

    shape = list(x.shape)
    shape[-1] += 1
    y = torch.empty(shape, dtype=x.dtype)
    result = ops("asynchronous_complete_cumsum").launch([arg(x), arg(y)], **launch)
    return y, result


def jagged_to_padded_dense(ops, values, offsets, max_length, padding_value=0.0, **launch):
    import torch

    out = torch.empty((offsets.numel() - 1, max_length, *values.shape[1:]), dtype=values.dtype)
    attrs = [max_length, float(padding_value), int(padding_value)]
    result = ops("jagged_to_padded_dense").launch(
        [arg(values), arg(offsets), arg(out)], attrs, **launch
    )
    return out, result


def dense_to_jagged(ops, dense, offsets, total_l=None, **launch):
    import torch

    rows = int(offsets[-1]) if total_l is None else total_l  # the adapter's host read
    values = torch.empty((rows, *dense.shape[2:]), dtype=dense.dtype)
    result = ops("dense_to_jagged").launch(
        [arg(dense), arg(offsets), arg(values)], [rows], **launch
    )
    return values, result


def permute_2d(ops, permute, lengths, values, weights=None, permuted_lengths_sum=None, **launch):
    import torch

    rows = lengths if lengths.dim() == 2 else lengths.view(-1, 1)
    total = (
        int(rows.sum(1)[permute.long()].sum())
        if permuted_lengths_sum is None
        else permuted_lengths_sum
    )
    out_lengths = torch.empty((permute.numel(), *lengths.shape[1:]), dtype=lengths.dtype)
    out_values = torch.empty(total, dtype=values.dtype)
    out_weights = (
        None if weights is None else torch.empty((total, *weights.shape[1:]), dtype=weights.dtype)
    )
    tensors = [permute, lengths, values, weights, out_lengths, out_values, out_weights]
    result = ops("permute2d_sparse_data").launch([arg(t) for t in tensors], [total], **launch)
    return (out_lengths, out_values, out_weights), result


def gather_for_rank1(ops, x, index, **launch):
    import torch

    out = torch.empty(index.shape, dtype=x.dtype)
    result = ops("gather_for_rank1").launch([arg(x), arg(index), arg(out)], **launch)
    return out, result


def index_select_for_rank1_backward(ops, grad, x, index, **launch):
    import torch

    out = torch.empty(x.shape, dtype=grad.dtype)
    tensors = [arg(grad), arg(x), arg(index), arg(out)]
    result = ops("index_select_for_rank1_backward").launch(tensors, **launch)
    return out, result


def bounds_check_indices(
    ops,
    rows_per_table,
    indices,
    offsets,
    mode: int,
    warning,
    weights=None,
    b_offsets=None,
    max_b: int = -1,
    version: int = 1,
    **launch,
):
    """In place, like fbgemm: indices, offsets and warning are updated."""
    tensors = [rows_per_table, indices, offsets, warning, weights, b_offsets, None]
    attrs = [mode, max_b, -1, -1, version]
    return ops("bounds_check_indices").launch([arg(t) for t in tensors], attrs, **launch)
