"""HybridTrainPipeline against the plain loop on one CPU rank (gloo), and the one-batch-ahead
loop both packages' pipelines share (``_shared.pipeline``) against a hand-written order of
events. verify/hybrid runs the pipeline on 2 npu ranks too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hybrid_torchrec as hy
import pytest
import torch
import torch.distributed as dist
from hybrid_torchrec._shared.pipeline import PrefetchingPipeline, train_step
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

# ---- the shared loop --------------------------------------------------------------------


class Recording(PrefetchingPipeline[str]):
    def __init__(self) -> None:
        self.events: list[str] = []
        self._init_prefetching()

    def _start(self, batch: Any) -> tuple[Any, str]:
        self.events.append(f"start {batch}")
        return batch, f"work {batch}"

    def _wait(self, pending: str) -> str:
        self.events.append(f"wait {pending}")
        return pending

    def _train(self, batch: Any, ready: str) -> Any:
        self.events.append(f"train {batch} after {ready}")
        return batch


def test_the_next_batch_starts_before_this_one_trains() -> None:
    p = Recording()
    it = iter("ab")
    assert [p.progress(it), p.progress(it)] == ["a", "b"]
    with pytest.raises(StopIteration):
        p.progress(it)
    assert p.events == [
        "start a",
        "wait work a",
        "start b",
        "train a after work a",
        "wait work b",
        "train b after work b",
    ]


def test_a_batch_ahead_is_trained_and_a_new_epoch_starts_after_the_end() -> None:
    p = Recording()
    assert p.progress(iter("ab")) == "a"
    # "b" was fetched (its host work started): it trains before the new iterator's batches.
    second = iter("xy")
    assert [p.progress(second), p.progress(second), p.progress(second)] == ["b", "x", "y"]
    with pytest.raises(StopIteration):
        p.progress(second)
    with pytest.raises(StopIteration):
        p.progress(second)
    assert p.progress(iter("z")) == "z"  # the next epoch
    with pytest.raises(StopIteration):
        p.progress(iter(""))


def test_train_step_steps_only_in_training() -> None:
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    model = torch.nn.Module()
    model.w = w  # type: ignore[assignment]
    model.forward = lambda b: ((w * b).square(), w * b)  # type: ignore[method-assign]
    opt = torch.optim.SGD([w], lr=0.5)
    out = train_step(model, opt, torch.tensor([1.0, 1.0]))
    # loss = w0^2 + w1^2: the gradient is 2w, SGD moves w to w - 0.5 * 2w = 0.
    assert torch.equal(out.detach(), torch.tensor([1.0, 2.0]))
    assert torch.equal(w.detach(), torch.zeros(2))
    model.eval()
    with torch.no_grad():
        w.fill_(3.0)
    train_step(model, opt, torch.tensor([1.0, 1.0]))
    assert torch.equal(w.detach(), torch.full((2,), 3.0))


# ---- HybridTrainPipeline ----------------------------------------------------------------

DIMS = {"lru": 4, "ttl": 8}
ROWS = 8  # fewer rows than the ids fed: rows change hands (LRU), ids expire (TTL)
FEATURES = ["f_lru", "f_ttl"]


def _batch(step: int) -> KeyedJaggedTensor:
    g = torch.Generator().manual_seed(step)
    # At most 4 ids a batch: the 2 batches LRU protects fit the table.
    lengths = torch.randint(0, 3, (len(FEATURES) * 2,), generator=g)
    values = torch.randint(0, 16, (int(lengths.sum()),), generator=g) * 7919 - 20_000
    return KeyedJaggedTensor.from_lengths_sync(keys=FEATURES, values=values, lengths=lengths)


class _LossOf(torch.nn.Module):
    def __init__(self, dmp: torch.nn.Module) -> None:
        super().__init__()
        self.dmp = dmp

    def forward(self, kjt: KeyedJaggedTensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        result = self.dmp(kjt)
        pooled = result.wait() if hasattr(result, "wait") else result
        out = {k: pooled[k] for k in FEATURES}
        return sum(0.5 * v.square().sum() for v in out.values()), out  # type: ignore[return-value]


def _dmp() -> torch.nn.Module:
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from hybrid_torchrec.distributed import get_default_hybrid_sharders
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan, table_wise
    from torchrec.distributed.types import ShardingEnv, ShardingPlan

    policies = {
        "lru": hy.EvictionPolicy("lru", protect_batches=2),
        "ttl": hy.EvictionPolicy("lfu", ttl_steps=1),
    }
    configs = [
        hy.HashEmbeddingBagConfig(
            name=t,
            embedding_dim=d,
            num_embeddings=ROWS,
            feature_names=[f"f_{t}"],
            eviction=policies[t],
            init_fn=lambda w: torch.nn.init.constant_(w, 0.5),
        )
        for t, d in DIMS.items()
    ]
    module = hy.HashEmbeddingBagCollection(configs, device=torch.device("meta"))
    fused = {"optimizer": EmbOptimType.EXACT_ADAGRAD, "learning_rate": 0.1}
    sharders = get_default_hybrid_sharders(
        ShardingEnv.from_process_group(dist.group.WORLD), fused_params=fused
    )
    sharder = next(s for s in sharders if s.module_type is hy.HashEmbeddingBagCollection)
    plan = construct_module_sharding_plan(
        module,
        {t: table_wise(rank=0) for t in DIMS},
        local_size=1,
        world_size=1,
        device_type="cpu",
        sharder=sharder,  # type: ignore[arg-type]
    )
    for sharding in plan.values():
        sharding.compute_kernel = "fused"  # the CPU default is the dense kernel, unfused
    return DistributedModelParallel(
        module, device=torch.device("cpu"), plan=ShardingPlan({"": plan}), sharders=sharders
    )


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {
        k: torch.cat([s.tensor for s in v.local_shards()])
        for k, v in model.state_dict().items()
        if k.endswith(".weight")
    }


def test_pipeline_trains_as_the_plain_loop(gloo_world: None) -> None:
    steps = 8
    batches = [_batch(s) for s in range(steps)]
    plain = _LossOf(_dmp())
    want = []
    for kjt in batches:
        loss, out = plain(kjt)
        loss.backward()
        want.append(out)
    piped = _LossOf(_dmp())
    pipeline = hy.HybridTrainPipeline(piped, None, sparse_features=lambda kjt: kjt)
    it: Iterator[Any] = iter(batches)
    got = [pipeline.progress(it) for _ in range(steps)]
    with pytest.raises(StopIteration):
        pipeline.progress(it)
    pipeline.close()
    for step, (g, w) in enumerate(zip(got, want, strict=True)):
        for key in FEATURES:
            assert torch.equal(g[key].detach(), w[key].detach()), (step, key)
    mine, theirs = _weights(piped), _weights(plain)
    assert mine.keys() == theirs.keys() and len(mine) == 2
    for key in mine:
        assert torch.equal(mine[key], theirs[key]), key
    # The tables did give up rows: more distinct ids were fed than they hold.
    for key in FEATURES:
        assert len({i for b in batches for i in b[key].values().tolist()}) > ROWS, key
