"""Package attributes that import their module when first asked for (PEP 562's module
``__getattr__``): torchrec takes seconds to import, and the packages' torchrec-facing names
should cost nothing until used.

This module is installed into each package as ``<package>._shared.lazy``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each name to the module that
    defines it; any other name raises AttributeError as Python's own lookup does."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
