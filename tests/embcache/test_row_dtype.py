"""float16 / bfloat16 rows: initial values, the update rounded once, stochastic rounding,
device-cache paths, checkpoints and state_dict, memory per row.

References are independent of the package: rounding to nearest even is done by searching
the sorted table of every finite value of the dtype (no arithmetic on exponents), and the
updates are the optimisers' formulas written out in float64 (state in float32)."""

from __future__ import annotations

import functools
import math
import struct
from pathlib import Path

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids, sparse_optimizer
from torchrec_embcache import _C
from torchrec_embcache.errors import CheckpointError

LOW = [torch.float16, torch.bfloat16]


@functools.cache
def _all_finite(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Every finite value of dtype (sorted, -0 dropped) as float64, and its last encoding bit."""
    bits = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    values = bits.view(dtype).to(torch.float64)
    keep = torch.isfinite(values) & ~((values == 0) & (bits < 0))
    values, bits = values[keep], bits[keep]
    order = torch.argsort(values)
    return values[order], (bits[order].to(torch.int32) & 1)


def reference_round(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x (float64, inside the finite range) rounded to the nearest value of dtype, ties to
    the value with an even encoding."""
    values, odd = _all_finite(dtype)
    flat = x.reshape(-1)
    hi_i = torch.searchsorted(values, flat).clamp(1, values.numel() - 1)
    lo_i = hi_i - 1
    lo, hi = values[lo_i], values[hi_i]
    assert bool(((flat >= values[0]) & (flat <= values[-1])).all()), "outside the finite range"
    d_lo, d_hi = flat - lo, hi - flat
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (odd[lo_i] == 1))
    out = torch.where(flat == hi, hi, torch.where(pick_hi, hi, lo))
    out = torch.copysign(out, flat)  # a negative value rounding to zero gives -0
    return out.to(dtype).reshape(x.shape)


def test_reference_rounding_agrees_with_torch_on_float32_inputs() -> None:
    # From float32, torch's conversion is a single rounding to nearest even: a check of the
    # reference itself.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20000, generator=g) * torch.exp2(torch.randint(-12, 12, (20000,), generator=g))
    for dtype in LOW:
        assert torch.equal(
            reference_round(x.double(), dtype).view(torch.int16), x.to(dtype).view(torch.int16)
        )


class ReferenceRows:
    """Rows of one table in float64 / float32: the weight update written out in float64 from
    the stored weight, the gradient and the float32 state, rounded once."""

    def __init__(self, kind: str, dtype: torch.dtype, opt: object) -> None:
        self.kind, self.dtype, self.opt = kind, dtype, opt
        self.weight: dict[int, torch.Tensor] = {}
        self.state: dict[int, list[torch.Tensor]] = {}
        self.step = 0

    def add(self, key: int, initial: torch.Tensor, dim: int) -> None:
        self.weight[key] = initial.to(torch.float64)
        width = {"sgd": 0, "adagrad": 1, "adam": 2}[self.kind]
        self.state[key] = [torch.zeros(dim) for _ in range(width)]

    def update(self, keys: list[int], g32: torch.Tensor) -> None:
        self.step += 1
        lr = self.opt.lr
        w = torch.stack([self.weight[k] for k in keys])
        g = g32.to(torch.float64)
        if self.kind == "sgd":
            x = w + (-lr) * g
        elif self.kind == "adagrad":
            s = torch.stack([self.state[k][0] for k in keys]) + g32 * g32
            for k, row in zip(keys, s, strict=True):
                self.state[k] = [row]
            x = w + ((-lr) * g) / (s.to(torch.float64).sqrt() + self.opt.eps)
        else:
            b1, b2 = self.opt.betas
            m = torch.stack([self.state[k][0] for k in keys])
            v = torch.stack([self.state[k][1] for k in keys])
            m = (g32 - m) * torch.tensor(1 - b1, dtype=torch.float32) + m
            v = (g32 * g32 - v) * torch.tensor(1 - b2, dtype=torch.float32) + v
            for k, m_row, v_row in zip(keys, m, v, strict=True):
                self.state[k] = [m_row, v_row]
            step_size = lr * math.sqrt(1 - b2**self.step) / (1 - b1**self.step)
            denom = v.to(torch.float64).sqrt() + self.opt.eps
            x = w + (-step_size) * (m.to(torch.float64) / denom)
        rounded = reference_round(x, self.dtype).to(torch.float64)
        for k, row in zip(keys, rounded, strict=True):
            self.weight[k] = row


