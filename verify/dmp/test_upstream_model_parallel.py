"""torchrec's own model-parallel tests (``ModelParallelBase``, shipped in the pinned wheel as
``torchrec.distributed.test_utils.test_model_parallel``) on npu devices over hccl.

Each test runs upstream's method, with its hypothesis strategies and ``max_examples``, its
``TestSparseNN`` model and ``sharding_single_rank_test`` (one training step of the sharded
model against the unsharded one, in 2 processes, 4 for grid sharding). Changed, and only that:

- the device: ``setUp`` hands ``npu`` to the sharders, and each rank's
  ``MultiProcessContext`` takes ``npu:rank`` (upstream picks cuda, else the CPU; see
  upstream_mp.py); the backend is ``hccl``; the shard placements upstream writes as
  ``rank:r/cuda:r`` for table-row-wise, table-column-wise and grid plans become ``npu:r``.
  Every rank of every example must show the hccl backend, an npu device and npu memory
  allocated (no silent fall back to gloo and the CPU);
- upstream's ``skipIf(torch.cuda.device_count() <= N)``, a count of CUDA devices, is not
  applied (the npu devices are counted instead);
- hypothesis runs derandomized (the same examples every run, so an expected failure is not a
  matter of luck), without its example database and without shrinking (a failing example is
  reported as drawn: shrinking would rerun two processes per step);
- examples the npu cannot run by design are rejected like upstream's own ``assume`` rejects
  combinations, and counted in the output: the UVM and UVM-caching compute kernels (no
  unified memory on NPU; the patched sharders never offer them for npu; coverage data:
  ``new_unified_tensor``, ``lxu_cache_lookup``... refused). ``max_examples`` counts only the
  examples that run. Also rejected: fp16 tables (``data_type`` FP16): the adapter refuses
  fp16 weights with a fused optimizer (docs/adapter.md), and upstream's unsharded reference
  fails on its own there: ``nn.EmbeddingBag`` with fp16 weights and fp32 per-sample weights,
  which torch's CPU kernel (and so the simulated device's fallback) rejects, as the same test
  does on the CPU with gloo;
- upstream's own example counts (1 to 10 per method, 34 in all); RECSDK_UPSTREAM_EXAMPLES=n
  caps them at n (upstream_mp.max_examples; 1 for a quick run). Measured on a quiet 2-core
  machine: the 9 methods with 1 example each in 49 s, with upstream's counts in 166 s.
  Derandomized, the same examples run every time.

Operators a case needs that have no npu kernel yet (``NEEDS``, read against
``data/fbgemm_coverage.toml`` and the installed adapter's dispatcher): the case is an expected
failure, and every failing rank must fail with exactly such an operator's
NotImplementedError; any other failure fails the test. Once every
needed kernel is registered the case must pass (a pass while a kernel is expected missing fails
the test too: update the coverage data).

These run by default in verify.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import unittest
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import npu_dist
import pytest
import upstream_mp

pytest.importorskip("hypothesis")
torch = pytest.importorskip("torch")

# The fbgemm operators each upstream case reaches beyond those the adapter has long had
# (cumsums, permute_2D_sparse_data, block bucketize, bounds checks, the TBE lookups):
# TestSparseNN regroups pooled features (KeyedTensor.regroup -> permute_pooled_embs), the
# sharded EmbeddingBagCollection permutes its output (PermutePooledEmbeddings; column-wise
# and grid: PermutePooledEmbeddingsSplit), and variable batch per feature adds the
# variable-stride input distribution and the VBE lookups.
_POOLED = ("permute_pooled_embs_auto_grad",)
_VBE = (
    "segment_sum_csr",
    "permute_1D_sparse_data",
    "expand_into_jagged_permute",
    "generate_vbe_metadata",
)
NEEDS: dict[str, tuple[str, ...]] = {
    "test_sharding_rw": _POOLED,
    "test_sharding_dp": _POOLED,
    "test_sharding_cw": (*_POOLED, "permute_pooled_embs_auto_grad_split"),
    "test_sharding_twcw": (*_POOLED, "permute_pooled_embs_auto_grad_split"),
    "test_sharding_tw": _POOLED,
    "test_sharding_twrw": _POOLED,
    "test_sharding_variable_batch": (*_POOLED, "permute_pooled_embs_auto_grad_split", *_VBE),
    # Upstream builds its per-table constraints (FUSED / FUSED_UVM_CACHING) from self.tables
    # before _test_sharding fills them, so on a fresh case (its one example) there are none:
    # the planner makes every table data-parallel (DENSE), with variable batch per feature.
    "test_sharding_multiple_kernels": (*_POOLED, *_VBE),
    "test_sharding_grid": (*_POOLED, "permute_pooled_embs_auto_grad_split"),
}
WORLD = {"test_sharding_grid": 4}


class _ExampleFailed(BaseException):
    """An example failed; carries its exception out of hypothesis without a rerun."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


