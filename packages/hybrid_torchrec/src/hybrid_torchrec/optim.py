"""Resetting the optimiser state of rows that changed hands.

A row given to a new id (after an eviction or a remove) gets fresh initial values from the
collection; state a torch optimiser keeps for the parameter (momentum, Adagrad's sum, Adam's
moments) must be reset too, or the new id inherits the old one's history. Register
:func:`optimizer_reset_hook` on the collection to do it on every eviction.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# State keys whose fresh value is not zero, with the param_group option holding it.
_INITIAL_VALUE_OPTION = {(torch.optim.Adagrad, "sum"): "initial_accumulator_value"}


def reset_optimizer_rows(
    optimizer: torch.optim.Optimizer, param: torch.Tensor, rows: torch.Tensor
) -> None:
    """Sets the given rows of every per-row state tensor of ``param`` to its fresh value.

    A state tensor is per row when its first dimension is the parameter's; scalar state (step
    counters) is left alone. Fresh values are zero, except Adagrad's sum, which starts at the
    group's ``initial_accumulator_value``.
    """
    state = optimizer.state.get(param)
    if not state or rows.numel() == 0:
        return
    group = next((g for g in optimizer.param_groups if any(p is param for p in g["params"])), {})
    for key, value in state.items():
        if not isinstance(value, torch.Tensor) or value.dim() == 0:
            continue
        if value.shape[0] != param.shape[0]:
            continue
        option = next(
            (
                o
                for (cls, k), o in _INITIAL_VALUE_OPTION.items()
                if isinstance(optimizer, cls) and k == key
            ),
            None,
        )
        fresh = float(group.get(option, 0.0)) if option else 0.0
        with torch.no_grad():
            value.index_fill_(0, rows.to(value.device), fresh)


def optimizer_reset_hook(
    optimizer: torch.optim.Optimizer, params: dict[str, torch.Tensor]
) -> Callable[[str, torch.Tensor], None]:
    """An eviction hook that resets the optimiser state of the evicted rows.

    ``params`` maps table names to their weight parameters, e.g.
    ``{name: ebc.embedding_bags[name].weight for name in ...}``;
    ``ebc.register_eviction_hook(optimizer_reset_hook(opt, ebc.table_weights()))``.
    """

    def hook(table: str, rows: torch.Tensor) -> None:
        param = params.get(table)
        if param is not None:
            reset_optimizer_rows(optimizer, param, rows)

    return hook
