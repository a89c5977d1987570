"""fbgemm's other fused TBE optimizers on the npu, through the adapter: LARS-SGD, partial
row-wise Adam, LAMB, partial row-wise LAMB, row-wise Adagrad with counter (EXACT_ROWWISE_ADAGRAD
with WeightDecayMode.COUNTER or COWCLIP), and optimizer NONE (the backward returns the
weights' gradient, a sparse tensor of the touched rows, and updates nothing).

fbgemm-gpu-cpu 1.1.0 runs none of them on the CPU (its module asserts "Optimizer ... is not
supported in CPU mode"; NONE wants ComputeDevice.CUDA; the counter variant's invoker calls the
CUDA-only lookup), so the reference is written out in
float64: per table, the exact row gradients of the pooled output (sums over every occurrence),
then the update formulas of fbgemm's GPU kernels (codegen/genscript/optimizers.py) on the rows
the batch touched, from the module's own weights and optimizer state before the step.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from tbe_reference import NPU

pytestmark = [
    pytest.mark.requires_npu,
    pytest.mark.requires_npu_ops(
        "fbgemm::split_embedding_codegen_lookup_lars_sgd_function",
        "fbgemm::split_embedding_codegen_lookup_partial_rowwise_adam_function",
        "fbgemm::split_embedding_codegen_lookup_lamb_function",
        "fbgemm::split_embedding_codegen_lookup_partial_rowwise_lamb_function",
        "fbgemm::split_embedding_codegen_lookup_none_function",
    ),
]

# (rows, dim): fbgemm's modules need dims divisible by 4.
TABLES = [(13, 8), (7, 4), (21, 12)]
BATCH = 5
LR, EPS, BETA1, BETA2, WD, ETA, MOMENTUM = 0.05, 1e-6, 0.9, 0.999, 0.01, 0.01, 0.9


def tbe(optimizer: str, tables: list[tuple[int, int]], **options: Any) -> Any:
    """A SplitTableBatchedEmbeddingBagsCodegen on the npu as the patched TorchRec builds it."""
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        ComputeDevice,
        SplitTableBatchedEmbeddingBagsCodegen,
    )

    specs = [(r, d, EmbeddingLocation.DEVICE, ComputeDevice.CUDA) for r, d in tables]
    return SplitTableBatchedEmbeddingBagsCodegen(
        embedding_specs=specs,
        optimizer=EmbOptimType(optimizer),
        learning_rate=LR,
        eps=EPS,
        beta1=BETA1,
        beta2=BETA2,
        weight_decay=WD,
        eta=ETA,
        momentum=MOMENTUM,
        device=torch.device(NPU),
        **options,
    )


def batch(seed: int, tables: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """indices and offsets with repeated rows inside and across bags, and an empty bag."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 5, (len(tables) * BATCH,), generator=g)
    lengths[2] = 0
    parts = [
        torch.randint(0, min(tables[k // BATCH][0], 4), (n,), generator=g)
        for k, n in enumerate(lengths.tolist())
    ]
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    return torch.cat(parts).long(), offsets


def row_gradients(tables, indices, offsets, grad):  # type: ignore[no-untyped-def]
    """Per table: the touched rows (ascending) and their summed gradients, float64."""
    lengths = offsets[1:] - offsets[:-1]
    bag = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
    col = 0
    out = []
    for t, (rows, d) in enumerate(tables):
        here = bag // BATCH == t
        sums = torch.zeros(rows, d, dtype=torch.float64)
        sums.index_add_(0, indices[here], grad.double()[bag[here] % BATCH, col : col + d])
        touched = torch.unique(indices[here])
        out.append((touched, sums[touched]))
        col += d
    return out


def f32(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32))


def reference_step(optimizer: str, weights, states, grads, it: int) -> None:  # type: ignore[no-untyped-def]
    """fbgemm's GPU formulas, in place on float64 copies of the weights and states."""
    lr, eps, b1, b2, wd = f32(LR), f32(EPS), f32(BETA1), f32(BETA2), f32(WD)
    bc1, bc2 = (1.0 - float(torch.tensor(b, dtype=torch.float32) ** it) for b in (b1, b2))
    for t, (rows, g) in enumerate(grads):
        w = weights[t][rows]
        m = states[t][0][rows]
        if optimizer == "lars_sgd":
            wn, gn = w.norm(dim=1, keepdim=True), g.norm(dim=1, keepdim=True)
            m = f32(MOMENTUM) * m + lr * f32(ETA) * wn / (gn + wd * wn) * (g + wd * w)
            new_w = w - m
        else:
            m = b1 * m + (1 - b1) * g
            if optimizer == "lamb":
                v = b2 * states[t][1][rows] + (1 - b2) * g * g
                root = (v / bc2).sqrt()
            else:
                v = b2 * states[t][1][rows] + (1 - b2) * (g * g).mean(dim=1)
                root = (v / bc2).sqrt().unsqueeze(1)
            states[t][1][rows] = v
            r = m / bc1 / (root + eps) + wd * w
            if optimizer == "partial_row_wise_adam":
                new_w = w - lr * r
            else:
                ratio = w.norm(dim=1, keepdim=True) / r.norm(dim=1, keepdim=True)
                new_w = w - lr * ratio * r
        weights[t][rows] = new_w
        states[t][0][rows] = m


def snapshot(module, tables):  # type: ignore[no-untyped-def]
    weights = [w.detach().cpu().double().clone() for w in module.split_embedding_weights()]
    states = [
        [s.detach().cpu().double().clone().view(rows, -1).squeeze(1) for s in table]
        for table, (rows, _) in zip(module.split_optimizer_states(), tables, strict=True)
    ]
    return weights, states


@pytest.mark.parametrize(
    "optimizer", ["lars_sgd", "partial_row_wise_adam", "lamb", "partial_row_wise_lamb"]
)
def test_fused_optimizer_trains_like_fbgemm_formula(optimizer: str) -> None:
    module = tbe(optimizer, TABLES)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for table in module.split_embedding_weights():
            table.copy_((torch.rand(table.shape, generator=g) - 0.5).to(NPU))
    weights, states = snapshot(module, TABLES)
    for step in range(1, 3):  # the second step sees the first one's state
        indices, offsets = batch(step, TABLES)
        out = module(indices.to(NPU), offsets.to(NPU))
        grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(step))
        out.backward(grad.to(NPU))
        reference_step(
            optimizer, weights, states, row_gradients(TABLES, indices, offsets, grad), step
        )
    got_weights, got_states = snapshot(module, TABLES)
    for t in range(len(TABLES)):
        torch.testing.assert_close(got_weights[t], weights[t], rtol=1e-5, atol=1e-6)
        for k, (a, b) in enumerate(zip(got_states[t], states[t], strict=True)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"table {t} state {k}")


def test_optimizer_none_returns_the_sparse_row_gradients() -> None:
    tables = [(13, 8), (7, 8), (21, 8)]  # fbgemm's NONE takes one dim for all tables
    module = tbe("none", tables)
    before = module.weights_dev.detach().cpu().clone()
    indices, offsets = batch(5, tables)
    out = module(indices.to(NPU), offsets.to(NPU), total_unique_indices=indices.numel())
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(5))
    out.backward(grad.to(NPU))
    got = module.weights_dev.grad
    assert got.is_sparse and got.shape == module.weights_dev.shape
    want = torch.zeros(sum(r for r, _ in tables), 8, dtype=torch.float64)
    start = 0
    for (rows, sums), (n, _) in zip(
        row_gradients(tables, indices, offsets, grad), tables, strict=True
    ):
        want[start + rows] = sums
        start += n
    torch.testing.assert_close(got.cpu().to_dense().double(), want, rtol=1e-5, atol=1e-6)
    assert torch.equal(module.weights_dev.detach().cpu(), before)  # NONE updates nothing


