"""Where a sharded EmbCache table's ids live: the bucket maps and placements, now in
:mod:`torchrec_embcache.distributed.types` (the interface apart from the implementations, as
torchrec lays out its distributed part). This path is that module under its earlier name."""

import sys

from torchrec_embcache.distributed import types

sys.modules[__name__] = types
