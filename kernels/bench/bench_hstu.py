"""HSTU attention (hstu_dense_forward, hstu_dense_backward) on the sim target: the figures of
issue 12.

For causal jagged batches with skewed lengths (and one long sequence of the seed's shape), in
float32 and bfloat16, on the emulated Ascend910B1 (24 AI cores, 48 vector cores), from the
emulator's per-core counters:

- kept / issued Cube MACs: the multiply-adds the causal mask keeps (forward: Q K^T and P V;
  backward: Q K^T, dO V^T, P^T dO, dZ^T Q and dZ K; over sum_b l_b (l_b + 1) / 2 scores per
  head) over what the Cube issued (padded to its fractals, diagonal blocks in full);
- traffic ratios over the minimum (forward: Q, K, V read once, O written once; backward: Q, K,
  V, dO read once, dQ, dK, dV written once; no bias, no mask), from the emulator's counters,
  which split every global-memory access by where it lands: "tensors" is what the kernel moves
  to and from its input and output tensors (the HBM traffic the target of issue 12 is about:
  re-reads of K and V by each query block and by each worker sharing a sequence included);
  "workspace" is its scratch round trips (the score blocks and float32 accumulators between
  Cube and vector cores: a few MB at most, L2-resident on a device, yet counted in full here);
  "total" is both;
- balance: the busiest AI core's Cube cycles over the mean, the busiest vector core's vector
  work over the mean, and the busiest core's global-memory bytes over the mean;
- modelled time: the cost model's time of the launch (recsdk_sim/model.h, per-core pipe timelines;
  the Matmul API's Cube work is bounded on its AIC from the counters) and what bounds it
  (costmodel.py), next to the problem's roofline (minimum bytes / HBM bandwidth, kept MACs / Cube
  peak), with the vendor constants listed in kernels/bench/README.md. The workspace's round trips
  are priced at the L2 bandwidth when the workspace fits the L2 (192 MB).

The seed's shape (B = 32, S = 8000, N = 4, D = 128) is extrapolated from two cases (normal
layout, B = 1, S = 8000), each modelled time scaled to the seed's 128 heads on all 24 AI cores,
next to the seed's measured end-to-end training steps (a whole GR step, attention being a part):
one head spread over all cores (scaled by 128), which cuts every query block between vector
cores, and five heads on a chip of 2 AI cores (scaled by 128 / 5 * 2 / 24), whose vector cores get
1.25 heads each, as the seed's get 2.67: the seed's own per-core work (the model gives every core
the same share of the bandwidth whatever the chip's size; the case's roofline is that chip's).

Usage (from the repository root, in an environment with torch):

    python kernels/bench/bench_hstu.py [--quick] [--forward-only] [--case TEXT] [--pipes]
        [--json] [--readme]

--pipes prints, per row, where the slowest AI core (AIC) and the slowest vector core (AIV) spend
their time: each pipe's busy time, the GM link's (MTE2 and MTE3 transfers together) and the core's
modelled time, in us. --case runs only the cases whose name contains TEXT; with --readme the rows
it runs replace theirs in results/hstu.json and the others are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "kernels"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import costmodel  # noqa: E402
from kernel_testlib import arg, simrun  # noqa: E402

from recsdk_build.ops import catalogue, simbuild  # noqa: E402

OPS = ("hstu_dense_forward", "hstu_dense_backward")
SEED_HEADS = 32 * 4  # B * N of seed 001's runs
# Seed 001, single card, Kuairand-1k, B = 32, seq_lens 8000, N = 4, D = 128: end-to-end step (ms).
SEED_STEPS = {"float32": {"910B": 336, "A800": 306}, "bfloat16": {"910B": 176, "A800": 132}}


def skewed_lengths(gen: torch.Generator, b: int, s: int) -> list[int]:
    """s * u^2 (mostly short), at least 1, the first one s."""
    lengths = (s * torch.rand(b, generator=gen) ** 2).long().clamp(min=1)
    lengths[0] = s
    return lengths.tolist()


def uniform_lengths(gen: torch.Generator, b: int, s: int) -> list[int]:
    return torch.randint(1, s + 1, (b,), generator=gen).tolist()


def run(
    ops: simrun.SimOp,
    backward: bool,
    lengths: list[int],
    heads: int,
    dim: int,
    dtype: torch.dtype,
    normal: bool = False,
    max_cores: int = 0,
) -> dict:
    gen = torch.Generator().manual_seed(7)
    s = max(lengths)
    off = [0]
    for n in lengths:
        off.append(off[-1] + n)
    shape = (len(lengths), s, heads, dim) if normal else (off[-1], heads, dim)
    q, k, v = (torch.empty(shape).uniform_(-1, 1, generator=gen).to(dtype) for _ in range(3))
    offsets = None if normal else torch.tensor(off)
    attrs = [0, s, 0.0, 0 if normal else 1, [] if normal else off]
    if backward:
        grad = torch.empty(shape).uniform_(-1, 1, generator=gen).to(dtype)
        outs = [torch.empty_like(q) for _ in range(3)]
        tensors = [grad, q, k, v, None, None, offsets, *outs, None]
    else:
        tensors = [q, k, v, None, None, offsets, torch.empty_like(q)]
    started = time.monotonic()
    r = ops.launch([arg(t) for t in tensors], attrs, max_cores=max_cores)
    seconds = time.monotonic() - started
    esz = q.element_size()
    minimum = (7 if backward else 4) * q.numel() * esz
    kept = sum(n * (n + 1) // 2 for n in lengths) * heads * dim * (5 if backward else 2)
    aic, aiv = r.kind(1), r.kind(0)

    def balance(values: list[int]) -> float:
        mean = sum(values) / len(values)
        return max(values) / mean if mean else 1.0

    peak = r.model.peak
    per_cycle = peak["cube_macs_f32"] if dtype == torch.float32 else peak["cube_macs_b16"]
    # On a smaller chip (max_cores AI cores) the roofline is that chip's: its cores' Cube peak and
    # their share of the HBM bandwidth (the model gives every core 1/48 of it).
    aics = min(max_cores, peak["cube_cores"]) if max_cores else peak["cube_cores"]
    cube_peak = aics * per_cycle * peak["clock_hz"]
    hbm = peak["hbm_bytes_per_s"] * aics / peak["cube_cores"]
    roofline = max(minimum / hbm, kept / cube_peak)
    t = costmodel.timeline(r)
    clock = peak["clock_hz"]

    def pipes(cores: list[dict[str, int]]) -> dict[str, float]:
        """The slowest core's busy time per pipe and its GM link's, and its time (us)."""
        c = max(cores, key=lambda x: x["model_core"])
        us = {
            p: round(c[f"model_busy_{p}"] / 1e3 / clock * 1e6, 1) for p in (*costmodel.PIPES, "gm")
        }
        us["core"] = round(c["model_core"] / 1e3 / clock * 1e6, 1)
        # Its global-memory bytes (MB): tensors read and written, workspace read and written.
        ws_r, ws_w = c["gm_workspace_read_bytes"], c["gm_workspace_write_bytes"]
        us["tensor_read_mb"] = round((c["gm_read_bytes"] - ws_r) / 1e6, 2)
        us["tensor_write_mb"] = round((c["gm_write_bytes"] - ws_w) / 1e6, 2)
        us["ws_read_mb"] = round(ws_r / 1e6, 2)
        us["ws_write_mb"] = round(ws_w / 1e6, 2)
        return us

    return {
        "table": costmodel.row(
            "hstu_dense_" + ("backward" if backward else "forward"), "", r, minimum, roofline
        ),
        "op": "backward" if backward else "forward",
        "dtype": str(dtype).removeprefix("torch."),
        "rows": off[-1] if not normal else len(lengths) * s,
        "block_dim": r.block_dim,
        "kept_over_issued": round(kept / r.total("cube_macs"), 4),
        "traffic_ratio": round(r.gm_bytes / minimum, 3),
        "tensor_traffic_ratio": round((r.gm_bytes - r.workspace_bytes_moved) / minimum, 3),
        "workspace_traffic_ratio": round(r.workspace_bytes_moved / minimum, 3),
        "cube_balance": round(balance([c["cube_cycles"] for c in aic]), 4),
        "vector_balance": round(balance([c["vector_repeats"] for c in aiv]), 4),
        "gm_balance": round(r.balance(), 4),
        "modelled_us": round(t.seconds * 1e6, 1),
        "bound": t.bound,
        "old_roofline_model_us": round(r.model.seconds * 1e6, 1),
        "cube_us": round(r.model.cube_seconds * 1e6, 1),
        "vector_us": round(r.model.vector_seconds * 1e6, 1),
        "dma_us": round(r.model.dma_seconds * 1e6, 1),
        "roofline_us": round(roofline * 1e6, 1),
        "ai_cores": aics,
        "chip_ai_cores": peak["cube_cores"],
        "aic_pipes_us": pipes(aic),
        "aiv_pipes_us": pipes(aiv),
        "sim_seconds": round(seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="skip the S = 8000 extrapolation")
    parser.add_argument(
        "--readme", action="store_true", help="regenerate the table of kernels/bench/README.md"
    )
    parser.add_argument("--forward-only", action="store_true", help="skip the backward")
    parser.add_argument("--case", default="", help="only the cases whose name contains this text")
    parser.add_argument(
        "--pipes", action="store_true", help="the slowest AIC's and AIV's time per pipe"
    )
    parser.add_argument(
        "--build-dir", type=Path, default=REPO / "build", help="where build/ops/sim lives"
    )
    args = parser.parse_args()
    specs = catalogue.load_catalogue(REPO / "kernels")
    compiler = simbuild.find_host_compiler()
    simbuild.build_runtime(REPO / "kernels", args.build_dir / "ops" / "sim", compiler)
    ops = {}
    for name in OPS[:1] if args.forward_only else OPS:
        out = args.build_dir / "ops" / "sim" / name
        lib = simbuild.build_op(specs[name], REPO / "kernels", out, compiler)
        ops[name] = simrun.SimOp(lib.library, specs[name])

    gen = torch.Generator().manual_seed(2024)
    # (name, lengths, heads, D, normal layout, AI cores: 0 = all 24)
    cases = [
        (
            "jagged B=32 N=4 D=128, lengths 1024 u^2",
            skewed_lengths(gen, 32, 1024),
            4,
            128,
            False,
            0,
        ),
        ("jagged B=8 N=2 D=64, lengths U[1, 4096]", uniform_lengths(gen, 8, 4096), 2, 64, False, 0),
    ]
    if not args.quick:
        cases.append(("normal B=1 S=8000 N=1 D=128 (one head)", [8000], 1, 128, True, 0))
        # The seed's 128 heads give each vector core 2.67 of them: whole query blocks, each
        # reading the keys left of it once. One head over 48 vector cores cuts every block into
        # pieces that each read those keys again. Five heads on 2 AI cores (4 vector cores, 1.25
        # heads each, the model's per-core bandwidth share unchanged) are the seed's per-core work.
        cases.append(("normal B=1 S=8000 N=5 D=128 on 2 AI cores", [8000], 5, 128, True, 2))
    cases = [c for c in cases if args.case in c[0]]
    rows = []
    for name, lengths, heads, dim, normal, max_cores in cases:
        for op_name, op in ops.items():
            for dtype in (torch.float32, torch.bfloat16):
                backward = op_name == "hstu_dense_backward"
                row = {
                    "case": name,
                    **run(op, backward, lengths, heads, dim, dtype, normal, max_cores),
                }
                row["table"]["case"] = f"{row['dtype']}, {name}"
                if normal:
                    # The seed's heads spread over all 24 AI cores as this case's over its own.
                    scale = SEED_HEADS / heads * row["ai_cores"] / row["chip_ai_cores"]
                    row["seed_shape_modelled_ms"] = round(row["modelled_us"] * scale / 1e3, 2)
                    row["seed_shape_roofline_ms"] = round(row["roofline_us"] * scale / 1e3, 2)
                    row["seed_e2e_step_ms"] = SEED_STEPS[row["dtype"]]
                rows.append(row)
    if args.readme:
        table = [r["table"] for r in rows]
        saved = costmodel.RESULTS / "hstu.json"
        if saved.exists() and (args.case or args.forward_only):
            # A subset: its rows replace theirs, the others (and the order) are kept.
            new = {(t["op"], t["case"]): t for t in table}
            old = json.loads(saved.read_text(encoding="utf-8"))
            keys = {(t["op"], t["case"]) for t in old}
            table = [new.get((t["op"], t["case"]), t) for t in old]
            table += [t for k, t in new.items() if k not in keys]
        costmodel.write_results("hstu", table)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = (
        f"{'case':42} {'op':8} {'dtype':8} {'kept/iss':>8} {'tensors':>7} {'wspace':>6} "
        f"{'total':>6} {'cube':>6} "
        f"{'vector':>6} {'GM':>6} {'model us':>10} {'bound':>16} {'roof us':>9} {'sim s':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['case']:42} {r['op']:8} {r['dtype']:8} {r['kept_over_issued']:8.3f} "
            f"{r['tensor_traffic_ratio']:7.2f} {r['workspace_traffic_ratio']:6.2f} "
            f"{r['traffic_ratio']:6.2f} {r['cube_balance']:6.3f} {r['vector_balance']:6.3f} "
            f"{r['gm_balance']:6.3f} {r['modelled_us']:10.1f} {r['bound']:>16} "
            f"{r['roofline_us']:9.1f} {r['sim_seconds']:6.1f}"
        )
    if args.pipes:
        names = (
            *(p.upper() for p in costmodel.PIPES),
            "GM",
            "core",
            "T rd",
            "T wr",
            "W rd",
            "W wr",
        )
        print(
            "\nslowest cores, busy us per pipe, then MB of tensors (T) and workspace (W) read and "
            "written:\n" + " " * 42 + " ".join(f"{n:>7}" for n in names)
        )
        for r in rows:
            for kind in ("aic", "aiv"):
                us = r[f"{kind}_pipes_us"]
                label = f"{r['case'][:30]} {r['op'][:3]} {r['dtype'][:4]} {kind.upper()}"
                print(f"{label:42}" + " ".join(f"{v:7.1f}" for v in us.values()))
    for r in rows:
        if "seed_shape_modelled_ms" in r:
            print(
                f"seed shape B=32 S=8000 N=4 D=128 {r['dtype']}: modelled "
                f"{r['seed_shape_modelled_ms']} ms {r['op']} "
                f"(roofline {r['seed_shape_roofline_ms']} ms); seed 001 end-to-end training "
                f"step: 910B {r['seed_e2e_step_ms']['910B']} ms, "
                f"A800 {r['seed_e2e_step_ms']['A800']} ms"
            )
    print(
        "\nkept/iss: causal MACs over Cube MACs issued; tensors / wspace / total: global-memory "
        "bytes to and from the operator's tensors, its workspace, and both, over the inputs read "
        "and the outputs written once; "
        "cube / vector / GM: busiest core over the mean; model us: the cost model's time "
        "(bound: the slowest core's busiest pipe or GM link, or HBM/L2); roof us: the problem's "
        "roofline. Model figures, not measurements."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
