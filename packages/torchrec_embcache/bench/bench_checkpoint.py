"""How long a checkpoint stops training (issue 14: "saving does not stop training longer than
it takes to snapshot the touched rows"); prints figures.

One table of --rows rows (dim 64, Adagrad: 128 floats a row with its state) is filled, saved
once in full, then --touched of its rows are trained. Each case saves into a fresh copy of
that starting point and reports the time the caller is blocked and, for background saves, the
time until the checkpoint is committed:

* save_checkpoint, incremental and full: blocked for the whole write;
* save_checkpoint_in_background, incremental and full: blocked for the copy of the changed rows
  (incremental) or of every row (full); the files are written while training could go on.

Run:  python packages/torchrec_embcache/bench/bench_checkpoint.py [--rows 1048576] [--touched 0.05]
(the defaults take about a minute here; the disk's speed decides the write times.)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

# bench_embcache imports the package, with a clear message when it cannot.
from bench_embcache import ec


def build(rows: int, touched: float, directory: Path) -> ec.DynamicEmbeddingBag:
    model = ec.DynamicEmbeddingBag(64, mode="sum", optimizer=ec.SparseAdagrad(lr=0.01), seed=3)
    ids = torch.randperm(rows * 4)[:rows]
    for chunk in ids.split(1 << 16):
        model(chunk, torch.arange(chunk.numel())).sum().backward()
    ec.save_checkpoint(model, directory)
    some = ids[torch.randperm(rows)[: int(rows * touched)]]
    for chunk in some.split(1 << 16):
        model(chunk, torch.arange(chunk.numel())).sum().backward()
    return model


def case(rows: int, touched: float, incremental: bool, background: bool) -> dict:
    """A fresh table and base checkpoint per case: a save moves the table's base."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        model = build(rows, touched, directory)
        start = time.perf_counter()
        if background:
            future = ec.save_checkpoint_in_background(model, directory, incremental=incremental)
            blocked = time.perf_counter() - start
            manifest = future.result()
        else:
            manifest = ec.save_checkpoint(model, directory, incremental=incremental)
            blocked = time.perf_counter() - start
        total = time.perf_counter() - start
        size = manifest["tables"]["table"]["files"][-1]["bytes"]
    return {"rows": len(model.table), "blocked": blocked, "committed": total, "mb": size / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1 << 20)
    parser.add_argument("--touched", type=float, default=0.05, help="share of rows trained")
    args = parser.parse_args()
    print(
        f"python packages/torchrec_embcache/bench/bench_checkpoint.py --rows {args.rows} "
        f"--touched {args.touched}"
    )
    print(f"{'save':24} {'rows':>9} {'blocked s':>10} {'committed s':>12} {'file MB':>8}")
    for incremental in (True, False):
        for background in (False, True):
            r = case(args.rows, args.touched, incremental, background)
            name = ("background " if background else "") + (
                "incremental" if incremental else "full"
            )
            print(
                f"{name:24} {r['rows']:9,} {r['blocked']:10.3f} {r['committed']:12.3f} "
                f"{r['mb']:8.1f}"
            )
    print(
        "blocked: time the caller waits (training stops); committed: until the manifest is on "
        "disk. Table: dim 64 + Adagrad state, the given share of rows trained after a full save."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
