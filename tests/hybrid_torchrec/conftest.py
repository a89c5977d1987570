"""Test setup for hybrid_torchrec: which build is tested and where torchrec comes from are
decided in tests/extpackage.py (HYBRID_TEST_BUILD=inplace|installed forces the build; the pytest
header says which one is under test). torchrec is provided first: hybrid_torchrec refuses to
import without torchrec 1.1.0.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.extpackage import ExtensionUnderTest, configure

_header: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    _header[:] = configure(config, ExtensionUnderTest("hybrid_torchrec", "HYBRID_TEST_BUILD"))


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _header


@pytest.fixture(scope="module")
def gloo_world() -> Iterator[None]:
    """A one-rank gloo default process group for the module's tests, destroyed after them."""
    import torch.distributed as dist

    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(str(Path(tmp) / "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            yield
        finally:
            dist.destroy_process_group()
