"""Shared fixtures of the verification suite.

The suite runs inside the environment `recsdk-build verify` creates, against the installed
artifacts. The runner passes:
- RECSDK_PINS: JSON file with the pins (torchrec and runtime versions);
- RECSDK_UPSTREAM_WHEEL: the unpatched registry torchrec wheel, for comparisons;
- RECSDK_WHEELS: JSON list of the wheels under test.

Tests that need an ``npu`` device carry ``@pytest.mark.requires_npu``; without a device they
are reported as not run, with the reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

# The suite's helpers (rank workers, references, workloads, upstream's harness glue) live in lib/,
# apart from the tests in the area folders; test modules and spawned ranks (which inherit
# sys.path) import them by module name.
LIB = Path(__file__).resolve().parent / "lib"
if str(LIB) not in sys.path:
    sys.path.insert(0, str(LIB))


def pytest_configure(config: pytest.Config) -> None:
    import npu_dist

    npu_dist.preload_forkserver()
    config.addinivalue_line(
        "markers", "requires_npu: needs an npu device (real torch_npu or the npu_sim device)"
    )
    config.addinivalue_line(
        "markers",
        "requires_npu_ops(*ops): needs npu kernels of these operators (e.g. 'fbgemm::...'), "
        "registered for PrivateUse1 by the operator adapter",
    )


@pytest.fixture(scope="module")
def adapter() -> object:
    """The operator adapter, imported after fbgemm_gpu: fbgemm registers its operators (their
    schemas, CPU kernels and Meta kernels, which the tests use as references) on import, and the
    adapter their npu kernels."""
    import fbgemm_gpu  # noqa: F401
    import fbgemm_npu_api

    return fbgemm_npu_api


def missing_npu_ops(ops: tuple[str, ...]) -> list[str]:
    """Operators of ``ops`` without a PrivateUse1 (npu) kernel."""
    import torch

    for module in ("fbgemm_gpu", "fbgemm_npu_api"):
        # fbgemm registers its operators on import; the adapter registers their npu kernels.
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)
    missing = []
    for op in ops:
        try:
            has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key(op, "PrivateUse1")
        except RuntimeError:  # the operator does not exist at all in this build
            has_kernel = False
        if not has_kernel:
            missing.append(op)
    return missing


@lru_cache(maxsize=1)
def npu_status() -> tuple[bool, str]:
    """Whether torch has a usable ``npu`` device, and how it got one (or why not)."""
    import torch

    provider = None
    for module in ("torch_npu", "npu_sim"):
        if importlib.util.find_spec(module) is None:
            continue
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken install must be visible, not a silent skip
            return False, f"{module} is installed but cannot be imported: {exc}"
        provider = module
        break
    if provider is None:
        return False, (
            "no npu device: neither torch_npu (Ascend NPU) nor npu_sim (the simulated device) "
            "is installed in this environment"
        )
    npu = getattr(torch, "npu", None)
    if npu is None or not npu.is_available():
        return False, f"{provider} is imported but reports no available npu device"
    return True, provider


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    needs_npu = [
        item
        for item in items
        if item.get_closest_marker("requires_npu") or item.get_closest_marker("requires_npu_ops")
    ]
    if not needs_npu:
        return
    available, why = npu_status()
    for item in needs_npu:
        if not available:
            item.add_marker(pytest.mark.skip(reason=why))
            continue
        marker = item.get_closest_marker("requires_npu_ops")
        missing = missing_npu_ops(tuple(marker.args)) if marker else []
        if missing:
            item.add_marker(
                pytest.mark.skip(
                    reason=(
                        f"no npu kernel for {', '.join(missing)}: the operator adapter does not "
                        "implement it yet"
                    )
                )
            )


@pytest.fixture(scope="session")
def pins() -> dict[str, Any]:
    path = os.environ.get("RECSDK_PINS")
    if not path:
        pytest.fail("RECSDK_PINS is not set: run the suite through `recsdk-build verify`")
    return json.loads(Path(path).read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def upstream_wheel() -> Path:
    path = os.environ.get("RECSDK_UPSTREAM_WHEEL")
    if not path or not Path(path).is_file():
        pytest.skip("RECSDK_UPSTREAM_WHEEL is not set: no unpatched torchrec to compare with")
    return Path(path)
