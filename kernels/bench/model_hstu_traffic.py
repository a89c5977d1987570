"""What the HSTU forward could reach: Cube work kept and global-memory traffic of three ways to
enumerate a causal sequence's tiles, counted from the lengths alone (no kernel runs).

bench_hstu.py measures the kernel as built; this model says which design can meet issue 12's
forward targets (useful MACs / issued >= 0.9, tensor traffic / minimum <= 2) before anyone
writes it. The counts follow the kernel's rules: rows and keys padded to 16 per Cube call,
key blocks of kHstuBlockK = 256, the O accumulator in the workspace (not tensor traffic), and
the minimum being Q, K and V read once and O written once (4 L D elements per head).

- "as built": pieces of `bq` query rows, each against key blocks [0, r1) of 256 keys: K and V
  are read again for every piece, Q for every key block, and the diagonal square of every
  piece is computed in full (bq rows x up to bq keys, half of it masked);
- "staircase": pieces of `bq` rows against the key blocks left of the diagonal, then the
  diagonal in column groups of `h` keys, each against only the rows that need it ([c0, r1)):
  Q rows are read again for every group;
- "staircase, Q in L1": the same with the piece's Q rows kept in L1 and read from global
  memory once per piece. On Ascend 910B this needs the groups' row sub-ranges of an
  L1-resident Q, which the Matmul API's Norm template cannot address (it takes the L1 tile's
  row stride from the call's own M): a hand-written Cube path, or one NZ tile per `h` rows.

Run: python kernels/bench/model_hstu_traffic.py [--max-len 1024] [--batch 32]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from bench_hstu import skewed_lengths, uniform_lengths

BLOCK_K = 256  # kHstuBlockK (kernels/common/hstu_common.h)

# (rows, keys, q_rows_read): one Cube call's tile and the Q rows it reads from global memory.
Tile = tuple[int, int, int]


def padded(n: int) -> int:
    return (n + 15) // 16 * 16


def as_built(length: int, bq: int, h: int) -> Iterator[Tile]:
    for r0 in range(0, length, bq):
        r1 = min(length, r0 + bq)
        for k0 in range(0, r1, BLOCK_K):
            yield r1 - r0, min(r1, k0 + BLOCK_K) - k0, r1 - r0


def staircase(length: int, bq: int, h: int, q_resident: bool = False) -> Iterator[Tile]:
    for r0 in range(0, length, bq):
        r1 = min(length, r0 + bq)
        tiles = [(r1 - r0, min(r0, k0 + BLOCK_K) - k0) for k0 in range(0, r0, BLOCK_K)]
        tiles += [(r1 - c0, min(r1, c0 + h) - c0) for c0 in range(r0, r1, h)]
        for i, (rows, keys) in enumerate(tiles):
            # Resident: the piece's Q rows come from global memory once, with its first tile.
            q_read = (r1 - r0 if i == 0 else 0) if q_resident else rows
            yield rows, keys, q_read


def staircase_q_in_l1(length: int, bq: int, h: int) -> Iterator[Tile]:
    return staircase(length, bq, h, q_resident=True)


@dataclass(frozen=True)
class Figures:
    kept: float  # useful MACs / issued
    traffic: float  # tensor traffic / minimum


def model(lengths: list[int], tiles: Callable[[int, int, int], Iterator[Tile]], bq: int, h: int):
    useful = issued = moved = 0
    for length in lengths:
        useful += length * (length + 1) // 2
        for rows, keys, q_rows in tiles(length, bq, h):
            issued += padded(rows) * padded(keys)
            moved += q_rows + 2 * keys  # Q rows, K and V rows
        moved += length  # O written once
    return Figures(useful / issued, moved / (4 * sum(lengths)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--max-len", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(2024)  # bench_hstu.py's first case
    shapes = {
        f"lengths {args.max_len} u^2": skewed_lengths(gen, args.batch, args.max_len),
        "lengths U[1, 4096]": uniform_lengths(torch.Generator().manual_seed(2024), 8, 4096),
    }
    designs = {
        "as built": (as_built, [(16, 0), (32, 0), (64, 0), (128, 0)]),
        "staircase": (staircase, [(256, 32), (256, 64), (512, 64)]),
        "staircase, Q in L1": (staircase_q_in_l1, [(256, 32), (256, 64), (512, 32)]),
    }
    print("targets: kept >= 0.9, traffic <= 2 (forward)")
    for shape, lengths in shapes.items():
        print(f"\n{shape} ({len(lengths)} sequences, {sum(lengths)} rows)")
        print(f"  {'design':20s} {'bq':>4s} {'h':>4s} {'kept':>6s} {'traffic':>8s}")
        for name, (tiles, params) in designs.items():
            for bq, h in params:
                f = model(lengths, tiles, bq, h)
                print(f"  {name:20s} {bq:4d} {h or '-':>4} {f.kept:6.3f} {f.traffic:8.2f}")


if __name__ == "__main__":
    main()
