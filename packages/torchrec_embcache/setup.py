"""torchrec_embcache's build: the extension _C, nothing else (metadata is in pyproject.toml).

Shared with hybrid_torchrec, in packages/common: recsdk_ext_setup.py (flags, version) and
the host pool. A staging copy or sdist carries it as common/, the checkout as ../common.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON = HERE / "common" if (HERE / "common").is_dir() else HERE.parent / "common"
if not (COMMON / "recsdk_ext_setup.py").is_file():
    sys.exit(
        f"{HERE.name} needs the sources it shares with the other extension package: common/ "
        "beside setup.py (recsdk-build wheels copies it there) or packages/common of the "
        "recsdk-build checkout; neither exists"
    )
sys.path.insert(0, str(COMMON))

from recsdk_ext_setup import setup_extension  # noqa: E402

# Explicit lists: a stray file in csrc/ must not silently change what is compiled.
SOURCES = [
    "bindings.cpp",
    "bindings_planner.cpp",
    "bindings_table.cpp",
    "cache_planner.cpp",
    "checkpoint.cpp",
    "crc32c.cpp",
    "host_table.cpp",
    "initializer.cpp",
    "optimizer.cpp",
]
HEADERS = [
    "bindings.h",
    "cache_planner.h",
    "common.h",
    "crc32c.h",
    "host_table.h",
    "initializer.h",
    "optimizer.h",
    "tensor_args.h",
]

EXTRA_FLAGS = [
    # Rounding is decided in the source (explicit fma where torch uses one), not by the
    # compiler contracting a*b+c; the exactness tests against PyTorch depend on it.
    "-ffp-contract=off",
    # Lets sqrt vectorise; results for valid inputs are unchanged.
    "-fno-math-errno",
]

setup_extension(
    HERE,
    "torchrec_embcache",
    sources=SOURCES,
    headers=HEADERS,
    threads_env="EMBCACHE_NUM_THREADS",
    extra_flags=EXTRA_FLAGS,
)
