"""Loads the C++ core and checks that it was built for the torch that is running."""

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


def _check_build() -> None:
    info = _C.build_info
    running = torch.__version__.split("+")[0]
    if info["torch_version"] != running:
        raise ImportError(
            f"torchrec_embcache's C++ core was built against torch {info['torch_version']} but "
            f"torch {running} is running; rebuild the wheel in this environment"
        )
    if info["version"] != __version__:
        raise ImportError(
            f"torchrec_embcache's C++ core is version {info['version']} but the Python package "
            f"is {__version__}: a stale build is lying around; rebuild the extension"
        )
    if bool(info["cxx11_abi"]) != bool(torch._C._GLIBCXX_USE_CXX11_ABI):
        raise ImportError(
            "torchrec_embcache's C++ core was compiled with a different _GLIBCXX_USE_CXX11_ABI "
            "than torch; rebuild it with torch's extension builder"
        )


_check_build()
_C._set_error_types(
    errors.EmbCacheError, errors.CheckpointError, errors.CacheCapacityError, errors.CacheStateError
)

__all__ = ["_C"]
