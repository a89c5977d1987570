"""Row dtypes: float32, float16 or bfloat16 embeddings, with float32 optimiser state.

Stored rows (host table, device cache, checkpoints) are arrays of 4-byte units: the
embedding in the row dtype (two 16-bit values per unit, a zero half pads an odd dim), then
the float32 state. The helpers here convert between that packing and float32 values, and
round float64 values once into a 16-bit dtype the way the C++ core does
(csrc/row_format.h), for devices where the update runs as torch operations.
"""

from __future__ import annotations

import math

import torch

from torchrec_embcache._ext import _C

ROW_DTYPES: dict[torch.dtype, _C.RowDtype] = {
    torch.float32: _C.RowDtype.F32,
    torch.float16: _C.RowDtype.F16,
    torch.bfloat16: _C.RowDtype.BF16,
}

# (significand bits with the implicit one, smallest normal exponent, largest finite value)
_FORMATS: dict[torch.dtype, tuple[int, int, float]] = {
    torch.float16: (11, -14, 65504.0),
    torch.bfloat16: (8, -126, float.fromhex("0x1.fep127")),
}


def check_row_dtype(dtype: torch.dtype, stochastic_rounding: bool = False) -> _C.RowDtype:
    """The core's code of a row dtype; refuses dtypes rows cannot be stored in."""
    if dtype not in ROW_DTYPES:
        raise ValueError(
            f"row dtype must be torch.float32, torch.float16 or torch.bfloat16, got {dtype}"
        )
    if stochastic_rounding and dtype == torch.float32:
        raise ValueError("stochastic_rounding applies to float16 or bfloat16 rows only")
    return ROW_DTYPES[dtype]


def embedding_units(dtype: torch.dtype, dim: int) -> int:
    """4-byte units of a stored row taken by an embedding of ``dim`` values."""
    return dim if dtype == torch.float32 else (dim + 1) // 2


def unpack_weights(packed: torch.Tensor, dtype: torch.dtype, dim: int) -> torch.Tensor:
    """[n, units] stored units -> [n, dim] embeddings in ``dtype`` (a view for float32)."""
    if dtype == torch.float32:
        return packed[:, :dim]
    return packed.contiguous().view(dtype)[:, :dim]


def pack_weights(weights: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[n, dim] embeddings (converted to ``dtype`` to nearest even) -> [n, units] float32."""
    w = weights.to(dtype)
    if dtype == torch.float32:
        return w.contiguous()
    if w.shape[1] % 2:
        w = torch.cat([w, w.new_zeros(w.shape[0], 1)], dim=1)
    return w.contiguous().view(torch.float32)


def round_once(x: torch.Tensor, dtype: torch.dtype, u: torch.Tensor | None = None) -> torch.Tensor:
    """Rounds float64 ``x`` once into ``dtype``: to nearest even, or stochastically when
    uniforms ``u`` in [0, 1) are given (the upper neighbour in magnitude when u < (|x| - lo) / q).

    torch's own float64 -> bfloat16 conversion goes through float32 (two roundings), hence
    this. Every step is exact in float64 except the choice itself.
    """
    if dtype == torch.float32:
        return x.to(torch.float32)
    precision, emin, max_finite = _FORMATS[dtype]
    a = x.abs()
    _, e = torch.frexp(a)  # a = m * 2**e, m in [0.5, 1)
    q = torch.ldexp(torch.ones_like(a), torch.clamp(e, min=emin + 1) - precision)
    lo = torch.floor(a / q) * q
    rest = a - lo
    if u is None:
        half = q * 0.5
        odd = torch.remainder(lo / q, 2) != 0
        up = (rest > half) | ((rest == half) & odd)
    else:
        up = u.to(torch.float64) < rest / q
    r = torch.where(up, lo + q, lo)
    r = torch.where(r > max_finite, torch.full_like(r, math.inf), r)
    r = torch.where(torch.isnan(x), x, torch.copysign(r, x))
    return r.to(torch.float32).to(dtype)  # exact: r is representable in dtype
