"""What the extension packages' tests (tests/embcache, tests/hybrid_torchrec) run against.

The build under test:
- the installed package when it is installed outside this repository (a wheel), so CI can test
  exactly the wheel it ships;
- otherwise the C++ extension built in place (``setup.py build_ext --inplace``, incremental)
  with the package's source tree put on sys.path.
An environment variable per package forces one: ``=inplace``, or ``=installed`` to fail when
nothing is installed.

torchrec: every torchrec release requires the CUDA fbgemm-gpu, so it can be neither a test
extra nor installed with its dependencies. When it is not importable, the pinned release
(recsdk.toml's torchrec.fallback_wheel) is installed ``--no-deps`` into a directory of pytest's
cache and put on sys.path of this process only: the environment running the tests, and the
child processes of other tests, stay as they were.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from recsdk_build.pipeline.lock import shared_dir_lock

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ExtensionUnderTest:
    module: str  # the import name, e.g. "torchrec_embcache"; packages/<module> holds its source
    env_var: str  # "inplace" / "installed" / unset (auto)

    @property
    def package(self) -> Path:
        return REPO / "packages" / self.module

    def installed_outside_repo(self) -> bool:
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            return False
        return not Path(spec.origin).resolve().is_relative_to(self.package)

    def build_in_place(self) -> None:
        env = dict(os.environ)
        env.setdefault("MAX_JOBS", "2")
        # Parallel test workers (and the controller) build the same tree: one at a time, so
        # the later ones find it up to date.
        with shared_dir_lock(self.package / "build"):
            result = subprocess.run(
                [sys.executable, "setup.py", "build_ext", "--inplace"],
                cwd=self.package,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
        if result.returncode != 0:
            raise RuntimeError(
                f"building {self.module} in place failed:\n"
                + result.stdout[-4000:]
                + result.stderr[-4000:]
            )
        sys.path.insert(0, str(self.package / "src"))

    def select(self) -> str:
        """Makes the build under test importable (building it if need be); says which."""
        mode = os.environ.get(self.env_var, "auto")
        if mode == "installed" or (mode == "auto" and self.installed_outside_repo()):
            if not self.installed_outside_repo():
                raise pytest.UsageError(
                    f"{self.env_var}=installed but {self.module} is not installed"
                )
            which = "installed"
        else:
            self.build_in_place()
            which = "in-place build"
        module = importlib.import_module(self.module)
        return f"{which} ({Path(module.__file__ or '').parent})"


def provide_torchrec(config: pytest.Config) -> str:
    """Makes the pinned torchrec importable without touching the environment; says how."""
    if importlib.util.find_spec("torchrec") is not None:
        return "installed"
    from recsdk_build.config import load_project

    requirement = load_project(REPO).torchrec.fallback_wheel
    cache = getattr(config, "cache", None)
    root = Path(cache.mkdir("recsdk-torchrec")) if cache else REPO / ".pytest_cache" / "torchrec"
    target = root / requirement.replace("==", "-")
    with shared_dir_lock(root):
        installed = _install_torchrec(requirement, target)
    if installed is not None:
        return installed
    sys.path.insert(0, str(target))
    return f"{requirement} --no-deps in {target}"


def _install_torchrec(requirement: str, target: Path) -> str | None:
    """pip install --no-deps into ``target`` unless it is there; None, or why it is not."""
    if not (target / "torchrec" / "__init__.py").is_file():
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        command = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet"]
        command += ["--target", str(staging), requirement]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            reason = (result.stderr.strip().splitlines() or ["pip failed"])[-1]
            return f"not available ({requirement} could not be installed: {reason})"
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return None


def configure(config: pytest.Config, under_test: ExtensionUnderTest) -> list[str]:
    """torchrec first (the packages refuse to import without it), then the build under test;
    returns the pytest header lines that say which."""
    torchrec = provide_torchrec(config)
    config.addinivalue_line("markers", "slow: takes more than a minute")
    preload_forkserver()
    return [f"{under_test.module} under test: {under_test.select()}", f"torchrec: {torchrec}"]


def preload_forkserver() -> None:
    """The multi-rank tests start their ranks with the verify suite's harness
    (verify/lib/npu_dist.py), forked from a forkserver: have it import torch and torchrec once,
    as the verify suite does, rather than every rank importing them."""
    lib = str(REPO / "verify" / "lib")
    if lib not in sys.path:
        sys.path.insert(0, lib)
    import npu_dist

    npu_dist.preload_forkserver()