_UVM_KERNELS = {"fused_uvm", "fused_uvm_caching"}


def _upstream() -> Any:
    from torchrec.distributed.test_utils import test_model_parallel

    return test_model_parallel


def _given_test(name: str) -> Callable[..., None]:
    """Upstream's hypothesis-wrapped method, without its CUDA-device-count skip (a
    ``unittest.skipIf`` wrapper, which keeps the wrapped function as ``__wrapped__``)."""
    fn = getattr(_upstream().ModelParallelBase, name)
    if getattr(fn, "__unittest_skip__", False):
        fn = fn.__wrapped__
    assert hasattr(fn, "hypothesis"), f"{name} is no longer a hypothesis test upstream"
    return fn


@contextlib.contextmanager
def _hypothesis_for_npu(
    fn: Any, rejected: Counter[str], examples: list[dict[str, str]]
) -> Iterator[None]:
    """Upstream's settings, derandomized, without database or shrinking, at most
    ``upstream_mp.max_examples()`` examples; examples of UVM kernels rejected; a failing
    example ends the run (``_ExampleFailed``). Restored afterwards (the functions are
    upstream's objects)."""
    from hypothesis import Phase, reject, settings
    from hypothesis.errors import UnsatisfiedAssumption

    inner = fn.hypothesis.inner_test
    original = fn._hypothesis_internal_use_settings

    def npu_inner(*args: Any, **kwargs: Any) -> None:
        kernel = kwargs.get("kernel_type")
        if kernel in _UVM_KERNELS:
            rejected[f"compute kernel {kernel}: no unified memory on NPU"] += 1
            reject()
        if getattr(kwargs.get("data_type"), "name", None) == "FP16":
            rejected["fp16 tables: refused with a fused optimizer; the fp16 reference fails"] += 1
            reject()
        examples.append({k: repr(v) for k, v in kwargs.items()})
        try:
            inner(*args, **kwargs)
        except (unittest.SkipTest, UnsatisfiedAssumption):  # upstream's skipTest and assume
            raise
        except Exception as exc:
            # Out of hypothesis at once (a BaseException): it would run the example again.
            raise _ExampleFailed(exc) from exc

    fn.hypothesis.inner_test = npu_inner
    fn._hypothesis_internal_use_settings = settings(
        original,
        max_examples=min(original.max_examples, upstream_mp.max_examples()),
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
    )
    try:
        yield
    finally:
        fn.hypothesis.inner_test = inner
        fn._hypothesis_internal_use_settings = original


