"""Test setup for torchrec_embcache: which build is tested and where torchrec comes from are
decided in tests/extpackage.py (EMBCACHE_TEST_BUILD=inplace|installed forces the build; the
pytest header says which one is under test). Also the ``requires_npu`` marker: such tests are
skipped with the reason when no npu device (torch_npu or npu_sim) is available.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extpackage import ExtensionUnderTest, configure

_header: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires_npu: needs an npu device (torch_npu or the npu_sim device)"
    )
    _header[:] = configure(config, ExtensionUnderTest("torchrec_embcache", "EMBCACHE_TEST_BUILD"))


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _header


def npu_available() -> tuple[bool, str]:
    import importlib
    import importlib.util

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
