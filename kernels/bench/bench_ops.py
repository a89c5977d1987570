"""Efficiency of every operator on a large case, measured on the sim target.

For each operator this runs one realistic large problem on the emulated Ascend910B1 (48 vector
cores) and reports, from the emulator's per-core counters:

- traffic ratio: global-memory bytes moved (DMA and scalar, reads and writes, all cores) over
  the minimum, i.e. the bytes of input the result depends on read once plus the output written
  once (for in-place operators: the bytes that change);
- core balance: the busiest core's traffic over the mean of the launched cores;
- blockDim, DMA transfers and scalar global-memory accesses;
- modelled time: the cost model's time of the launch (recsdk_sim/model.h: per-core pipe
  timelines with the vendor's costs, overlapped as the kernel's synchronisation allows; see
  kernels/bench/README.md for its constants and their sources) and what bounds it (the slowest
  core's busiest pipe or GM link, "+ waits" when its pipes mostly waited on one another, or HBM/L2
  for the launch's memory floor), next to the roofline time of the problem itself (the minimum
  traffic over the HBM bandwidth, the minimum MACs over the Cube peak). The ratio modelled /
  roofline says how far the kernel is from the least the problem needs; neither is a measurement.

With --readme the rows also go to kernels/bench/results/ops.json and the one table of
kernels/bench/README.md is regenerated (with bench_hstu.py's rows); with --only, the chosen
operators' rows replace theirs and the others are kept. The inputs are drawn in the table's order
from one seeded generator whatever --only says (the cases before a chosen one draw theirs too), so
a row is the same in a partial run as in a full one.

Usage (from the repository root, in an environment with torch; fbgemm is not needed):

    python kernels/bench/bench_ops.py [--only OP ...] [--json] [--readme]

Libraries are built (or reused) with the ops stage's compiler settings under
build/ops/sim/<op>/, the directory `recsdk-build ops` fills.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "kernels"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import costmodel  # noqa: E402
import kernel_testlib as lib  # noqa: E402
from kernel_testlib import simrun  # noqa: E402

from recsdk_build.ops import catalogue, simbuild  # noqa: E402

GEN = torch.Generator().manual_seed(2024)


@dataclass
class Case:
    op: str
    description: str
    minimum: int  # bytes
    run: Callable[[Callable[[str], simrun.SimOp]], simrun.LaunchResult]
    minimum_macs: int = 0  # multiply-accumulates the problem needs (Cube work)
    mac_dtype: str = "float16"  # the Cube input type the MACs run at


def roofline_seconds(case: Case, model: simrun.Model) -> float:
    """max(minimum bytes / HBM bandwidth, minimum MACs / the Cube peak), with the SoC's figures."""
    peak = model.peak
    per_cycle = peak["cube_macs_f32"] if case.mac_dtype == "float32" else peak["cube_macs_b16"]
    macs_per_s = peak["cube_cores"] * per_cycle * peak["clock_hz"]
    compute = case.minimum_macs / macs_per_s if case.minimum_macs and macs_per_s else 0.0
    return max(case.minimum / peak["hbm_bytes_per_s"], compute)


