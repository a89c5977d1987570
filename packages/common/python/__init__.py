"""Python shared by hybrid_torchrec and torchrec_embcache (packages/common/python of the
recsdk-build checkout), installed into each as its ``_shared`` subpackage by that package's
build. A module here names its host package only relatively (``from ..errors import ...``),
so the same file serves both."""
