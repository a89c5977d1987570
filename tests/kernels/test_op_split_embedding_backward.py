"""SplitEmbeddingBackward on sim against fbgemm_gpu's CPU TBE training backward (EXACT_SGD,
EXACT_ADAGRAD, EXACT_ROWWISE_ADAGRAD) and dense_embedding_codegen_lookup_function's gradient.

Adam (OptimType.ADAM) has no CPU training path in fbgemm 1.1.0: the optimizer is GPU-only there
and split_embedding_codegen_lookup_adam_function_cpu only raises "deprecated" (checked below).
Its kernel mode is therefore checked against ``reference_adam`` (the GPU kernel's formula,
codegen/genscript/optimizers.py ``adam()``, with its float/double promotions) and, for the
parts fbgemm's CPU path does have, against the gradient of fbgemm's dense lookup (autograd)
fed to torch.optim.AdamW, whose update is the same as fbgemm's Adam on the touched rows.

fbgemm's Python module (SplitTableBatchedEmbeddingBagsCodegen) only takes D % 4 == 0, so the
references call the CPU lookup functions it wraps (split_embedding_codegen_lookup_*_function_cpu)
and run autograd through them. Where fbgemm's CPU path has no counterpart (pooling none, index
-1, row-wise weight decay, which fbgemm's float CPU kernel drops; see the tests), the reference
is ``reference_update`` below, the update formulas written out in PyTorch.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fbgemm_gpu")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kernel_testlib import SimError, arg  # noqa: E402
from strategies import INDEX_DTYPES, platforms, seeds  # noqa: E402

fbgemm = torch.ops.fbgemm
SGD, ADAGRAD, ROWWISE, DENSE, ADAM = 0, 1, 2, 3, 4
SUM, MEAN, NONE = 0, 1, 2
LR, EPS = 0.1, 0.01


# ---- the operator, as the adapter calls it ---------------------------------------------------


# The launch options of SimOp.launch that callers pass along with the attributes.
LAUNCH_OPTIONS = frozenset({"soc", "max_cores", "poison", "min_core_bytes", "ub_bytes", "check"})
# Attributes op.toml leaves without a default, as most tests here want them.
TEST_ATTRS = {"learning_rate": LR, "eps": EPS, "gradient_clipping": 0, "max_gradient": 1.0}


def split_embedding_backward(ops, *tensors, **named):
    """In place, like fbgemm: weights, momentum1, momentum2 and grad_weights are updated.

    ``tensors`` in op.toml order (grad_output ... grad_weights, then the optional momentum2,
    momentum2_offsets and sorted_bags, which may be left out, None or named); attributes by name
    (optimizer and pooling_mode always; TEST_ATTRS and op.toml defaults otherwise; max_d, when
    not given, is the widest table of d_offsets); launch options as SimOp.launch takes them."""
    op = ops("split_embedding_backward")
    names = [t.name for t in op.spec.tensors]
    given = dict(zip(names, tensors, strict=False))
    given |= {k: named.pop(k) for k in list(named) if k in names}
    launch = {k: named.pop(k) for k in list(named) if k in LAUNCH_OPTIONS}
    attrs = {**TEST_ATTRS, **named}
    if attrs.get("max_d") is None:
        dims = (given["d_offsets"][1:] - given["d_offsets"][:-1]).tolist()
        attrs["max_d"] = max(dims) if dims else 0
    return op.launch_named({k: arg(t) for k, t in given.items()}, attrs, **launch)


def table_of_positions(offsets, num_tables: int, n: int):
    """The table of every index position (all positions lie in some bag here)."""
    b = (offsets.numel() - 1) // num_tables
    lengths = (offsets[1:] - offsets[:-1]).long()
    bag = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
    assert bag.numel() == n
    return bag // max(b, 1)


def bags_of(offsets, sorted_positions):
    """What the adapter passes as sorted_bags: the bag of each sorted position (-1 outside every
    bag)."""
    bag = torch.searchsorted(offsets.long(), sorted_positions, right=True) - 1
    return torch.where(bag < offsets.numel() - 1, bag, -1)


def run_ranks_of(indices, offsets, rows: list[int], sorted_positions):
    """What the adapter passes as run_slots outside NONE: for each sorted entry, the number of
    runs (of equal table and row) before its own."""
    cumsum = torch.tensor([0, *torch.tensor(rows).cumsum(0).tolist()], dtype=torch.int64)
    t = table_of_positions(offsets, len(rows), indices.numel())
    keys = (cumsum[t] + indices.long())[sorted_positions]
    starts = (keys[1:] != keys[:-1]).long()
    return torch.cat([torch.zeros(min(1, keys.numel()), dtype=torch.int64), starts.cumsum(0)])


def sorted_positions_of(indices, offsets, rows: list[int]):
    """What the adapter computes: a stable argsort of hash_size_cumsum[t] + index."""
    cumsum = torch.tensor([0, *torch.tensor(rows).cumsum(0).tolist()], dtype=torch.int64)
    t = table_of_positions(offsets, len(rows), indices.numel())
    linear = cumsum[t] + indices.long()
    return torch.sort(linear, stable=True).indices


# ---- a case: tables, bags and state ----------------------------------------------------------


class Case:
    def __init__(self, rows, dims, lengths, index_list, iw, pooling, gen):
        self.rows, self.dims, self.pooling = rows, dims, pooling
        self.t = len(rows)
        self.b = len(lengths) // self.t
        wo = [0]
        for r, d in zip(rows, dims, strict=True):
            wo.append(wo[-1] + r * d)
        self.w_total = wo[-1]
        self.weights_offsets = torch.tensor(wo[:-1], dtype=torch.int64)
        self.d_offsets = torch.tensor(
            [0, *torch.tensor(dims).cumsum(0).tolist()], dtype=torch.int32
        )
        self.offsets = torch.tensor(
            [0, *torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist()]
        )
        self.indices = torch.tensor(index_list, dtype=torch.int64)
        self.n = len(index_list)
        self.indice_weights = torch.randn(self.n, generator=gen) if iw else None
        self.weights = torch.randn(self.w_total, generator=gen)
        self.row_offsets = torch.tensor([0, *torch.tensor(rows).cumsum(0).tolist()][:-1])
        self.mom_full = torch.rand(self.w_total, generator=gen)
        self.mom_rows = torch.rand(sum(rows), generator=gen)
        total_d = int(self.d_offsets[-1])
        shape = (self.n, dims[0]) if pooling == NONE else (self.b, total_d)
        self.grad_output = torch.randn(shape, generator=gen) * 2
        self.sorted = sorted_positions_of(self.indices, self.offsets, rows)
        self.sorted_bags = bags_of(self.offsets, self.sorted)
        self.run_ranks = run_ranks_of(self.indices, self.offsets, rows, self.sorted)
        # Adam state of a plausible scale (|m| well below sqrt(v), so steps are about lr; the
        # rounding of a step is relative to its size). The second moment is laid out 3 floats
        # further on than the weights, so mixing up the two offsets tensors shows.
        self.adam_m = torch.randn(self.w_total, generator=gen) * 0.1
        v = torch.rand(self.w_total, generator=gen) * 0.5 + 0.05
        self.adam_v = torch.cat([torch.full((3,), -1.0), v])
        self.adam_v_offsets = self.weights_offsets + 3

    def momentum(self, optimizer):
        if optimizer == ADAGRAD:
            return self.mom_full.clone(), self.weights_offsets.clone()
        if optimizer == ROWWISE:
            return self.mom_rows.clone(), self.row_offsets.clone()
        return None, None

    def batch(self, index_dtype, bags: bool, ranks: bool | None = None) -> dict:
        """The kernel's inputs that describe the tables and the batch (not the state). With
        bags, the adapter's shortcuts: sorted_bags, sorted_indices and (unless ranks is False)
        the run ranks, which split the entries over the cores by cost."""
        extra = {"run_slots": self.run_ranks} if (bags if ranks is None else ranks) else {}
        if bags:
            extra["sorted_indices"] = self.indices[self.sorted].to(index_dtype)
        return extra | {
            "grad_output": self.grad_output,
            "weights_offsets": self.weights_offsets,
            "d_offsets": self.d_offsets,
            "indices": self.indices.to(index_dtype),
            "offsets": self.offsets.to(index_dtype),
            "indice_weights": self.indice_weights,
            "sorted_positions": self.sorted,
            "sorted_bags": self.sorted_bags if bags else None,
            "pooling_mode": self.pooling,
        }

    def run_kernel(self, ops, optimizer, index_dtype, bags=False, **kw):
        weights = self.weights.clone()
        mom, mom_off = self.momentum(optimizer)
        grad_weights = torch.zeros(self.w_total) if optimizer == DENSE else None
        state = {"momentum1": mom, "momentum1_offsets": mom_off, "grad_weights": grad_weights}
        batch = self.batch(index_dtype, bags)
        split_embedding_backward(ops, weights=weights, **state, **batch, optimizer=optimizer, **kw)
        return weights, mom, grad_weights

    def cpu_common_args(self) -> dict:
        """The lookup arguments fbgemm's CPU ops share (everything but weights and optimizer)."""
        hash_cumsum = torch.tensor([0, *torch.tensor(self.rows).cumsum(0).tolist()])
        return {
            "weights_offsets": self.weights_offsets,
            "D_offsets": self.d_offsets,
            "total_D": int(self.d_offsets[-1]),
            "max_D": max(self.dims),
            "hash_size_cumsum": hash_cumsum,
            "total_hash_size_bits": 32,
            "indices": self.indices,
            "offsets": self.offsets,
            "pooling_mode": self.pooling,
            "indice_weights": self.indice_weights,
            "feature_requires_grad": None,
        }

    def cpu_split_args(self, weights, gradient_clipping=False, max_gradient=1.0) -> dict:
        """Arguments of fbgemm's split_embedding_codegen_lookup_*_function_cpu, but the
        optimizer state."""
        return {
            "host_weights": weights,
            "weights_placements": torch.zeros(self.t, dtype=torch.int32),
            **self.cpu_common_args(),
            "gradient_clipping": gradient_clipping,
            "max_gradient": max_gradient,
            "stochastic_rounding": False,
            "learning_rate": LR,
        }

    def run_fbgemm(self, optimizer, gradient_clipping=False, max_gradient=1.0):
        """fbgemm's CPU forward + autograd backward (sum/mean pooling, no -1 indices)."""
        assert self.pooling != NONE
        weights = self.weights.clone().requires_grad_(optimizer != DENSE)
        mom, mom_off = self.momentum(optimizer)
        if optimizer == DENSE:
            weights.requires_grad_(True)
            out = fbgemm.dense_embedding_codegen_lookup_function(
                dev_weights=weights, **self.cpu_common_args()
            )
            out.backward(self.grad_output)
            return None, None, weights.grad
        split = self.cpu_split_args(weights, gradient_clipping, max_gradient)
        if optimizer == SGD:
            out = fbgemm.split_embedding_codegen_lookup_sgd_function_cpu(**split)
        else:
            state = {
                "momentum1_host": mom,
                "momentum1_placements": torch.zeros(self.t, dtype=torch.int32),
                "momentum1_offsets": mom_off,
                "eps": EPS,
            }
            if optimizer == ADAGRAD:
                fn = fbgemm.split_embedding_codegen_lookup_adagrad_function_cpu
            else:
                fn = fbgemm.split_embedding_codegen_lookup_rowwise_adagrad_function_cpu
                # the schema's default of weight_decay_mode is a float: pass it explicitly
                state.update(weight_decay=0.0, weight_decay_mode=0, max_norm=0.0)
            out = fn(**split, **state)
        out.backward(self.grad_output)
        return weights.detach(), mom, None


