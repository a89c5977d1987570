"""What the HSTU forward could reach: Cube work kept and global-memory traffic of three ways to
enumerate a causal sequence's tiles, counted from the lengths alone (no kernel runs).

bench_hstu.py measures the kernel as built; this model says which design can meet issue 12's
forward targets (useful MACs / issued >= 0.9, tensor traffic / minimum <= 2) before anyone
writes it. The counts follow the kernel's rules: rows and keys padded to 16 per Cube call,
key blocks of kHstuBlockK = 256, the O accumulator in the workspace (not tensor traffic), and
the minimum being Q, K and V read once and O written once (4 L D elements per head).

- "untiled": pieces of `bq` query rows, each against key blocks [0, r1) of 256 keys: K and V
  are read again for every piece, Q for every key block, and the diagonal square of every
  piece is computed in full (bq rows x up to bq keys, half of it masked); the forward before
  its tiles (and still the one for mask types 2 and 3);
- "staircase": pieces of `bq` rows against the key blocks left of the diagonal, then the
  diagonal in column groups of `h` keys, each against only the rows that need it ([c0, r1)):
  Q rows are read again for every group;
- "staircase, Q in L1": the same with the piece's Q rows kept in L1 and read from global
  memory once per piece. On Ascend 910B this needs the groups' row sub-ranges of an
  L1-resident Q, which the Matmul API's Norm template cannot address (it takes the L1 tile's
  row stride from the call's own M): a hand-written Cube path, or one NZ tile per `h` rows;
- "key-major": the loops turned round, as the backward runs: blocks of `bq` keys, each against
  the query rows below its diagonal square in one call (K and V read once per block, Q rows
  again for every block) and its diagonal square in column groups of `h`; the O accumulator
  of every row of the sequence stays in the workspace;
- "tiles in L1": what the Matmul API can address: the piece's Q stored in L1 as one NZ tile
  per `h` rows and each diagonal column group's K and V rows as one tile each, every diagonal
  call one Q tile against one group (M = N = h); the off-diagonal key blocks read the piece's
  Q from global memory, one call per 256 keys. Q, K and V each reach L1 once per piece on the
  diagonal;
- "as built": the tiles in L1 with the off-diagonal keys in calls of 1024 (kHstuTiledBlockK),
  the causal forward hstu_dense_forward runs (h 32; bq the tallest of 512, 256, ... that L1
  holds: 256 for float32 with D = 128, 512 for bfloat16 with D = 128 and for D = 64).

Run: python kernels/bench/model_hstu_traffic.py [--max-len 1024] [--batch 32]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from bench_hstu import skewed_lengths, uniform_lengths

BLOCK_K = 256  # kHstuBlockK (kernels/common/hstu_common.h)

# One Cube call: (rows, keys) of its tile, and the Q rows and the K (and as many V) rows it
# reads from global memory.
Tile = tuple[int, int, int, int]


def padded(n: int) -> int:
    return (n + 15) // 16 * 16


def untiled(length: int, bq: int, h: int) -> Iterator[Tile]:
    for r0 in range(0, length, bq):
        r1 = min(length, r0 + bq)
        for k0 in range(0, r1, BLOCK_K):
            keys = min(r1, k0 + BLOCK_K) - k0
            yield r1 - r0, keys, r1 - r0, keys


def staircase(length: int, bq: int, h: int, q_resident: bool = False) -> Iterator[Tile]:
    for r0 in range(0, length, bq):
        r1 = min(length, r0 + bq)
        tiles = [(r1 - r0, min(r0, k0 + BLOCK_K) - k0) for k0 in range(0, r0, BLOCK_K)]
        tiles += [(r1 - c0, min(r1, c0 + h) - c0) for c0 in range(r0, r1, h)]
        for i, (rows, keys) in enumerate(tiles):
            # Resident: the piece's Q rows come from global memory once, with its first tile.
            q_read = (r1 - r0 if i == 0 else 0) if q_resident else rows
            yield rows, keys, q_read, keys


def staircase_q_in_l1(length: int, bq: int, h: int) -> Iterator[Tile]:
    return staircase(length, bq, h, q_resident=True)


def key_major(length: int, bk: int, h: int) -> Iterator[Tile]:
    for k0 in range(0, length, bk):
        k1 = min(length, k0 + bk)
        if k1 < length:
            yield length - k1, k1 - k0, length - k1, k1 - k0
        for c0 in range(k0, k1, h):
            keys = min(k1, c0 + h) - c0
            yield k1 - c0, keys, k1 - c0, keys


def tiles_in_l1(length: int, bq: int, h: int, block_k: int = BLOCK_K) -> Iterator[Tile]:
    for r0 in range(0, length, bq):
        r1 = min(length, r0 + bq)
        for k0 in range(0, r0, block_k):
            keys = min(r0, k0 + block_k) - k0
            yield r1 - r0, keys, r1 - r0, keys
        for c0 in range(r0, r1, h):
            keys = min(r1, c0 + h) - c0
            for t0 in range(c0, r1, h):
                rows = min(r1, t0 + h) - t0
                # Q tiles reach L1 with the first group, a group's K and V with its first tile.
                yield rows, keys, rows if c0 == r0 else 0, keys if t0 == c0 else 0


def as_built(length: int, bq: int, h: int) -> Iterator[Tile]:
    return tiles_in_l1(length, bq, h, block_k=1024)


@dataclass(frozen=True)
class Figures:
    kept: float  # useful MACs / issued
    traffic: float  # tensor traffic / minimum


def model(lengths: list[int], tiles: Callable[[int, int, int], Iterator[Tile]], bq: int, h: int):
    useful = issued = moved = 0
    for length in lengths:
        useful += length * (length + 1) // 2
        for rows, keys, q_rows, kv_rows in tiles(length, bq, h):
            issued += padded(rows) * padded(keys)
            moved += q_rows + 2 * kv_rows
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
    # bench_hstu.py's two shapes, with their head dimension.
    shapes = {
        f"lengths {args.max_len} u^2, D = 128": (
            skewed_lengths(gen, args.batch, args.max_len),
            128,
        ),
        "lengths U[1, 4096], D = 64": (
            uniform_lengths(torch.Generator().manual_seed(2024), 8, 4096),
            64,
        ),
    }
    designs = {
        "untiled": (untiled, [(16, 0), (32, 0), (64, 0), (128, 0)]),
        "staircase": (staircase, [(256, 32), (256, 64), (512, 64)]),
        "key-major": (key_major, [(256, 32), (256, 64), (512, 64)]),
        "staircase, Q in L1": (staircase_q_in_l1, [(256, 32), (512, 32), (1024, 32)]),
        "tiles in L1": (tiles_in_l1, [(256, 32), (512, 32), (1024, 32), (1536, 32)]),
        "as built": (as_built, [(256, 32), (512, 32)]),
    }
    print("targets: kept >= 0.9, traffic <= 2 (forward)")
    print("L1: the float32 Q, K and V rows a design keeps in L1 (910B: 512 KiB, shared with")
    print("    what the Matmul API keeps there for the off-diagonal calls)")
    for shape, (lengths, dim) in shapes.items():
        print(f"\n{shape} ({len(lengths)} sequences, {sum(lengths)} rows)")
        print(f"  {'design':20s} {'bq':>4s} {'h':>4s} {'kept':>6s} {'traffic':>8s} {'L1 KiB':>7s}")
        for name, (tiles, params) in designs.items():
            resident = tiles in (staircase_q_in_l1, tiles_in_l1, as_built)
            for bq, h in params:
                f = model(lengths, tiles, bq, h)
                l1 = f"{(bq + 2 * h) * dim * 4 // 1024:7d}" if resident else f"{'-':>7s}"
                print(f"  {name:20s} {bq:4d} {h or '-':>4} {f.kept:6.3f} {f.traffic:8.2f} {l1}")


if __name__ == "__main__":
    main()
