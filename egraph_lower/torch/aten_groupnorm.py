"""Group norm onto the format's group-norm ops (opdefs/groupnorm.py).

- `native_group_norm(x, w, b, N, C, HxW, group, eps)` -> (GroupNorm, mean, rstd): the saved statistics
  [N, group] are layer norm's statistics ops over the last axis of x reshaped to [N, group, K]
  (`Reduce{Mean}`, `InvStd`), the same e-nodes the forward's expansion uses. A missing weight or bias
  is a Constant of ones or zeros.
- `native_group_norm_backward` -> GroupNormBackwardInput / GroupNormBackwardWeight and, for the bias,
  `BatchNormTrainingBackwardBeta{axis: 1}` (the sum of dy over every axis but the channels), only what
  `output_mask` asks.
A graph whose N, C, HxW disagree with x's shape is refused, not guessed at.
"""

from __future__ import annotations

import math
from typing import Any

from .aten_norm import _dtype, _or_fill, _result
from .context import Context
from .registry import handles


def _check(ctx: Context, x: int, a: dict[str, Any]) -> tuple[int, int]:
    """(C, group) of x [N, C, *], after checking aten's N, C, HxW against x's shape."""
    shape = ctx.shape(x)
    if len(shape) < 2:
        raise ctx.refuse(f"group norm on a rank-{len(shape)} input {list(shape)}")
    n, c, hxw, group = (a[k] for k in ("N", "C", "HxW", "group"))
    if not all(isinstance(v, int) for v in (n, c, hxw, group)):
        raise ctx.refuse("group norm with symbolic N, C, HxW or group")
    if (n, c, hxw) != (shape[0], shape[1], math.prod(shape[2:])) or group < 1 or c % group:
        raise ctx.refuse(f"group norm N={n} C={c} HxW={hxw} group={group} on x {list(shape)}")
    return c, group


@handles("native_group_norm.default")
def _group_norm(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    x0 = ctx.t(a["input"])
    c, group = _check(ctx, x0, a)
    dt = _dtype(ctx, a["input"], a["weight"], a["bias"])
    x = ctx.cast(x0, dt)
    eps = float(a["eps"])
    w, b = _or_fill(ctx, a["weight"], 1.0, (c,), dt), _or_fill(ctx, a["bias"], 0.0, (c,), dt)
    y = ctx.add("GroupNorm", (x, w, b), {"groups": group, "eps": eps})
    shape = ctx.shape(x)
    xg = ctx.add("Reshape", (x,), {"shape": [shape[0], group, math.prod(shape) // max(shape[0] * group, 1)]})
    mean = ctx.add("Reduce", (xg,), {"op": "Mean", "axes": [2]})
    rstd = ctx.add("InvStd", (xg,), {"axes": [2], "eps": eps})
    return _result(ctx, y, 0), _result(ctx, mean, 1), _result(ctx, rstd, 2)


@handles("native_group_norm_backward.default")
def _group_norm_backward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    x0 = ctx.t(a["input"])
    c, group = _check(ctx, x0, a)
    dt = _dtype(ctx, a["grad_out"], a["input"], a["weight"])
    x, dy = ctx.cast(x0, dt), ctx.cast(ctx.t(a["grad_out"]), dt)
    mean, rstd = ctx.cast(ctx.t(a["mean"]), dt), ctx.cast(ctx.t(a["rstd"]), dt)
    attrs = {"groups": group}
    mask = list(a["output_mask"])
    out: list[Any] = [None, None, None]
    if mask[0]:
        w = _or_fill(ctx, a["weight"], 1.0, (c,), dt)
        out[0] = _result(ctx, ctx.add("GroupNormBackwardInput", (x, w, mean, rstd, dy), attrs), 0)
    if mask[1]:
        out[1] = _result(ctx, ctx.add("GroupNormBackwardWeight", (x, mean, rstd, dy), attrs), 1)
    if mask[2]:
        out[2] = _result(ctx, ctx.add("BatchNormTrainingBackwardBeta", (dy,), {"axis": 1}), 2)
    return tuple(out)
