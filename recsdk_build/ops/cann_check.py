"""Our kernels checked by CANN's own rules before they are built, on either target.

Two checks, per operator of the catalogue:

- **Tiling keys** (no headers needed): CANN's operator compiler preprocesses the kernel and
  scans it for ``g_tilingKey == (<key>)`` (what ``TILING_KEY_IS(<key>)`` expands to,
  ``find_tilingkey`` in asc-devkit's tools/build/asc_op_compile_base); a key that is not a
  numeric literal after preprocessing (a ``constexpr`` variable) is rejected, and only the keys
  found get a kernel binary. The API documentation (TILING_KEY_IS) allows the macro only as an
  ``if``/``else if`` condition. So: every ``TILING_KEY_IS`` argument is a non-negative integer
  literal or a macro that expands to one; every use is (part of) an ``if`` condition; every key
  the host tiling sets (``plan.tiling_key = ...``) has a ``TILING_KEY_IS`` in the kernel.
- **Type-check against the real AscendC headers**: every dtype variant of the kernel (the
  combinations ``OpSpec.variants`` gives, as the sim launcher builds them) is compiled with
  ``g++ -fsyntax-only`` in CANN's CPU debug mode (``-DASCENDC_CPU_DEBUG=1
  -D__NPU_ARCH__=2201``), with the include directories asc-devkit's CPU mode uses
  (cmake/asc/asc_modules/CMakeASCInformation.cmake), the op's ``DTYPE_*``/``ORIG_DTYPE_*``
  macros, the tiling header CANN's operator compiler ``-include``s (written here the way
  get_op_tiling.py writes it for a kernel that registers a standard C++ tiling struct),
  ``kernel_tiling/kernel_tiling.h`` (the adv_api tiling structs, generated from the headers'
  ``*tilingdata.h`` as asc-devkit's build does) and, for the closed CPU library a toolkit
  ships but the dev kit lacks, the declaration-only stand-ins in kernels/cann_cpu_stubs.

Where the headers come from (``find_headers``): ``--ascendc-headers DIR`` (an asc-devkit tree,
or a CANN install), else a toolkit's ``$ASCEND_HOME_PATH`` (or the toolkit ``--target`` finds),
else the pinned export beside the project (``<project>/../shared/ascendc/asc-devkit``, how CI
finds it). With none, the type-check is reported as not run, with the reason; never as passed.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from recsdk_build.errors import BuildError, UsageError
from recsdk_build.hashing import hash_tree, sha256_file, sha256_text
from recsdk_build.ops import codegen
from recsdk_build.ops.catalogue import DTYPES, OpSpec
from recsdk_build.toolchain import find_cann

STUBS_DIR = "cann_cpu_stubs"  # under kernels/
# CANN's CPU debug mode for the 910B (Atlas A2: dav-2201); -fsyntax-only: nothing is generated.
CPU_DEBUG_FLAGS = (
    "-fsyntax-only",
    "-std=c++17",
    "-DASCENDC_CPU_DEBUG=1",
    "-D__NPU_ARCH__=2201",
    "-D_GLIBCXX_USE_CXX11_ABI=0",
)
# Where a toolkit or a dev-kit tree keeps the API headers, relative to its root. A CANN
# install (8.5 and later) has the dev kit under <ASCEND_HOME_PATH>/asc, older ones as
# tikcfw under compiler/tikcpp.
_DEVKIT_SUBDIRS = (".", "asc")
_TIKCFW = Path("compiler") / "tikcpp" / "tikcfw"
# The CPU mode's include directories below the dev-kit root (CMakeASCInformation.cmake's
# -isystem list, minus the directories a given release does not have), then the root itself:
# the impl headers include each other as "impl/...".
_DEVKIT_INCLUDES = (
    "impl/adv_api",
    "impl/basic_api",
    "impl/c_api",
    "impl/micro_api",
    "impl/simt_api",
    "impl/utils",
    "include",
    "include/adv_api",
    "include/adv_api/matmul",
    "include/aicpu_api",
    "include/basic_api",
    "include/c_api",
    "include/interface",
    "include/micro_api",
    "include/simt_api",
    "include/tiling",
    "include/utils",
    ".",
)
_TIKCFW_INCLUDES = (".", "impl", "interface")
DEFAULT_SHARED_EXPORT = Path("..") / "shared" / "ascendc" / "asc-devkit"
# How many compiler diagnostics a failure quotes.
_DIAGNOSTIC_LINES = 12


class CannCheckError(BuildError):
    """A kernel breaks CANN's rules: it does not type-check against the real AscendC headers,
    or its tiling keys are ones CANN's operator compiler rejects."""