def with_and_without_bags(run, *args, **kw):
    """run(*args, bags=..., **kw) without and then with the adapter's shortcuts (sorted_bags,
    sorted_indices and the run ranks, which split the entries over the cores by cost rather
    than count). Both paths add the same terms
    in the same order, so the results must agree bit for bit; returned once."""
    without = run(*args, bags=False, **kw)
    with_bags = run(*args, bags=True, **kw)
    for a, b in zip(without, with_bags, strict=True):
        # equal bits, NaN where both are NaN (LARS-SGD without decay: a row whose summed gradient
        # is 0 gets 0 / 0, as in fbgemm's formula)
        if a is not None or b is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    return without


def row_sums(case: Case, clip=None) -> dict[tuple[int, int], torch.Tensor]:
    """Each touched (table, row)'s gradient: float32 sums in position order."""
    grad_output = case.grad_output if clip is None else case.grad_output.clamp(-clip, clip)
    b = case.b
    sums: dict[tuple[int, int], torch.Tensor] = {}
    for p in range(case.n):
        idx = int(case.indices[p])
        if idx == -1:
            continue
        bag = int(torch.searchsorted(case.offsets, p, right=True)) - 1
        t = bag // b
        d0, d = int(case.d_offsets[t]), case.dims[t]
        g = grad_output[p, :d] if case.pooling == NONE else grad_output[bag % b, d0 : d0 + d]
        if case.indice_weights is not None:
            g = g * case.indice_weights[p]
        elif case.pooling == MEAN:
            g = g * torch.tensor(1.0 / (int(case.offsets[bag + 1]) - int(case.offsets[bag])))
        key = (t, idx)
        sums[key] = g.clone() if key not in sums else sums[key] + g
    return sums


def reference_update(case: Case, optimizer, weight_decay=0.0, weight_decay_mode=0, clip=None):
    """The exact backward written out: per-row float32 sums in position order, then fbgemm's
    CPU template formulas (embedding_backward_split_cpu_template.cpp / optimizers.py)."""
    weights = case.weights.clone()
    mom, mom_off = case.momentum(optimizer)
    grad_weights = torch.zeros(case.w_total)
    for (t, idx), g in row_sums(case, clip).items():
        d = case.dims[t]
        at = int(case.weights_offsets[t]) + idx * d
        w = weights[at : at + d]
        if optimizer == DENSE:
            grad_weights[at : at + d] = g
        elif optimizer == SGD:
            w -= LR * g
        elif optimizer == ADAGRAD:
            m_at = int(mom_off[t]) + idx * d
            m = mom[m_at : m_at + d]
            m += g * g
            w -= LR * g / (m.sqrt() + EPS)
        else:
            m_at = int(mom_off[t]) + idx
            gd = g + weight_decay * w if weight_decay_mode == 1 else g
            new_m = mom[m_at] + (gd * gd).sum() / d
            mom[m_at] = new_m
            multiplier = LR / (new_m.sqrt() + EPS)
            correction = 1.0
            if weight_decay_mode == 1:
                correction = 1.0 - multiplier * weight_decay
            elif weight_decay_mode in (2, 5):
                correction = 1.0 - LR * weight_decay
            w.copy_(correction * w - g * multiplier)
    return weights, mom, grad_weights if optimizer == DENSE else None


def assert_close(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        if w is None:
            continue
        torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-6)


# ---- hand-worked example ---------------------------------------------------------------------


def test_hand_worked_sgd(sim_ops) -> None:
    """Two tables, B = 2, lr = 0.5.

    table 0 (D = 2, 3 rows, weights[0:6]), table 1 (D = 1, 2 rows, weights[6:8]);
    bags: t0 b0 = [1, 1] (row 1 twice), t0 b1 = [1, 2], t1 b0 = [0], t1 b1 = [] (empty).
    grad_output [B, 3] = [[1, 2, 10], [3, 4, 20]] (columns 0:2 table 0, column 2 table 1).

    Sum pooling: row (0, 1) gets [1, 2] + [1, 2] + [3, 4] = [5, 8] (twice from bag 0, once from
    bag 1); row (0, 2) [3, 4]; row (1, 0) [10]; row (0, 0) and (1, 1) nothing. With all weights
    1, SGD gives w = 1 - 0.5 * g: row (0, 1) -> [-1.5, -3], row (0, 2) -> [-0.5, -1],
    row (1, 0) -> -4.
    Mean pooling: bag t0 b0 has length 2, so it contributes [0.5, 1] twice; bag t0 b1 (length
    2) gives [1.5, 2] to both rows 1 and 2: row (0, 1) = [2.5, 4] -> [-0.25, -1];
    row (0, 2) = [1.5, 2] -> [0.25, 0]; row (1, 0) (length 1) -> -4.
    """
    indices = torch.tensor([1, 1, 1, 2, 0])
    offsets = torch.tensor([0, 2, 4, 5, 5])
    grad_output = torch.tensor([[1.0, 2.0, 10.0], [3.0, 4.0, 20.0]])
    sorted_positions = sorted_positions_of(indices, offsets, [3, 2])
    assert sorted_positions.tolist() == [0, 1, 2, 3, 4]
    common = {
        "weights_offsets": torch.tensor([0, 6]),
        "d_offsets": torch.tensor([0, 2, 3], dtype=torch.int32),
        "indices": indices,
        "offsets": offsets,
        "sorted_positions": sorted_positions,
    }
    want = {
        SUM: [1, 1, -1.5, -3, -0.5, -1, -4, 1],
        MEAN: [1, 1, -0.25, -1, 0.25, 0, -4, 1],
    }
    for pooling, expect in want.items():
        weights = torch.ones(8)
        split_embedding_backward(
            sim_ops,
            grad_output,
            weights,
            **common,
            optimizer=SGD,
            pooling_mode=pooling,
            learning_rate=0.5,
        )
        assert weights.tolist() == expect


def test_hand_worked_dense_and_rowwise(sim_ops) -> None:
    """One table (D = 2, 3 rows), B = 2, indices [2, 0, 2 | 2] with indice weights
    [1, 2, 0.5 | -1], grad_output [[1, 2], [4, 8]].

    Row 2: 1 * [1, 2] + 0.5 * [1, 2] - 1 * [4, 8] = [-2.5, -5]; row 0: 2 * [1, 2] = [2, 4].
    Dense writes exactly these rows (row 1 stays 0).
    Row-wise Adagrad, lr 1, eps 0, momentum 0, weights 0: row 2's momentum becomes
    (6.25 + 25) / 2 = 15.625, row 0's (4 + 16) / 2 = 10; row 0's weights -[2, 4] / sqrt(10).
    """
    indices = torch.tensor([2, 0, 2, 2])
    offsets = torch.tensor([0, 3, 4])
    iw = torch.tensor([1.0, 2.0, 0.5, -1.0])
    grad_output = torch.tensor([[1.0, 2.0], [4.0, 8.0]])
    sorted_positions = sorted_positions_of(indices, offsets, [3])
    assert sorted_positions.tolist() == [1, 0, 2, 3]
    meta = (torch.tensor([0]), torch.tensor([0, 2], dtype=torch.int32), indices, offsets, iw)
    grad_weights = torch.zeros(6)
    split_embedding_backward(
        sim_ops,
        grad_output,
        torch.zeros(6),
        None,
        None,
        *meta,
        sorted_positions,
        grad_weights,
        optimizer=DENSE,
        pooling_mode=SUM,
    )
    assert grad_weights.tolist() == [2, 4, 0, 0, -2.5, -5]
    weights, mom = torch.zeros(6), torch.zeros(3)
    split_embedding_backward(
        sim_ops,
        grad_output,
        weights,
        mom,
        torch.tensor([0]),
        *meta,
        sorted_positions,
        None,
        optimizer=ROWWISE,
        pooling_mode=SUM,
        learning_rate=1.0,
        eps=0.0,
    )
    assert mom.tolist() == [10, 0, 15.625]
    root10, root15 = 10**0.5, 15.625**0.5
    want = [-2 / root10, -4 / root10, 0, 0, 2.5 / root15, 5 / root15]
    torch.testing.assert_close(weights, torch.tensor(want), rtol=1e-6, atol=0)


# ---- property tests --------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn, pooling: int, allow_pruned: bool = False) -> Case:
    t = draw(st.integers(1, 4))
    rows = draw(st.lists(st.integers(1, 6), min_size=t, max_size=t))
    if pooling == NONE:
        dims = [draw(st.integers(1, 40))] * t
    else:
        dims = draw(st.lists(st.integers(1, 40), min_size=t, max_size=t))
    b = draw(st.integers(0, 6))
    lengths = draw(st.lists(st.integers(0, 6), min_size=t * b, max_size=t * b))
    index_list = []
    for k, n in enumerate(lengths):
        r = rows[k // b]
        values = st.integers(0, r - 1)
        if allow_pruned:
            values = st.one_of(values, st.just(-1))
        index_list += draw(st.lists(values, min_size=n, max_size=n))
    iw = draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(seeds))
    return Case(rows, dims, lengths, index_list, iw, pooling, gen)


