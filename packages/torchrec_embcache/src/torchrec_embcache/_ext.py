"""Loads the C++ core; refuses one built for another torch or package version."""

from __future__ import annotations

import torch

from torchrec_embcache import errors
from torchrec_embcache._version import __version__

try:
    from torchrec_embcache import _C
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"torchrec_embcache's C++ core could not be loaded ({exc}). It must be built against "
        f"the installed torch {torch.__version__}: reinstall the torchrec_embcache wheel built "
        "for it, or rebuild with `pip wheel --no-build-isolation --no-deps "
        "packages/torchrec_embcache`."
    ) from exc


# The core itself compares the torch and package it was built for with the running ones.
_C._check_build(torch.__version__.split("+")[0], bool(torch._C._GLIBCXX_USE_CXX11_ABI), __version__)
_C._set_error_types(
    errors.EmbCacheError, errors.CheckpointError, errors.CacheCapacityError, errors.CacheStateError
)

__all__ = ["_C"]
