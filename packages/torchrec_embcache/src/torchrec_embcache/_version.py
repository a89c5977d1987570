"""The package version: the single source read by the build (pyproject) and at run time."""

__version__ = "1.1.0+npu"