# The dense lookup has no CPU autograd kernel; torch warns and backpropagates through it anyway
# (its gradient is also checked against reference_update in test_matches_reference).
@pytest.mark.filterwarnings("ignore:.*an autograd kernel was not registered")
@settings(max_examples=250, deadline=None)
@given(
    data=st.data(),
    optimizer=st.sampled_from([SGD, ADAGRAD, ROWWISE, DENSE]),
    pooling=st.sampled_from([SUM, MEAN]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    clip=st.booleans(),
    platform=platforms,
)
def test_matches_fbgemm(sim_ops, data, optimizer, pooling, index_dtype, clip, platform) -> None:
    case = data.draw(cases(pooling))
    clip = clip and optimizer != DENSE  # the dense lookup has no clipping
    kw = {"gradient_clipping": int(clip), "max_gradient": 0.7}
    got = with_and_without_bags(case.run_kernel, sim_ops, optimizer, index_dtype, **kw, **platform)
    if case.b == 0:  # nothing to differentiate; fbgemm's CPU kernels want B > 0
        want = (case.weights, case.momentum(optimizer)[0], None)
        if optimizer == DENSE:
            want = (None, None, torch.zeros(case.w_total))
    else:
        want = case.run_fbgemm(optimizer, clip, 0.7)
    assert_close(got, want)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    optimizer=st.sampled_from([SGD, ADAGRAD, ROWWISE, DENSE]),
    pooling=st.sampled_from([SUM, MEAN, NONE]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    weight_decay_mode=st.sampled_from([0, 1, 2]),
    clip=st.booleans(),
    platform=platforms,
)
def test_matches_reference(
    sim_ops, data, optimizer, pooling, index_dtype, weight_decay_mode, clip, platform
) -> None:
    """Pooling none, pruned (-1) indices, weight decay and clipping, which fbgemm's CPU path
    does not (or not in these combinations) cover."""
    case = data.draw(cases(pooling, allow_pruned=True))
    wd = 0.25 if optimizer == ROWWISE else 0.0
    mode = weight_decay_mode if optimizer == ROWWISE else 0
    max_gradient = 0.7 if clip else None
    kw = {"weight_decay": wd, "weight_decay_mode": mode, "gradient_clipping": int(clip)}
    kw.update(platform)
    got = with_and_without_bags(
        case.run_kernel, sim_ops, optimizer, index_dtype, max_gradient=0.7, **kw
    )
    want = reference_update(case, optimizer, wd, mode, max_gradient)
    assert_close(got, want)


def test_rowwise_weight_decay_fbgemm_cpu_drops_it() -> None:
    """Why weight decay is checked against reference_update: fbgemm 1.1.0's float CPU kernel
    for row-wise Adagrad (fbgemm::GenerateSparseAdaGrad, unshared tables) passes weight_decay=0,
    so its result equals that of weight_decay 0 while the template (and the GPU) apply it."""
    gen = torch.Generator().manual_seed(5)
    case = Case([4], [3], [2, 1], [1, 1, 3], False, SUM, gen)
    w_decay, m_decay, _ = case.run_fbgemm(ROWWISE)  # weight_decay 0 (the default)
    fn = fbgemm.split_embedding_codegen_lookup_rowwise_adagrad_function_cpu
    weights = case.weights.clone().requires_grad_(True)
    mom = case.mom_rows.clone()
    out = fn(
        **case.cpu_split_args(weights),
        momentum1_host=mom,
        momentum1_placements=torch.zeros(1, dtype=torch.int32),
        momentum1_offsets=torch.tensor([0]),
        eps=EPS,
        weight_decay=0.5,
        weight_decay_mode=1,
    )
    out.backward(case.grad_output)
    assert torch.equal(weights.detach(), w_decay) and torch.equal(mom, m_decay)


def test_large_spread_over_cores(sim_ops) -> None:
    """Long runs of one hot row crossing core slices, many cores, small UB, both adagrads."""
    gen = torch.Generator().manual_seed(11)
    t, b = 3, 60
    rows, dims = [5, 50, 2], [16, 33, 8]
    lengths = torch.randint(0, 12, (t * b,), generator=gen).tolist()
    index_list = []
    for k, n in enumerate(lengths):
        r = rows[k // b]
        hot = torch.randint(0, r, (n,), generator=gen)
        hot[torch.rand(n, generator=gen) < 0.6] = 0  # row 0 of every table is hot
        index_list += hot.tolist()
    case = Case(rows, dims, lengths, index_list, True, MEAN, gen)
    kw = {"min_core_bytes": 1, "ub_bytes": 24 * 1024, "max_cores": 7}
    for optimizer in (ADAGRAD, ROWWISE):
        got = with_and_without_bags(case.run_kernel, sim_ops, optimizer, torch.int32, **kw)
        assert_close(got, case.run_fbgemm(optimizer))


# ---- Adam ------------------------------------------------------------------------------------

BETA1, BETA2 = 0.9, 0.999


def run_adam(ops, case: Case, index_dtype, bags=False, **kw):
    """The kernel's Adam mode on copies of the case's state: (weights, momentum1, momentum2)."""
    weights, m, v = case.weights.clone(), case.adam_m.clone(), case.adam_v.clone()
    # Adam's first moment is laid out like the weights, its second by adam_v_offsets.
    state = {"momentum1": m, "momentum1_offsets": case.weights_offsets}
    state |= {"momentum2": v, "momentum2_offsets": case.adam_v_offsets}
    batch = case.batch(index_dtype, bags)
    split_embedding_backward(
        ops, weights=weights, **state, **batch, optimizer=ADAM, beta1=BETA1, beta2=BETA2, **kw
    )
    return weights, m, v


def reference_adam(case: Case, iter, weight_decay=0.0, clip=None):
    """fbgemm's Adam (optimizers.py adam(), the GPU kernel; no CPU counterpart in 1.1.0) per
    touched row, with its promotions: the moments are float (fma with float 1 - beta), the
    step is evaluated in double (its 1.0 - powf(beta, iter) is double) and rounded into w."""
    weights, m, v = case.weights.clone(), case.adam_m.clone(), case.adam_v.clone()
    f32 = torch.float32
    c1, c2 = (
        torch.tensor(1.0 - torch.tensor(b, dtype=f32).double().item()) for b in (BETA1, BETA2)
    )
    bc1, bc2 = (1.0 - float(torch.tensor(b, dtype=f32) ** iter) for b in (BETA1, BETA2))
    lr, eps, b1, b2 = (float(torch.tensor(x, dtype=f32)) for x in (LR, EPS, BETA1, BETA2))
    wd = float(torch.tensor(weight_decay, dtype=f32))
    for (t, idx), g in row_sums(case, clip).items():
        d = case.dims[t]
        at = int(case.weights_offsets[t]) + idx * d
        v_at = int(case.adam_v_offsets[t]) + idx * d
        c1f, c2f = c1.to(f32).double(), c2.to(f32).double()
        m_t = (g.double() * c1f + (m[at : at + d] * b1).double()).to(f32)
        v_t = ((g * g).double() * c2f + (v[v_at : v_at + d] * b2).double()).to(f32)
        m[at : at + d], v[v_at : v_at + d] = m_t, v_t
        w = weights[at : at + d].double()
        root = (v_t.double() / bc2).to(f32).sqrt().double()
        step = m_t.double() / bc1 / (root + eps) + wd * w
        weights[at : at + d] = (w - lr * step).to(f32)
    return weights, m, v


def torch_adamw(case: Case, iter, weight_decay):
    """An independent check of the formula: the row gradients of fbgemm's dense lookup
    (autograd) given to torch.optim.AdamW at step iter; fbgemm's w -= lr * (step + wd * w)
    is AdamW's decoupled decay. AdamW also moves untouched rows, so only touched ones count."""
    weights = case.weights.clone().requires_grad_(True)
    hash_cumsum = torch.tensor([0, *torch.tensor(case.rows).cumsum(0).tolist()])
    out = fbgemm.dense_embedding_codegen_lookup_function(
        dev_weights=weights,
        weights_offsets=case.weights_offsets,
        D_offsets=case.d_offsets,
        total_D=int(case.d_offsets[-1]),
        max_D=max(case.dims),
        hash_size_cumsum=hash_cumsum,
        total_hash_size_bits=32,
        indices=case.indices,
        offsets=case.offsets,
        pooling_mode=case.pooling,
        indice_weights=case.indice_weights,
        feature_requires_grad=None,
    )
    out.backward(case.grad_output)
    touched = torch.zeros(case.w_total, dtype=torch.bool)
    for t, idx in row_sums(case):
        at = int(case.weights_offsets[t]) + idx * case.dims[t]
        touched[at : at + case.dims[t]] = True
    m, v = case.adam_m.clone(), case.adam_v.clone()
    v_view = v[3:]
    opt = torch.optim.AdamW(
        [weights], lr=LR, betas=(BETA1, BETA2), eps=EPS, weight_decay=weight_decay, foreach=False
    )
    opt.state[weights] = {
        "step": torch.tensor(float(iter - 1)),
        "exp_avg": m.clone(),
        "exp_avg_sq": v_view.clone(),
    }
    opt.step()
    state = opt.state[weights]
    w_new = torch.where(touched, weights.detach(), case.weights)
    m = torch.where(touched, state["exp_avg"], m)
    v_view.copy_(torch.where(touched, state["exp_avg_sq"], v_view))
    return w_new, m, v


def test_hand_worked_adam(sim_ops) -> None:
    """One table with one row (D = 2), one bag [0, 0] (the row twice), grad_output [[1, -2]]:
    the row's gradient is g = [2, -4]. lr 1, eps 0, beta1 0.5, beta2 0.75, m = v = 0, w = [1, 1].

    iter 1, weight_decay 0: m = 0.5 * 0 + 0.5 * g = [1, -2]; v = 0.75 * 0 + 0.25 * g^2 = [1, 4];
    m / (1 - 0.5) = [2, -4], v / (1 - 0.75) = [4, 16], sqrt = [2, 4]; step [1, -1];
    w = [1, 1] - [1, -1] = [0, 2].
    iter 2, weight_decay 0.5, same gradient: m = 0.5 * [1, -2] + 0.5 * [2, -4] = [1.5, -3];
    v = 0.75 * [1, 4] + 0.25 * [4, 16] = [1.75, 7]; m / (1 - 0.25) = [2, -4],
    v / (1 - 0.5625) = [4, 16], sqrt = [2, 4]; step [1, -1] + 0.5 * w = [1, -1] + [0, 1] = [1, 0];
    w = [0, 2] - [1, 0] = [-1, 2]. (1 / 0.75 and 1 / 0.4375 are inexact in float, hence the
    tolerance on the weights; the moments are exact.)
    """
    indices, offsets = torch.tensor([0, 0]), torch.tensor([0, 2])
    grad_output = torch.tensor([[1.0, -2.0]])
    weights, m, v = torch.ones(2), torch.zeros(2), torch.zeros(2)
    zero, d_offsets = torch.tensor([0]), torch.tensor([0, 2], dtype=torch.int32)
    args = (grad_output, weights, m, zero, zero, d_offsets, indices, offsets, None)
    want = {1: ([1, -2], [1, 4], [0, 2]), 2: ([1.5, -3], [1.75, 7], [-1, 2])}
    for it, (want_m, want_v, want_w) in want.items():
        split_embedding_backward(
            sim_ops,
            *args,
            torch.tensor([0, 1]),
            None,
            v,
            zero,
            optimizer=ADAM,
            pooling_mode=SUM,
            learning_rate=1.0,
            eps=0.0,
            beta1=0.5,
            beta2=0.75,
            iter=it,
            weight_decay=0.0 if it == 1 else 0.5,
        )
        assert m.tolist() == want_m and v.tolist() == want_v
        torch.testing.assert_close(
            weights, torch.tensor(want_w, dtype=torch.float32), rtol=0, atol=1e-6
        )


def test_fbgemm_cpu_adam_is_deprecated() -> None:
    """Why Adam is not checked against fbgemm's CPU op: 1.1.0 registers it but it only raises."""
    case = Case([3], [2], [2], [1, 1], False, SUM, torch.Generator().manual_seed(1))
    with pytest.raises(RuntimeError, match="adam_function_cpu is deprecated"):
        fbgemm.split_embedding_codegen_lookup_adam_function_cpu(
            **case.cpu_split_args(case.weights.clone().requires_grad_(True)),
            momentum1_host=case.adam_m.clone(),
            momentum1_placements=torch.zeros(1, dtype=torch.int32),
            momentum1_offsets=case.weights_offsets,
            momentum2_host=case.adam_v.clone(),
            momentum2_placements=torch.zeros(1, dtype=torch.int32),
            momentum2_offsets=case.adam_v_offsets,
            eps=EPS,
            beta1=BETA1,
            beta2=BETA2,
            iter=1,
        )


@pytest.mark.filterwarnings("ignore:.*an autograd kernel was not registered")
@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    pooling=st.sampled_from([SUM, MEAN]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    it=st.integers(1, 3),
    weight_decay=st.sampled_from([0.0, 0.01]),
    platform=platforms,
)
def test_adam_matches_fbgemm_grad_and_adamw(
    sim_ops, data, pooling, index_dtype, it, weight_decay, platform
) -> None:
    case = data.draw(cases(pooling))
    kw = {"iter": it, "weight_decay": weight_decay, **platform}
    got = with_and_without_bags(run_adam, sim_ops, case, index_dtype, **kw)
    if case.b == 0:  # nothing touched; fbgemm's CPU kernels want B > 0
        want = (case.weights, case.adam_m, case.adam_v)
    else:
        want = torch_adamw(case, it, weight_decay)
    assert_close(got, want)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    pooling=st.sampled_from([SUM, MEAN, NONE]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    it=st.integers(1, 3),
    weight_decay=st.sampled_from([0.0, 0.25]),
    clip=st.booleans(),
    platform=platforms,
)
def test_adam_matches_reference(
    sim_ops, data, pooling, index_dtype, it, weight_decay, clip, platform
) -> None:
    """Also pooling none, pruned (-1) indices and clipping."""
    case = data.draw(cases(pooling, allow_pruned=True))
    kw = {"iter": it, "weight_decay": weight_decay, "gradient_clipping": int(clip)}
    got = with_and_without_bags(
        run_adam, sim_ops, case, index_dtype, max_gradient=0.7, **kw, **platform
    )
    want = reference_adam(case, it, weight_decay, 0.7 if clip else None)
    assert_close(got, want)


@pytest.mark.filterwarnings("ignore:.*an autograd kernel was not registered")
def test_adam_reference_matches_adamw() -> None:
    """reference_adam (fbgemm's promotions) and torch's AdamW agree on a multi-table case."""
    gen = torch.Generator().manual_seed(3)
    case = Case([4, 2], [5, 3], [3, 1, 0, 4], [0, 2, 0, 1, 1, 0, 1, 1], True, MEAN, gen)
    for it, wd in ((1, 0.0), (3, 0.01)):
        assert_close(reference_adam(case, it, wd), torch_adamw(case, it, wd))


def test_adam_large_spread_over_cores(sim_ops) -> None:
    """Hot rows whose runs cross core slices, many cores, a small UB."""
    gen = torch.Generator().manual_seed(12)
    t, b = 2, 50
    rows, dims = [4, 30], [24, 9]
    lengths = torch.randint(0, 10, (t * b,), generator=gen).tolist()
    index_list = []
    for k, n in enumerate(lengths):
        hot = torch.randint(0, rows[k // b], (n,), generator=gen)
        hot[torch.rand(n, generator=gen) < 0.6] = 0
        index_list += hot.tolist()
    case = Case(rows, dims, lengths, index_list, False, SUM, gen)
    kw = {"min_core_bytes": 1, "ub_bytes": 24 * 1024, "max_cores": 7}
    got = with_and_without_bags(
        run_adam, sim_ops, case, torch.int64, iter=2, weight_decay=0.01, **kw
    )
    assert_close(got, reference_adam(case, 2, 0.01))


# ---- rejections ------------------------------------------------------------------------------


def small_args(optimizer=SGD, max_d=2, **overrides):
    args = {
        "grad_output": torch.zeros(1, 2),
        "weights": torch.zeros(6),
        "momentum1": None,
        "momentum1_offsets": None,
        "weights_offsets": torch.tensor([0]),
        "d_offsets": torch.tensor([0, 2], dtype=torch.int32),
        "indices": torch.tensor([0, 1]),
        "offsets": torch.tensor([0, 2]),
        "indice_weights": None,
        "sorted_positions": torch.tensor([0, 1]),
        "grad_weights": None,
        "momentum2": None,
        "momentum2_offsets": None,
        "sorted_bags": None,
    }
    args.update(overrides)
    return args, {"optimizer": optimizer, "pooling_mode": SUM, "max_d": max_d}


@pytest.mark.parametrize(
    ("optimizer", "max_d", "ub_bytes", "message"),
    [
        (SGD, 100_000, 0, r"max_d 100000 needs 2400000 bytes .* 6 row buffers"),
        (ADAGRAD, 4000, 64 * 1024, r"max_d 4000 needs 128000 bytes .* 8 row buffers"),
        # the 910B's 192 KiB less one 4 KiB window and a 32-byte slot hold 6008 floats x 8
        (ADAGRAD, 6016, 0, r"max_d 6016 needs 192512 bytes .* 8 row buffers, .* the 192480"),
        (DENSE, 8000, 64 * 1024, r"max_d 8000 needs 96000 bytes .* 3 row buffers"),
        (ADAM, 3200, 64 * 1024, r"max_d 3200 needs 102400 bytes .* 8 row buffers"),
    ],
)
def test_rejects_rows_larger_than_ub(sim_ops, optimizer, max_d, ub_bytes, message) -> None:
    moments = optimizer in (ADAGRAD, ADAM)
    args, attrs = small_args(
        optimizer,
        max_d,
        momentum1=torch.zeros(6) if moments else None,
        momentum1_offsets=torch.tensor([0]) if moments else None,
        grad_weights=torch.zeros(6) if optimizer == DENSE else None,
        momentum2=torch.zeros(6) if optimizer == ADAM else None,
        momentum2_offsets=torch.tensor([0]) if optimizer == ADAM else None,
    )
    attrs["iter"] = 1
    with pytest.raises(SimError, match=message):
        split_embedding_backward(sim_ops, *args.values(), **attrs, ub_bytes=ub_bytes)


def test_rows_that_just_fit(sim_ops) -> None:
    """The largest max_d a 24 KiB UB takes for SGD still runs (and a larger D_t traps)."""
    d = (24 * 1024 - 1024 - 32) // 6 // 32 * 8
    weights = torch.zeros(2 * d)
    grad_output = torch.ones(1, d)
    common = (torch.tensor([0]), torch.tensor([0, d], dtype=torch.int32))
    idx = (torch.tensor([1]), torch.tensor([0, 1]), None, torch.tensor([0]), None)
    args = (grad_output, weights, None, None, *common, *idx)
    split_embedding_backward(
        sim_ops, *args, optimizer=SGD, pooling_mode=SUM, ub_bytes=24 * 1024, max_d=d
    )
    assert torch.equal(weights[d:], torch.full((d,), -LR)) and not weights[:d].any()
    with pytest.raises(SimError, match="trap"):
        split_embedding_backward(sim_ops, *args, optimizer=SGD, pooling_mode=SUM, max_d=d - 1)


def test_sorted_bags_needs_its_window(sim_ops) -> None:
    """sorted_bags is read through a second UB window as large as sorted_positions' (1 KiB at
    24 KiB of UB), so the largest max_d without it no longer fits with it."""
    d = (24 * 1024 - 1024 - 32) // 6 // 32 * 8
    args = (torch.ones(1, d), torch.zeros(2 * d), None, None, torch.tensor([0]))
    args += (torch.tensor([0, d], dtype=torch.int32), torch.tensor([1]), torch.tensor([0, 1]))
    args += (None, torch.tensor([0]), None, None, None, torch.tensor([0]))
    with pytest.raises(SimError, match=f"max_d {d} needs {6 * d * 4} bytes .* than the 22496"):
        split_embedding_backward(
            sim_ops, *args, optimizer=SGD, pooling_mode=SUM, ub_bytes=24 * 1024, max_d=d
        )


def test_sorted_bags_outside_every_bag(sim_ops) -> None:
    """One table (D = 1, 2 rows), B = 1, indices [0, 1, 1] but offsets [0, 2]: position 2 lies
    in no bag, so only positions 0 and 1 count (each row gets grad 1, SGD lr 0.1). The search
    finds no bag for it; sorted_bags says so with -1. A bag outside [0, T * B) traps."""
    grad_output = torch.ones(1, 1)
    layout = {"weights_offsets": torch.tensor([0]), "d_offsets": torch.tensor([0, 1]).int()}
    batch = {"indices": torch.tensor([0, 1, 1]), "offsets": torch.tensor([0, 2])}
    batch["sorted_positions"] = torch.tensor([0, 1, 2])
    for bags in (None, torch.tensor([0, 0, -1])):
        weights = torch.zeros(2)
        split_embedding_backward(
            sim_ops,
            grad_output,
            weights,
            **layout,
            **batch,
            sorted_bags=bags,
            optimizer=SGD,
            pooling_mode=SUM,
        )
        torch.testing.assert_close(weights, torch.tensor([-LR, -LR]))
    for bad in ([0, 0, 1], [0, -2, 0]):
        with pytest.raises(SimError, match="trap"):
            split_embedding_backward(
                sim_ops,
                grad_output,
                torch.zeros(2),
                **layout,
                **batch,
                sorted_bags=torch.tensor(bad),
                optimizer=SGD,
                pooling_mode=SUM,
            )


ADAM_STATE = {
    "momentum1": torch.zeros(6),
    "momentum1_offsets": torch.tensor([0]),
    "momentum2": torch.zeros(6),
    "momentum2_offsets": torch.tensor([0]),
}


@pytest.mark.parametrize(
    ("overrides", "attrs", "message"),
    [
        (
            {"d_offsets": torch.tensor([0, 2, 4], dtype=torch.int32)},
            {},
            "d_offsets must have T \\+ 1",
        ),
        (
            {"offsets": torch.tensor([0, 1, 2])},
            {"pooling_mode": SUM},
            r"grad_output must have B = 2",
        ),
        ({"sorted_positions": torch.tensor([0])}, {}, "sorted_positions must have N = 2"),
        ({"sorted_positions": None}, {}, "sorted_positions is required"),
        ({"sorted_bags": torch.tensor([0])}, {}, "sorted_bags must have N = 2 entries, got 1"),
        (
            {"sorted_bags": torch.tensor([0, 0, 0])},
            {},
            "sorted_bags must have N = 2 entries, got 3",
        ),
        ({"indice_weights": torch.ones(3)}, {}, "indice_weights must have N = 2"),
        ({}, {"optimizer": ADAGRAD}, "momentum1 and momentum1_offsets are required"),
        ({}, {"optimizer": DENSE}, "grad_weights is required by optimizer 3"),
        ({}, {"optimizer": 11}, "optimizer must be 0"),
        ({}, {"optimizer": -1}, "optimizer must be 0"),
        ({}, {"pooling_mode": NONE}, "grad_output must have N = 2 rows"),
        ({}, {"pooling_mode": 3}, "pooling_mode must be"),
        ({}, {"max_d": -1}, "max_d must be >= 0"),
        (
            {**ADAM_STATE, "momentum2": None},
            {"optimizer": ADAM, "iter": 1},
            "momentum2 and momentum2_offsets are required by optimizer 4",
        ),
        (
            {**ADAM_STATE, "momentum2_offsets": torch.tensor([0, 0])},
            {"optimizer": ADAM, "iter": 1},
            "momentum2_offsets must have T = 1",
        ),
        (ADAM_STATE, {"optimizer": ADAM}, "iter must be >= 1 for optimizer 4"),
        (
            ADAM_STATE,
            {"optimizer": ADAM, "iter": 2, "beta2": 1.0},
            "beta2 1.000000 gives a zero or non-finite bias correction",
        ),
    ],
)
def test_rejects_bad_arguments(sim_ops, overrides, attrs, message) -> None:
    args, base = small_args(**overrides)
    base.update(attrs)
    with pytest.raises(SimError, match=message):
        split_embedding_backward(sim_ops, *args.values(), **base)


# ---- variable batch per feature (VBE) ----------------------------------------------------------


def vbe_metadata(bfr: list[list[int]], dims: list[int]):
    """fbgemm's VBEMetadata (generate_vbe_metadata): b_offsets, output offsets, rank offsets."""
    per_feature_rank = torch.tensor(bfr, dtype=torch.int64)
    b_offsets = torch.cat(
        [torch.zeros(1, dtype=torch.int64), per_feature_rank.sum(1).cumsum(0)]
    ).int()
    sizes = per_feature_rank.t() * torch.tensor(dims).view(1, -1)
    out_offsets = torch.cat([torch.zeros(1, dtype=torch.int64), sizes.flatten().cumsum(0)])
    zero = torch.zeros(len(dims), 1, dtype=torch.int64)
    rank_offsets = torch.cat([zero, per_feature_rank.cumsum(1)], 1).int()
    return b_offsets, out_offsets, rank_offsets


def vbe_gradient(padded_grad, bfr, d_offsets):
    """The forward's VBE layout of a gradient given as fbgemm's CPU invoker pads it: rows
    [max_B, total_D], feature t's bag b at row b (what the invoker's copy differentiates to)."""
    t_count = len(bfr)
    dims = [int(d_offsets[t + 1] - d_offsets[t]) for t in range(t_count)]
    _, out_offsets, rank_offsets = vbe_metadata(bfr, dims)
    flat = torch.empty(int(out_offsets[-1]))
    for r in range(rank_offsets.size(1) - 1):
        for t in range(t_count):
            o0, o1 = int(out_offsets[r * t_count + t]), int(out_offsets[r * t_count + t + 1])
            b0, b1 = int(rank_offsets[t][r]), int(rank_offsets[t][r + 1])
            d0, d1 = int(d_offsets[t]), int(d_offsets[t + 1])
            flat[o0:o1] = padded_grad[b0:b1, d0:d1].flatten()
    return flat


def vbe_offsets(padded_offsets, bfr):
    """The VBE offsets of a padded batch (each feature's first sum(bfr[t]) bags)."""
    t_count = len(bfr)
    max_b = (padded_offsets.numel() - 1) // t_count
    keep = [t * max_b + b for t in range(t_count) for b in range(sum(bfr[t]))]
    return torch.cat([padded_offsets[keep], padded_offsets[-1:]])


def run_vbe_kernel(ops, case: Case, bfr, optimizer, index_dtype, **kw):
    """The kernel on case's batch with the padding bags left out (they are empty) and the
    gradient in the VBE layout."""
    offsets = vbe_offsets(case.offsets, bfr)
    b_offsets, out_offsets, rank_offsets = vbe_metadata(bfr, case.dims)
    weights = case.weights.clone()
    mom, mom_off = case.momentum(optimizer)
    grad_weights = torch.zeros(case.w_total) if optimizer == DENSE else None
    split_embedding_backward(
        ops,
        grad_output=vbe_gradient(case.grad_output, bfr, case.d_offsets),
        weights=weights,
        momentum1=mom,
        momentum1_offsets=mom_off,
        weights_offsets=case.weights_offsets,
        d_offsets=case.d_offsets,
        indices=case.indices.to(index_dtype),
        offsets=offsets.to(index_dtype),
        indice_weights=case.indice_weights,
        sorted_positions=case.sorted,  # the padding bags are empty: the same positions
        sorted_bags=bags_of(offsets, case.sorted),
        grad_weights=grad_weights,
        b_offsets=b_offsets,
        vbe_output_offsets=out_offsets,
        vbe_b_offsets_rank=rank_offsets,
        pooling_mode=case.pooling,
        optimizer=optimizer,
        **kw,
    )
    return weights, mom, grad_weights


def test_vbe_hand_worked_sgd(sim_ops) -> None:
    """test_hand_worked_sgd's batch as VBE: batch sizes per feature per rank [[1, 1], [2, 0]].

    Feature 0's bag 0 is on rank 0 and bag 1 on rank 1; feature 1's two bags are on rank 0.
    Blocks (rank-major): r0 f0 [1, 2] | r0 f1 [2, 1] | r1 f0 [1, 2] | r1 f1 empty, so the
    padded gradient [[1, 2, 10], [3, 4, 20]] is laid out as [1, 2, 10, 20, 3, 4]; the updates
    are the padded case's.
    """
    b_offsets, out_offsets, rank_offsets = vbe_metadata([[1, 1], [2, 0]], [2, 1])
    assert b_offsets.tolist() == [0, 2, 4] and out_offsets.tolist() == [0, 2, 4, 6, 6]
    indices = torch.tensor([1, 1, 1, 2, 0])
    offsets = torch.tensor([0, 2, 4, 5, 5])
    want = {
        SUM: [1, 1, -1.5, -3, -0.5, -1, -4, 1],
        MEAN: [1, 1, -0.25, -1, 0.25, 0, -4, 1],
    }
    for pooling, expect in want.items():
        for platform in ({}, {"min_core_bytes": 1}):
            weights = torch.ones(8)
            split_embedding_backward(
                sim_ops,
                grad_output=torch.tensor([1.0, 2.0, 10.0, 20.0, 3.0, 4.0]),
                weights=weights,
                weights_offsets=torch.tensor([0, 6]),
                d_offsets=torch.tensor([0, 2, 3], dtype=torch.int32),
                indices=indices,
                offsets=offsets,
                sorted_positions=sorted_positions_of(indices, offsets, [3, 2]),
                b_offsets=b_offsets,
                vbe_output_offsets=out_offsets,
                vbe_b_offsets_rank=rank_offsets,
                pooling_mode=pooling,
                optimizer=SGD,
                learning_rate=0.5,
                **platform,
            )
            assert weights.tolist() == expect


def test_vbe_matches_fbgemm_module(sim_ops) -> None:
    """Against fbgemm's own CPU TBE module trained one step with batch_size_per_feature_per_rank
    (EXACT_ROWWISE_ADAGRAD, mean pooling; its D must be a multiple of 4)."""
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import (
        EmbeddingLocation,
        PoolingMode,
    )
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        ComputeDevice,
        SplitTableBatchedEmbeddingBagsCodegen,
    )

    gen = torch.Generator().manual_seed(21)
    specs = [(7, 4), (3, 8), (5, 12)]
    bfr = [[2, 0, 3], [1, 4, 0], [0, 0, 2]]
    tbe = SplitTableBatchedEmbeddingBagsCodegen(
        [(r, d, EmbeddingLocation.HOST, ComputeDevice.CPU) for r, d in specs],
        optimizer=EmbOptimType.EXACT_ROWWISE_ADAGRAD,
        pooling_mode=PoolingMode.MEAN,
        learning_rate=LR,
        eps=EPS,
    )
    with torch.no_grad():
        tbe.momentum1_host.copy_(torch.rand(tbe.momentum1_host.numel(), generator=gen))
    weights0 = tbe.weights_host.detach().clone()
    momentum0 = tbe.momentum1_host.detach().clone()
    bags = sum(sum(x) for x in bfr)
    lengths = torch.randint(0, 4, (bags,), generator=gen)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    feature = torch.arange(3).repeat_interleave(torch.tensor([sum(x) for x in bfr]))
    limit = torch.tensor([r for r, _ in specs])[feature.repeat_interleave(lengths)]
    indices = (torch.rand(int(offsets[-1]), generator=gen) * limit).long()
    out = tbe(indices, offsets, batch_size_per_feature_per_rank=bfr)
    grad = torch.randn(out.numel(), generator=gen)
    out.backward(grad)

    dims = [d for _, d in specs]
    b_offsets, out_offsets, rank_offsets = vbe_metadata(bfr, dims)
    bag = torch.repeat_interleave(torch.arange(bags), lengths)
    linear = tbe.hash_size_cumsum[torch.searchsorted(b_offsets.long(), bag, right=True) - 1]
    order = torch.sort(linear + indices, stable=True).indices
    weights, momentum = weights0.clone(), momentum0.clone()
    split_embedding_backward(
        sim_ops,
        grad_output=grad,
        weights=weights,
        momentum1=momentum,
        momentum1_offsets=tbe.momentum1_offsets,
        weights_offsets=tbe.weights_offsets,
        d_offsets=tbe.D_offsets,
        indices=indices,
        offsets=offsets,
        sorted_positions=order,
        sorted_bags=bag[order],
        b_offsets=b_offsets,
        vbe_output_offsets=out_offsets,
        vbe_b_offsets_rank=rank_offsets,
        pooling_mode=MEAN,
        optimizer=ROWWISE,
    )
    assert not torch.equal(weights, weights0)
    torch.testing.assert_close(weights, tbe.weights_host.detach(), rtol=2e-5, atol=2e-6)
    torch.testing.assert_close(momentum, tbe.momentum1_host.detach(), rtol=2e-5, atol=2e-6)


@st.composite
def vbe_cases(draw: st.DrawFn, pooling: int):
    """A padded Case (every feature's bags padded to max_B with empty ones, as fbgemm's CPU
    invoker does) and the batch sizes per feature per rank it pads."""
    t = draw(st.integers(1, 4))
    ranks = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(1, 24), min_size=t, max_size=t))
    rows = draw(st.lists(st.integers(1, 8), min_size=t, max_size=t))
    bfr = [draw(st.lists(st.integers(0, 3), min_size=ranks, max_size=ranks)) for _ in range(t)]
    max_b = max(1, max(sum(x) for x in bfr))
    lengths, index_list = [], []
    for f in range(t):
        for b in range(max_b):
            n = draw(st.integers(0, 4)) if b < sum(bfr[f]) else 0
            lengths.append(n)
            index_list += draw(st.lists(st.integers(0, rows[f] - 1), min_size=n, max_size=n))
    weighted = draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    return Case(rows, dims, lengths, index_list, weighted, pooling, gen), bfr


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    optimizer=st.sampled_from([SGD, ADAGRAD, ROWWISE, DENSE]),
    pooling=st.sampled_from([SUM, MEAN]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    platform=platforms,
)
def test_vbe_matches_fbgemm(sim_ops, data, optimizer, pooling, index_dtype, platform) -> None:
    """The VBE backward against fbgemm's CPU training path on the padded batch (what fbgemm's CPU
    invoker runs for VBE: the padding bags are empty and their gradient rows are not read)."""
    case, bfr = data.draw(vbe_cases(pooling))
    got = run_vbe_kernel(sim_ops, case, bfr, optimizer, index_dtype, **platform)
    assert_close(got, case.run_fbgemm(optimizer))


def test_vbe_production_like(sim_ops) -> None:
    """Dozens of tables, per-feature batch sizes in the thousands over 2 ranks, D 64-128,
    Zipf-like ids, row-wise Adagrad, over several cores; against the float32 reference."""
    gen = torch.Generator().manual_seed(22)
    t = 24
    dims = [64 if f % 3 else 128 for f in range(t)]
    rows = [int(x) for x in torch.randint(200, 2000, (t,), generator=gen)]
    bfr = [[int(x) for x in torch.randint(500, 2048, (2,), generator=gen)] for _ in range(t)]
    max_b = max(sum(x) for x in bfr)
    lengths, index_list = [], []
    for f in range(t):
        n = torch.randint(0, 4, (sum(bfr[f]),), generator=gen)
        lengths += n.tolist() + [0] * (max_b - sum(bfr[f]))
        ids = (torch.rand(int(n.sum()), generator=gen) ** 3 * rows[f]).long()
        index_list += ids.tolist()
    case = Case(rows, dims, lengths, index_list, False, SUM, gen)
    got = run_vbe_kernel(sim_ops, case, bfr, ROWWISE, torch.int64, min_core_bytes=1)
    weights, momentum = rowwise_float64(case)
    torch.testing.assert_close(got[0], weights.float(), rtol=2e-5, atol=1e-5)
    torch.testing.assert_close(got[1], momentum.float(), rtol=2e-5, atol=1e-5)


def rowwise_float64(case: Case):
    """Row-wise Adagrad (no weight decay) on a sum-pooled batch in float64, table by table with
    index_add (reference_update's loop over ~10^5 positions takes ~20 s)."""
    weights = case.weights.double()
    momentum = case.mom_rows.double()
    lengths = case.offsets[1:] - case.offsets[:-1]
    bag = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
    grad = case.grad_output.double()
    for t in range(case.t):
        here = bag // case.b == t
        d, d0, rows = case.dims[t], int(case.d_offsets[t]), case.rows[t]
        sums = torch.zeros(rows, d, dtype=torch.float64)
        sums.index_add_(0, case.indices[here], grad[bag[here] % case.b, d0 : d0 + d])
        touched = torch.unique(case.indices[here])
        m_at = int(case.row_offsets[t]) + touched
        momentum[m_at] += (sums[touched] ** 2).sum(1) / d
        multiplier = LR / (momentum[m_at].sqrt() + EPS)
        w = weights[int(case.weights_offsets[t]) :][: rows * d].view(rows, d)
        w[touched] -= multiplier.unsqueeze(1) * sums[touched]
    return weights, momentum


@pytest.mark.parametrize(
    "what",
    ["b_offsets do not end at total_B", "rank offsets wrong", "block of the wrong size"],
)
def test_vbe_bad_metadata_traps(sim_ops, what) -> None:
    b_offsets, out_offsets, rank_offsets = vbe_metadata([[1, 1], [2, 0]], [2, 1])
    if what == "b_offsets do not end at total_B":
        b_offsets[2] = 3
    elif what == "rank offsets wrong":
        rank_offsets[1][1] = 1
    else:
        out_offsets[1] = 3
    indices, offsets = torch.tensor([1, 1, 1, 2, 0]), torch.tensor([0, 2, 4, 5, 5])
    with pytest.raises(SimError, match="trap"):
        split_embedding_backward(
            sim_ops,
            grad_output=torch.ones(6),
            weights=torch.ones(8),
            weights_offsets=torch.tensor([0, 6]),
            d_offsets=torch.tensor([0, 2, 3], dtype=torch.int32),
            indices=indices,
            offsets=offsets,
            sorted_positions=sorted_positions_of(indices, offsets, [3, 2]),
            b_offsets=b_offsets,
            vbe_output_offsets=out_offsets,
            vbe_b_offsets_rank=rank_offsets,
            pooling_mode=SUM,
            optimizer=SGD,
        )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("none mode", "needs pooling_mode sum or mean"),
        ("missing rank offsets", "b_offsets, vbe_output_offsets and vbe_b_offsets_rank together"),
        ("2-D gradient", r"grad_output must be 1-D \(the forward's VBE layout\)"),
    ],
)
def test_vbe_rejections(sim_ops, change, message) -> None:
    b_offsets, out_offsets, rank_offsets = vbe_metadata([[1, 1], [2, 0]], [2, 1])
    indices, offsets = torch.tensor([1, 1, 1, 2, 0]), torch.tensor([0, 2, 4, 5, 5])
    kw = {
        "grad_output": torch.ones(6),
        "b_offsets": b_offsets,
        "vbe_output_offsets": out_offsets,
        "vbe_b_offsets_rank": rank_offsets,
        "pooling_mode": SUM,
    }
    if change == "none mode":
        kw["pooling_mode"] = NONE
    elif change == "missing rank offsets":
        kw["vbe_b_offsets_rank"] = None
    else:
        kw["grad_output"] = torch.ones(1, 6)
    with pytest.raises(SimError, match=message):
        split_embedding_backward(
            sim_ops,
            weights=torch.ones(8),
            weights_offsets=torch.tensor([0, 6]),
            d_offsets=torch.tensor([0, 2, 3], dtype=torch.int32),
            indices=indices,
            offsets=offsets,
            sorted_positions=sorted_positions_of(indices, offsets, [3, 2]),
            optimizer=SGD,
            **kw,
        )


