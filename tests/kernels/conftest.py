from __future__ import annotations

from pathlib import Path

import pytest
from kernel_testlib import OpLibraries, build_checks_library


def _cache_dir(config: pytest.Config) -> Path:
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("recsdk-sim"))
    return Path(config.rootpath) / ".pytest_cache" / "recsdk-sim"


@pytest.fixture(scope="session")
def sim_build_root(request: pytest.FixtureRequest) -> Path:
    """Where sim libraries of operators and test kernels are built (pytest's cache)."""
    return _cache_dir(request.config) / "ops"


@pytest.fixture(scope="session")
def sim_ops(request: pytest.FixtureRequest) -> OpLibraries:
    """sim_ops("jagged_to_padded_dense") -> its SimOp (compiled once per source state)."""
    return OpLibraries(_cache_dir(request.config) / "ops")


@pytest.fixture(scope="session")
def checks_library(request: pytest.FixtureRequest) -> Path:
    return build_checks_library(_cache_dir(request.config) / "ops")
