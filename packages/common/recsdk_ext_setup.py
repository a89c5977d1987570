"""What both extension packages' setup.py share: the version read, the compiler flags and the
extension declaration with the shared sources of packages/common.

Flags that must agree with torch (_GLIBCXX_USE_CXX11_ABI, include paths) come from
torch.utils.cpp_extension, i.e. from the torch being built against; nothing here fixes the ABI.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).resolve().parent
# Explicit lists, as in each package: a stray file must not silently change what is compiled.
COMMON_SOURCES = ["csrc/recsdk_ext/thread_pool.cpp"]
COMMON_HEADERS = ["csrc/recsdk_ext/runtime_bindings.h", "csrc/recsdk_ext/thread_pool.h"]

BASE_CXX_FLAGS = [
    "-std=c++17",
    "-O3",
    "-g0",
    "-fvisibility=hidden",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
]


def package_version(package: Path, module: str) -> str:
    """The ``__version__`` literal of ``src/<module>/_version.py``, read without importing."""
    path = package / "src" / module / "_version.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise RuntimeError(f"{path} defines no __version__")


def extension(
    package: Path,
    module: str,
    *,
    sources: Sequence[str],
    headers: Sequence[str],
    threads_env: str,
    extra_flags: Sequence[str] = (),
) -> CppExtension:
    """``<module>._C`` from the package's csrc/ files and the shared ones.

    Source paths are relative to the package, as setuptools wants them; the shared directory
    is reached through a relative path too (``common`` inside an sdist or a staging copy,
    ``../common`` in the checkout).
    """
    common = Path(os.path.relpath(HERE, package))
    flags = [
        *BASE_CXX_FLAGS,
        *extra_flags,
        f"-DRECSDK_EXT_VERSION={package_version(package, module)}",
        f"-DRECSDK_EXT_MODULE={module}",
        f'-DRECSDK_EXT_THREADS_ENV="{threads_env}"',
    ]
    return CppExtension(
        name=f"{module}._C",
        sources=[f"csrc/{n}" for n in sources] + [str(common / n) for n in COMMON_SOURCES],
        depends=[f"csrc/{n}" for n in headers] + [str(common / n) for n in COMMON_HEADERS],
        include_dirs=[str(package / "csrc"), str(HERE / "csrc")],
        extra_compile_args={"cxx": flags},
    )


def setup_extension(package: Path, module: str, **kwargs: Any) -> None:
    """setuptools.setup() of a package whose only build step is ``<module>._C``."""
    setup(
        ext_modules=[extension(package, module, **kwargs)],
        cmdclass={"build_ext": BuildExtension},
    )
