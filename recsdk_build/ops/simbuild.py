"""Compiling an operator for the sim target: its AscendC kernel and tiling, with the host C++
compiler, against the header-only emulation in kernels/sim, into ``mxrec_opp_<op>_sim.so``.

A build is keyed by a digest of everything it reads (op sources, shared headers, the generator,
the compiler and flags); an operator whose digest matches its stamp is not rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recsdk_build.errors import BuildError, ToolMissingError
from recsdk_build.ops import codegen
from recsdk_build.ops.catalogue import OpSpec

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
            out = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
            first = (out.stdout or out.stderr).splitlines()
            return HostCompiler(found, first[0] if first else "unknown")
    raise ToolMissingError(
        "the sim target needs a C++17 compiler (g++ or clang++), none was found",
        hint="install g++ (e.g. apt-get install g++) or set $CXX",
    )


def library_name(spec: OpSpec) -> str:
    return f"mxrec_opp_{spec.name}_sim.so"


def header_name(spec: OpSpec) -> str:
    return f"mxrec_sim_{spec.name}.h"


def _hash_files(digest: hashlib._Hash, root: Path, base: Path) -> None:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(base)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())


def generator_digest() -> str:
    """The generator and this module are inputs of every build."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in ("codegen.py", "simbuild.py", "catalogue.py"):
        digest.update(hashlib.sha256((here / name).read_bytes()).digest())
    return digest.hexdigest()


def op_digest(spec: OpSpec, kernels: Path, compiler: HostCompiler) -> str:
    digest = hashlib.sha256()
    _hash_files(digest, spec.directory, kernels)
    _hash_files(digest, kernels / "common", kernels)
    _hash_files(digest, kernels / "sim" / "include", kernels)
    digest.update(generator_digest().encode())
    digest.update(json.dumps([compiler.version, SIM_CXXFLAGS]).encode())
    return digest.hexdigest()


def include_dirs(spec: OpSpec, kernels: Path) -> list[Path]:
    return [
        kernels / "sim" / "include",
        kernels / "common",
        spec.directory / "op_kernel",
        spec.directory / "op_host",
    ]


def compile_command(
    spec: OpSpec, kernels: Path, source: Path, output: Path, compiler: HostCompiler
) -> list[str]:
    cmd = [compiler.path, *SIM_CXXFLAGS]
    for inc in include_dirs(spec, kernels):
        cmd += ["-I", str(inc)]
    return [*cmd, str(source), "-o", str(output)]


@dataclass
class SimBuildResult:
    spec: OpSpec
    library: Path
    header: Path
    rebuilt: bool
    seconds: float = 0.0


def is_current(spec: OpSpec, out_dir: Path, digest: str) -> bool:
    stamp = out_dir / STAMP
    lib = out_dir / library_name(spec)
    if not (stamp.is_file() and lib.is_file()):
        return False
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return data.get("digest") == digest and data.get("sha256") == _sha256(lib)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_op(
    spec: OpSpec,
    kernels: Path,
    out_dir: Path,
    compiler: HostCompiler,
    run: Callable[[list[str], str], None] | None = None,
) -> SimBuildResult:
    """Build (or reuse) ``out_dir/mxrec_opp_<op>_sim.so`` and its adapter header.

    The library is compiled under a temporary name and renamed into place, so an interrupted
    build never leaves a half-written library behind.
    """
    import time

    started = time.monotonic()
    digest = op_digest(spec, kernels, compiler)
    lib = out_dir / library_name(spec)
    header = out_dir / header_name(spec)
    if is_current(spec, out_dir, digest) and header.is_file():
        return SimBuildResult(spec, lib, header, rebuilt=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    gen = out_dir / "gen"
    source = gen / f"{spec.name}_sim_launch.cpp"
    codegen.write_if_changed(source, codegen.sim_launcher(spec))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{lib.name}.", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        cmd = compile_command(spec, kernels, source, tmp, compiler)
        (run or _run)(cmd, f"compiling {spec.name} for sim")
        os.replace(tmp, lib)
    finally:
        tmp.unlink(missing_ok=True)
    codegen.write_if_changed(header, codegen.sim_header(spec))
    (out_dir / STAMP).write_text(
        json.dumps({"digest": digest, "sha256": _sha256(lib), "op": spec.name}, indent=2) + "\n",
        encoding="utf-8",
    )
    return SimBuildResult(spec, lib, header, rebuilt=True, seconds=time.monotonic() - started)


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join(f"  | {line}" for line in (proc.stdout + proc.stderr).splitlines()[-30:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")
