"""What both extension packages' setup.py share: the version read, the compiler flags, the
extension declaration with the shared sources of packages/common, and the shared Python.

The modules of ``python/`` become the package's ``<module>._shared`` subpackage: build_py copies
them into the wheel, and an in-place ``build_ext --inplace`` (the checkout's tests) into
``src/<module>/_shared/``, beside the in-place ``_C`` and ignored by git like it.

Flags that must agree with torch (_GLIBCXX_USE_CXX11_ABI, include paths) come from
torch.utils.cpp_extension, i.e. from the torch being built against; nothing here fixes the ABI.
"""

from __future__ import annotations

import ast
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).resolve().parent
# Explicit lists, as in each package: a stray file must not silently change what is compiled.
COMMON_SOURCES = ["csrc/recsdk_ext/eviction_order.cpp", "csrc/recsdk_ext/thread_pool.cpp"]
COMMON_HEADERS = [
    "csrc/recsdk_ext/eviction_order.h",
    "csrc/recsdk_ext/flat_map.h",
    "csrc/recsdk_ext/id_hash.h",
    "csrc/recsdk_ext/runtime_bindings.h",
    "csrc/recsdk_ext/thread_pool.h",
]

# Installed into each package as <module>._shared.
SHARED_PYTHON = HERE / "python"
SHARED_PACKAGE = "_shared"

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


def copy_shared_python(package_root: Path) -> list[str]:
    """Copies the shared Python modules into ``package_root/_shared`` (``package_root`` is
    the package's directory in a build tree); returns the files written."""
    target = package_root / SHARED_PACKAGE
    shutil.rmtree(target, ignore_errors=True)  # a module removed here must not linger
    target.mkdir(parents=True)
    written = []
    for source in sorted(SHARED_PYTHON.glob("*.py")):
        shutil.copyfile(source, target / source.name)
        written.append(str(target / source.name))
    return written


def _commands(module: str) -> dict[str, type]:
    class BuildPy(build_py):
        def run(self) -> None:
            super().run()
            copy_shared_python(Path(self.build_lib) / module)

    class BuildExt(BuildExtension):
        def run(self) -> None:
            super().run()
            if self.inplace:
                package_dir = Path(self.get_finalized_command("build_py").get_package_dir(module))
                copy_shared_python(package_dir)

    return {"build_py": BuildPy, "build_ext": BuildExt}


def setup_extension(package: Path, module: str, **kwargs: Any) -> None:
    """setuptools.setup() of a package whose only build steps are ``<module>._C`` and the
    shared Python (``<module>._shared``)."""
    setup(
        ext_modules=[extension(package, module, **kwargs)],
        cmdclass=_commands(module),
    )
