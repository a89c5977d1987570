from __future__ import annotations

from pathlib import Path

import pytest
import vendor

from recsdk_build.pipeline.lock import shared_dir_lock


def _cache(config: pytest.Config, name: str) -> Path:
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir(name))
    return Path(config.rootpath) / ".pytest_cache" / name


@pytest.fixture(scope="session")
def vendor_kernels(request: pytest.FixtureRequest) -> Path:
    """The fbgemm-ascend A2 kernel sources (the wheel downloaded once into pytest's cache)."""
    cache = _cache(request.config, "fbgemm-ascend")
    # Parallel test workers share the cache: one downloads and extracts, the others wait.
    with shared_dir_lock(cache):
        try:
            wheel = vendor.fetch_wheel(cache)
        except (vendor.VendorUnavailable, OSError) as e:
            pytest.skip(f"fbgemm-ascend kernels unavailable (package registry unreachable?): {e}")
        return vendor.extract_kernels(wheel, cache / "src")


@pytest.fixture(scope="session")
def vendor_build(request: pytest.FixtureRequest, vendor_kernels: Path):
    """vendor_build(op) -> the op's kernel compiled unchanged against the emulation."""
    root = _cache(request.config, "recsdk-sim") / "ops"
    built: dict[vendor.VendorOp, vendor.VendorKernel] = {}

    def get(op: vendor.VendorOp) -> vendor.VendorKernel:
        if op not in built:
            with shared_dir_lock(root / f"conformance-{op.name}"):
                built[op] = vendor.build(op, vendor_kernels, root)
        return built[op]

    return get