def nbytes(*tensors: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def cumsum_case() -> Case:
    x = torch.randint(0, 100, (8_000_000,), generator=GEN)
    return Case(
        "asynchronous_complete_cumsum",
        "int64 lengths [8M] -> offsets [8M + 1]",
        nbytes(x) + (x.numel() + 1) * 8,
        lambda ops: lib.complete_cumsum(ops, x)[1],
    )


def jagged_case() -> Case:
    b, max_len, d = 1024, 256, 64
    lengths = torch.randint(0, 2 * max_len, (b,), generator=GEN)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    values = torch.randn(int(offsets[-1]), d, generator=GEN)
    valid = int(lengths.clamp(max=max_len).sum()) * d * 4
    return Case(
        "jagged_to_padded_dense",
        f"fp32 values [{values.shape[0]}, {d}], B={b}, max_length={max_len}",
        valid + nbytes(offsets) + b * max_len * d * 4,
        lambda ops: lib.jagged_to_padded_dense(ops, values, offsets, max_len, -1.0)[1],
    )


def dense_case() -> Case:
    b, max_len, d = 1024, 256, 64
    lengths = torch.randint(0, 2 * max_len, (b,), generator=GEN)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    dense = torch.randn(b, max_len, d, generator=GEN)
    valid = int(lengths.clamp(max=max_len).sum()) * d * 4
    return Case(
        "dense_to_jagged",
        f"fp32 dense [{b}, {max_len}, {d}] -> values [{int(offsets[-1])}, {d}]",
        valid + nbytes(offsets) + int(offsets[-1]) * d * 4,
        lambda ops: lib.dense_to_jagged(ops, dense, offsets)[1],
    )


def permute_case() -> Case:
    t, b = 128, 4096
    lengths = torch.randint(0, 11, (t, b), generator=GEN, dtype=torch.int32)
    n = int(lengths.sum())
    values = torch.randint(0, 1 << 40, (n,), generator=GEN)
    weights = torch.rand(n, generator=GEN)
    permute = torch.randperm(t, generator=GEN, dtype=torch.int32)
    minimum = 2 * nbytes(lengths, values, weights) + nbytes(permute)
    return Case(
        "permute2d_sparse_data",
        f"lengths int32 [{t}, {b}], int64 values and fp32 weights [{n}]",
        minimum,
        lambda ops: lib.permute_2d(ops, permute, lengths, values, weights)[1],
    )


def gather_case() -> Case:
    n, m = 16_384, 4_000_000
    x = torch.randn(n, generator=GEN)
    index = torch.randint(0, n, (m,), generator=GEN)
    return Case(
        "gather_for_rank1",
        f"fp32 x [{n}], int64 index [{m}]",
        nbytes(x, index) + m * 4,
        lambda ops: lib.gather_for_rank1(ops, x, index)[1],
    )


def backward_case() -> Case:
    n, m = 16_384, 4_000_000
    grad = torch.randn(m, generator=GEN)
    x = torch.empty(n)
    index = torch.randint(0, n, (m,), generator=GEN)
    return Case(
        "index_select_for_rank1_backward",
        f"fp32 grad [{m}], int64 index [{m}] -> [{n}]",
        nbytes(grad, index) + n * 4,
        lambda ops: lib.index_select_for_rank1_backward(ops, grad, x, index)[1],
    )


def bounds_case() -> Case:
    t, b = 26, 16_384
    lengths = torch.randint(0, 21, (t * b,), generator=GEN)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    n = int(offsets[-1])
    rows = torch.randint(100_000, 1_000_000, (t,), generator=GEN)
    indices = torch.randint(0, 100_000, (n,), generator=GEN)
    bad = torch.randint(0, n, (n // 1000,), generator=GEN)  # 0.1 % out of range
    indices[bad] = -7
    changed = int(torch.unique(bad).numel()) * 8
    return Case(
        "bounds_check_indices",
        f"T={t}, B={b}, int64 indices [{n}] with 0.1% out of range, warning mode",
        nbytes(rows, offsets, indices) + changed + 8,
        lambda ops: lib.bounds_check_indices(
            ops, rows, indices, offsets, 1, torch.zeros(1, dtype=torch.int64)
        ),
    )


def _tbe_inputs(t: int, rows: int, dim: int, b: int, max_len: int) -> dict[str, torch.Tensor]:
    lengths = torch.randint(0, max_len + 1, (t * b,), generator=GEN)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    n = int(offsets[-1])
    # Zipf-like ids: a few hot rows, as in recommendation traffic.
    ids = (torch.rand(n, generator=GEN) ** 3 * rows).long().clamp_(max=rows - 1)
    return {
        "weights": torch.randn(t * rows * dim, generator=GEN),
        "weights_offsets": torch.arange(t, dtype=torch.int64) * rows * dim,
        "d_offsets": torch.arange(t + 1, dtype=torch.int32) * dim,
        "indices": ids,
        "offsets": offsets,
    }


def tbe_forward_case() -> Case:
    t, rows, dim, b = 26, 20_000, 64, 2048
    x = _tbe_inputs(t, rows, dim, b, 20)
    n = x["indices"].numel()
    out = torch.empty(b, t * dim)
    tensors = [
        x["weights"],
        x["weights_offsets"],
        x["d_offsets"],
        x["indices"],
        x["offsets"],
        None,
        None,
        None,
        None,
        out,
    ]
    # Every occurrence's row counts once: the least a kernel without a row cache must read. The
    # kernel fetches a row once per batch of rows (up to ~250 distinct, within a group of bags of
    # one table), so repeats of hot rows among nearby bags bring its traffic below this minimum.
    minimum = nbytes(x["indices"], x["offsets"], out) + n * dim * 4
    return Case(
        "split_embedding_forward",
        f"T={t} tables [{rows}, {dim}] fp32, B={b}, {n} int64 ids (Zipf), sum pooling",
        minimum,
        lambda ops: ops("split_embedding_forward").launch(
            [lib.arg(v) for v in tensors], [0, t * dim, dim, -1]
        ),
    )


def tbe_backward_case() -> Case:
    t, rows, dim, b = 26, 20_000, 64, 2048
    x = _tbe_inputs(t, rows, dim, b, 20)
    n = x["indices"].numel()
    # As the adapter: each position's bag k = t * B + b, the stable sort by table * rows + id,
    # and the bags in sorted order (so the kernel need not search offsets for them).
    bag = torch.repeat_interleave(torch.arange(t * b), x["offsets"][1:] - x["offsets"][:-1])
    linear = bag // b * rows + x["indices"]
    order = torch.sort(linear, stable=True).indices
    sorted_bags = bag[order]
    # and, as the adapter does, each entry's index and its run's rank (by which the cores split
    # the entries by cost)
    keys = linear[order]
    ranks = torch.cat([torch.zeros(1, dtype=torch.int64), (keys[1:] != keys[:-1]).cumsum(0)])
    sorted_indices = x["indices"][order]
    unique = int(torch.unique(linear).numel())
    grad = torch.randn(b, t * dim, generator=GEN)
    momentum = torch.zeros_like(x["weights"])
    tensors = [
        grad,
        x["weights"],
        momentum,
        x["weights_offsets"],
        x["weights_offsets"],
        x["d_offsets"],
        x["indices"],
        x["offsets"],
        None,
        order,
        None,
        None,
        None,
        sorted_bags,
        None,
        None,
        None,
        ranks,
        None,
        None,
        None,
        None,
        sorted_indices,
    ]
    # optimizer 1 (exact Adagrad), sum pooling, then op.toml's attributes in order (defaults)
    attrs = [1, 0, 0.01, 1e-8, 0.0, 0, 0, 0.0, dim, 0.9, 0.999, 0, 0.001, 0.9]
    attrs += [-1, -1, 1.0, -1, 0.0, 0.0, 0, 0, 0.0, 0.0]
    # Each occurrence's gradient row is read (as the forward reads its weight row); each
    # distinct row's weights and Adagrad state are read and written once. With sorted_bags,
    # sum pooling needs no offsets.
    minimum = nbytes(order, sorted_bags, sorted_indices) + n * dim * 4 + unique * dim * 4 * 4
    return Case(
        "split_embedding_backward",
        f"exact Adagrad, T={t} tables [{rows}, {dim}], B={b}, {n} ids ({unique} distinct rows)",
        minimum,
        lambda ops: ops("split_embedding_backward").launch([lib.arg(v) for v in tensors], attrs),
    )


def bucketize_case() -> Case:
    t, b, my_size = 26, 4096, 8
    lengths = torch.randint(0, 21, (t * b,), generator=GEN)
    n = int(lengths.sum())
    indices = torch.randint(0, 1_000_000, (n,), generator=GEN)
    block_sizes = torch.full((t,), 1_000_000 // my_size + 1, dtype=torch.int64)
    weights = torch.rand(n, generator=GEN)
    outs = [
        torch.empty(my_size * t * b, dtype=torch.int64),
        torch.empty_like(indices),
        torch.empty_like(weights),
        None,
        torch.empty_like(indices),
    ]
    ins = [lengths, indices, block_sizes, weights, None, None]
    minimum = nbytes(lengths, indices, block_sizes, weights) + sum(
        nbytes(o) for o in outs if o is not None
    )
    return Case(
        "block_bucketize_sparse_features",
        f"T={t}, B={b}, {n} int64 ids + fp32 weights, my_size={my_size}, sequence",
        minimum,
        lambda ops: ops("block_bucketize_sparse_features").launch(
            [lib.arg(v) for v in ins + outs], [0, 1, my_size, -1, 0]
        ),
    )


def invert_case() -> Case:
    n = 4_000_000
    permute = torch.randperm(n, generator=GEN)
    inv = torch.empty_like(permute)
    return Case(
        "invert_permute",
        f"int64 random permutation [{n}]",
        2 * nbytes(permute),
        lambda ops: ops("invert_permute").launch([lib.arg(permute), lib.arg(inv)]),
    )


def permute_multi_embedding_case() -> Case:
    # One (KT, group) pair of a regroup at the training size: every other of 13 tables of
    # D = 128 (7 segments of 512 bytes a row) from a KT [4096, 1664] into a group [4096, 896].
    b, d, tables = 4096, 128, 13
    x = torch.randn(b, tables * d, generator=GEN)
    picked = list(range(0, tables, 2))
    table = torch.tensor([[t * d, i * d, d, 0] for i, t in enumerate(picked)], dtype=torch.int32)
    y = torch.empty(b, len(picked) * d)
    return Case(
        "permute_multi_embedding",
        f"fp32 KT [{b}, {tables * d}] -> group [{b}, {len(picked) * d}], {len(picked)} segments",
        2 * nbytes(y) + nbytes(table),
        lambda ops: ops("permute_multi_embedding").launch(
            [lib.arg(x), lib.arg(table), lib.arg(y)], [False]
        ),
    )


def permute_pooled_embs_case() -> Case:
    # KeyedTensor.regroup of a DLRM batch: B = 4096, 26 features of D 64 or 128, fp32.
    dims = torch.randint(1, 3, (26,), generator=GEN).mul(64).tolist()
    pooled = torch.randn(4096, sum(dims), generator=GEN)
    offsets = torch.tensor([0, *torch.tensor(dims).cumsum(0).tolist()])
    permute = torch.randperm(26, generator=GEN)
    out = torch.empty_like(pooled)
    return Case(
        "permute_pooled_embs",
        f"fp32 [4096, {sum(dims)}], 26 feature blocks of D 64/128 permuted",
        2 * nbytes(pooled) + nbytes(offsets, permute),
        lambda ops: ops("permute_pooled_embs").launch(
            [lib.arg(pooled), lib.arg(offsets), lib.arg(permute), lib.arg(out)], [-1]
        ),
    )


def segment_sum_csr_case() -> Case:
    # length_per_key of a variable-batch KJT: 4096 keys of 1-800 samples each, int64 lengths.
    strides = torch.randint(1, 800, (4096,), generator=GEN)
    csr = torch.cat([torch.zeros(1, dtype=torch.int64), strides.cumsum(0)]).int()
    lengths = torch.randint(0, 20, (int(csr[-1]),), generator=GEN)
    out = torch.empty(4096, dtype=torch.int64)
    return Case(
        "segment_sum_csr",
        f"int64 lengths [{lengths.numel()}] in 4096 segments of 1-800",
        nbytes(csr, lengths, out),
        lambda ops: ops("segment_sum_csr").launch(
            [lib.arg(csr), lib.arg(lengths), lib.arg(out)], [1]
        ),
    )


def jagged_unique_indices_case() -> Case:
    # EmbeddingCollection dedup: 26 features x B = 4096 bags of 0-4 Zipf ids (many repeats) in
    # hash ranges of up to 10^6 ids, int64. The minimum moves ids, offsets and the outputs once.
    t, b = 26, 4096
    lengths = torch.randint(0, 5, (t * b,), generator=GEN)
    sizes = torch.randint(1000, 1_000_000, (t,), generator=GEN)
    n = int(lengths.sum())
    feature = torch.repeat_interleave(torch.arange(t * b), lengths) // b
    ids = (torch.rand(n, generator=GEN).pow(-5.0).long() - 1).clamp(min=0) % sizes[feature]
    zero = torch.zeros(1, dtype=torch.int64)
    cumsum = torch.cat([zero, sizes.cumsum(0)])
    groups = torch.arange(t + 1)
    offsets = torch.cat([zero, lengths.cumsum(0)])
    outs = [torch.empty(t * b, dtype=torch.int64), torch.empty(t * b + 1, dtype=torch.int64)]
    outs += [torch.empty(n, dtype=torch.int64), torch.empty(n, dtype=torch.int64)]
    outs.append(torch.empty(1, dtype=torch.int64))
    unique = torch.unique(cumsum[feature] + ids).numel()
    return Case(
        "jagged_unique_indices",
        f"int64 ids [{n}] of 26 x 4096 bags, Zipf, {unique} unique",
        nbytes(cumsum, groups, offsets, ids, outs[0], outs[1], outs[3]) + unique * 8,
        lambda ops: ops("jagged_unique_indices").launch(
            [lib.arg(x) for x in (cumsum, groups, offsets, ids, *outs)], []
        ),
    )


def offsets_range_case() -> Case:
    # A position-weighted feature: B = 65536 bags of 0-60 ids, int64.
    lengths = torch.randint(0, 61, (65536,), generator=GEN)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
    size = int(lengths.sum())
    out = torch.empty(size, dtype=torch.int64)
    return Case(
        "offsets_range",
        f"int64 offsets [65536] -> range [{size}]",
        nbytes(offsets, out),
        lambda ops: ops("offsets_range").launch([lib.arg(offsets), lib.arg(out)], [size]),
    )


def expand_into_jagged_permute_case() -> Case:
    # The recat of a variable-batch all-to-all: 64 ranks x 26 features of 0-4000 ids, int32.
    lengths = torch.randint(0, 4001, (64 * 26,), generator=GEN)
    permute = torch.randperm(lengths.numel(), generator=GEN)
    zero = torch.zeros(1, dtype=torch.int64)
    input_offset = torch.cat([zero, lengths.cumsum(0)]).int()
    output_offset = torch.cat([zero, lengths[permute].cumsum(0)]).int()
    size = int(output_offset[-1])
    out = torch.empty(size, dtype=torch.int32)
    tensors = [permute.int(), input_offset, output_offset, out]
    return Case(
        "expand_into_jagged_permute",
        f"int32, {lengths.numel()} segments -> [{size}]",
        nbytes(*tensors),
        lambda ops: ops("expand_into_jagged_permute").launch([lib.arg(t) for t in tensors], [size]),
    )


def _batch_index_select_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # 26 tables of 4096 rows x D = 128, B = 2048 Zipf indices each (repeats, as users see).
    t, rows, d, b = 26, 4096, 128, 2048
    inputs = torch.randn(t * rows * d, generator=GEN)
    weights = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64)
    indices = torch.cat(
        [torch.multinomial(weights, b, replacement=True, generator=GEN) for _ in range(t)]
    )
    tables = torch.tensor(
        [[i * rows * d, rows, d, i * b, b, i * d, t * d, 0] for i in range(t)], dtype=torch.int64
    )
    return inputs, indices, tables


def batch_index_select_case() -> Case:
    inputs, indices, tables = _batch_index_select_inputs()
    out = torch.empty(indices.numel() * 128)
    return Case(
        "batch_index_select_dim0",
        "fp32 26 tables [4096, 128], 2048 Zipf int64 indices each, interleaved output",
        nbytes(indices, tables) + 2 * nbytes(out),
        lambda ops: ops("batch_index_select_dim0").launch(
            [lib.arg(inputs), lib.arg(indices), lib.arg(tables), lib.arg(out)], [out.numel()]
        ),
    )


def batch_index_select_backward_case() -> Case:
    inputs, indices, tables = _batch_index_select_inputs()
    grad = torch.randn(indices.numel() * 128, generator=GEN)
    grad_inputs = torch.zeros_like(inputs)
    # The minimum taken: indices and the gradient read once, one row written per index.
    return Case(
        "batch_index_select_dim0_backward",
        "fp32 gradient of 26 x 2048 rows of D = 128 into 26 tables [4096, 128], Zipf repeats",
        nbytes(indices, tables) + 2 * nbytes(grad),
        lambda ops: ops("batch_index_select_dim0_backward").launch(
            [lib.arg(grad), lib.arg(indices), lib.arg(tables), lib.arg(grad_inputs)]
        ),
    )


def float_to_fused8bit_rowwise_case() -> Case:
    # The INT8 QComms codec's encoder on an all-to-all of pooled embeddings: 26*4096 rows of 128.
    x = torch.randn(26 * 4096, 128, generator=GEN)
    out = torch.empty(26 * 4096, 136, dtype=torch.uint8)
    return Case(
        "float_to_fused8bit_rowwise",
        "fp32 [106496, 128] -> uint8 [106496, 136]",
        nbytes(x, out),
        lambda ops: ops("float_to_fused8bit_rowwise").launch([lib.arg(x), lib.arg(out)], []),
    )


def fused8bit_rowwise_to_float_case() -> Case:
    # The INT8 QComms codec's decoder on the same rows (bytes, then fp32 scale and bias).
    q = torch.randint(0, 256, (26 * 4096, 136), generator=GEN, dtype=torch.uint8)
    q[:, 128:132] = torch.tensor([0.01], dtype=torch.float32).view(torch.uint8)
    q[:, 132:136] = torch.tensor([-1.0], dtype=torch.float32).view(torch.uint8)
    out = torch.empty(26 * 4096, 128)
    return Case(
        "fused8bit_rowwise_to_float",
        "uint8 [106496, 136] -> fp32 [106496, 128]",
        nbytes(q, out),
        lambda ops: ops("fused8bit_rowwise_to_float").launch([lib.arg(q), lib.arg(out)], []),
    )


def float_to_hfp8_case() -> Case:
    # The FP8 QComms codec without a row dim (torchrec's CommType.FP8 default): e4m3, bias 15,
    # max_pos 0.9375, on an all-to-all of pooled embeddings, 26*4096 rows of 128.
    x = torch.randn(26 * 4096, 128, generator=GEN) * 0.3
    out = torch.empty(26 * 4096, 128, dtype=torch.uint8)
    return Case(
        "float_to_hfp8",
        "fp32 [106496, 128] -> uint8 [106496, 128], e4m3 bias 15",
        nbytes(x, out),
        lambda ops: ops("float_to_hfp8").launch([lib.arg(x), lib.arg(out)], [4, 15, 0.9375]),
    )


def hfp8_to_float_case() -> Case:
    # Its decoder on the same elements (any byte is a code).
    q = torch.randint(0, 256, (26 * 4096, 128), generator=GEN, dtype=torch.uint8)
    out = torch.empty(26 * 4096, 128)
    return Case(
        "hfp8_to_float",
        "uint8 [106496, 128] -> fp32 [106496, 128], e4m3 bias 15",
        nbytes(q, out),
        lambda ops: ops("hfp8_to_float").launch([lib.arg(q), lib.arg(out)], [4, 15]),
    )


def float_to_fp8_rowwise_case() -> Case:
    # The FP8 QComms codec with fp8_quantize_dim = 128, forward (e4m3): 26*4096 rows of 128.
    x = torch.randn(26 * 4096, 128, generator=GEN)
    out = torch.empty(26 * 4096, 136, dtype=torch.uint8)
    return Case(
        "float_to_fp8_rowwise",
        "fp32 [106496, 128] -> uint8 [106496, 136], forward",
        nbytes(x, out),
        lambda ops: ops("float_to_fp8_rowwise").launch([lib.arg(x), lib.arg(out)], [True]),
    )


def fp8_rowwise_to_float_case() -> Case:
    # Its decoder on the same rows (codes, then the fp32 scale and 4 zero bytes).
    q = torch.randint(0, 256, (26 * 4096, 136), generator=GEN, dtype=torch.uint8)
    q[:, 128:132] = torch.tensor([0.5], dtype=torch.float32).view(torch.uint8)
    q[:, 132:136] = 0
    out = torch.empty(26 * 4096, 128)
    return Case(
        "fp8_rowwise_to_float",
        "uint8 [106496, 136] -> fp32 [106496, 128], forward",
        nbytes(q, out),
        lambda ops: ops("fp8_rowwise_to_float").launch([lib.arg(q), lib.arg(out)], [True]),
    )


# ---- fbgemm variants the adapter serves with an existing kernel (torch_plugin/csrc/variants.cpp):
# each row is that kernel's launch with the variant's arguments, at a size of its own.


def permute_pooled_embs_split_case() -> Case:
    # permute_pooled_embs_split runs the permute_pooled_embs kernel: a B = 2048 batch of 13
    # features of D 128, reversed.
    pooled = torch.randn(2048, 13 * 128, generator=GEN)
    offsets = torch.arange(14) * 128
    permute = torch.arange(12, -1, -1)
    out = torch.empty_like(pooled)
    return Case(
        "permute_pooled_embs_split",
        "permute_pooled_embs kernel: fp32 [2048, 1664], 13 blocks of D 128 reversed",
        2 * nbytes(pooled) + nbytes(offsets, permute),
        lambda ops: ops("permute_pooled_embs").launch(
            [lib.arg(pooled), lib.arg(offsets), lib.arg(permute), lib.arg(out)], [-1]
        ),
    )


def _one_table_gather(name: str, description: str, x: torch.Tensor, index: torch.Tensor) -> Case:
    # The adapter's gather_rows: one table [rows, cols] of the batch_index_select_dim0 kernel.
    rows, cols = x.shape
    tables = torch.tensor([[0, rows, cols, 0, index.numel(), 0, cols, 0]], dtype=torch.int64)
    out = torch.empty(index.numel() * cols)
    return Case(
        name,
        description,
        nbytes(index, tables) + 2 * nbytes(out),
        lambda ops: ops("batch_index_select_dim0").launch(
            [lib.arg(x.reshape(-1)), lib.arg(index), lib.arg(tables), lib.arg(out)], [out.numel()]
        ),
    )


def batch_index_select_tensor_case() -> Case:
    # batch_index_select_dim0_tensor: the list arguments as tensors, the same kernel; 8 tables
    # [20000, 64], 4096 uniform int64 indices each, table after table.
    t, rows, d, b = 8, 20_000, 64, 4096
    inputs = torch.randn(t * rows * d, generator=GEN)
    indices = torch.randint(0, rows, (t * b,), generator=GEN)
    tables = torch.tensor(
        [[i * rows * d, rows, d, i * b, b, i * b * d, d, 0] for i in range(t)], dtype=torch.int64
    )
    out = torch.empty(t * b * d)
    return Case(
        "batch_index_select_dim0_tensor",
        "batch_index_select_dim0 kernel: fp32 8 tables [20000, 64], 4096 int64 indices each",
        nbytes(indices, tables) + 2 * nbytes(out),
        lambda ops: ops("batch_index_select_dim0").launch(
            [lib.arg(inputs), lib.arg(indices), lib.arg(tables), lib.arg(out)], [out.numel()]
        ),
    )


def group_index_select_case() -> Case:
    # group_index_select_dim0 gathers each member of the group with its own launch; one member:
    # fp32 [100000, 256] rows, 16384 int64 indices.
    x = torch.randn(100_000, 256, generator=GEN)
    index = torch.randint(0, 100_000, (16_384,), generator=GEN)
    return _one_table_gather(
        "group_index_select_dim0",
        "one member's launch (one per member): fp32 [100000, 256], 16384 int64 indices",
        x,
        index,
    )


def jagged_index_select_case() -> Case:
    # jagged_index_select_2d_forward: the host builds the row map (not modelled), the kernel
    # gathers the rows. 4096 segments of 0-64 rows of D 64 selected 2048 times.
    lengths = torch.randint(0, 65, (4096,), generator=GEN)
    values = torch.randn(int(lengths.sum()), 64, generator=GEN)
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
    picked = torch.randint(0, 4096, (2048,), generator=GEN)
    row_map = torch.cat([torch.arange(int(starts[k]), int(starts[k] + lengths[k])) for k in picked])
    return _one_table_gather(
        "jagged_index_select_2d_forward",
        f"batch_index_select_dim0 kernel on the host's row map: fp32 values [{values.shape[0]}, "
        f"64], 2048 of 4096 segments -> [{row_map.numel()}, 64]",
        values,
        row_map,
    )


def jagged_2d_to_dense_case() -> Case:
    # jagged_2d_to_dense: jagged_to_padded_dense with padding 0; B = 4096 bags of 0-100 rows of
    # D 128, max_sequence_length 50.
    b, max_len, d = 4096, 50, 128
    lengths = torch.randint(0, 101, (b,), generator=GEN)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    values = torch.randn(int(offsets[-1]), d, generator=GEN)
    valid = int(lengths.clamp(max=max_len).sum()) * d * 4
    return Case(
        "jagged_2d_to_dense",
        f"jagged_to_padded_dense kernel: fp32 values [{values.shape[0]}, {d}], B={b}, "
        f"max_sequence_length={max_len}, padding 0",
        valid + nbytes(offsets) + b * max_len * d * 4,
        lambda ops: lib.jagged_to_padded_dense(ops, values, offsets, max_len, 0.0)[1],
    )


def bucketize_inference_case() -> Case:
    # block_bucketize_sparse_features_inference (return_bucket_mapping=False) runs the training
    # kernel: an inference batch, T=26, B=512, int64 ids, my_size=4, bucketize_pos, no weights.
    t, b, my_size = 26, 512, 4
    lengths = torch.randint(0, 21, (t * b,), generator=GEN)
    n = int(lengths.sum())
    indices = torch.randint(0, 1_000_000, (n,), generator=GEN)
    block_sizes = torch.full((t,), 1_000_000 // my_size + 1, dtype=torch.int64)
    outs = [
        torch.empty(my_size * t * b, dtype=torch.int64),
        torch.empty_like(indices),
        None,
        torch.empty_like(indices),
        None,
    ]
    ins = [lengths, indices, block_sizes, None, None, None]
    minimum = nbytes(lengths, indices, block_sizes) + sum(nbytes(o) for o in outs if o is not None)
    return Case(
        "block_bucketize_sparse_features_inference",
        f"block_bucketize kernel: T={t}, B={b}, {n} int64 ids, my_size={my_size}, bucketize_pos",
        minimum,
        lambda ops: ops("block_bucketize_sparse_features").launch(
            [lib.arg(v) for v in ins + outs], [1, 0, my_size, -1, 0]
        ),
    )


def concat_slab_case() -> Case:
    # merge_pooled_embeddings of 8 devices' pooled outputs (B = 4096, 26 features of D 64,
    # table-wise: 3 or 4 tables a device) along dim 1: one launch per input; this is device
    # 3's, 3 tables into columns [640, 832) of [4096, 1664].
    x = torch.randn(4096, 3 * 64, generator=GEN)
    y = torch.empty(4096, 26 * 64)
    return Case(
        "concat_slab",
        "fp32 [4096, 192] -> columns [640, 832) of [4096, 1664] (one of 8 devices' slabs)",
        2 * nbytes(x),
        lambda ops: ops("concat_slab").launch([lib.arg(x), lib.arg(y)], [1, 640]),
    )


def sum_stacked_case() -> Case:
    # sum_reduce_to_one of 8 devices' row-wise partial pooled sums (B = 4096, 26 x D 64), the
    # inputs stacked on the target by the runtime's copies.
    x = torch.randn(8, 4096, 26 * 64, generator=GEN)
    y = torch.empty(4096, 26 * 64)
    return Case(
        "sum_stacked",
        "fp32 8 x [4096, 1664] summed into [4096, 1664]",
        nbytes(x, y),
        lambda ops: ops("sum_stacked").launch([lib.arg(x), lib.arg(y)]),
    )


def keyed_jagged_index_select_dim1_case() -> Case:
    # torchrec's variable-stride KJT permute / ITEP: 26 keys x B = 4096 bags of Zipf lengths
    # (int64 ids, fp32 weights), the batch resampled (repeats and omissions). The minimum reads
    # the selected values/weights and the selected bags' lengths/offsets once and writes the
    # outputs once.
    t, b = 26, 4096
    lengths = (torch.rand(t * b, generator=GEN).pow(-1.0 / 1.2).long() - 1).clamp(max=200)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    n = int(lengths.sum())
    values = torch.randint(0, 1 << 40, (n,), generator=GEN)
    weights = torch.rand(n, generator=GEN)
    indices = torch.randint(0, b, (b,), generator=GEN)
    sel = (torch.arange(t).view(-1, 1) * b + indices.view(1, -1)).flatten()
    total = int(lengths[sel].sum())
    out = torch.empty(total, dtype=torch.int64)
    out_lengths = torch.empty(t * b, dtype=torch.int64)
    out_weights = torch.empty(total)
    minimum = (
        2 * total * (8 + 4) + int(torch.unique(sel).numel()) * 16 + nbytes(indices, out_lengths)
    )
    tensors = [values, lengths, offsets, indices, weights, out, out_lengths, out_weights]
    return Case(
        "keyed_jagged_index_select_dim1",
        f"26 x 4096 Zipf bags, int64 ids + fp32 weights [{n}] -> [{total}], B resampled",
        minimum,
        lambda ops: ops("keyed_jagged_index_select_dim1").launch(
            [lib.arg(x) for x in tensors], [b, total]
        ),
    )


CASES = {
    "asynchronous_complete_cumsum": cumsum_case,
    "jagged_to_padded_dense": jagged_case,
    "dense_to_jagged": dense_case,
    "permute2d_sparse_data": permute_case,
    "gather_for_rank1": gather_case,
    "index_select_for_rank1_backward": backward_case,
    "bounds_check_indices": bounds_case,
    "split_embedding_forward": tbe_forward_case,
    "split_embedding_backward": tbe_backward_case,
    "block_bucketize_sparse_features": bucketize_case,
    "invert_permute": invert_case,
    "permute_multi_embedding": permute_multi_embedding_case,
    "permute_pooled_embs": permute_pooled_embs_case,
    "segment_sum_csr": segment_sum_csr_case,
    "jagged_unique_indices": jagged_unique_indices_case,
    "offsets_range": offsets_range_case,
    "expand_into_jagged_permute": expand_into_jagged_permute_case,
    "batch_index_select_dim0": batch_index_select_case,
    "batch_index_select_dim0_backward": batch_index_select_backward_case,
    "float_to_fused8bit_rowwise": float_to_fused8bit_rowwise_case,
    "fused8bit_rowwise_to_float": fused8bit_rowwise_to_float_case,
    "float_to_hfp8": float_to_hfp8_case,
    "hfp8_to_float": hfp8_to_float_case,
    "float_to_fp8_rowwise": float_to_fp8_rowwise_case,
    "fp8_rowwise_to_float": fp8_rowwise_to_float_case,
    "permute_pooled_embs_split": permute_pooled_embs_split_case,
    "batch_index_select_dim0_tensor": batch_index_select_tensor_case,
    "group_index_select_dim0": group_index_select_case,
    "jagged_index_select_2d_forward": jagged_index_select_case,
    "jagged_2d_to_dense": jagged_2d_to_dense_case,
    "block_bucketize_sparse_features_inference": bucketize_inference_case,
    "concat_slab": concat_slab_case,
    "sum_stacked": sum_stacked_case,
    "keyed_jagged_index_select_dim1": keyed_jagged_index_select_dim1_case,
}


def merged_rows(rows: list[dict], chosen: set[str]) -> list[dict]:
    """`rows` in place of the chosen operators' rows of results/ops.json, in the table's order."""
    path = costmodel.RESULTS / "ops.json"
    kept = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    every = [r for r in kept if r["op"] not in chosen] + rows
    order = {name: i for i, name in enumerate(CASES)}
    return sorted(every, key=lambda r: order.get(r["op"], len(order)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="operators to measure")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--readme", action="store_true", help="regenerate the table of kernels/bench/README.md"
    )
    parser.add_argument(
        "--build-dir", type=Path, default=REPO / "build", help="where build/ops/sim lives"
    )
    args = parser.parse_args()

    specs = catalogue.load_catalogue(REPO / "kernels")
    compiler = simbuild.find_host_compiler()
    loaded: dict[str, simrun.SimOp] = {}

    def ops(name: str) -> simrun.SimOp:
        if name not in loaded:
            simbuild.build_runtime(REPO / "kernels", args.build_dir / "ops" / "sim", compiler)
            out = args.build_dir / "ops" / "sim" / name
            result = simbuild.build_op(specs[name], REPO / "kernels", out, compiler)
            loaded[name] = simrun.SimOp(result.library, specs[name])
        return loaded[name]

    chosen = set(args.only or CASES)
    last = max(i for i, name in enumerate(CASES) if name in chosen)
    rows = []
    for name in list(CASES)[: last + 1]:
        case = CASES[name]()  # drawn even when not chosen: the next cases' inputs follow it
        if name not in chosen:
            continue
        started = time.monotonic()
        result = case.run(ops)
        seconds = time.monotonic() - started
        r = costmodel.row(
            name, case.description, result, case.minimum, roofline_seconds(case, result.model)
        )
        r["sim_seconds"] = round(seconds, 2)
        rows.append(r)
    if args.readme:
        costmodel.write_results("ops", merged_rows(rows, chosen))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = (
        f"{'operator':34} {'traffic':>8} {'balance':>8} {'cores':>5} {'DMAs':>9} {'scalar GM':>9}"
        f" {'model us':>9} {'roof us':>9} {'ratio':>6}  {'bound':18} case"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['op']:34} {r['traffic_ratio']:8.3f} {r['core_balance']:8.3f} {r['block_dim']:5d} "
            f"{r['dma_transfers']:9d} {r['scalar_gm_accesses']:9d} {r['modelled_us']:9.1f} "
            f"{r['roofline_us']:9.1f} {r['ratio']:6.2f}  {r['bound']:18} {r['case']}"
        )
    print(
        "\nmodel us: the cost model's time of the launch (recsdk_sim/model.h: per-core pipe "
        "timelines; bound: what the slowest core was busiest with, or HBM/L2 for the launch's "
        "memory floor); roof us: minimum traffic / HBM bandwidth and minimum MACs / Cube peak. "
        "Model figures with the vendor constants of kernels/bench/README.md, not measurements."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
