"""Test setup for hybrid_torchrec.

Which build is tested:
- if ``hybrid_torchrec`` is installed (a wheel, outside this repository), that one, so CI can
  test exactly the wheel it ships;
- otherwise the C++ extension is built in place (``setup.py build_ext --inplace`` in
  packages/hybrid_torchrec, incremental; a few minutes on 2 busy cores the first time) and the
  source tree is put on sys.path.
Set HYBRID_TEST_BUILD=inplace to force the in-place build, or =installed to fail when no
installed package is found. The pytest header says which build is under test.

torchrec: every torchrec release requires the CUDA fbgemm-gpu, so it can be neither a test
extra nor installed with its dependencies. When it is not importable, the pinned release
(recsdk.toml's torchrec.fallback_wheel) is installed ``--no-deps`` into a directory of pytest's
cache and put on sys.path of this process only: the environment running the tests is left as
it was. (hybrid_torchrec refuses to import without torchrec 1.1.0, so this comes first.)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "packages" / "hybrid_torchrec"

_under_test = ""
_torchrec = ""


def _installed_outside_repo() -> bool:
    spec = importlib.util.find_spec("hybrid_torchrec")
    if spec is None or spec.origin is None:
        return False
    return not Path(spec.origin).resolve().is_relative_to(PACKAGE)


def _build_in_place() -> None:
    env = dict(os.environ)
    env.setdefault("MAX_JOBS", "2")
    result = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            "building hybrid_torchrec in place failed:\n"
            + result.stdout[-4000:]
            + result.stderr[-4000:]
        )
    sys.path.insert(0, str(PACKAGE / "src"))


def _provide_torchrec(config: pytest.Config) -> str:
    """Makes the pinned torchrec importable without touching the environment; says how."""
    if importlib.util.find_spec("torchrec") is not None:
        return "installed"
    from recsdk_build.config import load_project

    requirement = load_project(REPO).torchrec.fallback_wheel
    cache = getattr(config, "cache", None)
    root = Path(cache.mkdir("recsdk-torchrec")) if cache else REPO / ".pytest_cache" / "torchrec"
    target = root / requirement.replace("==", "-")
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
    sys.path.insert(0, str(target))
    return f"{requirement} --no-deps in {target}"


def pytest_configure(config: pytest.Config) -> None:
    global _under_test, _torchrec
    _torchrec = _provide_torchrec(config)
    config.addinivalue_line("markers", "slow: takes more than a minute")
    mode = os.environ.get("HYBRID_TEST_BUILD", "auto")
    if mode == "installed" or (mode == "auto" and _installed_outside_repo()):
        if not _installed_outside_repo():
            raise pytest.UsageError(
                "HYBRID_TEST_BUILD=installed but hybrid_torchrec is not installed"
            )
        _under_test = "installed"
    else:
        _build_in_place()
        _under_test = "in-place build"
    import hybrid_torchrec

    _under_test += f" ({Path(hybrid_torchrec.__file__).parent})"


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"hybrid_torchrec under test: {_under_test}", f"torchrec: {_torchrec}"]
