"""A small generative recommender (GR) shaped like the one of shared/seeds/001: item and action
ids embedded through a TorchRec EmbeddingCollection, interleaved into jagged user sequences
(item_0, action_0, item_1, action_1, ...), a stack of HSTU blocks whose attention is
``mxrec::hstu_dense``, and a next-item loss. Used by gr_dist.py (sharded, npu) and
test_gr_model.py (the unsharded CPU reference).

Sizes, against the seed's Kuairand setup (B = 32, sequences of 8000, N = 4, D = 128): 64 users
per rank and per step, sequences of at most 64 tokens (32 interactions), 2 heads of 32 and
embeddings of 64. Sequences and head size are shrunk so the emulated kernels and the CPU
fallback of the simulated device train 10 steps on two processes in well under a minute (22 s
measured, with the CPU reference, on two shared cores).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from workloads import zipf_ids

ITEMS = 20_000
ACTIONS = 8  # click, like, share, ... : few rows, hot
DIM = 64
HEADS = 2
HEAD_DIM = 32
BLOCKS = 2
USERS = 64  # per rank and step
MAX_INTERACTIONS = 32
MAX_TOKENS = 2 * MAX_INTERACTIONS  # the attention's maxSeqLen S
TEMPERATURE = 0.1  # of the cosine logits (GR retrieval uses 0.05; 0.1 trains steadier here)
CAUSAL = 0  # hstu_dense maskType: the built-in lower triangle with the diagonal
FEATURES = ("item", "action")


# ---- data ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserBatch:
    """``USERS`` sequences: user u has lengths[u] interactions (item, action), its ids being the
    next lengths[u] entries of items and actions."""

    lengths: torch.Tensor
    items: torch.Tensor
    actions: torch.Tensor

    def kjt(self) -> Any:
        """The sparse features, one bag of ids per user and feature."""
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

        return KeyedJaggedTensor.from_lengths_sync(
            keys=list(FEATURES),
            values=torch.cat([self.items, self.actions]),
            lengths=torch.cat([self.lengths, self.lengths]),
        )


def user_batch(rank: int, step: int) -> UserBatch:
    """The batch of ``rank`` at ``step``, the same in every process: lengths skewed towards short
    histories (2 + 31 u^2, one user at the maximum so S is reached), Zipf items, and actions
    drawn with probability proportional to 1 / (a + 1)."""
    g = torch.Generator().manual_seed(104_729 * step + rank)
    lengths = 2 + (31 * torch.rand(USERS, generator=g) ** 2).long()
    lengths[step % USERS] = MAX_INTERACTIONS
    n = int(lengths.sum())
    action_weights = 1.0 / torch.arange(1, ACTIONS + 1, dtype=torch.float64)
    actions = torch.multinomial(action_weights, n, replacement=True, generator=g)
    return UserBatch(lengths=lengths, items=zipf_ids(ITEMS, n, g), actions=actions)


def next_item_pairs(lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(token rows that predict, item rows they predict): the action token of interaction t
    (token 2t + 1 of its sequence) predicts the item of interaction t + 1."""
    tokens, items = [], []
    start = 0
    for n in lengths:
        tokens.extend(2 * (start + t) + 1 for t in range(n - 1))
        items.extend(start + t + 1 for t in range(n - 1))
        start += n
    return torch.tensor(tokens), torch.tensor(items)


# ---- the model -----------------------------------------------------------------------------


