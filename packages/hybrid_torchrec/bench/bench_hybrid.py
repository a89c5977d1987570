"""Host id processing of hybrid_torchrec: prints the figures of issue 13.

One batch of 2^20 ids, Zipf(1.05) over 10^8 distinct values (scattered over int64), is
de-duplicated and mapped to rows, the work a rank does per table batch before the lookup:

* torch.unique(return_inverse=True) on the same ids: the baseline (sorted);
* hybrid_torchrec.unique (first-occurrence order; and sorted=True, torch's exact output);
* IdMapper.map = unique + mapping, on a table that already maps every id of the batch
  (steady state), without and with LRU bookkeeping, and on an empty table (every distinct id
  inserted: the first batches of a run).

Per core: every case runs with 1 thread (torch's intra-op pool and the host pool) and is
measured in CPU time of the process, which a busy machine inflates far less than wall time;
the cases are interleaved in every repetition, and the ratio to torch.unique (target >= 2x)
is given for the median CPU times and for the best ones (the least disturbed repetitions).
Scaling: wall time with 1 thread over wall time with 2.
On a shared host a second thread may find no free core, so the 2-thread CPU time (all
threads) and the concurrency achieved (CPU time / wall time) are printed too: equal CPU times
with 1 and 2 threads mean the work splits without overhead, and a concurrency near 1 means
the scheduler gave the run one core's worth of time.

Run:  python packages/hybrid_torchrec/bench/bench_hybrid.py [--repeat 15] [--json out.json]
(torch 2.6 and torchrec 1.1.0 must be importable: hybrid_torchrec checks torchrec at import.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import torch

try:
    import hybrid_torchrec as hy
    from hybrid_torchrec.workload import zipf_ids
except ImportError as exc:  # not installed, or its extension not built
    raise SystemExit(
        f"{__file__}: cannot import hybrid_torchrec ({exc}); run it with the verify "
        "environment's python (build/verify/venv/bin/python, after recsdk-build all) or, "
        "from the repository root, with PYTHONPATH=packages/hybrid_torchrec/src:"
        ".pytest_cache/d/recsdk-torchrec/torchrec-1.1.0 once `python -m pytest "
        "tests/hybrid_torchrec` has built the extension in place"
    ) from None

BASELINE = "torch.unique(return_inverse=True)"


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(cpu seconds, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def run(cases: dict[str, Callable[[], object]], threads: int, repeat: int) -> dict[str, list]:
    torch.set_num_threads(threads)
    hy.set_num_threads(threads)
    for fn in cases.values():  # warm-up: workspaces, allocator, caches
        fn()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            samples[name].append(measure(fn))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, default=1 << 20, help="ids per batch (2^20)")
    parser.add_argument("--values", type=int, default=10**8, help="distinct values (10^8)")
    parser.add_argument("--exponent", type=float, default=1.05)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    ids = zipf_ids(args.ids, args.values, args.exponent, torch.Generator().manual_seed(0))
    n = ids.numel()
    distinct = hy.unique(ids).values.numel()

    warm = hy.IdMapper(args.values, name="warm")
    warm.map(ids)
    warm_lru = hy.IdMapper(args.values, hy.EvictionPolicy("lru"), name="warm_lru")
    warm_lru.map(ids)
    cases: dict[str, Callable[[], object]] = {
        BASELINE: lambda: torch.unique(ids, return_inverse=True),
        "unique": lambda: hy.unique(ids),
        "unique, sorted": lambda: hy.unique(ids, sorted=True),
        "unique + map, ids known": lambda: warm.map(ids),
        "unique + map, ids known, LRU": lambda: warm_lru.map(ids),
        "unique + map, empty table": lambda: hy.IdMapper(args.values, name="cold").map(ids),
    }
    torch_threads, pool_threads = torch.get_num_threads(), hy.get_num_threads()
    try:
        one = run(cases, 1, args.repeat)
        two = run(cases, 2, args.repeat)
    finally:
        torch.set_num_threads(torch_threads)
        hy.set_num_threads(pool_threads)

    load = os.getloadavg()[0]
    print(
        f"batch: {n} ids, Zipf({args.exponent}) over {args.values:.0e} values, {distinct} "
        f"distinct; {os.cpu_count()} CPUs, load average {load:.1f} during the run"
    )
    print()
    header = (
        f"{'':32} {'CPU ms':>8} {'M ids/s/core':>13} {'vs torch':>9} {'(best)':>7} "
        f"{'wall ms 1t':>11} {'wall ms 2t':>11} {'1t->2t':>7} {'CPU ms 2t':>10} {'conc.':>6}"
    )
    print(header)
    rows = {}
    base_cpu = [cpu for cpu, _ in one[BASELINE]]
    for name in cases:
        cpu = [c for c, _ in one[name]]
        ratio = statistics.median(base_cpu) / statistics.median(cpu)
        best = min(base_cpu) / min(cpu)
        cpu_ms = statistics.median(cpu) * 1e3
        wall1 = statistics.median(w for _, w in one[name]) * 1e3
        wall2 = statistics.median(w for _, w in two[name]) * 1e3
        cpu2 = statistics.median(c for c, _ in two[name]) * 1e3
        rows[name] = {
            "cpu_ms_1_thread": cpu_ms,
            "ids_per_s_per_core": n / cpu_ms * 1e3,
            "speedup_vs_torch_unique": ratio,
            "speedup_vs_torch_unique_best": best,
            "wall_ms_1_thread": wall1,
            "wall_ms_2_threads": wall2,
            "scaling_1_to_2_threads": wall1 / wall2,
            "cpu_ms_2_threads": cpu2,
            "concurrency_2_threads": cpu2 / wall2,
        }
        print(
            f"{name:32} {cpu_ms:8.1f} {n / cpu_ms / 1e3:13.1f} {ratio:8.2f}x {best:6.2f}x "
            f"{wall1:11.1f} {wall2:11.1f} {wall1 / wall2:6.2f}x {cpu2:10.1f} {cpu2 / wall2:6.2f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {"ids": n, "distinct": distinct, "load_average": load, "results": rows},
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
