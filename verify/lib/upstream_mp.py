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

import contextlib
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
COVERAGE_FILE = Path(__file__).resolve().parents[2] / "data" / "fbgemm_coverage.toml"

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
EXAMPLES = "RECSDK_UPSTREAM_EXAMPLES"


def max_examples() -> int:
    """The cap on hypothesis examples per upstream method: RECSDK_UPSTREAM_EXAMPLES, else 10,
    the largest of upstream's own counts, so that every method runs all of its examples
    (upstream's count stays the upper bound). Every example starts its ranks anew."""
    raw = os.environ.get(EXAMPLES, "10")
    count = int(raw) if raw.strip().isdigit() else 0
    if count < 1:
        raise ValueError(f"{EXAMPLES} must be a whole number of examples, at least 1; got {raw!r}")
    return count


def require_opt_in_while_missing(needs: Iterable[str], cost: str) -> None:
    """A run that can only end in the expected failure while one of ``needs`` has no npu
    kernel runs by default once they all have one; until then only with
    RECSDK_VERIFY_UPSTREAM=1 (``cost`` says what it would spend), else it is reported as not
    run, with this reason."""
    import pytest

    missing = expected_missing(needs)
    if missing and os.environ.get(OPT_IN) != "1":
        pytest.skip(
            f"runs by default once {', '.join('fbgemm::' + op for op in sorted(missing))} "
            f"has an npu kernel; until then it stops at the missing kernel ({cost}): run it "
            f"with {OPT_IN}=1"
        )


def _npu_placements(plan: Any) -> Any:
    """``plan`` with every shard placed on ``cuda:i`` placed on ``npu:i`` instead."""
    import torch

    for module_plan in plan.plan.values():
        for sharding in module_plan.values():
            spec = sharding.sharding_spec
            for shard in getattr(spec, "shards", None) or ():
                device = shard.placement.device()
                if device.type == "cuda":
                    shard.placement = torch.distributed._remote_device(
                        f"rank:{shard.placement.rank()}/npu:{device.index}"
                    )
    return plan


def _select_npu_device() -> None:
    """Upstream's device choices, made for npu:

    - MultiProcessContext picks cuda:rank when CUDA is there, else the CPU: it picks npu:rank
      here (with the hccl backend);
    - sharding_single_rank_test, "simulating multiple nodes on a single node", rewrites the
      shard placements of table-row-wise, table-column-wise and grid plans to the literal
      ``rank:r/cuda:r`` for any device but the CPU: its DistributedModelParallel and
      DMPCollection get those placements back on ``npu:r`` (the shards live there, and
      ShardedTensor requires the placement to be the tensor's device).

    Each context also records what the rank ran on (``EVIDENCE``): the process group's
    backend and the device, which the test checks after every example.
    """
    import torch
    import torch.distributed as dist
    from torchrec.distributed.test_utils import multi_process, test_sharding

    original = multi_process.MultiProcessContext.__init__
    if getattr(original, "_recsdk_npu", False):
        return
    original_enter = multi_process.MultiProcessContext.__enter__

    def init(self: Any, rank: int, world_size: int, backend: str = "gloo", *a: Any, **k: Any):
        original(self, rank, world_size, backend, *a, **k)
        if backend == "hccl":
            self.device = torch.device("npu", rank % torch.npu.device_count())
            torch.npu.set_device(self.device)
        EVIDENCE["device"] = str(self.device)

    def enter(self: Any) -> Any:
        entered = original_enter(self)
        EVIDENCE["backend"] = str(dist.get_backend(self.pg))
        return entered

    init._recsdk_npu = True  # type: ignore[attr-defined]
    multi_process.MultiProcessContext.__init__ = init  # type: ignore[method-assign]
    multi_process.MultiProcessContext.__enter__ = enter  # type: ignore[method-assign]

    class NpuDistributedModelParallel(test_sharding.DistributedModelParallel):  # type: ignore[misc, name-defined]
        def __init__(self, *args: Any, plan: Any = None, **kwargs: Any) -> None:
            super().__init__(*args, plan=plan and _npu_placements(plan), **kwargs)

    class NpuDMPCollection(test_sharding.DMPCollection):  # type: ignore[misc, name-defined]
        def __init__(self, *args: Any, plan: Any = None, **kwargs: Any) -> None:
            super().__init__(*args, plan=plan and _npu_placements(plan), **kwargs)

    test_sharding.DistributedModelParallel = NpuDistributedModelParallel
    test_sharding.DMPCollection = NpuDMPCollection


# What a rank ran on, written beside its report: the test requires the hccl backend and an
# npu device of every rank of every example (not a silent fall back to gloo and the CPU).
EVIDENCE: dict[str, Any] = {}


def rank_entry(
    *, _target: Callable[..., None], _report_dir: str, _environ: dict[str, str], **kwargs: Any
) -> None:
    """One rank: the npu device, upstream's rank function, a report of any failure.
    ``_environ``: the starting process's environment (upstream's setUp sets MASTER_PORT there
    for every test; a forkserver child would otherwise see the first test's)."""
    import npu_dist

    npu_dist.use_environment(_environ)
    faulthandler.dump_traceback_later(RANK_WATCHDOG_SECONDS, exit=True)
    rank = kwargs.get("rank", -1)
    code = 0
    try:
        if kwargs.get("backend") == "hccl":
            npu_dist.import_npu_provider()
            _select_npu_device()
        _target(**kwargs)
        if kwargs.get("backend") == "hccl":
            import torch

            EVIDENCE["npu_bytes_peak"] = int(torch.npu.max_memory_allocated(EVIDENCE["device"]))
        (Path(_report_dir) / f"evidence{rank}.json").write_text(
            json.dumps(EVIDENCE), encoding="utf-8"
        )
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


def ops_in_error(kind: str, message: str) -> set[str]:
    """The fbgemm operators (coverage-data names) an error says the npu lacks: those a missing
    kernel's NotImplementedError names. (The adapter refuses no feature of an operator it has a
    kernel for since the TBE lookups took variable batch per feature, issue 27.)"""
    if kind == "NotImplementedError":
        return set(OP_IN_ERROR.findall(message))
    return set()


def missing_ops_in(reports: Iterable[dict[str, Any]]) -> tuple[set[str], list[int]]:
    """fbgemm operators the ranks failed on for want of an npu kernel, and the ranks whose
    failure is not such a want (any of which makes the failure a bug, not an expectation)."""
    found: set[str] = set()
    unexplained: list[int] = []
    for report in reports:
        ops = ops_in_error(report["type"], report["message"])
        found.update(ops)
        if not ops:
            unexplained.append(report["rank"])
    return found, unexplained


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

    # The adapter's registrations exist once it is imported (the ranks import it; this process
    # may not have yet, and an aten-composition entry is judged by them alone).
    with contextlib.suppress(ImportError):
        import fbgemm_npu_api  # noqa: F401

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