class HstuBlock(nn.Module):
    """One HSTU layer as GR trains it: layer norm, the u/v/q/k projection through SiLU, the
    pointwise attention silu(Q K^T + relative bias) / S under the causal mask, the normalised
    attention gated by u, an output projection and the residual."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        width = HEADS * HEAD_DIM
        self.uvqk = nn.Linear(DIM, 4 * width, device=device)
        self.out = nn.Linear(width, DIM, device=device)
        # One learned bias per head and distance i - j (only j <= i survives the mask).
        self.relative_bias = nn.Parameter(torch.zeros(HEADS, MAX_TOKENS, device=device))

    def attention_bias(self, users: int) -> torch.Tensor:
        """attnBias [B, N, S, S]: bias[b, h, i, j] = relative_bias[h, max(i - j, 0)]."""
        pos = torch.arange(MAX_TOKENS, device=self.relative_bias.device)
        distance = (pos[:, None] - pos[None, :]).clamp(min=0)
        square = self.relative_bias[:, distance]
        return square.unsqueeze(0).expand(users, -1, -1, -1).contiguous()

    def forward(self, x: torch.Tensor, offsets: list[int]) -> torch.Tensor:
        width = HEADS * HEAD_DIM
        u, v, q, k = F.silu(self.uvqk(F.layer_norm(x, (DIM,)))).split(width, dim=-1)
        heads = (x.shape[0], HEADS, HEAD_DIM)
        attn = torch.ops.mxrec.hstu_dense(
            q.reshape(heads),
            k.reshape(heads),
            v.reshape(heads),
            None,
            self.attention_bias(len(offsets) - 1),
            CAUSAL,
            MAX_TOKENS,
            1.0 / MAX_TOKENS,  # siluScale: GR divides by the padded length
            "jagged",
            offsets,
        )
        gated = F.layer_norm(attn.reshape(x.shape[0], width), (width,)) * u
        return x + self.out(gated)


class GenerativeRecommender(nn.Module):
    """Embeddings (TorchRec), HSTU blocks, and the next-item loss: the cosine of each predicting
    token's output with every target item embedding of the batch, a softmax over those in-batch
    candidates at ``TEMPERATURE``, the cross-entropy of the true next item. A hot item is a
    candidate several times over; its copies share one logit, which only raises the loss's
    floor, so no deduplication (and no data-dependent shapes) is needed.

    ``device`` "meta" builds the collection for sharding and the dense layers on the CPU (the
    sharded model moves them to its device)."""

    def __init__(self, device: torch.device) -> None:
        from torchrec.modules.embedding_configs import EmbeddingConfig
        from torchrec.modules.embedding_modules import EmbeddingCollection

        super().__init__()
        tables = [
            EmbeddingConfig(name=f"t_{f}", num_embeddings=n, embedding_dim=DIM, feature_names=[f])
            for f, n in zip(FEATURES, (ITEMS, ACTIONS), strict=True)
        ]
        self.ec = EmbeddingCollection(tables=tables, device=device)
        dense = torch.device("cpu") if device.type == "meta" else device
        self.blocks = nn.ModuleList(HstuBlock(dense) for _ in range(BLOCKS))

    def forward(self, features: Any) -> torch.Tensor:
        embedded = self.ec(features)
        # The sharded collection returns an awaitable of the same dict.
        embedded = embedded.wait() if hasattr(embedded, "wait") else embedded
        items, actions = embedded["item"], embedded["action"]
        lengths = items.lengths().tolist()
        # Both features have the user's lengths: stacking row by row interleaves them.
        x = torch.stack([items.values(), actions.values()], dim=1).reshape(-1, DIM)
        offsets = [0]
        for n in lengths:
            offsets.append(offsets[-1] + 2 * n)
        for block in self.blocks:
            x = block(x, offsets)
        tokens, targets = (t.to(x.device) for t in next_item_pairs(lengths))
        predicted = F.normalize(F.layer_norm(x, (DIM,))[tokens], dim=-1)
        candidates = F.normalize(items.values()[targets], dim=-1)
        logits = predicted @ candidates.T / TEMPERATURE
        labels = torch.arange(logits.shape[0], device=x.device)
        return F.cross_entropy(logits, labels)


def initial_state() -> dict[str, torch.Tensor]:
    """The same initial parameters in every process, from one generator: embeddings N(0, 0.1)
    (rows of norm about 0.8), the projections U(-1/sqrt(fan_in), 1/sqrt(fan_in)) as torch
    initialises them, the relative biases N(0, 0.02) as GR does."""
    g = torch.Generator().manual_seed(20_261_124)
    meta = GenerativeRecommender(torch.device("meta")).state_dict()
    shapes = {key: value.shape for key, value in meta.items()}
    state = {}
    for key, shape in shapes.items():
        if key.startswith("ec."):
            state[key] = 0.1 * torch.randn(shape, generator=g)
        elif key.endswith("relative_bias"):
            state[key] = 0.02 * torch.randn(shape, generator=g)
        else:  # a Linear's weight [out, in] or bias: the layer's fan-in is the weight's "in"
            fan_in = shapes[key.rsplit(".", 1)[0] + ".weight"][1]
            state[key] = (2 * torch.rand(shape, generator=g) - 1) / fan_in**0.5
    return state
