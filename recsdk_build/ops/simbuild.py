"""Compiling an operator for the sim target: its AscendC kernel and tiling, with the host C++
compiler, against the emulation in kernels/sim, into ``mxrec_opp_<op>_sim.so``.

Every operator library links the sim runtime, ``libmxrec_sim_runtime.so`` (kernels/sim/runtime):
the state that must exist once per process (the current core of each thread, the core threads)
lives there, and an operator library exports nothing but its ``recsdk_sim_*`` entry points
(kernels/sim/oplib.map). The runtime sits in ``<root>/runtime/`` beside the operators'
``<root>/<op>/`` directories, and flat beside them once bundled, so the libraries carry both
``$ORIGIN/../runtime`` and ``$ORIGIN`` as their search path.

A build is keyed by a digest of everything it reads (op sources, shared headers, the runtime,
the generator, the compiler and flags); a library whose digest matches its stamp is not rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recsdk_build.errors import BuildError, ToolMissingError
from recsdk_build.hashing import combine, hash_tree, sha256_file
from recsdk_build.ops import codegen
from recsdk_build.ops.catalogue import OpSpec
from recsdk_build.pipeline.atomic import write_text_atomic
from recsdk_build.pipeline.lock import shared_dir_lock
from recsdk_build.proc import probe, run_captured

# -O1 keeps a 2-core build machine responsive (the emulated kernels are small); -fwrapv gives
# signed overflow the two's-complement wrap of the AI core's integer units.
SIM_CXXFLAGS = (
    "-std=c++17",
    "-O1",
    "-g0",
    "-fPIC",
    "-shared",
    "-pthread",
    "-fwrapv",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-Wall",
    "-Wno-unused-function",
    "-Wno-unused-variable",
)
STAMP = "stamp.json"
RUNTIME_NAME = "mxrec_sim_runtime"
RUNTIME_LIBRARY = f"lib{RUNTIME_NAME}.so"
RUNTIME_DIR = "runtime"


@dataclass(frozen=True)
class HostCompiler:
    path: str
    version: str


def find_host_compiler() -> HostCompiler:
    """$CXX, else g++, else c++: the compiler the sim target builds with."""
    for candidate in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if not candidate:
            continue
        found = shutil.which(candidate)
        if found:
            first = (probe([found, "--version"]) or "").splitlines()
            return HostCompiler(found, first[0] if first else "unknown")
    raise ToolMissingError(
        "the sim target needs a C++17 compiler (g++ or clang++), none was found",
        hint="install g++ (e.g. apt-get install g++) or set $CXX",
    )


def library_name(spec: OpSpec) -> str:
    return f"mxrec_opp_{spec.name}_sim.so"


def header_name(spec: OpSpec) -> str:
    return f"mxrec_sim_{spec.name}.h"


def generator_digest() -> str:
    """The generator and this module are inputs of every build."""
    here = Path(__file__).parent
    return combine(*(sha256_file(here / n) for n in ("codegen.py", "simbuild.py", "catalogue.py")))


def runtime_digest(kernels: Path, compiler: HostCompiler) -> str:
    """The runtime library: the whole emulation (headers, runtime source, export map)."""
    return combine(
        hash_tree(kernels / "sim", base=kernels),
        generator_digest(),
        json.dumps([compiler.version, SIM_CXXFLAGS]),
    )


def shared_digest(kernels: Path, compiler: HostCompiler) -> str:
    """What every operator library reads besides its own directory (kernels/common, the
    emulation, the generator, the compiler): computed once per build, not once per operator."""
    return combine(hash_tree(kernels / "common", base=kernels), runtime_digest(kernels, compiler))


def op_digest(spec: OpSpec, kernels: Path, shared: str) -> str:
    """``shared``: shared_digest(kernels, compiler)."""
    return combine(hash_tree(spec.directory, base=kernels), shared)


def include_dirs(spec: OpSpec, kernels: Path) -> list[Path]:
    return [
        kernels / "sim" / "include",
        kernels / "common",
        spec.directory / "op_kernel",
        spec.directory / "op_host",
    ]


def runtime_link_flags(kernels: Path, runtime_dir: Path) -> list[str]:
    """How a library of kernels links the sim runtime, exporting only its C entry points."""
    return [
        f"-Wl,--version-script={kernels / 'sim' / 'oplib.map'}",
        f"-L{runtime_dir}",
        f"-l{RUNTIME_NAME}",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../" + RUNTIME_DIR + ":$ORIGIN",
    ]


def compile_command(
    spec: OpSpec, kernels: Path, source: Path, output: Path, compiler: HostCompiler
) -> list[str]:
    """Compile an operator's launcher; ``output`` goes in ``<root>/<op>/``, the runtime in
    ``<root>/runtime/``. The launcher's directory holds the other generated sources (the
    tiling's <op>_op_args.h), so it comes first on the include path."""
    cmd = [compiler.path, *SIM_CXXFLAGS, "-I", str(source.parent)]
    for inc in include_dirs(spec, kernels):
        cmd += ["-I", str(inc)]
    runtime_dir = output.parent.parent / RUNTIME_DIR
    return [*cmd, str(source), "-o", str(output), *runtime_link_flags(kernels, runtime_dir)]


