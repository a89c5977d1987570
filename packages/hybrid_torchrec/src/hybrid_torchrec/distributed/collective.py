"""One rank's failure in a step every rank takes together, raised on every rank.

The implementation is shared with torchrec_embcache (packages/common/python/collective.py,
installed as :mod:`hybrid_torchrec._shared.collective`); its errors are this package's
:class:`~hybrid_torchrec.errors.CollectiveError` or the failing rank's own exception type.
"""

from __future__ import annotations

from hybrid_torchrec._shared.collective import (
    CollectiveError,
    agree,
    collective_plan,
    collective_step,
)

__all__ = ["CollectiveError", "agree", "collective_plan", "collective_step"]
