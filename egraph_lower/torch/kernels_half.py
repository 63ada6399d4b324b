"""Half precision in the torch kernels: a format op a backend runs natively stands for that backend's
fused kernel, which computes float16/bfloat16 in float32 and rounds its result once, as PyTorch's own
CPU kernels mostly do. `in_float32` makes a kernel written out in several torch ops (or one torch op
whose half kernel rounds more than once: a loss reduced after its elementwise part, index_put
accumulating, flash attention rounding its probabilities) do the same; float32 and float64 tensors
go through unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

HALF = (torch.float16, torch.bfloat16)
Kernel = Callable[..., Tensor]


def _widened(fn: Kernel, dtype_of: Callable[[tuple[Any, ...], dict[str, Any], list[torch.dtype]], torch.dtype]) -> Kernel:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Tensor:
        dtypes = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and a.is_floating_point()]
        if not any(d in HALF for d in dtypes):
            return fn(*args, **kwargs)

        def wide(a: Any) -> Any:
            return a.float() if isinstance(a, Tensor) and a.dtype in HALF else a

        out = fn(*map(wide, args), **{k: wide(v) for k, v in kwargs.items()})
        return out.to(dtype_of(args, kwargs, dtypes))

    return run


def in_float32(fn: Kernel) -> Kernel:
    """`fn` computed in float32 where its tensors are f16/bf16, its result rounded once to the dtype they
    promote to (what `fn` would have returned computed in them). Integer and bool tensors (indices,
    masks) are passed as they are."""
    return _widened(fn, lambda args, kwargs, dtypes: functools.reduce(torch.promote_types, dtypes))


def in_float32_as(name: str) -> Callable[[Kernel], Kernel]:
    """`in_float32`, the result rounded to the dtype of argument `name` (attention's gradients are q's
    dtype, its log-sum-exp input float32)."""
    def wrap(fn: Kernel) -> Kernel:
        sig = inspect.signature(fn)

        def dtype_of(args: tuple[Any, ...], kwargs: dict[str, Any], dtypes: list[torch.dtype]) -> torch.dtype:
            arg = sig.bind(*args, **kwargs).arguments[name]
            assert isinstance(arg, Tensor)
            return arg.dtype

        return _widened(fn, dtype_of)

    return wrap
