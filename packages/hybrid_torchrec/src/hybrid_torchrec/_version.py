"""Versions: the package's own (read by the build and at run time) and the torchrec it is for."""

__version__ = "1.1.0+npu"

# The torchrec release whose modules the package extends; the local part (+npu) may differ.
TORCHREC_RELEASE = "1.1.0"