def _npu_case_class() -> type:
    upstream = _upstream()

    class NpuModelParallel(upstream.ModelParallelBase):  # type: ignore[misc, name-defined]
        """ModelParallelBase with the npu device and the hccl backend."""

        report_dir: Path

        def setUp(self) -> None:
            super().setUp(backend="hccl")
            self.device = torch.device("npu")

        def _run_multi_process_test(self, *, callable: Any, world_size: int = 2, **kwargs: Any):
            for old in [*self.report_dir.glob("rank*.json"), *self.report_dir.glob("evidence*")]:
                old.unlink()
            kwargs.update(
                _target=callable, _report_dir=str(self.report_dir), _environ=dict(os.environ)
            )
            super()._run_multi_process_test(
                callable=upstream_mp.rank_entry, world_size=world_size, **kwargs
            )
            _check_ran_on_npu(self.report_dir, world_size)

        def runTest(self) -> None:  # unittest wants one; the tests call methods directly
            pass

    return NpuModelParallel


def _check_ran_on_npu(report_dir: Path, world_size: int) -> None:
    """Every rank of the example ran on an npu device over hccl and allocated npu memory."""
    evidence = {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(report_dir.glob("evidence*.json"))
    }
    assert len(evidence) == world_size, f"{world_size} ranks, evidence of {sorted(evidence)}"
    for name, seen in evidence.items():
        assert seen.get("backend") == "hccl", f"{name}: process group backend {seen}"
        assert str(seen.get("device", "")).startswith("npu:"), f"{name}: device {seen}"
        assert seen.get("npu_bytes_peak", 0) > 0, f"{name}: nothing allocated on npu: {seen}"


def _failure_detail(reports: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"--- rank {r['rank']}: {r['type']}: {r['message'][:600]}\n{r['traceback'][-3000:]}"
        for r in reports
    )


@pytest.mark.requires_npu
@pytest.mark.parametrize("name", sorted(NEEDS))
def test_upstream_model_parallel_on_npu(name: str, record_property: Any) -> None:
    world = WORLD.get(name, 2)
    if torch.npu.device_count() < world:
        pytest.skip(f"needs {world} npu devices, one per rank")
    missing = upstream_mp.expected_missing(NEEDS[name])
    fn = _given_test(name)
    case = _npu_case_class()()
    rejected: Counter[str] = Counter()
    examples: list[dict[str, str]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="recsdk-upstream-") as scratch:
        case.report_dir = Path(scratch)
        case.setUp()
        try:
            with _hypothesis_for_npu(fn, rejected, examples):
                fn(case)
        except (_ExampleFailed, Exception) as exc:
            reports = upstream_mp.read_reports(case.report_dir)
            failed_on, unexplained = upstream_mp.missing_ops_in(reports)
            detail = _failure_detail(reports)
            if (
                missing
                and failed_on
                and not unexplained
                and failed_on <= upstream_mp.names_for(missing)
            ):
                record_property("seconds", round(time.monotonic() - started, 1))
                pytest.xfail(
                    f"no npu kernel for {', '.join('fbgemm::' + op for op in sorted(failed_on))}"
                    f" (coverage data: {'; '.join(f'{k} {v}' for k, v in missing.items())})"
                )
            known = upstream_mp.names_for(NEEDS[name])
            if unexplained:
                why = f" (ranks {unexplained}: not for want of an npu kernel)"
            elif failed_on - known:
                why = f" on operators it is not known to need: {sorted(failed_on - known)}"
            elif failed_on:
                why = (
                    f" on {sorted(failed_on)}, which the coverage data says have npu kernels, "
                    "but this adapter registers none"
                )
            else:
                why = ""
            raise AssertionError(
                f"upstream {name} failed on npu, example {examples[-1] if examples else '?'}"
                f"{why}\n{detail}"
            ) from exc
        finally:
            case.tearDown()
            npu_dist  # noqa: B018 - imported for the ranks (rank_entry imports it there)
    seconds = round(time.monotonic() - started, 1)
    record_property("seconds", seconds)
    print(f"{name}: passed in {seconds}s; examples run: {examples}")
    print(f"rejected examples: {dict(rejected) or 'none'}")
    if missing:
        pytest.fail(
            f"{name} passes on npu, but the coverage data and the adapter say it needs "
            f"{', '.join(sorted(missing))} without an npu kernel: update data/fbgemm_coverage.toml"
        )
