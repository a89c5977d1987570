"""Building wheels of C++ torch extensions in the pinned build environment."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from recsdk_build.errors import BuildError
from recsdk_build.hashing import hash_tree
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.proc import StageLog, run_pip

# What an in-place build writes into a package's source tree: its extension, and the shared
# Python it copies from packages/common into ``<module>/_shared`` (SHARED_PACKAGE in
# packages/common/recsdk_ext_setup.py; hashed as the wheels stage's extension_shared). Neither
# is a source: the test suites' in-place builds must not make a built wheel look stale.
_PRODUCT_DIRS = ("build", "dist", "__pycache__", "_shared")
_IGNORE = shutil.ignore_patterns(*_PRODUCT_DIRS, "*.so", "*.egg-info", ".*cache")


def _is_build_product(rel: Path) -> bool:
    return rel.suffix in (".so", ".pyc") or any(
        part in _PRODUCT_DIRS or part.endswith(".egg-info") or part.startswith(".")
        for part in rel.parts
    )


def package_digest(root: Path) -> str:
    """Content of an extension package's sources (build products excluded)."""
    return hash_tree(root, exclude=_is_build_product)


def build_extension_wheel(
    log: StageLog,
    python: str | Path,
    package: Path,
    *,
    build_root: Path,
    dist: Path,
    what: str,
    generated: Mapping[str, str] | None = None,
    dest: Path | None = None,
    shared: Path | None = None,
) -> Path:
    """Build ``package`` with ``python`` (the build environment's, whose torch the extension
    compiles against); move the wheel into ``dist``.

    A copy is built in ``build_root``'s staging area, so the checkout never collects build
    products, and wheels of earlier builds of the same distribution are replaced. ``generated``
    maps file names (relative to the package) to text written into the copy before building:
    build configuration that depends on this build directory, never written into the checkout.
    ``dest`` (a directory) receives a wheel that is not an artifact (a build check) instead of
    ``dist``. ``shared`` (recsdk.toml's packages.extension_shared) is copied into the copy as
    ``common/``, where the package's setup.py looks for it first.
    """
    staging = new_staging_dir(build_root, package.name)
    try:
        src = staging / package.name
        shutil.copytree(package, src, ignore=_IGNORE)
        if shared is not None:
            shutil.copytree(shared, src / "common", ignore=_IGNORE)
        for name, text in (generated or {}).items():
            (src / name).write_text(text, encoding="utf-8")
        out = staging / "out"
        with log.ui.status(f"compiling {what} against the pinned torch"):
            run_pip(
                log,
                python,
                "wheel",
                "--no-build-isolation",
                "--no-deps",
                "-w",
                out,
                src,
                what=f"building the {what} wheel",
                # torch's extension builder looks for ninja on PATH: the environment's own.
                env={"PATH": os.pathsep.join([str(Path(python).parent), os.environ["PATH"]])},
            )
        wheels = sorted(out.glob("*.whl"))
        if len(wheels) != 1:
            raise BuildError(f"building {what} produced {[w.name for w in wheels]}, not one wheel")
        wheel = wheels[0]
        if dest is not None:
            dest.mkdir(parents=True, exist_ok=True)
            return wheel.replace(dest / wheel.name)
        dist_name = wheel.name.split("-")[0]
        dist.mkdir(parents=True, exist_ok=True)
        for stale in dist.glob(f"{dist_name}-*.whl"):
            stale.unlink()
        final = dist / wheel.name
        wheel.replace(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