def test_optimizer_none_names_a_too_small_unique_bound() -> None:
    module = tbe("none", [(13, 8), (7, 8)])
    indices = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 4, 5])
    offsets = torch.tensor([0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 10])
    out = module(indices.to(NPU), offsets.to(NPU), total_unique_indices=3)
    with pytest.raises(ValueError, match="unique rows, more than total_unique_indices = 3"):
        out.sum().backward()


# ---- row-wise Adagrad with counter -----------------------------------------------------------


def counter_module(mode: str) -> Any:
    """EXACT_ROWWISE_ADAGRAD with counter-based regularization (max_counter resampled every
    step, tail ids' rate decreased, decoupled decay) or CowClip (L2 decay), with a decaying
    counter in both."""
    from fbgemm_gpu.split_table_batched_embeddings_ops_training import (
        CounterBasedRegularizationDefinition,
        CounterWeightDecayMode,
        CowClipDefinition,
        LearningRateMode,
        TailIdThreshold,
        WeightDecayMode,
    )

    if mode == "counter":
        rule = CounterBasedRegularizationDefinition(
            counter_weight_decay_mode=CounterWeightDecayMode.DECOUPLE,
            counter_halflife=2,
            adjustment_iter=1,
            adjustment_ub=0.5,
            learning_rate_mode=LearningRateMode.TAIL_ID_LR_DECREASE,
            tail_id_threshold=TailIdThreshold(val=0.5, is_ratio=True),
            max_counter_update_freq=1,
        )
        options = {
            "weight_decay_mode": WeightDecayMode.COUNTER,
            "counter_based_regularization": rule,
        }
    else:
        clip = CowClipDefinition(
            counter_weight_decay_mode=CounterWeightDecayMode.L2,
            counter_halflife=3,
            weight_norm_coefficient=0.5,
            lower_bound=0.01,
        )
        options = {"weight_decay_mode": WeightDecayMode.COWCLIP, "cowclip_regularization": clip}
    return tbe("exact_row_wise_adagrad", TABLES, **options)


