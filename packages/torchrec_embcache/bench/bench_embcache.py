"""Benchmarks of torchrec_embcache; prints the figures of issues #6 and #14.

1. lookup: 2^20 lookups (dim 128, fp32) of ids drawn from a Zipf distribution over 10^7
   ids, through the host table into a reused output buffer, against torch.index_select(...,
   out=) into a reused buffer on a dense tensor holding the same rows (the ids mapped to row
   numbers beforehand), and a plain copy of the same 512 MB as the memory-bandwidth floor.
   Target (issue 14): >= 0.8x of index_select.
2. memory: host memory per stored row, float32 and bfloat16 rows, SGD and Adam state, for
   the distinct ids of (1). Target: <= 1.3x of the raw row and state bytes.
3. sizing: cache hit rate at 10 % and 50 % of the working set as device slots, for DLRM-like
   Zipf traffic, predicted by ec.cache_sizing and checked on one table's real cache.
4. dlrm: training steps per second of torchrec's DLRM (13 dense, 26 sparse features,
   synthetic data) with EmbCacheEmbeddingBagCollection against torchrec's
   EmbeddingBagCollection of the same size, on the CPU. Target: >= 0.7x.
5. skew: what a rank of a row-wise sharded table sees: only the ids of its hash buckets.
   Inserting 2^18 such ids into a host table, and training steps of a table with an 8192-slot
   device cache, against the same counts of ids from every bucket. The two should cost the
   same; they did not while the core's hash maps took their slots from the bits that also pick
   the bucket (4x slower inserts, 5x slower cached steps).

Run:  python packages/torchrec_embcache/bench/bench_embcache.py \
          [--only lookup,memory,sizing,dlrm,skew]
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

try:
    import torchrec_embcache as ec
except ImportError as exc:  # not installed, or its extension not built
    raise SystemExit(
        f"{__file__}: cannot import torchrec_embcache ({exc}); run it with the verify "
        "environment's python (build/verify/venv/bin/python, after recsdk-build all) or, "
        "from the repository root, with PYTHONPATH=packages/torchrec_embcache/src:"
        ".pytest_cache/d/recsdk-torchrec/torchrec-1.1.0 once `python -m pytest "
        "tests/embcache` has built the extension in place"
    ) from None


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of fn over `repeat` runs (after one warm-up run)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def zipf_ids(n: int, universe: int, exponent: float, seed: int) -> torch.Tensor:
    """n draws of Zipf(exponent) ranks over [1, universe], scattered over the int64 range."""
    g = torch.Generator().manual_seed(seed)
    weights = torch.arange(1, universe + 1, dtype=torch.float64).pow_(-exponent)
    cdf = torch.cumsum(weights, 0)
    del weights
    u = torch.rand(n, generator=g, dtype=torch.float64) * cdf[-1]
    ranks = torch.searchsorted(cdf, u).clamp_(max=universe - 1)
    # An odd multiplier is a bijection of int64: distinct ranks stay distinct ids.
    return ranks * (0x9E3779B97F4A7C15 - 2**64)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import resource

    return pages * resource.getpagesize()


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Wall times of each fn, run in turn (one warm-up round first), so that load from
    other processes on a shared machine hits them alike."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def lookup_workload(args: argparse.Namespace, dim: int) -> tuple[Any, torch.Tensor, Any, Any]:
    """A table holding the rows of 2^20 Zipf ids, the ids, their distinct values and each
    position's index among them."""
    ids = zipf_ids(1 << 20, args.universe, args.zipf, seed=1)
    uniq, dense_index = torch.unique(ids, return_inverse=True)
    table = ec.EmbeddingTable(dim, optimizer=ec.SparseSGD(), initializer=ec.Uniform(-0.1, 0.1))
    for chunk in uniq.split(1 << 18):
        table.lookup(chunk, train=True)
    return table, ids, uniq, dense_index