# ---- where the headers are ---------------------------------------------------------------------


@dataclass(frozen=True)
class HeaderTree:
    """The AscendC API headers a type-check reads."""

    root: Path  # the dev-kit root (holds include/ and impl/) or a tikcfw directory
    origin: str  # how it was found, for messages and the manifest
    layout: str = "devkit"  # devkit | tikcfw
    # The toolkit's own CPU library headers (tools/tikicpulib/lib/include); None: our stand-ins.
    cpu_library: Path | None = None
    # A toolkit's tikcpp/tikcfw (where lib/ and kernel_tiling/ live), searched after the API.
    extra: tuple[Path, ...] = ()

    def include_dirs(self, stubs: Path) -> list[Path]:
        subdirs = _DEVKIT_INCLUDES if self.layout == "devkit" else _TIKCFW_INCLUDES
        dirs = [self.root / d for d in subdirs if (self.root / d).is_dir()]
        return [*dirs, *self.extra, self.cpu_library or stubs]

    def digest(self) -> str:
        """Path, size and modification time of every file the check may read: hashing the
        contents (40 MB) would cost seconds on every run of the stage, even a cached one."""
        if self.layout == "devkit":
            dirs = [self.root / d for d in ("include", "impl")]
        else:
            dirs = [self.root]
        dirs += [*self.extra, *([self.cpu_library] if self.cpu_library else [])]
        return sha256_text("\n".join(_stat_lines(d) for d in dirs if d.is_dir()))

    def describe(self) -> dict[str, str | None]:
        return {
            "headers": str(self.root),
            "origin": self.origin,
            "cpu_library": str(self.cpu_library) if self.cpu_library else "stand-ins",
        }


