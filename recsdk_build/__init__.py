"""recsdk-build: turns pinned upstream sources into the TorchRec stack for Ascend NPUs."""

__version__ = "0.1.0"