def zipf_batches(pool: torch.Tensor, steps: int, n: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p = torch.arange(1, pool.numel() + 1, dtype=torch.float64).pow(-1.05)
    return [pool[torch.multinomial(p, n, replacement=True, generator=g)] for _ in range(steps)]


def train_exact_gradients(
    model: ec.DynamicEmbedding, data: list[torch.Tensor], seed: int
) -> list[torch.Tensor]:
    """Each step's loss is sum(out * c) with c multiples of 1/8 in [-1, 1]: per-row
    gradients are sums of a few such values, exact in float32 in any order."""
    g = torch.Generator().manual_seed(seed)
    coefs = []
    for ids in data:
        c = torch.randint(-8, 9, (ids.numel(), model.embedding_dim), generator=g) / 8
        coefs.append(c)
        (model(ids) * c).sum().backward()
    return coefs


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
@pytest.mark.parametrize("dtype", LOW, ids=["fp16", "bf16"])
@pytest.mark.parametrize("cache_slots", [None, 700], ids=["host", "cached"])
def test_update_equals_float64_reference_rounded_once(
    kind: str, dtype: torch.dtype, cache_slots: int | None
) -> None:
    dim, pool = 64, random_ids(900, seed=5)
    data = zipf_batches(pool, steps=4, n=2000, seed=6)
    model = ec.DynamicEmbedding(
        dim,
        optimizer=sparse_optimizer(kind, 0.05, adam_lr=0.01),
        initializer=ec.Uniform(-0.5, 0.5),
        seed=7,
        row_dtype=dtype,
        cache_slots=cache_slots,
    )
    # Initial rows are the float32 initial values rounded once to nearest even.
    f32 = ec.EmbeddingTable(dim, initializer=ec.Uniform(-0.5, 0.5), seed=7)
    initial32 = f32.host.lookup(pool)
    initial = model.table.host.lookup(pool)
    assert initial.dtype == torch.float32
    assert torch.equal(
        initial.to(dtype).view(torch.int16),
        reference_round(initial32.double(), dtype).view(torch.int16),
    )

    ref = ReferenceRows(kind, dtype, model.table.optimizer)
    for key, row in zip(pool.tolist(), initial, strict=True):
        ref.add(key, row, dim)
    coefs = train_exact_gradients(model, data, seed=8)
    for ids, c in zip(data, coefs, strict=True):
        uniq, inverse = torch.unique(ids, return_inverse=True)
        grads = torch.zeros(uniq.numel(), dim).index_add_(0, inverse, c)
        ref.update(uniq.tolist(), grads)

    state = model.table.export()
    assert state["weight"].dtype == dtype and state["optimizer_state"].dtype == torch.float32
    expected = torch.stack([ref.weight[k] for k in state["ids"].tolist()]).to(dtype)
    assert torch.equal(state["weight"].view(torch.int16), expected.view(torch.int16))
    if kind != "sgd":
        expected_state = torch.stack([torch.cat(ref.state[k]) for k in state["ids"].tolist()])
        assert torch.equal(state["optimizer_state"], expected_state)


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
@pytest.mark.parametrize("dtype", LOW, ids=["fp16", "bf16"])
def test_device_update_path_matches_the_fused_kernel(kind: str, dtype: torch.dtype) -> None:
    # The torch-operation update (used on npu) rounds like the C++ kernel, bit for bit.
    pool = random_ids(300, seed=11)
    data = zipf_batches(pool, steps=4, n=600, seed=12)
    tables = []
    for torch_path in (False, True):
        model = ec.DynamicEmbedding(
            32,
            optimizer=sparse_optimizer(kind, 0.05, adam_lr=0.01),
            seed=3,
            row_dtype=dtype,
            cache_slots=250,
            initializer=ec.Uniform(-0.5, 0.5),
        )
        model.table._torch_update = torch_path
        train_exact_gradients(model, data, seed=13)
        tables.append(model.table.export())
    for key in tables[0]:
        a, b = tables[0][key], tables[1][key]
        assert torch.equal(
            a.view(torch.int16) if a.dtype == dtype else a,
            b.view(torch.int16) if b.dtype == dtype else b,
        ), key


@pytest.mark.parametrize("path", ["host", "cached", "torch"])
def test_stochastic_rounding_is_unbiased(path: str) -> None:
    """K SGD steps of delta = q/8 on bfloat16 weights starting at 1.5 (q = 2^-7, the spacing
    of bfloat16 in [1, 2)); every weight stays in [1.5 - K q, 1.5], inside that binade.

    Per weight the rounding errors e_1..e_K are martingale differences: E[e_k | past] = 0 for
    an unbiased rounding, and each lies in an interval of length q. Over M independent
    weights the K*M errors form one martingale, so by Azuma-Hoeffding
        P(|mean of finals - (1.5 - K delta)| >= t) <= 2 exp(-2 M t^2 / (K q^2)).
    With alpha = 1e-6: t = q sqrt(K ln(2 / alpha) / (2 M)). With K = 16, M = 512 * 128 this
    is 0.042 q, while rounding to nearest even never moves the weights (a bias of 2 q): the
    test separates the two by a factor of about 50.
    """
    q, delta, K, n_ids, dim = 2.0**-7, 2.0**-10, 16, 512, 128
    M, alpha = n_ids * dim, 1e-6
    t = q * math.sqrt(K * math.log(2 / alpha) / (2 * M))
    ids = random_ids(n_ids, seed=21)

    def run(stochastic: bool) -> torch.Tensor:
        model = ec.DynamicEmbedding(
            dim,
            optimizer=ec.SparseSGD(lr=delta),
            initializer=ec.Constant(1.5),
            seed=22,
            row_dtype=torch.bfloat16,
            stochastic_rounding=stochastic,
            cache_slots=None if path == "host" else n_ids,
        )
        model.table._torch_update = path == "torch"
        for _ in range(K):
            model(ids).sum().backward()  # gradient 1 per element
        return model.table.export()["weight"].to(torch.float64)

    final = run(True)
    expected = 1.5 - K * delta
    assert abs(final.mean().item() - expected) <= t, (final.mean().item(), expected, t)
    assert bool((final >= 1.5 - K * q).all()) and bool((final <= 1.5).all())
    nearest = run(False)
    assert bool((nearest == 1.5).all())  # stagnation: the bias the test is there to catch
    assert abs(nearest.mean().item() - expected) > 10 * t


def test_stochastic_rounding_is_deterministic_and_cache_independent() -> None:
    pool = random_ids(400, seed=31)
    data = zipf_batches(pool, steps=3, n=800, seed=32)
    results = []
    for slots in (None, 450, None):
        model = ec.DynamicEmbedding(
            16,
            optimizer=ec.SparseAdagrad(lr=0.1),
            seed=33,
            row_dtype=torch.float16,
            stochastic_rounding=True,
            cache_slots=slots,
        )
        train_exact_gradients(model, data, seed=34)
        results.append(model.table.export()["weight"].view(torch.int16))
    assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])