def bench_lookup(args: argparse.Namespace, results: dict[str, object]) -> None:
    """Both lookups write into an output buffer allocated once and reused, as a training
    loop would: a fresh 512 MB output per call costs page faults that hide the lookups
    themselves. A plain copy of 512 MB between two reused buffers is the memory floor."""
    n, dim = 1 << 20, 128
    table, ids, uniq, dense_index = lookup_workload(args, dim)
    dense = table.host.lookup(uniq)  # row i of the dense table = the row of uniq[i]
    out_table = torch.empty(n, dim)
    out_dense = torch.empty(n, dim)
    table.host.lookup(ids, out=out_table)
    torch.index_select(dense, 0, dense_index, out=out_dense)
    assert torch.equal(out_table, out_dense)
    src = out_dense.clone()

    t = interleaved(
        {
            "table": lambda: table.host.lookup(ids, out=out_table),
            "index_select": lambda: torch.index_select(dense, 0, dense_index, out=out_dense),
            "copy": lambda: out_table.copy_(src),
        },
        args.repeat,
    )
    med = {k: statistics.median(v) for k, v in t.items()}
    best = {k: min(v) for k, v in t.items()}
    t_alloc = timed(lambda: table.host.lookup(ids), max(3, args.repeat // 2))
    results["lookup"] = {
        "lookups": n,
        "dim": dim,
        "distinct_ids": int(uniq.numel()),
        "threads": ec.get_num_threads(),
        "median_s": med,
        "best_s": best,
        "ratio_median": med["index_select"] / med["table"],
        "ratio_best": best["index_select"] / best["table"],
        "table_allocating_s": t_alloc,
    }
    mb = n * dim * 4 / 2**20
    print(
        f"[lookup] 2^20 ids, Zipf({args.zipf}) over {args.universe:.0e} ids, "
        f"{uniq.numel()} distinct, dim {dim} ({mb:.0f} MB out), {ec.get_num_threads()} threads, "
        f"reused output buffers, {args.repeat} interleaved runs (median / best)\n"
        f"  host table lookup(out=)      {med['table'] * 1e3:7.1f} / {best['table'] * 1e3:6.1f} ms"
        f"  {n / med['table'] / 1e6:6.1f} M lookups/s\n"
        f"  torch.index_select(out=)     {med['index_select'] * 1e3:7.1f} / "
        f"{best['index_select'] * 1e3:6.1f} ms  {n / med['index_select'] / 1e6:6.1f} M lookups/s\n"
        f"  copy of {mb:.0f} MB (floor)      {med['copy'] * 1e3:7.1f} / "
        f"{best['copy'] * 1e3:6.1f} ms\n"
        f"  table / index_select throughput: {med['index_select'] / med['table']:.2f}x median, "
        f"{best['index_select'] / best['table']:.2f}x best  (target >= 0.8x)\n"
        f"  copy floor / table: {med['copy'] / med['table']:.2f}x;  "
        f"copy floor / index_select: {med['copy'] / med['index_select']:.2f}x\n"
        f"  (host table lookup allocating a fresh output: {t_alloc * 1e3:.1f} ms)"
    )


def bench_memory(args: argparse.Namespace, results: dict[str, object]) -> None:
    """Host memory per stored row for float32 and bfloat16 rows, SGD and Adam state: the
    table's own accounting, cross-checked by the resident set growth of a fresh process
    that builds the same table (this process's allocator holds freed memory)."""
    dim = 128
    ids = torch.unique(zipf_ids(1 << 20, args.universe, args.zipf, seed=1))
    mem: dict[str, dict[str, float]] = {}
    ctx = multiprocessing.get_context("spawn")
    print(f"[memory] {ids.numel()} rows of dim {dim}: host bytes per row")
    for dtype in ("float32", "bfloat16"):
        for name, state in (("sgd", 0), ("adam", 2)):
            with ctx.Pool(1) as pool:
                accounted, grown = pool.apply(_build_table_for_memory, (ids, dim, name, dtype))
            stored = dim * (2 if dtype == "bfloat16" else 4) + dim * state * 4
            key = f"{name}_{dtype}"
            mem[key] = {
                "raw_bytes_per_row": stored,
                "bytes_per_row": accounted / ids.numel(),
                "rss_bytes_per_row": grown / ids.numel(),
            }
            print(
                f"  {name:4s} {dtype:8s}: raw {stored:5d} B, accounted "
                f"{accounted / ids.numel():7.1f} B ({accounted / ids.numel() / stored:.3f}x), "
                f"RSS growth {grown / ids.numel():7.1f} B"
            )
    results["memory"] = mem


def _build_table_for_memory(
    ids: torch.Tensor, dim: int, optimizer: str, dtype: str
) -> tuple[int, int]:
    opt = ec.SparseSGD() if optimizer == "sgd" else ec.SparseAdam()
    before = rss_bytes()
    table = ec.EmbeddingTable(
        dim, optimizer=opt, initializer=ec.Uniform(-0.1, 0.1), row_dtype=getattr(torch, dtype)
    )
    for chunk in ids.split(1 << 16):
        table.lookup(chunk, train=True)
    return table.memory_bytes, rss_bytes() - before


def bench_sizing(args: argparse.Namespace, results: dict[str, object]) -> None:
    """Cache hit rate at 10 % and 50 % of the working set as device slots, for DLRM-like
    traffic (26 features, batch 2048, one Zipf id per feature and sample), from the sizing
    helper; one table is also trained through a real device cache of each size and its
    counters reported next to the prediction."""
    features, batch, steps = 26, args.batch, args.steps
    ids = zipf_ids(features * batch * steps, args.universe, args.zipf, seed=7).view(
        steps, features, batch
    )
    sample = [{f"cat_{f}": ids[step, f] for f in range(features)} for step in range(steps)]
    sizing = ec.cache_sizing(sample)
    rates: dict[str, dict[str, float]] = {}
    for share in (0.1, 0.5):
        per_table = []
        for s in sizing.values():
            slots = max(s.min_slots, int(share * s.working_set))
            per_table.append(s.hit_rate(slots))
        rates[f"{share:.0%}"] = {
            "mean": statistics.mean(per_table),
            "min": min(per_table),
            "max": max(per_table),
        }
    # The first table through a real cache of 10 % / 50 % of its working set.
    first = sizing["cat_0"]
    measured = {}
    for share in (0.1, 0.5):
        slots = max(first.min_slots, int(share * first.working_set))
        model = ec.DynamicEmbeddingBag(64, mode="sum", cache_slots=slots)
        for b in sample:
            model(b["cat_0"].view(-1, 1)).sum().backward()
        counted = ec.counters.snapshot(model.table)
        measured[f"{share:.0%}"] = (counted.cache_hit_rate, first.hit_rate(slots), slots)
    ceiling = statistics.mean(s.hit_rate(max(s.min_slots, s.working_set)) for s in sizing.values())
    results["sizing"] = {
        "predicted": rates,
        "cat_0_measured_predicted_slots": measured,
        "ceiling": ceiling,
    }
    ws = statistics.mean(s.working_set for s in sizing.values())
    print(
        f"[sizing] {features} features x batch {batch} x {steps} steps, Zipf({args.zipf}) over "
        f"{args.universe:.0e} ids; mean working set {ws:.0f} ids per table"
    )
    for share, r in rates.items():
        real, pred, slots = measured[share]
        print(
            f"  slots = {share} of the working set: hit rate mean {r['mean']:.3f} "
            f"(tables {r['min']:.3f} - {r['max']:.3f}); cat_0 through a real cache of "
            f"{slots} slots: {real:.3f} (predicted {pred:.3f})"
        )
    print(f"  ceiling (every id of the sample cached; first sightings miss): {ceiling:.3f}")


def table_configs(keys: list[str], rows: int, dim: int) -> list[Any]:
    from torchrec import EmbeddingBagConfig

    return [
        EmbeddingBagConfig(name=f"t_{k}", embedding_dim=dim, num_embeddings=rows, feature_names=[k])
        for k in keys
    ]


def dlrm_trainer(dense_in: int, dim: int, ebc: torch.nn.Module) -> Callable[[Any], float]:
    """A DLRM on `ebc` with SGD; the returned function trains one batch, returns seconds."""
    from torchrec.models.dlrm import DLRM, DLRMTrain

    torch.manual_seed(0)
    model = DLRMTrain(
        DLRM(
            embedding_bag_collection=ebc,
            dense_in_features=dense_in,
            dense_arch_layer_sizes=[512, 256, dim],
            over_arch_layer_sizes=[512, 256, 1],
        )
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch: Any) -> float:
        start = time.perf_counter()
        opt.zero_grad()
        loss, _ = model(batch)
        loss.backward()
        opt.step()
        return time.perf_counter() - start

    return step


def bench_dlrm(args: argparse.Namespace, results: dict[str, object]) -> None:
    from torchrec import EmbeddingBagCollection
    from torchrec.datasets.utils import Batch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    from torchrec_embcache import EmbCacheEmbeddingBagCollection

    dense_in, sparse, dim, batch = 13, 26, args.dlrm_dim, args.batch
    keys = [f"cat_{i}" for i in range(sparse)]
    g = torch.Generator().manual_seed(3)
    results["dlrm"] = []
    for rows in args.dlrm_rows:
        data = []
        for _ in range(args.steps + args.warmup):
            lengths = torch.ones(sparse * batch, dtype=torch.int64)  # one id per feature
            values = torch.randint(0, rows, (sparse * batch,), generator=g)
            data.append(
                Batch(
                    dense_features=torch.randn(batch, dense_in, generator=g),
                    sparse_features=KeyedJaggedTensor.from_lengths_sync(keys, values, lengths),
                    labels=torch.randint(0, 2, (batch,), generator=g),
                )
            )

        # The two models train alternately, step by step, so that load from other processes
        # on a shared machine hits both alike; the median step time is reported.
        ours_step = dlrm_trainer(
            dense_in,
            dim,
            EmbCacheEmbeddingBagCollection(
                table_configs(keys, rows, dim), optimizer=ec.SparseSGD(lr=0.01)
            ),
        )
        ref_step = dlrm_trainer(
            dense_in, dim, EmbeddingBagCollection(table_configs(keys, rows, dim))
        )
        ours_times, ref_times = [], []
        for i, b in enumerate(data):
            t_ours, t_ref = ours_step(b), ref_step(b)
            if i >= args.warmup:
                ours_times.append(t_ours)
                ref_times.append(t_ref)
        ours = 1.0 / statistics.median(ours_times)
        ref = 1.0 / statistics.median(ref_times)
        del ours_step, ref_step
        gc.collect()
        entry = {
            "rows_per_table": rows,
            "embcache_steps_per_s": ours,
            "torchrec_steps_per_s": ref,
            "ratio": ours / ref,
        }
        results["dlrm"].append(entry)  # type: ignore[union-attr]
        print(
            f"[dlrm] 13 dense + 26 sparse features, {rows} rows x dim {dim} per table, "
            f"batch {batch}, SGD\n"
            f"  EmbCacheEmbeddingBagCollection  {ours:7.2f} steps/s\n"
            f"  torchrec EmbeddingBagCollection {ref:7.2f} steps/s\n"
            f"  ratio: {ours / ref:.2f}x  (target >= 0.7x)"
        )


def bench_skew(args: argparse.Namespace, results: dict[str, object]) -> None:
    from torchrec_embcache.placement import bucket_of

    g = torch.Generator().manual_seed(3)
    pool = torch.unique(torch.randint(-(2**62), 2**62, (1 << 21,), generator=g))
    # Rank 0's ids of a table sharded row-wise over 2 ranks by 4096 buckets.
    owned = pool[bucket_of(pool, 4096) < 2048][: 1 << 18]
    anyone = pool[: owned.numel()]

    def inserts(ids: torch.Tensor) -> Callable[[], object]:
        def run() -> None:
            table = ec.EmbeddingTable(16, optimizer=ec.SparseSGD())
            for chunk in ids.split(1 << 14):
                table.lookup(chunk, train=True)

        return run

    def cached_steps(ids: torch.Tensor) -> Callable[[], object]:
        table = ec.EmbeddingTable(16, optimizer=ec.SparseSGD(), cache_slots=8192)
        batches = [ids[i : i + 4096] for i in range(0, 8 * 4096, 4096)]

        def run() -> None:
            for batch in batches:
                out = table.lookup(batch, train=True)
                out.weights.sum().backward()

        return run

    # Each pair is timed on its own: a case that follows a big table's insert and free pays
    # for it, whichever ids it looks up.
    times: dict[str, float] = {}
    for what, make in (("insert", inserts), ("cached steps", cached_steps)):
        pair = {f"{what}, one rank's buckets": make(owned), f"{what}, every bucket": make(anyone)}
        times.update({k: statistics.median(v) for k, v in interleaved(pair, args.repeat).items()})
    results["skew"] = times
    print(f"skew: {owned.numel()} ids; median of {args.repeat}")
    for name, t in times.items():
        print(f"  {name:34s} {t * 1e3:8.1f} ms")
    for what in ("insert", "cached steps"):
        ratio = times[f"{what}, one rank's buckets"] / times[f"{what}, every bucket"]
        print(f"  {what}: one rank's buckets / every bucket = {ratio:.2f}x (no skew: 1.0x)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        default="lookup,memory,sizing,dlrm,skew",
        help="comma-separated: lookup,memory,sizing,dlrm,skew",
    )
    parser.add_argument("--universe", type=int, default=10_000_000, help="Zipf support (ids)")
    parser.add_argument("--zipf", type=float, default=1.05, help="Zipf exponent")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dlrm-rows", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--dlrm-dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    only = set(args.only.split(","))
    print(
        f"torch {torch.__version__}, torch threads {torch.get_num_threads()}, "
        f"torchrec_embcache {ec.__version__}"
    )
    results: dict[str, object] = {}
    if "lookup" in only:
        bench_lookup(args, results)
    if "memory" in only:
        bench_memory(args, results)
    if "sizing" in only:
        bench_sizing(args, results)
    if "dlrm" in only:
        bench_dlrm(args, results)
    if "skew" in only:
        bench_skew(args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
