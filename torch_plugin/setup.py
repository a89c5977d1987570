"""Build of the fbgemm_npu_api extension.

torch's extension builder supplies the C++ ABI flag and include paths of the torch it runs
with, so the adapter always matches the torch it is built against.

What to build against comes from ``build_config.json`` next to this file (or the file named by
``FBGEMM_NPU_API_BUILD_CONFIG``), written by ``recsdk-build plugin``. Two variants:

    {"variant": "sim", "sim_include": "<kernels/sim/include>",
     "runtime": "<libmxrec_sim_runtime.so, which every operator library links>",
     "operators": [{"op": "<name>", "library": "<path>.so", "header": "<path>.h"}, ...]}

    {"variant": "npu", "operators": ["<name>", ...], "decl_include": "<aclnn_<op>_decl.h dir>",
     "include_dirs": [torch_npu and CANN include dirs], "library_dirs": [...],
     "libraries": ["torch_npu", "nnopbase", ...], "opp": "<installed operator packages>" | null}

For the sim variant the operator libraries and their generated headers are copied into the
package (``fbgemm_npu_api/_ops``, ``fbgemm_npu_api/include``) and the extension finds the
libraries through an ``$ORIGIN`` rpath, so the installed wheel is self-contained. For the npu
variant the installed operator packages (``vendors/<op>/...`` and ``vendors/config.ini``) are
copied to ``fbgemm_npu_api/opp``, where the loader points CANN at them.

The wheel's local version names the variant: ``+sim`` or ``+npu``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "fbgemm_npu_api"
# The operators the adapter registers; a configuration lacking one is an error, not a smaller
# adapter.
OPERATORS = (
    "asynchronous_complete_cumsum",
    "jagged_to_padded_dense",
    "dense_to_jagged",
    "permute2d_sparse_data",
    "gather_for_rank1",
    "index_select_for_rank1_backward",
    "bounds_check_indices",
    "block_bucketize_sparse_features",
    "invert_permute",
    "split_embedding_forward",
    "split_embedding_backward",
)
VERSION = "1.1.0"
COMMON_SOURCES = ["csrc/checks.cpp", "csrc/registrations.cpp", "csrc/tbe.cpp"]
COMPILE_ARGS = ["-O2", "-std=c++17", "-Wall", "-Wno-unused-parameter"]


def load_config() -> dict:
    path = Path(os.environ.get("FBGEMM_NPU_API_BUILD_CONFIG") or HERE / "build_config.json")
    if not path.is_file():
        raise SystemExit(
            f"fbgemm_npu_api: no build configuration at {path}; build it with "
            "`recsdk-build plugin`, or write one (see setup.py)"
        )
    config = json.loads(path.read_text(encoding="utf-8"))
    variant = config.get("variant")
    if variant not in ("sim", "npu"):
        raise SystemExit(f"fbgemm_npu_api: unknown variant {variant!r} (sim or npu)")
    have = {e["op"] if isinstance(e, dict) else e for e in config.get("operators", [])}
    missing = [op for op in OPERATORS if op not in have]
    if missing:
        raise SystemExit(f"fbgemm_npu_api: the build configuration lacks {', '.join(missing)}")
    return config


def stage_sim_operators(config: dict) -> list[str]:
    """Copy the operator libraries and headers into the package; return the linker flags."""
    libdir = PACKAGE / "_ops"
    incdir = PACKAGE / "include"
    shutil.rmtree(libdir, ignore_errors=True)
    shutil.rmtree(incdir, ignore_errors=True)
    libdir.mkdir()
    (incdir / "ops").mkdir(parents=True)
    shutil.copytree(Path(config["sim_include"]) / "recsdk_sim", incdir / "recsdk_sim")
    # The operator libraries find the runtime beside them ($ORIGIN).
    runtime = Path(config["runtime"])
    shutil.copy2(runtime, libdir / runtime.name)
    flags = [f"-L{libdir}"]
    for entry in config["operators"]:
        if entry["op"] not in OPERATORS:
            continue
        library = Path(entry["library"])
        shutil.copy2(library, libdir / library.name)
        shutil.copy2(entry["header"], incdir / "ops" / Path(entry["header"]).name)
        # -l:<file> records the bare file name as NEEDED (the libraries have no SONAME), which
        # the $ORIGIN rpath then resolves inside the installed package.
        flags.append(f"-l:{library.name}")
    return flags


def stage_npu_operators(config: dict) -> None:
    """Copy the installed operator packages into the package (none for a build check)."""
    target = PACKAGE / "opp"
    shutil.rmtree(target, ignore_errors=True)
    if config.get("opp"):
        shutil.copytree(config["opp"], target)


def sim_extension(config: dict) -> CppExtension:
    link_flags = stage_sim_operators(config)
    return CppExtension(
        "fbgemm_npu_api._C",
        [*COMMON_SOURCES, "csrc/backend_sim.cpp"],
        include_dirs=[str(PACKAGE / "include"), str(PACKAGE / "include" / "ops")],
        define_macros=[("FBGEMM_NPU_API_SIM", "1")],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=[*link_flags, "-Wl,-rpath,$ORIGIN/_ops"],
    )


def npu_extension(config: dict) -> CppExtension:
    stage_npu_operators(config)
    return CppExtension(
        "fbgemm_npu_api._C",
        [*COMMON_SOURCES, "csrc/backend_npu.cpp"],
        include_dirs=["csrc", config["decl_include"], *config["include_dirs"]],
        define_macros=[("FBGEMM_NPU_API_NPU", "1")],
        library_dirs=config["library_dirs"],
        libraries=config["libraries"],
        extra_compile_args=COMPILE_ARGS,
    )


config = load_config()
variant = config["variant"]
# The loader reads the variant before loading the extension (the npu variant imports torch_npu
# first).
(PACKAGE / "_variant").write_text(variant + "\n", encoding="utf-8")

setup(
    version=f"{VERSION}+{variant}",
    ext_modules=[sim_extension(config) if variant == "sim" else npu_extension(config)],
    package_data={
        "fbgemm_npu_api": ["_ops/*.so", "include/*/*.h", "py.typed", "_variant", "opp/**/*"]
    },
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
