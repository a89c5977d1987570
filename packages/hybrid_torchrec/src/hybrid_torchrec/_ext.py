"""Loads the C++ core; refuses one built for another torch or package version."""

from __future__ import annotations

import torch

from hybrid_torchrec import errors
from hybrid_torchrec._version import __version__

try:
    from hybrid_torchrec import _C
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"hybrid_torchrec's C++ core could not be loaded ({exc}). It must be built against the "
        f"installed torch {torch.__version__}: reinstall the hybrid_torchrec wheel built for it, "
        "or rebuild with `pip wheel --no-build-isolation --no-deps packages/hybrid_torchrec`."
    ) from exc


# The core itself compares the torch and package it was built for with the running ones.
_C._check_build(torch.__version__.split("+")[0], bool(torch._C._GLIBCXX_USE_CXX11_ABI), __version__)
_C._set_error_types(errors.CapacityError)

__all__ = ["_C"]
