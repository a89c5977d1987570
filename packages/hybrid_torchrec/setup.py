"""Builds the C++ core (hybrid_torchrec._C) with torch's extension builder.

Metadata lives in pyproject.toml; this file only declares the extension. Flags that must agree
with torch (_GLIBCXX_USE_CXX11_ABI, include paths) come from torch.utils.cpp_extension, i.e.
from the torch being built against; nothing here fixes the ABI.
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
    "bucketize.cpp",
    "dedup.cpp",
    "eviction_order.cpp",
    "id_mapper.cpp",
    "thread_pool.cpp",
]
HEADERS = [
    "bucketize.h",
    "common.h",
    "dedup.h",
    "eviction_order.h",
    "flat_map.h",
    "id_mapper.h",
    "thread_pool.h",
]


def package_version() -> str:
    tree = ast.parse((HERE / "src/hybrid_torchrec/_version.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise RuntimeError("src/hybrid_torchrec/_version.py defines no __version__")


CXX_FLAGS = [
    "-std=c++17",
    "-O3",
    "-g0",
    "-fvisibility=hidden",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    f"-DHYBRID_TORCHREC_VERSION={package_version()}",
]

setup(
    ext_modules=[
        CppExtension(
            name="hybrid_torchrec._C",
            sources=[f"csrc/{name}" for name in SOURCES],
            depends=[f"csrc/{name}" for name in HEADERS],
            include_dirs=[str(HERE / "csrc")],
            extra_compile_args={"cxx": CXX_FLAGS},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
