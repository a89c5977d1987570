"""Builds hybrid_torchrec._C from csrc/ and the sources it shares with torchrec_embcache.

The flags, the version read and the shared sources are in recsdk_ext_setup.py of ``common/``
(a source distribution or a build's staging copy) or ``../common`` (the checkout).
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
    "bucketize.cpp",
    "common.cpp",
    "dedup.cpp",
    "id_mapper.cpp",
]
HEADERS = ["bucketize.h", "common.h", "dedup.h", "id_mapper.h"]

setup_extension(
    HERE,
    "hybrid_torchrec",
    sources=SOURCES,
    headers=HEADERS,
    threads_env="HYBRID_TORCHREC_NUM_THREADS",
)
