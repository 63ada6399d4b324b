"""The aten gradients of the activations with a tensor operand (opdefs/gating.py).

- `glu_backward(grad_output, self, dim)` is GluBackward{axis: dim}(self, grad_output); the forward glu
  reaches the importer decomposed by PyTorch's table (narrows, a sigmoid and a product).
- `_prelu_kernel_backward(grad_output, self, weight)` is (PreluBackward{wrt: input}, PreluBackward{wrt:
  weight}) of (self, weight, grad_output): the weight arrives viewed to broadcast to x ([1, C, 1, ...]),
  both gradients have x's shape; the forward `_prelu_kernel` reaches the importer as a where.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import FLOAT_DTYPES
from .context import Context
from .registry import handles


@handles("glu_backward.default")
def _glu_backward(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"glu_backward of dtype {dt}")
    x = ctx.cast(ctx.t(a["self"]), dt)
    dy = ctx.cast(ctx.t(a["grad_output"]), dt)
    return ctx.add("GluBackward", (x, dy), {"axis": int(a["dim"])})


@handles("_prelu_kernel_backward.default")
def _prelu_kernel_backward(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    """(grad_input, grad_weight), both x's shape (aten's graph sums grad_weight to the weight's shape after):
    PreluBackward{wrt: input} and {wrt: weight} of (self, weight, grad_output), each in its output's dtype."""
    x0, w0, dy0 = (ctx.t(a[k]) for k in ("self", "weight", "grad_output"))
    xs, ws = ctx.shape(x0), ctx.shape(w0)
    if ctx.shape(dy0) != xs or len(ws) > len(xs) or any(m not in (1, n) for m, n in zip(ws[::-1], xs[::-1])):
        raise ctx.refuse(f"_prelu_kernel_backward of x {list(xs)}, weight {list(ws)}, grad {list(ctx.shape(dy0))}")
    out = []
    for i, wrt in enumerate(("input", "weight")):
        shape, dt = ctx.out(i)
        if dt not in FLOAT_DTYPES or tuple(shape) != tuple(xs):
            raise ctx.refuse(f"_prelu_kernel_backward output {i} of dtype {dt}, shape {list(shape)}")
        out.append(ctx.add("PreluBackward", (ctx.cast(x0, dt), ctx.cast(w0, dt), ctx.cast(dy0, dt)), {"wrt": wrt}))
    return out[0], out[1]