# ---- LARS-SGD, partial row-wise Adam, LAMB, partial row-wise LAMB, NONE ---------------------
#
# fbgemm-gpu-cpu 1.1.0 has no CPU path for any of them (its module asserts "Optimizer ... is not
# supported in CPU mode"; NONE wants ComputeDevice.CUDA): the golden is the GPU kernels' formula
# (codegen/genscript/optimizers.py lars_sgd(), partial_rowwise_adam(), lamb(),
# partial_rowwise_lamb(); NONE: the backward's sparse gradient) in float64, on per-row gradient
# sums in float64.

NOUPDATE, LARS, PADAM, LAMB, PLAMB = 5, 6, 7, 8, 9
ETA, MOMENTUM = 0.05, 0.8


def table_sums(case: Case, clip=None) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Per table: its touched rows (ascending) and their summed gradients, float64."""
    grad = case.grad_output.double()
    if clip is not None:
        grad = grad.clamp(-clip, clip)
    lengths = case.offsets[1:] - case.offsets[:-1]
    bag = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
    if case.indice_weights is not None:
        scale = case.indice_weights.double()
    elif case.pooling == MEAN:
        scale = (1.0 / lengths.float())[bag].double()
    else:
        scale = torch.ones(case.n, dtype=torch.float64)
    table = bag // max(case.b, 1)
    out = {}
    for t in range(case.t):
        p = ((table == t) & (case.indices != -1)).nonzero().squeeze(1)
        d, d0 = case.dims[t], int(case.d_offsets[t])
        # pooling none: one gradient row per position; pooled: the bag's row, the table's columns
        at = p if case.pooling == NONE else bag[p] % max(case.b, 1)
        rows = grad[at, :d] if case.pooling == NONE else grad[at, d0 : d0 + d]
        sums = torch.zeros(case.rows[t], d, dtype=torch.float64)
        sums.index_add_(0, case.indices[p], rows * scale[p].unsqueeze(1))
        touched = torch.unique(case.indices[p])
        out[t] = (touched, sums[touched])
    return out


def f32(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32))


def reference_fused(case: Case, optimizer, it=1, weight_decay=0.0, clip=None):
    """(weights, momentum1, momentum2) after one step of fbgemm's GPU formula, in float64."""
    weights, m1 = case.weights.double(), case.adam_m.double()
    m2 = (case.adam_v if optimizer == LAMB else case.mom_rows).double()
    lr, eps, b1, b2 = f32(LR), f32(EPS), f32(BETA1), f32(BETA2)
    wd, eta, mom = f32(weight_decay), f32(ETA), f32(MOMENTUM)
    bc1, bc2 = (1.0 - float(torch.tensor(b, dtype=torch.float32) ** it) for b in (b1, b2))
    for t, (rows, g) in table_sums(case, clip).items():
        d = case.dims[t]
        at = int(case.weights_offsets[t]) + rows.unsqueeze(1) * d + torch.arange(d)
        w, m = weights[at], m1[at]
        if optimizer == LARS:
            wn, gn = w.norm(dim=1, keepdim=True), g.norm(dim=1, keepdim=True)
            m = mom * m + lr * eta * wn / (gn + wd * wn) * (g + wd * w)
            new_w = w - m
        else:
            m = b1 * m + (1 - b1) * g
            if optimizer == LAMB:
                v_at = int(case.adam_v_offsets[t]) + rows.unsqueeze(1) * d + torch.arange(d)
                v = b2 * m2[v_at] + (1 - b2) * g * g
            else:
                v_at = int(case.row_offsets[t]) + rows
                v = b2 * m2[v_at] + (1 - b2) * (g * g).mean(dim=1)
            m2[v_at] = v
            root = (v / bc2).sqrt()
            r = m / bc1 / ((root if optimizer == LAMB else root.unsqueeze(1)) + eps) + wd * w
            if optimizer == PADAM:
                new_w = w - lr * r
            else:
                ratio = w.norm(dim=1, keepdim=True) / r.norm(dim=1, keepdim=True)
                new_w = w - lr * ratio * r
        weights[at], m1[at] = new_w, m
    return weights.float(), m1.float(), None if optimizer == LARS else m2.float()


