"""Loads the C++ core and checks that it was built for the torch that is running."""

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


def _check_build() -> None:
    info = _C.build_info
    running = torch.__version__.split("+")[0]
    if info["torch_version"] != running:
        raise ImportError(
            f"hybrid_torchrec's C++ core was built against torch {info['torch_version']} but "
            f"torch {running} is running; rebuild the wheel in this environment"
        )
    if info["version"] != __version__:
        raise ImportError(
            f"hybrid_torchrec's C++ core is version {info['version']} but the Python package is "
            f"{__version__}: a stale build is lying around; rebuild the extension"
        )
    if bool(info["cxx11_abi"]) != bool(torch._C._GLIBCXX_USE_CXX11_ABI):
        raise ImportError(
            "hybrid_torchrec's C++ core was compiled with a different _GLIBCXX_USE_CXX11_ABI "
            "than torch; rebuild it with torch's extension builder"
        )


_check_build()
_C._set_error_types(errors.CapacityError)

__all__ = ["_C"]
