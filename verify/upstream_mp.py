"""Run torchrec's own multi-process tests on npu devices over hccl.

torchrec's harness (``torchrec.distributed.test_utils``) chooses its device in two places:
``ModelParallelTestShared.setUp`` (cuda if available, else cpu: handed to the sharders) and
``MultiProcessContext`` in each rank (``cuda:rank`` if available, else cpu). Nothing else of it
is changed here: ``rank_entry`` is the rank's process target, which selects ``npu:rank`` in
``MultiProcessContext`` and then runs upstream's rank function unmodified, writing any
exception to a report file the test reads (which operator had no npu kernel), and leaving
with ``os._exit`` (see npu_dist._rank_main for the gloo teardown deadlock this avoids).

What each upstream case needs from the adapter is checked against the coverage data
(``data/fbgemm_coverage.toml``) and the dispatcher: ``expected_missing`` lists the needed
operators that have no npu kernel yet; a case needing one is expected to fail with exactly that
operator's NotImplementedError, and must pass once the kernel lands.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

# A rank that waits on a peer which died outside a collective would wait forever; this turns
# such a hang into a failure with every thread's stack.
RANK_WATCHDOG_SECONDS = 1200
COVERAGE_FILE = Path(__file__).resolve().parent.parent / "data" / "fbgemm_coverage.toml"

# fbgemm operators whose npu kernel is reached through another operator: a missing kernel is
# reported under the inner name.
INNER_OPS = {
    "permute_pooled_embs_auto_grad": ("permute_pooled_embs",),
    "permute_pooled_embs_auto_grad_split": ("permute_pooled_embs_split",),
    "jagged_to_padded_dense": ("jagged_to_padded_dense_forward", "jagged_to_padded_dense_backward"),
    "jagged_2d_to_dense": ("jagged_to_padded_dense_forward", "jagged_to_padded_dense_backward"),
    "permute_multi_embedding": ("permute_multi_embedding_function",),
}
OP_IN_ERROR = re.compile(r"fbgemm::([A-Za-z_][A-Za-z0-9_]*)")


OPT_IN = "RECSDK_VERIFY_UPSTREAM"


def require_opt_in() -> None:
    """These runs start many rank processes (minutes each under emulation) and have not yet
    been through a CI run: they run when RECSDK_VERIFY_UPSTREAM=1, else are reported as not
    run, with this reason."""
    import pytest

    if os.environ.get(OPT_IN) != "1":
        pytest.skip(
            f"torchrec's own distributed tests on npu run with {OPT_IN}=1 (opt-in until "
            "their runtime under emulation is measured in CI)"
        )


def _select_npu_device() -> None:
    """MultiProcessContext picks cuda:rank when CUDA is there, else the CPU; pick npu:rank."""
    import torch
    from torchrec.distributed.test_utils import multi_process

    original = multi_process.MultiProcessContext.__init__
    if getattr(original, "_recsdk_npu", False):
        return

    def init(self: Any, rank: int, world_size: int, backend: str = "gloo", *a: Any, **k: Any):
        original(self, rank, world_size, backend, *a, **k)
        if backend == "hccl":
            self.device = torch.device("npu", rank % torch.npu.device_count())
            torch.npu.set_device(self.device)

    init._recsdk_npu = True  # type: ignore[attr-defined]
    multi_process.MultiProcessContext.__init__ = init  # type: ignore[method-assign]


def rank_entry(*, _target: Callable[..., None], _report_dir: str, **kwargs: Any) -> None:
    """One rank: the npu device, upstream's rank function, a report of any failure."""
    faulthandler.dump_traceback_later(RANK_WATCHDOG_SECONDS, exit=True)
    rank = kwargs.get("rank", -1)
    code = 0
    try:
        if kwargs.get("backend") == "hccl":
            import npu_dist

            npu_dist.import_npu_provider()
            _select_npu_device()
        _target(**kwargs)
    except BaseException as exc:  # reported to the parent, which decides what it means
        code = 1
        report = {
            "rank": rank,
            "type": type(exc).__name__,
            "message": str(exc)[:4000],
            "traceback": traceback.format_exc()[-12000:],
        }
        path = Path(_report_dir) / f"rank{rank}.json"
        path.write_text(json.dumps(report, indent=1), encoding="utf-8")
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def read_reports(report_dir: Path) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text(encoding="utf-8")) for p in sorted(report_dir.glob("rank*.json"))
    ]


def missing_ops_in(reports: Iterable[dict[str, Any]]) -> set[str]:
    """fbgemm operators the ranks failed on for want of an npu kernel."""
    found: set[str] = set()
    for report in reports:
        if report["type"] == "NotImplementedError":
            found.update(OP_IN_ERROR.findall(report["message"]))
    return found


@lru_cache(maxsize=1)
def coverage_data() -> dict[str, dict[str, Any]]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(COVERAGE_FILE.read_text(encoding="utf-8"))["ops"]


def has_npu_kernel(op: str) -> bool:
    """The installed adapter registers an npu kernel for ``op`` (or for every operator its
    coverage entry says it goes through)."""
    import torch

    entry = coverage_data().get(op, {})
    targets = entry.get("via") or [op]
    for name in targets:
        try:
            found = torch._C._dispatch_has_kernel_for_dispatch_key(f"fbgemm::{name}", "PrivateUse1")
            found = found or torch._C._dispatch_has_kernel_for_dispatch_key(
                f"fbgemm::{name}", "AutogradPrivateUse1"
            )
        except RuntimeError:
            found = False
        if not found:
            return False
    return True


def expected_missing(needs: Iterable[str]) -> dict[str, str]:
    """Of the operators a case needs: those without an npu kernel, with what the coverage
    data says of each. An operator the data calls npu-kernel is never expected missing: if its
    kernel is not registered, the case fails (so does ``recsdk-build coverage``)."""
    data = coverage_data()
    out: dict[str, str] = {}
    for op in needs:
        if op not in data:
            raise KeyError(f"fbgemm::{op} is not classified in {COVERAGE_FILE}")
        status = data[op]["status"]
        if status != "npu-kernel" and not has_npu_kernel(op):
            out[op] = f"{status}: {data[op].get('reason', '')}".rstrip(": ")
    return out


def names_for(ops: Iterable[str]) -> set[str]:
    """The names a missing kernel of ``ops`` can be reported under."""
    names: set[str] = set()
    for op in ops:
        names.add(op)
        names.update(INNER_OPS.get(op, ()))
    return names