def run_fused(ops, case: Case, optimizer, index_dtype, bags=False, **kw):
    """The kernel's mode on copies of the case's state: momentum1 laid out like the weights,
    momentum2 like the weights (3 floats on) for LAMB, one float per row for the partial ones."""
    weights, m1 = case.weights.clone(), case.adam_m.clone()
    state = {"momentum1": m1, "momentum1_offsets": case.weights_offsets}
    m2 = None
    if optimizer == LAMB:
        m2 = case.adam_v.clone()
        state |= {"momentum2": m2, "momentum2_offsets": case.adam_v_offsets}
    elif optimizer in (PADAM, PLAMB):
        m2 = case.mom_rows.clone()
        state |= {"momentum2": m2, "momentum2_offsets": case.row_offsets}
    batch = case.batch(index_dtype, bags)
    attrs = {"beta1": BETA1, "beta2": BETA2, "eta": ETA, "momentum": MOMENTUM}
    split_embedding_backward(
        ops, weights=weights, **state, **batch, optimizer=optimizer, **attrs, **kw
    )
    return weights, m1, m2


def none_slots(case: Case) -> tuple[torch.Tensor, int]:
    """What the adapter passes for NONE: each sorted position's unique row's rank (-1 for a
    pruned index), and the number of unique rows."""
    cumsum = torch.tensor([0, *torch.tensor(case.rows).cumsum(0).tolist()], dtype=torch.int64)
    linear = cumsum[table_of_positions(case.offsets, case.t, case.n)] + case.indices
    live = case.indices[case.sorted] != -1
    slots = torch.full((case.n,), -1, dtype=torch.int64)
    unique, inverse = torch.unique_consecutive(linear[case.sorted][live], return_inverse=True)
    slots[live] = inverse
    return slots, unique.numel()


