"""The aten gradients of the activations with a tensor operand (opdefs/gating.py).

- `glu_backward(grad_output, self, dim)` is GluBackward{axis: dim}(self, grad_output); the forward glu
  reaches the importer decomposed by PyTorch's table (narrows, a sigmoid and a product).
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