def test_stochastic_rounding_needs_a_16_bit_dtype() -> None:
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        ec.EmbeddingTable(8, stochastic_rounding=True)
    with pytest.raises(ValueError, match="row dtype"):
        ec.EmbeddingTable(8, row_dtype=torch.float64)


def _model(dtype: torch.dtype, slots: int | None = 220) -> ec.DynamicEmbeddingBag:
    return ec.DynamicEmbeddingBag(
        24,
        mode="sum",
        optimizer=ec.SparseAdam(lr=0.02),
        seed=41,
        row_dtype=dtype,
        cache_slots=slots,
        eviction=ec.EvictionPolicy(capacity=250),
    )


def _trained(dtype: torch.dtype, slots: int | None = 220) -> ec.DynamicEmbeddingBag:
    model = _model(dtype, slots)
    pool = random_ids(300, seed=42)
    for ids in zipf_batches(pool, steps=5, n=400, seed=43):
        model(ids.view(-1, 4)).pow(2).sum().backward()
    return model


def _bits(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.view(torch.int16) if v.dtype in LOW else v for k, v in state.items()}


@pytest.mark.parametrize("dtype", LOW, ids=["fp16", "bf16"])
def test_checkpoint_round_trip_is_bit_exact(dtype: torch.dtype, tmp_path: Path) -> None:
    model = _trained(dtype)
    ec.save_checkpoint(model, tmp_path)
    other = _model(dtype)
    ec.load_checkpoint(other, tmp_path)
    a, b = _bits(model.table.export()), _bits(other.table.export())
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # state_dict too
    third = ec.DynamicEmbeddingBag(
        24, mode="sum", optimizer=ec.SparseAdam(lr=0.02), row_dtype=dtype
    )
    third.load_state_dict(model.state_dict())
    c = _bits(third.table.export())
    assert all(torch.equal(a[k], c[k]) for k in a)


