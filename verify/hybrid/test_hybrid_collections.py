"""The unsharded Hash collections on the npu device: ids mapped on the host, lookups through
fbgemm's dense TBE operator on the device, trained three steps with torch's Adagrad; outputs,
weights and mappings equal the same collections on the CPU (torch's embedding_bag /
embedding, an independent path)."""

from __future__ import annotations

import copy

import pytest
import torch

# Arbitrary int64 ids per step: duplicates within bags, negatives, the int64 limits, and ids
# new in later steps.
STEPS = [
    ([7, -1, 7, 2**62], [2, 0, 2]),
    ([-(2**63), 7, 5, 5, 2**63 - 1], [1, 3, 1]),
    ([123456789012, -1, 9, 2**62], [0, 2, 2]),
]


def _kjt(values: list[int], lengths: list[int]) -> object:
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    return KeyedJaggedTensor.from_lengths_sync(
        keys=["f"], values=torch.tensor(values), lengths=torch.tensor(lengths)
    )


def _collection(kind: str) -> torch.nn.Module:
    import hybrid_torchrec as hy

    torch.manual_seed(5)
    if kind == "ebc":
        config = hy.HashEmbeddingBagConfig(
            name="t", embedding_dim=16, num_embeddings=64, feature_names=["f"]
        )
        return hy.HashEmbeddingBagCollection([config], device=torch.device("cpu"))
    config = hy.HashEmbeddingConfig(
        name="t", embedding_dim=16, num_embeddings=64, feature_names=["f"]
    )
    return hy.HashEmbeddingCollection([config], device=torch.device("cpu"))


def _values(kind: str, out: object) -> torch.Tensor:
    if kind == "ebc":
        return out.values()  # type: ignore[attr-defined]
    return out["f"].values()  # type: ignore[index]


@pytest.mark.requires_npu
@pytest.mark.requires_npu_ops("fbgemm::dense_embedding_codegen_lookup_function")
@pytest.mark.parametrize("kind", ["ebc", "ec"])
def test_hash_collection_on_npu_trains_like_on_cpu(kind: str) -> None:
    import hybrid_torchrec  # noqa: F401  (the npu provider is imported by conftest)

    cpu = _collection(kind)
    npu = copy.deepcopy(cpu).to(torch.device("npu", 0))
    opt_cpu = torch.optim.Adagrad(cpu.parameters(), lr=0.1)
    opt_npu = torch.optim.Adagrad(npu.parameters(), lr=0.1)
    for values, lengths in STEPS:
        kjt = _kjt(values, lengths)
        want = _values(kind, cpu(kjt))
        got = _values(kind, npu(kjt))
        assert got.device.type == "npu"
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)
        for opt, out in ((opt_cpu, want), (opt_npu, got)):
            opt.zero_grad()
            (out * out).sum().backward()
            opt.step()
        for (name, a), (_, b) in zip(
            cpu.state_dict().items(), npu.state_dict().items(), strict=True
        ):
            torch.testing.assert_close(b.cpu(), a, rtol=1e-5, atol=1e-6, msg=name)
        for pa, pb in zip(cpu.parameters(), npu.parameters(), strict=True):
            torch.testing.assert_close(
                opt_npu.state[pb]["sum"].cpu(), opt_cpu.state[pa]["sum"], rtol=1e-5, atol=1e-6
            )
    assert cpu.mappers()["t"].state().ids.tolist() == [
        7,
        -1,
        2**62,
        -(2**63),
        5,
        2**63 - 1,
        123456789012,
        9,
    ]
