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

from tests.extpackage import ExtensionUnderTest, provide_torchrec

UNDER_TEST = ExtensionUnderTest(
    "hybrid_torchrec",
    Path(__file__).resolve().parents[2] / "packages" / "hybrid_torchrec",
    "HYBRID_TEST_BUILD",
)
_under_test = ""
_torchrec = ""


def pytest_configure(config: pytest.Config) -> None:
    global _under_test, _torchrec
    _torchrec = provide_torchrec(config)
    config.addinivalue_line("markers", "slow: takes more than a minute")
    _under_test = UNDER_TEST.select()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"hybrid_torchrec under test: {_under_test}", f"torchrec: {_torchrec}"]


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
