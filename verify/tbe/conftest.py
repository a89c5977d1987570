"""tbe/'s tests all run the operators through the installed adapter: each module imports it
first (the root conftest's ``adapter`` fixture)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def _adapter_imported(adapter: object) -> None:
    """Every test module here needs the adapter's npu kernels."""