def run_none(ops, case: Case, index_dtype, bags=False, **kw):
    slots, count = none_slots(case)
    max_d = max(case.dims)
    grad = torch.zeros(count * max_d)
    weights = case.weights.clone()
    batch = case.batch(index_dtype, bags, ranks=False)
    split_embedding_backward(
        ops, weights=weights, grad_weights=grad, run_slots=slots, **batch, optimizer=NOUPDATE, **kw
    )
    assert torch.equal(weights, case.weights)  # NONE updates nothing
    return (grad.view(count, max_d),)


def reference_none(case: Case, clip=None) -> torch.Tensor:
    """fbgemm's NONE gradient values: the unique rows in (table, row) order, max_d wide."""
    max_d = max(case.dims)
    blocks = [
        torch.nn.functional.pad(sums, (0, max_d - case.dims[t]))
        for t, (_, sums) in table_sums(case, clip).items()
    ]
    return torch.cat(blocks).float() if blocks else torch.zeros(0, max_d)


def assert_fused_close(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        if w is not None:
            torch.testing.assert_close(g, w, rtol=2e-5, atol=5e-6, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    optimizer=st.sampled_from([LARS, PADAM, LAMB, PLAMB]),
    pooling=st.sampled_from([SUM, MEAN, NONE]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    it=st.integers(1, 3),
    weight_decay=st.sampled_from([0.0, 0.25]),
    clip=st.booleans(),
    platform=platforms,
)
def test_fused_matches_reference(
    sim_ops, data, optimizer, pooling, index_dtype, it, weight_decay, clip, platform
) -> None:
    case = data.draw(cases(pooling, allow_pruned=True))
    kw = {"iter": it, "weight_decay": weight_decay, "gradient_clipping": int(clip)}
    got = with_and_without_bags(
        run_fused, sim_ops, case, optimizer, index_dtype, max_gradient=0.7, **kw, **platform
    )
    want = reference_fused(case, optimizer, it, weight_decay, 0.7 if clip else None)
    assert_fused_close(got, want)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    pooling=st.sampled_from([SUM, MEAN, NONE]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    clip=st.booleans(),
    platform=platforms,
)
def test_none_matches_reference(sim_ops, data, pooling, index_dtype, clip, platform) -> None:
    case = data.draw(cases(pooling, allow_pruned=True))
    kw = {"gradient_clipping": int(clip), "max_gradient": 0.7}
    got = with_and_without_bags(run_none, sim_ops, case, index_dtype, **kw, **platform)
    torch.testing.assert_close(got[0], reference_none(case, 0.7 if clip else None))


# The hand-worked cases share one layout: one table (D = 2, 2 rows), B = 1, bag [1, 1], so row
# 1's gradient is 2 * [3, 4] = [6, 8] (|g| = 10, mean square 50); its weight [3, 4] (|w| = 5),
# row 0's [9, 9] (untouched); lr 0.1. Each optimizer's state has row 0's entries at 7 (or 9),
# which must stay.
ONE_ROW = {
    "weights_offsets": torch.tensor([0]),
    "d_offsets": torch.tensor([0, 2]).int(),
    "indices": torch.tensor([1, 1]),
    "offsets": torch.tensor([0, 2]),
    "sorted_positions": torch.tensor([0, 1]),
    "grad_output": torch.tensor([[3.0, 4]]),
}


def run_one_row(ops, optimizer, state: dict[str, list[float]], **attrs) -> dict:
    """The optimizer on ONE_ROW: state maps each state input to its values (their offsets are
    [0]); returns the weights and the state after the step, by name."""
    tensors = {"weights": torch.tensor([9.0, 9, 3, 4])}
    tensors |= {name: torch.tensor(values) for name, values in state.items()}
    offsets = {f"{name}_offsets": torch.tensor([0]) for name in state if name != "grad_weights"}
    if optimizer == NOUPDATE:
        offsets = {}
    split_embedding_backward(
        ops, **tensors, **offsets, **ONE_ROW, optimizer=optimizer, pooling_mode=SUM, **attrs
    )
    return tensors


def test_hand_worked_lars_and_lamb(sim_ops) -> None:
    """LARS-SGD, eta 0.05, momentum 0.8, weight_decay 0.5, momentum1 [1, -1]:
    lr' = 0.1 * 0.05 * 5 / (10 + 2.5) = 0.002; m = 0.8 * [1, -1] + 0.002 * ([6, 8] + [1.5, 2])
    = [0.815, -0.78]; w = [3, 4] - m = [2.185, 4.78].

    LAMB, beta1 0.5, beta2 0.75, iter 1, eps 0, no decay, momentum1 [1, 1], momentum2 [1, 4]:
    m = [3.5, 4.5], v = [0.75 + 9, 3 + 16] = [9.75, 19]; r = (m / 0.5) / sqrt(v / 0.25) =
    [7 / sqrt(39), 9 / sqrt(76)]; w -= 0.1 * (5 / |r|) * r."""
    got = run_one_row(
        sim_ops, LARS, {"momentum1": [7.0, 7, 1, -1]}, eta=0.05, momentum=0.8, weight_decay=0.5
    )
    torch.testing.assert_close(got["momentum1"], torch.tensor([7.0, 7, 0.815, -0.78]))
    torch.testing.assert_close(got["weights"], torch.tensor([9.0, 9, 2.185, 4.78]))

    adam = {"beta1": 0.5, "beta2": 0.75, "iter": 1, "eps": 0.0}
    state = {"momentum1": [7.0, 7, 1, 1], "momentum2": [7.0, 7, 1, 4]}
    got = run_one_row(sim_ops, LAMB, state, **adam)
    r = torch.tensor([7 / 39**0.5, 9 / 76**0.5], dtype=torch.float64)
    want = torch.tensor([3.0, 4], dtype=torch.float64) - 0.1 * 5 / r.norm() * r
    torch.testing.assert_close(got["momentum1"], torch.tensor([7.0, 7, 3.5, 4.5]))
    torch.testing.assert_close(got["momentum2"], torch.tensor([7.0, 7, 9.75, 19]))
    torch.testing.assert_close(got["weights"], torch.cat([torch.tensor([9.0, 9]), want.float()]))


def test_hand_worked_partial_rowwise_and_none(sim_ops) -> None:
    """Partial row-wise Adam, beta1 0.5, beta2 0.75, iter 1, eps 0, momentum2 of the row 2:
    v = 1.5 + 12.5 = 14, sqrt(v / 0.25) = sqrt(56); m = 0.5 * [1, 1] + 0.5 * [6, 8] = [3.5, 4.5];
    w = [3, 4] - 0.1 * (m / 0.5) / sqrt(56). NONE: the row's gradient goes to slot 1."""
    state = {"momentum1": [7.0, 7, 1, 1], "momentum2": [7.0, 2]}
    got = run_one_row(sim_ops, PADAM, state, beta1=0.5, beta2=0.75, iter=1, eps=0.0)
    want = torch.tensor([3.0, 4]) - 0.1 * torch.tensor([7.0, 9]) / 56**0.5
    torch.testing.assert_close(got["momentum2"], torch.tensor([7.0, 14]))
    torch.testing.assert_close(got["momentum1"], torch.tensor([7.0, 7, 3.5, 4.5]))
    torch.testing.assert_close(got["weights"], torch.cat([torch.tensor([9.0, 9]), want]))

    none = {"grad_weights": [-1.0, -1, -1, -1], "run_slots": [1, 1]}
    got = run_one_row(sim_ops, NOUPDATE, none)
    torch.testing.assert_close(got["grad_weights"], torch.tensor([-1.0, -1, 6, 8]))
    assert torch.equal(got["weights"], torch.tensor([9.0, 9, 3, 4]))  # NONE updates nothing
    with pytest.raises(SimError, match="trap"):  # slot 2 lies outside grad_weights
        run_one_row(sim_ops, NOUPDATE, none | {"run_slots": [2, 2]})


def production_case(seed: int) -> Case:
    """26 tables, B = 2048, D 64-128, Zipf-like ids with many repeats, sum pooling."""
    gen = torch.Generator().manual_seed(seed)
    t, b = 26, 2048
    dims = [(64, 96, 128)[f % 3] for f in range(t)]
    rows = [int(x) for x in torch.randint(1000, 20000, (t,), generator=gen)]
    lengths = torch.randint(0, 2, (t * b,), generator=gen).tolist()
    index_list = []
    for f in range(t):
        n = sum(lengths[f * b : (f + 1) * b])
        index_list += (torch.rand(n, generator=gen) ** 4 * rows[f]).long().tolist()
    return Case(rows, dims, lengths, index_list, False, SUM, gen)


@pytest.mark.parametrize("optimizer", [NOUPDATE, LARS, PADAM, LAMB, PLAMB])
def test_fused_production_shape(sim_ops, optimizer) -> None:
    case = production_case(31)
    if optimizer == NOUPDATE:
        # fbgemm's NONE takes one D for all tables
        case = Case(
            case.rows,
            [64] * case.t,
            (case.offsets[1:] - case.offsets[:-1]).tolist(),
            case.indices.tolist(),
            False,
            SUM,
            torch.Generator().manual_seed(5),
        )
        got = run_none(sim_ops, case, torch.int64, bags=True, min_core_bytes=1)
        torch.testing.assert_close(got[0], reference_none(case), rtol=2e-5, atol=1e-5)
        return
    got = run_fused(
        sim_ops,
        case,
        optimizer,
        torch.int64,
        bags=True,
        min_core_bytes=1,
        iter=3,
        weight_decay=0.01,
    )
    want = reference_fused(case, optimizer, 3, 0.01)
    for g, w in zip(got, want, strict=True):
        if w is not None:
            torch.testing.assert_close(g, w, rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("optimizer", "drop", "message"),
    [
        (LARS, "momentum1", "momentum1 and momentum1_offsets are required by optimizer 6"),
        (PADAM, "momentum2", "momentum2 and momentum2_offsets are required by optimizer 7"),
        (LAMB, "momentum2_offsets", "momentum2 and momentum2_offsets are required by optimizer 8"),
        (PLAMB, "momentum1_offsets", "momentum1 and momentum1_offsets are required by optimizer 9"),
        (NOUPDATE, "grad_weights", "grad_weights is required by optimizer 5"),
        (NOUPDATE, "run_slots", "run_slots is required by optimizer 5"),
    ],
)
def test_fused_rejections(sim_ops, optimizer, drop, message) -> None:
    state = {**ADAM_STATE, "grad_weights": torch.zeros(4), "run_slots": torch.tensor([0, 0])}
    state[drop] = None
    args, attrs = small_args(optimizer, **state)
    attrs["iter"] = 1
    with pytest.raises(SimError, match=message):
        split_embedding_backward(sim_ops, **args, **attrs)
    if optimizer == PADAM and drop == "momentum2":
        state[drop] = torch.zeros(6)
        state["run_slots"] = torch.tensor([0])
        args, attrs = small_args(NOUPDATE, **state)
        with pytest.raises(SimError, match="run_slots must have N = 2 entries, got 1"):
            split_embedding_backward(sim_ops, **args, **attrs)


# ---- row-wise Adagrad with counter ----------------------------------------------------------
#
# fbgemm's rowwise_adagrad_with_counter (EXACT_ROWWISE_ADAGRAD with WeightDecayMode.COUNTER or
# COWCLIP) is GPU-only in 1.1.0 (optimizers.py: has_cpu_support False; its module's invoker
# calls the CUDA op). The _cpu op the wheel still registers runs an older formula (exp_reg ^
# iter_delta, no counter) that the module never reaches, so the golden is the GPU kernel's
# formula (split_precomputation + split_weight_update of rowwise_adagrad_with_counter()) in
# float64, on per-row gradient sums in float64.

COUNTER = 10
# The counter state is one float per row, each laid out at its own distance from the rows, so
# that mixing up the offsets shows.
PREV_SHIFT, COUNTER_SHIFT = 2, 5


def counter_state(case: Case, gen: torch.Generator, it: int) -> dict[str, torch.Tensor]:
    """momentum1 (case.mom_rows), prev_iter (0 = never, else an earlier iteration) and
    row_counter, with their offsets."""
    r = sum(case.rows)
    prev = torch.randint(0, it, (r,), generator=gen).float()
    counter = torch.rand(r, generator=gen) * 6
    return {
        "momentum1": case.mom_rows.clone(),
        "momentum1_offsets": case.row_offsets,
        "prev_iter": torch.cat([torch.full((PREV_SHIFT,), -7.0), prev]),
        "prev_iter_offsets": case.row_offsets + PREV_SHIFT,
        "row_counter": torch.cat([torch.full((COUNTER_SHIFT,), -7.0), counter]),
        "row_counter_offsets": case.row_offsets + COUNTER_SHIFT,
    }


COUNTER_DEFAULTS = {
    "iter": 1,
    "weight_decay": 0.0,
    "weight_decay_mode": 0,
    "counter_halflife": -1,
    "adjustment_iter": -1,
    "adjustment_ub": 1.0,
    "learning_rate_mode": -1,
    "max_counter": 1.0,
    "tail_id_threshold": 0.0,
    "is_tail_id_thresh_ratio": 0,
    "regularization_mode": 3,
    "weight_norm_coefficient": 0.0,
    "lower_bound": 0.0,
}


def counter_step(w, g, m, counter, prev, p: dict):
    """fbgemm's GPU formula in float64 on a table's touched rows (w, g: [R, D]; m, counter,
    prev: [R]): (new w, m, counter, prev_iter). min / max as CUDA's (fmin / fmax)."""
    it, hl, wdm = p["iter"], p["counter_halflife"], p["weight_decay_mode"]
    lr, eps, wd, ub = f32(LR), f32(EPS), f32(p["weight_decay"]), f32(p["adjustment_ub"])
    max_counter, tail = f32(p["max_counter"]), f32(p["tail_id_threshold"])
    if p["is_tail_id_thresh_ratio"] == 1:
        tail = math.floor(f32(tail * max_counter))
    if hl > 0:
        delta = torch.where(prev == 0, 1.0, it - prev)
        prev = torch.full_like(prev, float(it))
        counter = 1.0 + torch.exp(-delta * math.log(2.0) / hl) * counter
    elif hl == 0:
        counter = torch.ones_like(counter)
    else:
        counter = counter + 1.0
    freq = hl / counter
    gd = g + wd * w if wdm == 1 else g
    g_sum_square = (gd * gd).sum(dim=1)
    m = m + g_sum_square / w.shape[1]
    multiplier = lr / (m.sqrt() + eps)
    enabled = p["adjustment_iter"] <= 0 or it > p["adjustment_iter"]
    one = torch.ones_like(m)
    adjusted, correction = torch.zeros_like(m), one
    if p["regularization_mode"] == 3:
        adjusted = multiplier
        lr_mode = p["learning_rate_mode"]
        if lr_mode >= 0 and enabled:
            if lr_mode == 0:
                factor = torch.fmax(
                    torch.fmin((max_counter / (counter + 1.0)) ** ub, 10 * one), one
                )
                changed = multiplier * factor
            elif lr_mode == 1:
                factor = torch.fmin(
                    torch.fmax(((counter + 1.0) / max_counter) ** ub, 0.1 * one), one
                )
                changed = multiplier * factor
            else:
                changed = lr / ((ub * counter).sqrt() + eps)
            adjusted = torch.where(counter > tail, changed, multiplier)
        if enabled and wdm == 2:
            correction = 1.0 - freq * wd * lr
        elif enabled and wdm == 1:
            correction = 1.0 - freq * wd * multiplier
    elif p["regularization_mode"] == 4:
        coefficient, lower = f32(p["weight_norm_coefficient"]), f32(p["lower_bound"])
        clip = counter * torch.fmax(coefficient * w.norm(dim=1), lower * one)
        adjusted = torch.fmin(one, clip / g_sum_square.sqrt()) * multiplier
        if wdm == 2:
            correction = (1.0 - wd * lr) * one
        elif wdm == 1:
            correction = 1.0 - wd * adjusted
    new_w = correction.unsqueeze(1) * w - adjusted.unsqueeze(1) * g
    return new_w, m, counter, prev


def reference_counter(case: Case, state: dict[str, torch.Tensor], p: dict, clip=None):
    """(weights, momentum1, prev_iter, row_counter) after one step, float64 then float32."""
    weights = case.weights.double()
    m1, prev, counter = (state[k].double() for k in ("momentum1", "prev_iter", "row_counter"))
    for t, (rows, g) in table_sums(case, clip).items():
        d = case.dims[t]
        at = int(case.weights_offsets[t]) + rows.unsqueeze(1) * d + torch.arange(d)
        m_at = int(case.row_offsets[t]) + rows
        p_at, c_at = m_at + PREV_SHIFT, m_at + COUNTER_SHIFT
        w, m, c, pv = counter_step(weights[at], g, m1[m_at], counter[c_at], prev[p_at], p)
        weights[at], m1[m_at], counter[c_at], prev[p_at] = w, m, c, pv
    return weights.float(), m1.float(), prev.float(), counter.float()


def run_counter(
    ops, case: Case, state: dict[str, torch.Tensor], p: dict, index_dtype, bags=False, **kw
):
    weights = case.weights.clone()
    st_ = {k: v.clone() for k, v in state.items()}
    batch = case.batch(index_dtype, bags)
    split_embedding_backward(ops, weights=weights, **st_, **batch, optimizer=COUNTER, **p, **kw)
    return weights, st_["momentum1"], st_["prev_iter"], st_["row_counter"]


def test_hand_worked_counter(sim_ops) -> None:
    """ONE_ROW (gradient [6, 8], weight [3, 4]), eps 0.

    Counter-based (regularization_mode 3), halflife -1, counter 3 -> 4 (freq = -1/4), momentum1
    14 -> 14 + 50 = 64 (multiplier 0.1 / 8 = 0.0125); learning_rate_mode 0, max_counter 20,
    adjustment_ub 0.5: the rate times clamp((20 / 5)^0.5, 1, 10) = 2 -> 0.025; decoupled decay
    0.5: correction 1 - (-1/4) * 0.5 * 0.1 = 1.0125; w = 1.0125 * [3, 4] - 0.025 * [6, 8]
    = [2.8875, 3.85]. prev_iter is not touched (halflife <= 0).

    CowClip (4), halflife 2, prev_iter 3, iter 5: counter 4 -> 1 + 2^(-2/2) * 4 = 3, prev_iter
    5; L2 decay 0.5 enters the statistics: g + 0.5 w = [7.5, 10], sum of squares 156.25
    (mean 78.125), momentum1 21.875 -> 100, multiplier 0.01; clip threshold 3 * max(0.4 * 5, 1)
    = 6, rate 0.01 * min(1, 6 / 12.5) = 0.0048; correction 1 - 0.5 * 0.0048 = 0.9976;
    w = 0.9976 * [3, 4] - 0.0048 * [6, 8] = [2.964, 3.952]."""
    base = COUNTER_DEFAULTS | {"eps": 0.0}
    state = {"momentum1": [7.0, 14], "prev_iter": [9.0, 1], "row_counter": [9.0, 3]}
    attrs = {"learning_rate_mode": 0, "max_counter": 20.0, "adjustment_ub": 0.5}
    attrs |= {"weight_decay_mode": 2, "weight_decay": 0.5}
    got = run_one_row(sim_ops, COUNTER, state, **(base | attrs))
    torch.testing.assert_close(got["weights"], torch.tensor([9.0, 9, 2.8875, 3.85]))
    torch.testing.assert_close(got["momentum1"], torch.tensor([7.0, 64]))
    torch.testing.assert_close(got["row_counter"], torch.tensor([9.0, 4]))
    torch.testing.assert_close(got["prev_iter"], torch.tensor([9.0, 1]))

    state = {"momentum1": [7.0, 21.875], "prev_iter": [9.0, 3], "row_counter": [9.0, 4]}
    attrs = {"regularization_mode": 4, "counter_halflife": 2, "iter": 5}
    attrs |= {"weight_norm_coefficient": 0.4, "lower_bound": 1.0}
    attrs |= {"weight_decay_mode": 1, "weight_decay": 0.5}
    got = run_one_row(sim_ops, COUNTER, state, **(base | attrs))
    torch.testing.assert_close(got["weights"], torch.tensor([9.0, 9, 2.964, 3.952]))
    torch.testing.assert_close(got["momentum1"], torch.tensor([7.0, 100]))
    torch.testing.assert_close(got["row_counter"], torch.tensor([9.0, 3]))
    torch.testing.assert_close(got["prev_iter"], torch.tensor([9.0, 5]))


counter_params = st.fixed_dictionaries(
    {
        "iter": st.integers(1, 6),
        "weight_decay": st.sampled_from([0.0, 0.25]),
        "weight_decay_mode": st.sampled_from([0, 1, 2]),
        "counter_halflife": st.sampled_from([-1, 0, 3]),
        "adjustment_iter": st.sampled_from([-1, 3]),
        "adjustment_ub": st.sampled_from([0.5, 2.0]),
        "learning_rate_mode": st.sampled_from([-1, 0, 1, 2]),
        "max_counter": st.sampled_from([3.0, 12.0]),
        "tail_id_threshold": st.sampled_from([0.0, 2.5, 0.4]),
        "is_tail_id_thresh_ratio": st.sampled_from([0, 1]),
        "regularization_mode": st.sampled_from([3, 4]),
        "weight_norm_coefficient": st.sampled_from([0.0, 0.3]),
        "lower_bound": st.sampled_from([0.0, 0.05]),
    }
)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    p=counter_params,
    pooling=st.sampled_from([SUM, MEAN, NONE]),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    clip=st.booleans(),
    platform=platforms,
)
def test_counter_matches_reference(sim_ops, data, p, pooling, index_dtype, clip, platform) -> None:
    case = data.draw(cases(pooling, allow_pruned=True))
    state = counter_state(case, torch.Generator().manual_seed(data.draw(seeds)), p["iter"])
    kw = {"gradient_clipping": int(clip), "max_gradient": 0.7, **platform}
    got = with_and_without_bags(run_counter, sim_ops, case, state, p, index_dtype, **kw)
    want = reference_counter(case, state, p, 0.7 if clip else None)
    assert_fused_close(got, want)


@pytest.mark.parametrize("mode", [3, 4])
def test_counter_production_shape(sim_ops, mode) -> None:
    """26 tables, B = 2048, D 64-128, Zipf-like ids: many rows repeat within the batch."""
    case = production_case(37)
    p = COUNTER_DEFAULTS | {
        "iter": 7,
        "weight_decay": 0.01,
        "weight_decay_mode": 2 if mode == 3 else 1,
        "counter_halflife": 4,
        "adjustment_iter": 3,
        "adjustment_ub": 0.5,
        "learning_rate_mode": 0,
        "max_counter": 5.0,
        "tail_id_threshold": 0.2,
        "is_tail_id_thresh_ratio": 1,
        "regularization_mode": mode,
        "weight_norm_coefficient": 0.1,
        "lower_bound": 0.01,
    }
    state = counter_state(case, torch.Generator().manual_seed(3), p["iter"])
    got = run_counter(sim_ops, case, state, p, torch.int64, bags=True, min_core_bytes=1)
    want = reference_counter(case, state, p)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=2e-5, atol=1e-5)