def test_checkpoint_of_another_dtype_is_refused_naming_the_file(tmp_path: Path) -> None:
    model = _trained(torch.bfloat16, slots=None)
    path = tmp_path / "t.ckpt"
    model.table.save(path)
    other = ec.EmbeddingTable(24, optimizer=ec.SparseAdam(lr=0.02), row_dtype=torch.float16)
    with pytest.raises(CheckpointError, match=r"t\.ckpt holds bfloat16 rows .* float16"):
        other.load([path])
    ec.save_checkpoint(model, tmp_path / "dir")
    fp32 = ec.DynamicEmbeddingBag(24, mode="sum", optimizer=ec.SparseAdam(lr=0.02))
    before = fp32.table.export()
    with pytest.raises(CheckpointError, match="dtype='bfloat16'"):
        ec.load_checkpoint(fp32, tmp_path / "dir")
    assert torch.equal(fp32.table.export()["ids"], before["ids"])


def _rewrite_header(path: Path, version: int) -> None:
    data = bytearray(path.read_bytes())
    data[8:12] = struct.pack("<I", version)
    data[124:128] = struct.pack("<I", _C.crc32c(bytes(data[:124])))
    path.write_bytes(bytes(data))


def test_version_1_files_load_as_float32_and_unknown_versions_are_refused(
    tmp_path: Path,
) -> None:
    model = _trained(torch.float32, slots=None)
    path = tmp_path / "t.ckpt"
    model.table.save(path)
    _rewrite_header(path, 1)  # a version 1 header: same layout, zeros where the dtype is
    other = ec.EmbeddingTable(24, optimizer=ec.SparseAdam(lr=0.02))
    other.load([path])
    a, b = model.table.export(), other.export()
    assert all(torch.equal(a[k], b[k]) for k in a)
    _rewrite_header(path, 3)
    with pytest.raises(CheckpointError, match=r"t\.ckpt.*format version 3 is not supported"):
        other.load([path])


def test_memory_per_row_halves_the_embedding_bytes() -> None:
    ids = random_ids(20000, seed=51)
    per_row = {}
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for opt in (ec.SparseSGD(), ec.SparseAdam()):
            table = ec.EmbeddingTable(128, optimizer=opt, row_dtype=dtype)
            table.lookup(ids, train=True)
            state = 0 if isinstance(opt, ec.SparseSGD) else 2 * 128 * 4
            assert table.row_bytes == 128 * dtype.itemsize + state
            per_row[(dtype, type(opt))] = table.host_bytes_per_row
            # stored row + 16-byte header + index slot (16 B at 35-70 % load) + the unused
            # tail of each shard's last ~64 KiB block (20000 rows over 32 shards)
            assert table.row_bytes + 16 < table.host_bytes_per_row < 1.1 * table.row_bytes + 64
    saved = per_row[(torch.float32, ec.SparseSGD)] - per_row[(torch.bfloat16, ec.SparseSGD)]
    assert abs(saved - 256) < 8


def test_odd_dim_rows_pad_and_round_trip() -> None:
    table = ec.EmbeddingTable(5, row_dtype=torch.bfloat16, initializer=ec.Uniform(-1, 1))
    ids = random_ids(50, seed=61)
    table.lookup(ids, train=True)
    state = table.export()
    assert table.row_width == 3 and state["weight"].shape == (50, 5)
    assert torch.equal(table.host.lookup(state["ids"]), state["weight"].float())
    rows = table.pack_rows(state["weight"], state["optimizer_state"])
    assert torch.equal(rows, table.host.dump(False)[3])
