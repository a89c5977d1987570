"""Builds the C++ core (torchrec_embcache._C) with torch's extension builder.

Metadata lives in pyproject.toml; this file only declares the extension. The compiler
flags that must agree with torch (C++ standard, _GLIBCXX_USE_CXX11_ABI, include paths) are
supplied by torch.utils.cpp_extension from the torch being built against.
"""

from __future__ import annotations

import ast
from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).resolve().parent

# Explicit lists: a stray file in csrc/ must not silently change what is compiled.
SOURCES = [
    "bindings.cpp",
    "bindings_planner.cpp",
    "bindings_table.cpp",
    "cache_planner.cpp",
    "checkpoint.cpp",
    "crc32c.cpp",
    "host_table.cpp",
    "initializer.cpp",
    "optimizer.cpp",
    "thread_pool.cpp",
]
HEADERS = [
    "bindings.h",
    "cache_planner.h",
    "common.h",
    "crc32c.h",
    "flat_map.h",
    "host_table.h",
    "initializer.h",
    "optimizer.h",
    "tensor_args.h",
    "thread_pool.h",
]


def package_version() -> str:
    tree = ast.parse((HERE / "src/torchrec_embcache/_version.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise RuntimeError("src/torchrec_embcache/_version.py defines no __version__")


CXX_FLAGS = [
    "-O3",
    "-g0",
    # Rounding is decided in the source (explicit fma where torch uses one), not by the
    # compiler contracting a*b+c; the exactness tests against PyTorch depend on it.
    "-ffp-contract=off",
    # Lets sqrt vectorise; results for valid inputs are unchanged.
    "-fno-math-errno",
    "-fvisibility=hidden",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    f"-DEMBCACHE_VERSION={package_version()}",
]

setup(
    ext_modules=[
        CppExtension(
            name="torchrec_embcache._C",
            sources=[f"csrc/{name}" for name in SOURCES],
            depends=[f"csrc/{name}" for name in HEADERS],
            include_dirs=[str(HERE / "csrc")],
            extra_compile_args={"cxx": CXX_FLAGS},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
