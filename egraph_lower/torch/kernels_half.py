"""Half precision in the torch kernels: a format op a backend runs natively stands for that backend's
fused kernel, which computes float16/bfloat16 in float32 and rounds its result once, as PyTorch's own
CPU kernels mostly do. `in_float32` makes a kernel written out in several torch ops (or one torch op
whose half kernel rounds more than once: a loss reduced after its elementwise part, index_put
accumulating, flash attention rounding its probabilities) do the same; float32 and float64 tensors
go through unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

HALF = (torch.float16, torch.bfloat16)


def in_float32(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`fn` computed in float32 where its tensors are f16/bf16, its result rounded once to the dtype they
    promote to (what `fn` would have returned computed in them). Integer and bool tensors (indices,
    masks) are passed as they are."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Tensor:
        dtypes = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and a.is_floating_point()]
        if not any(d in HALF for d in dtypes):
            return fn(*args, **kwargs)

        def wide(a: Any) -> Any:
            return a.float() if isinstance(a, Tensor) and a.dtype in HALF else a

        out = fn(*map(wide, args), **{k: wide(v) for k, v in kwargs.items()})
        return out.to(functools.reduce(torch.promote_types, dtypes))

    return run