COUNTER_STATE = {
    "momentum1": torch.zeros(2),
    "momentum1_offsets": torch.tensor([0]),
    "prev_iter": torch.zeros(2),
    "prev_iter_offsets": torch.tensor([0]),
    "row_counter": torch.zeros(2),
    "row_counter_offsets": torch.tensor([0]),
}


@pytest.mark.parametrize(
    ("change", "attrs", "message"),
    [
        ({"prev_iter": None}, {}, "prev_iter and prev_iter_offsets are required by optimizer 10"),
        (
            {"row_counter_offsets": None},
            {},
            "row_counter and row_counter_offsets are required by optimizer 10",
        ),
        (
            {"prev_iter_offsets": torch.tensor([0, 0])},
            {},
            "prev_iter_offsets and row_counter_offsets must have T = 1 entries",
        ),
        ({}, {"max_counter": 0.0}, "max_counter must not be 0 for optimizer 10"),
        ({}, {"weight_decay_mode": 3}, "weight_decay_mode must be 0, 1 or 2 for optimizer 10"),
    ],
)
def test_counter_rejections(sim_ops, change, attrs, message) -> None:
    args, base = small_args(COUNTER, **(COUNTER_STATE | change))
    with pytest.raises(SimError, match=message):
        split_embedding_backward(sim_ops, **args, **(base | COUNTER_DEFAULTS | attrs))