def _stat_lines(top: Path) -> str:
    lines = [str(top)]
    base = len(str(top)) + 1
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            lines.append(f"{path[base:]} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(lines)


@dataclass(frozen=True)
class NoHeaders:
    """No header tree: the type-check is not run, and this says why."""

    reason: str


def _tikcfw_dirs(path: Path) -> list[Path]:
    """Where a CANN install keeps tikcfw (asc-devkit's cmake/asc/legacy_modules/function.cmake
    looks in the host architecture's directory first)."""
    return [path / f"{platform.machine()}-linux" / "tikcpp" / "tikcfw", path / _TIKCFW]


def _devkit_root(path: Path) -> tuple[Path, str] | None:
    for sub in _DEVKIT_SUBDIRS:
        root = (path / sub).resolve()
        if (root / "include" / "kernel_operator.h").is_file() and (root / "impl").is_dir():
            return root, "devkit"
    for tik in _tikcfw_dirs(path):
        if (tik / "kernel_operator.h").is_file():
            return tik.resolve(), "tikcfw"
    return None


def _toolkit_cpu_library(home: Path) -> Path | None:
    lib = home / "tools" / "tikicpulib" / "lib" / "include"
    return lib if (lib / "stub_def.h").is_file() else None


def headers_from(path: Path, origin: str) -> HeaderTree:
    """The header tree at ``path`` (an asc-devkit checkout or a CANN install), or a UsageError
    naming what is missing."""
    if not path.is_dir():
        raise UsageError(f"{origin}: {path} is not a directory")
    found = _devkit_root(path)
    if found is None:
        raise UsageError(
            f"{origin}: {path} holds no AscendC headers (looked for include/kernel_operator.h, "
            f"asc/include/kernel_operator.h and {_TIKCFW}/kernel_operator.h)",
            hint="pass an asc-devkit checkout or a CANN toolkit root",
        )
    root, layout = found
    libs = [d for d in _tikcfw_dirs(path) if (d / "lib").is_dir()]
    extra = (libs[0].resolve(),) if layout == "devkit" and libs else ()
    return HeaderTree(root, origin, layout, _toolkit_cpu_library(path), extra)


def find_headers(explicit: Path | None, project_root: Path | None) -> HeaderTree | NoHeaders:
    """--ascendc-headers, else $ASCEND_HOME_PATH (or the toolkit --target finds), else the
    pinned export beside the project."""
    if explicit is not None:
        return headers_from(explicit, "--ascendc-headers")
    home = os.environ.get("ASCEND_HOME_PATH")
    if home and Path(home).is_dir() and _devkit_root(Path(home)) is not None:
        return headers_from(Path(home), "$ASCEND_HOME_PATH")
    toolkit = find_cann()  # the toolkit --target auto/cann finds (set_env.sh, default roots)
    if toolkit is not None and _devkit_root(toolkit.root) is not None:
        return headers_from(toolkit.root, f"the CANN toolkit ({toolkit.root})")
    looked = ["--ascendc-headers (not given)"]
    looked.append(
        f"$ASCEND_HOME_PATH ({home}: no AscendC headers)" if home else "$ASCEND_HOME_PATH (unset)"
    )
    if project_root is not None:
        shared = (project_root / DEFAULT_SHARED_EXPORT).resolve()
        if _devkit_root(shared) is not None:
            return headers_from(shared, f"the pinned export beside the project ({shared})")
        looked.append(f"{shared} (absent)")
    return NoHeaders("no AscendC header tree found: looked at " + ", ".join(looked))


# ---- generated headers ---------------------------------------------------------------------------

_TILING_DEF = re.compile(
    r"^\s*(BEGIN_TILING_DATA_DEF|TILING_DATA_FIELD_DEF(?:_ARR|_STRUCT)?|"
    r"END_TILING_DATA_DEF)\s*(?:\((.*)\))?"
)
# Structs of kernel_tiling.h that CANN also exports to the global namespace (older kernels name
# them unqualified): the adv_api tiling types asc-devkit keeps for compatibility.
_GLOBAL_TILING_STRUCTS = frozenset(
    {
        "TCubeTiling",
        "SoftMaxTiling",
        "LogSoftMaxTiling",
        "BatchNormTiling",
        "DeepNormTiling",
        "GroupNormTiling",
        "LayerNormTiling",
        "LayerNormGradTiling",
        "LayerNormGradBetaTiling",
        "LayerNormSeparateTiling",
        "RmsNormTiling",
        "PadTiling",
        "UnPadTiling",
        "TopkTiling",
        "ConfusionTransposeTiling",
        "Mc2InitTiling",
        "Mc2CcTiling",
        "Mc2ServerCfg",
        "Mc2HcommCfg",
    }
)


def kernel_tiling_header(tree: HeaderTree) -> str:
    """``kernel_tiling/kernel_tiling.h``: every ``BEGIN_TILING_DATA_DEF`` struct of the
    headers' adv_api ``*tilingdata.h`` files as a plain struct (8-byte packing, zeroed fields)
    in ``AscendC::tiling``, as the dev kit's build generates it for the kernel side."""
    base = tree.root / "include" / "adv_api" if tree.layout == "devkit" else tree.root
    structs: list[str] = []
    exported: list[str] = []
    for path in sorted(base.rglob("*tilingdata.h")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = _TILING_DEF.match(line)
            if not m:
                continue
            kind, args = m.group(1), [a.strip() for a in (m.group(2) or "").split(",")]
            if kind == "BEGIN_TILING_DATA_DEF":
                structs += ["#pragma pack(push, 8)", f"struct {args[0]} {{"]
                if args[0] in _GLOBAL_TILING_STRUCTS:
                    exported.append(args[0])
            elif kind == "TILING_DATA_FIELD_DEF_ARR":
                structs.append(f"    {args[0]} {args[2]}[{args[1]}] = {{}};")
            elif kind == "TILING_DATA_FIELD_DEF_STRUCT":
                structs.append(f"    {args[0]} {args[1]};")
            elif kind == "TILING_DATA_FIELD_DEF":
                structs.append(f"    {args[0]} {args[1]} = 0;")
            else:
                structs += ["};", "#pragma pack(pop)"]
    return "\n".join(
        [
            "// Generated by recsdk-build (ops/cann_check.py) from the adv_api *tilingdata.h of",
            f"// {tree.root}; do not edit.",
            "#ifndef __TIKCFW_KERNEL_TILING_H_",
            "#define __TIKCFW_KERNEL_TILING_H_",
            "#include <cstdint>",
            "#include <cstring>",
            "namespace AscendC {",
            "namespace tiling {",
            *structs,
            "}  // namespace tiling",
            "}  // namespace AscendC",
            *(f"using AscendC::tiling::{name};" for name in exported),
            "#endif",
            "",
        ]
    )


def op_tiling_header(spec: OpSpec) -> str:
    """The tiling header CANN's operator compiler writes for a kernel with a registered
    standard C++ tiling struct (dynamic shape) and ``-include``s before the kernel source: the
    GET_TILING_DATA family, reading the struct from the tiling argument (CPU debug form)."""
    guard = f"__{spec.op_type.upper()}_HEADER__"
    s = spec.tiling_struct
    return "\n".join(
        [
            f"// Generated by recsdk-build (ops/cann_check.py) for {spec.name}; do not edit.",
            f"#ifndef {guard}",
            f"#define {guard}",
            '#include "kernel_tiling/kernel_tiling.h"',
            "#define __ASCENDC_INCLUDE_INTERNAL_HEADERS__",
            '#include "kernel_log.h"',
            "#undef __ASCENDC_INCLUDE_INTERNAL_HEADERS__",
            "#define REGISTER_TILINGDATA_SIZE(tiling_struct, counter)",
            "template <class T>",
            "inline __aicore__ void InitTilingData(const __gm__ uint8_t* p_tilingdata, "
            "T* tilingdata) {",
            "    for (uint64_t i = 0; i < sizeof(T); ++i) {",
            "        reinterpret_cast<uint8_t*>(tilingdata)[i] = p_tilingdata[i];",
            "    }",
            "}",
            "#define GET_TILING_DATA(tiling_data, tiling_arg) \\",
            f"    {s} tiling_data;                         \\",
            f"    InitTilingData<{s}>(tiling_arg, &tiling_data);",
            "#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg) \\",
            "    REGISTER_TILINGDATA_SIZE(tiling_struct, __COUNTER__);                  \\",
            "    tiling_struct tiling_data;                                             \\",
            "    InitTilingData<tiling_struct>(tiling_arg, &tiling_data);",
            "#define GET_TILING_DATA_MEMBER(tiling_type, member, var, tiling)              \\",
            "    REGISTER_TILINGDATA_SIZE(tiling_type, __COUNTER__);                      \\",
            "    decltype(((tiling_type*)0)->member) var;                                 \\",
            "    InitTilingData<decltype(((tiling_type*)0)->member)>(                     \\",
            "        tiling + (size_t)(&((tiling_type*)0)->member), &var);",
            "#define __tiling_data_ptr__ __gm__ const",
            "#define GET_TILING_DATA_PTR_WITH_STRUCT(tiling_struct, dst_ptr, tiling_ptr) \\",
            "    REGISTER_TILINGDATA_SIZE(tiling_struct, __COUNTER__);                    \\",
            "    __tiling_data_ptr__ tiling_struct* dst_ptr = "
            "(__tiling_data_ptr__ tiling_struct*)tiling_ptr;",
            f"#endif  // {guard}",
            "",
        ]
    )


_GE_NAMES = {name: ge.removeprefix("ge::") for name, (_, _, ge, _) in DTYPES.items()}


# ---- the type-check ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TypeCheckResult:
    op: str
    variants: int
    seconds: float


def _variant_name(spec: OpSpec, combo: dict[str, str]) -> str:
    free = [t.name for t in spec.inputs if t.follows is None]
    return ", ".join(f"{n}={combo[n]}" for n in free) or "the only variant"


_SNIPPET = re.compile(r"^\s*\d*\s*\|")


def _diagnostics(output: str, ours: tuple[Path, ...] = ()) -> str:
    """The first compiler errors with their source lines, and, for an error inside CANN's
    headers, the lines of our code whose instantiations led there ("required from")."""
    lines = output.splitlines()
    keep: list[str] = []
    errors = 0
    for i, line in enumerate(lines):
        if ": error:" in line or ": fatal error:" in line:
            errors += 1
            if errors > 4:
                break
            keep.append(line)
            keep += [s for s in lines[i + 1 : i + 4] if _SNIPPET.match(s)][:2]
        elif "required from" in line and any(str(d) in line for d in ours):
            keep.append(line)  # where our code instantiated the failing template
    if not keep:
        keep = lines[:_DIAGNOSTIC_LINES]
    return "\n".join(keep[: 3 * _DIAGNOSTIC_LINES])


PCH_HEADER = "recsdk_cann_api.h"


def _common_dir(tree: HeaderTree, work: Path) -> Path:
    """What every kernel's compile shares: kernel_tiling/kernel_tiling.h and the AscendC API
    header that is precompiled once (parsing the real headers costs seconds per compile)."""
    common = work / "common"
    (common / "kernel_tiling").mkdir(parents=True, exist_ok=True)
    codegen.write_if_changed(
        common / "kernel_tiling" / "kernel_tiling.h", kernel_tiling_header(tree)
    )
    if tree.layout == "devkit" and tree.extra == ():
        _installed_adv_api_links(tree.root, common / "lib")
    codegen.write_if_changed(
        common / PCH_HEADER,
        "// The AscendC API, precompiled once for every kernel's type-check.\n"
        '#include "kernel_operator.h"\n',
    )
    return common


_LINK = re.compile(
    r"CREATE_LINK\s+(\S+)\s+\$\{ASCENDC_INSTALL_BASE_PATH\}/asc/include/adv_api/(\S+)\s"
)


def _installed_adv_api_links(root: Path, lib: Path) -> None:
    """``lib/``, as a CANN install provides it (tikcpp/tikcfw/lib -> asc/include/adv_api, with
    the compatibility links of impl/adv_api/cmake/kernel_headers.cmake): kernels include
    "lib/matmul_intf.h". Built from symbolic links into the dev-kit tree, which stays untouched."""
    adv = root / "include" / "adv_api"
    if lib.exists():
        shutil.rmtree(lib)
    lib.mkdir(parents=True)
    for entry in adv.iterdir():
        (lib / entry.name).symlink_to(entry)
    rules = root / "impl" / "adv_api" / "cmake" / "kernel_headers.cmake"
    if not rules.is_file():
        return
    for target, link in _LINK.findall(rules.read_text(encoding="utf-8")):
        source = (adv / link).parent / target
        if not source.exists():
            continue
        parent = lib
        for part in Path(link).parts[:-1]:
            parent = parent / part
            if parent.is_symlink():  # a tree directory: make it ours, entry by entry
                real = parent.resolve()
                parent.unlink()
                parent.mkdir()
                for entry in real.iterdir():
                    (parent / entry.name).symlink_to(entry)
            parent.mkdir(exist_ok=True)
        dest = lib / link
        if not dest.exists():
            dest.symlink_to(source.resolve())


def _header_flags(tree: HeaderTree, kernels: Path, common: Path) -> list[str]:
    flags = [*CPU_DEBUG_FLAGS[1:], "-I", str(common)]
    for d in tree.include_dirs(kernels / STUBS_DIR):
        flags += ["-isystem", str(d)]
    return flags


def precompile_api(tree: HeaderTree, kernels: Path, work: Path, compiler: str = "g++") -> Path:
    """kernel_operator.h precompiled with the check's flags; CannCheckError when the headers
    themselves do not parse (stand-ins incomplete for this header release)."""
    common = _common_dir(tree, work)
    cmd = [compiler, "-x", "c++-header", *_header_flags(tree, kernels, common)]
    cmd += [str(common / PCH_HEADER), "-o", str(common / (PCH_HEADER + ".gch"))]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CannCheckError(
            f"CANN's AscendC headers ({tree.root}) do not parse in CPU debug mode with "
            f"the stand-ins of kernels/{STUBS_DIR}:\n" + _indent(_diagnostics(proc.stderr)),
            hint=f"a name the headers need is missing from kernels/{STUBS_DIR} "
            "(README.md there says how to add one)",
        )
    return common


def _variant_lines(spec: OpSpec, combo: dict[str, str], index: int | None) -> list[str]:
    """One dtype variant: CANN's DTYPE_*/ORIG_DTYPE_* macros around the kernel source; with an
    index, inside its own namespace and with the entry renamed, so that every variant of the
    kernel type-checks in one translation unit (as the sim launcher builds them)."""
    macros = []
    for t in spec.tensors:
        dtype = combo[t.name]
        macros.append(f"#define {t.macro} {DTYPES[dtype][1]}")
        macros.append(f"#define ORIG_{t.macro} {_GE_NAMES[dtype]}")
    undo = [f"#undef {t.macro}\n#undef ORIG_{t.macro}" for t in spec.tensors]
    if index is None:
        return [*macros, f'#include "{spec.kernel_file.name}"']
    return [
        f"// variant {index}: {_variant_name(spec, combo)}",
        *macros,
        f"#define {spec.name} {spec.name}__v{index}",
        f"namespace recsdk_cann_v{index} {{",
        f'#include "{spec.kernel_file.name}"',
        "}",
        f"#undef {spec.name}",
        *undo,
    ]


def translation_unit(spec: OpSpec, variants: list[tuple[int, dict[str, str]]] | None) -> str:
    """The source compiled for ``spec``: every variant (None) or the ones given."""
    chosen = list(enumerate(spec.variants())) if variants is None else variants
    lines = [f"// Generated by recsdk-build (ops/cann_check.py) for {spec.name}; do not edit."]
    if len(chosen) == 1:
        return "\n".join([*lines, *_variant_lines(spec, chosen[0][1], None), ""])
    lines += [f"#include {inc}" for inc in codegen.kernel_includes(spec)]
    for index, combo in chosen:
        lines += _variant_lines(spec, combo, index)
    return "\n".join([*lines, ""])


def compile_command(
    spec: OpSpec,
    source: Path,
    kernels: Path,
    tree: HeaderTree,
    common: Path,
    gen: Path,
    compiler: str = "g++",
) -> list[str]:
    """g++ -fsyntax-only of ``source`` (a translation unit of the kernel's variants) as CANN's
    CPU debug mode compiles the kernel: the API first (precompiled), then the operator
    compiler's tiling header, then the kernel."""
    cmd = [compiler, CPU_DEBUG_FLAGS[0], *_header_flags(tree, kernels, common)]
    cmd += ["-I", str(gen), "-I", str(spec.kernel_file.parent), "-I", str(kernels / "common")]
    cmd += ["-include", str(common / PCH_HEADER)]
    cmd += ["-include", str(gen / f"{spec.name}_cann_tiling.h"), str(source)]
    return cmd


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def typecheck_op(
    spec: OpSpec, kernels: Path, tree: HeaderTree, work: Path, common: Path, compiler: str = "g++"
) -> TypeCheckResult:
    """Type-check every dtype variant of one kernel; CannCheckError names the first variant
    that fails and the compiler's first diagnostics."""
    started = time.monotonic()
    gen = work / spec.name
    gen.mkdir(parents=True, exist_ok=True)
    codegen.write_if_changed(gen / codegen.kernel_entry_name(spec), codegen.kernel_entry(spec))
    codegen.write_if_changed(gen / f"{spec.name}_cann_tiling.h", op_tiling_header(spec))
    variants = spec.variants()
    source = gen / f"{spec.name}_variants.cpp"
    source.write_text(translation_unit(spec, None), encoding="utf-8")
    proc = _run(compile_command(spec, source, kernels, tree, common, gen, compiler))
    if proc.returncode != 0:
        # Which variant: each on its own, as CANN compiles them.
        for index, combo in enumerate(variants):
            one = gen / f"{spec.name}_v{index}.cpp"
            one.write_text(translation_unit(spec, [(index, combo)]), encoding="utf-8")
            single = _run(compile_command(spec, one, kernels, tree, common, gen, compiler))
            if single.returncode != 0:
                proc, failed = single, _variant_name(spec, combo)
                break
        else:
            failed = "all variants together"
        raise CannCheckError(
            f"{spec.name} ({failed}) does not type-check against CANN's AscendC headers "
            f"({tree.root}, CPU debug mode):\n"
            + _indent(_diagnostics(proc.stderr, (kernels, gen))),
            hint=_fix_hint(proc.stderr, tree),
        )
    return TypeCheckResult(spec.name, len(variants), time.monotonic() - started)


_UNDECLARED = re.compile(r"^(\S+):\d+:\d+: error: .(\w+). was not declared", re.M)


def _fix_hint(output: str, tree: HeaderTree) -> str:
    inside = [
        name
        for path, name in _UNDECLARED.findall(output)
        if Path(path).resolve().is_relative_to(tree.root) and name.islower()
    ]
    if inside and tree.cpu_library is None:
        return (
            f"CANN's implementation calls instruction(s) {', '.join(sorted(set(inside)))} that "
            f"the stand-ins lack: declare them in kernels/{STUBS_DIR}/stub_fun.h"
        )
    return (
        "the sim emulation accepted what CANN's headers reject: declare and call the API as "
        "CANN does"
    )


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


# ---- the tiling-key rules ------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyProblem:
    file: Path
    line: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.detail}"


RULE_LITERAL = "TILING_KEY_IS takes a numeric literal or a macro"
RULE_CONDITION = "TILING_KEY_IS only as an if / else if condition"
RULE_COVERED = "every key the host tiling sets has a TILING_KEY_IS in the kernel"

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*)$", re.M)
_KEY_USE = re.compile(r"\bTILING_KEY_IS\s*\(")
_INT = re.compile(r"^\(?\s*(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\s*\)?$")
_HOST_KEY = re.compile(r"\btiling_key\s*=\s*([^;]+);")