def runtime_compile_command(kernels: Path, output: Path, compiler: HostCompiler) -> list[str]:
    return [
        compiler.path,
        *SIM_CXXFLAGS,
        "-I",
        str(kernels / "sim" / "include"),
        "-I",
        str(kernels / "common"),
        str(kernels / "sim" / "runtime" / "sim_runtime.cpp"),
        f"-Wl,-soname,{RUNTIME_LIBRARY}",
        "-o",
        str(output),
    ]


@dataclass
class SimBuildResult:
    spec: OpSpec
    library: Path
    header: Path
    rebuilt: bool
    seconds: float = 0.0


def is_current(spec: OpSpec, out_dir: Path, digest: str) -> bool:
    return _stamp_matches(out_dir / library_name(spec), out_dir / STAMP, digest)


def _stamp_matches(lib: Path, stamp: Path, digest: str) -> bool:
    if not (stamp.is_file() and lib.is_file()):
        return False
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return data.get("digest") == digest and data.get("sha256") == sha256_file(lib)


@dataclass
class RuntimeBuildResult:
    library: Path
    rebuilt: bool
    seconds: float = 0.0


def runtime_library(root: Path) -> Path:
    return root / RUNTIME_DIR / RUNTIME_LIBRARY


def build_runtime(
    kernels: Path,
    root: Path,
    compiler: HostCompiler,
    run: Callable[[list[str], str], None] | None = None,
) -> RuntimeBuildResult:
    """Build (or reuse) ``root/runtime/libmxrec_sim_runtime.so``; operator libraries built
    under ``root`` link it."""
    started = time.monotonic()
    out_dir = root / RUNTIME_DIR
    lib = out_dir / RUNTIME_LIBRARY
    digest = runtime_digest(kernels, compiler)
    if _stamp_matches(lib, out_dir / STAMP, digest):
        return RuntimeBuildResult(lib, rebuilt=False)
    with shared_dir_lock(out_dir):
        if _stamp_matches(lib, out_dir / STAMP, digest):
            return RuntimeBuildResult(lib, rebuilt=False)
        _compile_into_place(
            lib,
            lambda tmp: runtime_compile_command(kernels, tmp, compiler),
            "the sim runtime",
            run,
        )
        _write_stamp(out_dir / STAMP, digest, lib, "runtime")
    return RuntimeBuildResult(lib, rebuilt=True, seconds=time.monotonic() - started)


def build_op(
    spec: OpSpec,
    kernels: Path,
    out_dir: Path,
    compiler: HostCompiler,
    run: Callable[[list[str], str], None] | None = None,
    shared: str | None = None,
) -> SimBuildResult:
    """Build (or reuse) ``out_dir/mxrec_opp_<op>_sim.so`` and its adapter header.

    ``out_dir`` is ``<root>/<op>``; the runtime must already be built in ``<root>/runtime``
    (build_runtime). ``shared``: shared_digest(), when the caller builds several operators.
    """
    started = time.monotonic()
    digest = op_digest(spec, kernels, shared or shared_digest(kernels, compiler))
    lib = out_dir / library_name(spec)
    header = out_dir / header_name(spec)
    if is_current(spec, out_dir, digest) and header.is_file():
        return SimBuildResult(spec, lib, header, rebuilt=False)
    if not runtime_library(out_dir.parent).is_file():
        raise BuildError(
            f"{spec.name}: the sim runtime {runtime_library(out_dir.parent)} is missing; "
            "build it first (simbuild.build_runtime)"
        )
    with shared_dir_lock(out_dir):
        if is_current(spec, out_dir, digest) and header.is_file():
            return SimBuildResult(spec, lib, header, rebuilt=False)
        gen = out_dir / "gen"
        source = gen / f"{spec.name}_sim_launch.cpp"
        codegen.write_if_changed(source, codegen.sim_launcher(spec))
        codegen.write_if_changed(gen / codegen.args_header_name(spec), codegen.op_args_header(spec))
        codegen.write_if_changed(gen / codegen.kernel_entry_name(spec), codegen.kernel_entry(spec))
        _compile_into_place(
            lib,
            lambda tmp: compile_command(spec, kernels, source, tmp, compiler),
            f"compiling {spec.name} for sim",
            run,
        )
        codegen.write_if_changed(header, codegen.sim_header(spec))
        _write_stamp(out_dir / STAMP, digest, lib, spec.name)
    return SimBuildResult(spec, lib, header, rebuilt=True, seconds=time.monotonic() - started)


def _compile_into_place(
    lib: Path,
    command: Callable[[Path], list[str]],
    what: str,
    run: Callable[[list[str], str], None] | None,
) -> None:
    """Compile under a temporary name and rename into place, so an interrupted build never
    leaves a half-written library behind."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{lib.name}.", dir=lib.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        (run or _run)(command(tmp), what)
        os.replace(tmp, lib)
    finally:
        tmp.unlink(missing_ok=True)


def _write_stamp(stamp: Path, digest: str, lib: Path, name: str) -> None:
    record = {"digest": digest, "sha256": sha256_file(lib), "op": name}
    write_text_atomic(stamp, json.dumps(record, indent=2) + "\n")


def _run(cmd: list[str], what: str) -> None:
    run_captured(cmd, what)
