"""How fast the emulation runs a matmul, and what it models for it.

Runs the Matmul API test kernels (tests/kernels/sim_checks/matmul_kernels.cpp) on a few shapes and
prints, per case, the host wall time of the emulated launch (best of --repeat runs, the kernel
library already built) next to the emulator's modelled time (a roofline estimate of the device, see
recsdk_sim/model.h) and its Cube counters. The first row is the 256 x 256 x 128 fp32 matmul on one
AI core that the emulation should run in well under a second.

Usage (from the repository root, in an environment with torch):

    python kernels/bench/bench_matmul.py [--build-dir build] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "kernels"))

from matmul_testlib import Lib, build_matmul_library, make_case  # noqa: E402

# (kernel, input dtype, output dtype, M, N, K, AI cores)
CASES = (
    ("mm_cube", torch.float32, torch.float32, 256, 256, 128, 1),
    ("mm_mix", torch.float32, torch.float32, 256, 256, 128, 1),
    ("mm_cube", torch.float16, torch.float32, 1024, 1024, 512, 24),
    ("mm_mix", torch.bfloat16, torch.bfloat16, 1024, 1024, 512, 24),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--build-dir", type=Path, default=REPO / "build", help="where build/ops/sim lives"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per case (the best is reported)"
    )
    args = parser.parse_args()
    lib = Lib(build_matmul_library(args.build_dir / "ops" / "sim"))
    gen = torch.Generator().manual_seed(0)
    header = (
        f"{'kernel':8} {'A':>8} {'C':>8} {'M x N x K':>18} {'cores':>5} {'emulation s':>11} "
        f"{'model us':>9} {'bound':>6} {'MACs':>12} {'issued':>12} {'GM->L1 B':>10}"
    )
    print(header)
    print("-" * len(header))
    for kernel, dtype, out_dtype, m, n, k, cores in CASES:
        a = torch.randn(m, k, generator=gen).to(dtype)
        b = torch.randn(k, n, generator=gen).to(dtype)
        c = torch.empty(m, n, dtype=out_dtype)
        # One tile per AI core (usedCoreNum <= AICs): in MIX mode the first AIVs of the launch
        # drive them, with ASCENDC_CUBE_ONLY the AICs do.
        case = make_case(kernel, a, b, c, blocks=cores, tiles=cores)
        tiling = lib.tiling(case)
        best = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = lib.run(case, tiling)
            best = min(best, time.perf_counter() - started)
            if not result.ok:
                raise SystemExit(f"{kernel}: {result.message}")
        aic = result.kind(1)
        name = lambda t: str(t).removeprefix("torch.")  # noqa: E731
        print(
            f"{kernel:8} {name(dtype):>8} {name(out_dtype):>8} {f'{m} x {n} x {k}':>18} {cores:5d} "
            f"{best:11.4f} {result.model.seconds * 1e6:9.2f} {result.model.bound:>6} "
            f"{sum(x['cube_useful_macs'] for x in aic):12d} {sum(x['cube_macs'] for x in aic):12d} "
            f"{sum(x['gm_to_l1_bytes'] for x in aic):10d}"
        )
    print(
        "\nemulation s: host wall time of the emulated launch (best run); model us: the emulator's "
        "roofline estimate of the device time, not a measurement."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