def _strip_comments(text: str) -> str:
    """Comments and string literals blanked out, line structure kept."""

    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):  # a comment: spaces, its newlines kept
            return re.sub(r"[^\n]", " ", s)
        return '"' + " " * (len(s) - 2) + '"'

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)


def _project_sources(spec: OpSpec, kernels: Path) -> list[Path]:
    """The kernel source and every project header it includes (op_kernel/, kernels/common/)."""
    dirs = [spec.kernel_file.parent, kernels / "common"]
    seen: list[Path] = []
    todo = [spec.kernel_file]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        for name in _INCLUDE.findall(path.read_text(encoding="utf-8")):
            for d in dirs:
                if (d / name).is_file():
                    todo.append(d / name)
                    break
    return seen


def _macros(paths: list[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in paths:
        for name, body in _DEFINE.findall(_strip_comments(path.read_text(encoding="utf-8"))):
            out[name] = body.strip()
    return out


_CONSTANT = re.compile(r"\bconstexpr\s+[\w:]+\s+([A-Za-z_]\w*)\s*=\s*([^;]+);")


def _constants(paths: list[Path]) -> dict[str, str]:
    """``constexpr`` integer constants: what host code may use as a key (it is compiled, not
    scanned), so the coverage rule can compare host keys with the kernel's."""
    out: dict[str, str] = {}
    for path in paths:
        for name, body in _CONSTANT.findall(_strip_comments(path.read_text(encoding="utf-8"))):
            out[name] = body.strip()
    return out


def _key_value(arg: str, macros: dict[str, str]) -> int | None:
    """The key a TILING_KEY_IS argument preprocesses to, if it is a numeric literal."""
    seen = set()
    while arg in macros and arg not in seen:
        seen.add(arg)
        arg = macros[arg]
    m = _INT.match(arg.strip())
    return int(m.group(1)) if m else None


def _argument(text: str, open_paren: int) -> tuple[str, int]:
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i].strip(), i
    return text[open_paren + 1 :].strip(), len(text)


def _condition_problem(text: str, start: int) -> str | None:
    """None when the use at ``start`` sits inside an ``if (...)`` condition, else what it is."""
    depth = 0
    i = start - 1
    while i >= 0:
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth:
                depth -= 1
            else:
                word = re.search(r"([A-Za-z_]\w*)\s*$", text[:i])
                if word and word.group(1) == "if":
                    return None
                if word and word.group(1) not in ("return",):
                    return f"it is an argument of `{word.group(1)}(...)`"
        elif c in ";{}" and depth == 0:
            tail = text[i + 1 : start].strip()
            if re.match(r"^[\w.\->\[\]\s]+=(?!=)", tail):
                return "it is assigned to a variable"
            if tail.startswith("return"):
                return "it is returned"
            return "it is not in an if condition"
        i -= 1
    return "it is not in an if condition"


def check_tiling_keys(spec: OpSpec, kernels: Path) -> list[KeyProblem]:
    """Every break of CANN's tiling-key rules in the kernel (and the project headers it
    includes), and host keys the kernel has no branch for."""
    problems: list[KeyProblem] = []
    sources = _project_sources(spec, kernels)
    macros = _macros(sources)
    keys: set[int] = set()
    for path in sources:
        text = _strip_comments(path.read_text(encoding="utf-8"))
        for m in _KEY_USE.finditer(text):
            if text[: m.start()].rstrip().endswith("define"):
                continue
            line = text.count("\n", 0, m.start()) + 1
            arg, _ = _argument(text, m.end() - 1)
            value = _key_value(arg, macros)
            if value is None:
                problems.append(
                    KeyProblem(
                        path,
                        line,
                        RULE_LITERAL,
                        f"TILING_KEY_IS({arg}): `{arg}` is not a numeric literal after "
                        "preprocessing (a constexpr variable or expression?); CANN's tiling-key "
                        "scan (find_tilingkey) rejects it and builds no kernel for the key",
                    )
                )
            else:
                keys.add(value)
            where = _condition_problem(text, m.start())
            if where is not None:
                problems.append(
                    KeyProblem(
                        path,
                        line,
                        RULE_CONDITION,
                        f"TILING_KEY_IS({arg}): {where}; write "
                        f"`if (TILING_KEY_IS({arg})) {{ ... }} else if (TILING_KEY_IS(...))`",
                    )
                )
    if problems:
        return problems
    host = spec.tiling_header
    if host.is_file():
        text = _strip_comments(host.read_text(encoding="utf-8"))
        host_macros = {**_constants([*sources, host]), **macros, **_macros([host])}
        for m in _HOST_KEY.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for token in re.findall(r"[A-Za-z_]\w*|\d+", m.group(1)):
                value = _key_value(token, host_macros)
                if value is None or (not keys and value == 0) or value in keys:
                    continue
                problems.append(
                    KeyProblem(
                        host,
                        line,
                        RULE_COVERED,
                        f"the host sets tiling key {token} ({value}) but {spec.kernel_file.name} "
                        + (
                            f"has TILING_KEY_IS only for {sorted(keys)}"
                            if keys
                            else "has no TILING_KEY_IS (its one binary is key 0)"
                        )
                        + ": CANN builds no kernel for that key",
                    )
                )
    return problems


def require_tiling_keys(spec: OpSpec, kernels: Path) -> None:
    problems = check_tiling_keys(spec, kernels)
    if problems:
        raise CannCheckError(
            f"{spec.name} breaks CANN's tiling-key rules:\n"
            + "\n".join(f"  {p}" for p in problems),
            hint="keys as #define macros or literals, shared by tiling and kernel; "
            "TILING_KEY_IS only in if / else if conditions (API doc TILING_KEY_IS)",
        )


# ---- the whole catalogue -------------------------------------------------------------------------


@dataclass
class CheckReport:
    """What the stage records: the key rules always run; the type-check ran or says why not."""

    ops: list[str]
    keys: str = "checked"
    typecheck: str = "not run"
    reason: str | None = None
    headers: dict[str, str | None] = field(default_factory=dict)
    variants: int = 0
    seconds: float = 0.0

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {
            "operators": len(self.ops),
            "tiling_keys": self.keys,
            "typecheck": self.typecheck,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.headers:
            out.update(self.headers)
        if self.typecheck == "checked":
            out["variants"] = self.variants
            out["seconds"] = round(self.seconds, 1)
        return out

    def summary(self) -> str:
        keys = f"tiling keys of {len(self.ops)} kernel(s) follow CANN's rules"
        if self.typecheck == "checked":
            return (
                f"{keys}; {len(self.ops)} kernel(s), {self.variants} dtype variant(s) type-check "
                f"against CANN's headers ({self.seconds:.1f}s)"
            )
        return f"{keys}; real-header type-check NOT run: {self.reason}"


def inputs(kernels: Path, found: HeaderTree | NoHeaders) -> dict[str, object]:
    """What the check's verdict depends on, for the stage fingerprint."""
    out: dict[str, object] = {
        "checker": sha256_file(Path(__file__)),
        "stubs": hash_tree(kernels / STUBS_DIR),
        "flags": list(CPU_DEBUG_FLAGS),
    }
    if isinstance(found, HeaderTree):
        out["headers"] = found.describe()
        out["headers_digest"] = found.digest()
        out["compiler"] = sha256_text(_compiler_version())
    else:
        out["headers"] = None
    return out


def _compiler_version() -> str:
    try:
        return subprocess.run(
            ["g++", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "none"


def check_catalogue(
    specs: list[OpSpec],
    kernels: Path,
    found: HeaderTree | NoHeaders,
    *,
    jobs: int = 1,
    progress: Callable[[TypeCheckResult], None] | None = None,
    work: Path | None = None,
) -> CheckReport:
    """Tiling-key rules for every kernel, then (headers permitting) the type-check of every
    kernel x dtype variant, ``jobs`` kernels at a time. Raises CannCheckError on the first
    kernel that fails. ``work``: a directory to keep the generated files and the precompiled
    API in (reused when present); default a temporary one."""
    report = CheckReport(ops=[s.name for s in specs])
    for spec in specs:
        require_tiling_keys(spec, kernels)
    if isinstance(found, NoHeaders):
        report.reason = found.reason
        return report
    if shutil.which("g++") is None:
        report.reason = "g++ is not installed (the type-check uses g++ -fsyntax-only)"
        return report
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="recsdk-cann-check-") as tmp:
        where = work or Path(tmp)
        common = where / "common"
        if not (common / (PCH_HEADER + ".gch")).is_file():
            common = precompile_api(found, kernels, where)

        def one(spec: OpSpec) -> TypeCheckResult:
            result = typecheck_op(spec, kernels, found, where, common)
            if progress is not None:
                progress(result)
            return result

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, specs))
    report.typecheck = "checked"
    report.headers = found.describe()
    report.variants = sum(r.variants for r in results)
    report.seconds = time.monotonic() - started
    return report