def counter_row(w, g, state: list[float], it: int, max_counter: float, mode: str):  # type: ignore[no-untyped-def]
    """One row's step of fbgemm's GPU kernel (rowwise_adagrad_with_counter() in
    codegen/genscript/optimizers.py) for the two configurations of counter_module, in float64;
    state = [momentum1, prev_iter, row_counter], updated in place."""
    lr, eps, wd = f32(LR), f32(EPS), f32(WD)
    halflife = 2 if mode == "counter" else 3
    delta = 1.0 if state[1] == 0 else it - state[1]
    state[1] = float(it)
    state[2] = 1.0 + math.exp(-delta * math.log(2.0) / halflife) * state[2]
    counter = state[2]
    decayed = g + wd * w if mode == "cowclip" else g  # L2 enters the statistics
    sum_square = float((decayed * decayed).sum())
    state[0] += sum_square / w.numel()
    multiplier = lr / (math.sqrt(state[0]) + eps)
    if mode == "counter":
        rate = multiplier
        if it > 1 and counter > math.floor(f32(0.5 * max_counter)):
            rate = multiplier * min(max(((counter + 1.0) / max_counter) ** 0.5, 0.1), 1.0)
        keep = 1.0 - halflife / counter * wd * lr if it > 1 else 1.0
    else:
        bound = counter * max(0.5 * float(w.norm()), f32(0.01))
        rate = min(1.0, bound / math.sqrt(sum_square)) * multiplier
        keep = 1.0 - wd * rate
    return keep * w - rate * g


@pytest.mark.requires_npu_ops(
    "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_with_counter_function"
)
@pytest.mark.parametrize("mode", ["counter", "cowclip"])
def test_rowwise_adagrad_with_counter_trains_like_fbgemm_formula(mode: str) -> None:
    module = counter_module(mode)
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for table in module.split_embedding_weights():
            table.copy_((torch.rand(table.shape, generator=g) - 0.5).to(NPU))
    weights, states = snapshot(module, TABLES)
    for step in range(1, 4):  # later steps see the counters, prev_iter and max_counter move
        # fbgemm samples max_counter (1 + the largest row_counter) before each counter step.
        max_counter = max(float(s[2].max()) for s in states) + 1 if mode == "counter" else 1.0
        indices, offsets = batch(10 + step, TABLES)
        out = module(indices.to(NPU), offsets.to(NPU))
        grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(step))
        out.backward(grad.to(NPU))
        for t, (rows, sums) in enumerate(row_gradients(TABLES, indices, offsets, grad)):
            for row, g_row in zip(rows.tolist(), sums, strict=True):
                state = [float(s[row]) for s in states[t]]
                weights[t][row] = counter_row(
                    weights[t][row], g_row, state, step, max_counter, mode
                )
                for s, value in zip(states[t], state, strict=True):
                    s[row] = value
    got_weights, got_states = snapshot(module, TABLES)
    for t in range(len(TABLES)):
        torch.testing.assert_close(got_weights[t], weights[t], rtol=1e-5, atol=1e-6)
        for k, (a, b) in enumerate(zip(got_states[t], states[t], strict=True)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=f"table {t} state {k}")
