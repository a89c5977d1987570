"""Test setup for torchrec_embcache.

Which build is tested:
- if ``torchrec_embcache`` is installed (a wheel, outside this repository), that one, so CI
  can test exactly the wheel it ships;
- otherwise the C++ extension is built in place (``setup.py build_ext --inplace`` in
  packages/torchrec_embcache, incremental, about 40 s on 2 cores the first time) and the
  source tree is put on sys.path.
Set EMBCACHE_TEST_BUILD=inplace to force the in-place build, or =installed to fail when no
installed package is found. The pytest header says which build is under test.

torchrec itself: every torchrec release requires the CUDA fbgemm-gpu, so it can be neither a
test extra nor installed with its dependencies. When it is not importable, the pinned release
(recsdk.toml's torchrec.fallback_wheel) is installed ``--no-deps`` into a directory of pytest's
cache and put on sys.path: the environment running the tests is left as it was.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "packages" / "torchrec_embcache"

_under_test = ""
_torchrec = ""


def _installed_outside_repo() -> bool:
    spec = importlib.util.find_spec("torchrec_embcache")
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
            "building torchrec_embcache in place failed:\n"
            + result.stdout[-4000:]
            + result.stderr[-4000:]
        )
    sys.path.insert(0, str(PACKAGE / "src"))


def _provide_torchrec(config: pytest.Config) -> str:
    """Make the pinned torchrec importable without touching the environment; say how."""
    if importlib.util.find_spec("torchrec") is not None:
        return "installed"
    from recsdk_build.config import load_project

    requirement = load_project(REPO).torchrec.fallback_wheel
    cache = getattr(config, "cache", None)
    root = Path(cache.mkdir("recsdk-torchrec")) if cache else REPO / ".pytest_cache" / "torchrec"
    target = root / requirement.replace("==", "-")
    if not (target / "torchrec" / "__init__.py").is_file():
        staging = target.with_name(target.name + ".partial")
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--quiet",
                "--target",
                str(staging),
                requirement,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            return (
                f"not available ({requirement} could not be installed: "
                + (result.stderr.strip().splitlines() or ["pip failed"])[-1]
                + ")"
            )
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    # This process only: the environment (and the other tests' child processes) stay as they
    # were.
    sys.path.insert(0, str(target))
    return f"{requirement} --no-deps in {target}"


def pytest_configure(config: pytest.Config) -> None:
    global _under_test, _torchrec
    _torchrec = _provide_torchrec(config)
    config.addinivalue_line(
        "markers", "requires_npu: needs an npu device (torch_npu or the npu_sim device)"
    )
    config.addinivalue_line("markers", "slow: takes more than a minute")
    mode = os.environ.get("EMBCACHE_TEST_BUILD", "auto")
    if mode == "installed" or (mode == "auto" and _installed_outside_repo()):
        if not _installed_outside_repo():
            raise pytest.UsageError(
                "EMBCACHE_TEST_BUILD=installed but torchrec_embcache is not installed"
            )
        _under_test = "installed"
    else:
        _build_in_place()
        _under_test = "in-place build"
    import torchrec_embcache

    _under_test += f" ({Path(torchrec_embcache.__file__).parent})"


def pytest_report_header(config: pytest.Config) -> str:
    return [f"torchrec_embcache under test: {_under_test}", f"torchrec: {_torchrec}"]


def npu_available() -> tuple[bool, str]:
    import importlib

    import torch

    for module in ("torch_npu", "npu_sim"):
        if importlib.util.find_spec(module) is None:
            continue
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken install must show up as the skip reason
            return False, f"{module} is installed but cannot be imported: {exc}"
        npu = getattr(torch, "npu", None)
        if npu is not None and npu.is_available():
            return True, module
        return False, f"{module} is imported but reports no npu device"
    return False, "no npu device: neither torch_npu nor npu_sim is installed"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    marked = [
        item
        for item in items
        if item.get_closest_marker("requires_npu") and item.path.is_relative_to(here)
    ]
    if not marked:
        return
    ok, why = npu_available()
    if not ok:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=why))
