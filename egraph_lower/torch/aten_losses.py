"""Softmax, log-softmax and the mean-squared-error loss, with their backward ops, in format ops.

Each is written the way torch's CPU kernel computes it (so the two agree to rounding):
- `_softmax(x, d)`: e = exp(x - max_d x); e / sum_d e.
- `_log_softmax(x, d)`: s = x - max_d x; s - log(sum_d exp(s)).
- `_softmax_backward_data(g, y, d)`: y * (g - sum_d (g * y)).
- `_log_softmax_backward_data(g, y, d)`: g - exp(y) * sum_d g.
- `mse_loss(x, t, reduction)`: (x - t)^2, then mean / sum / none.
- `mse_loss_backward(g, x, t, reduction)`: (x - t) * (2/N or 2) * g.
(`nll_loss` needs a gather, which the format does not have: it stays unmapped.)
"""

from __future__ import annotations

import math
from typing import Any

from .aten import handles
from .importer import Context


def _axis(ctx: Context, x: int, dim: int) -> list[int]:
    rank = len(ctx.shape(x))
    return [dim % rank] if rank else []


def _reduce(ctx: Context, op: str, x: int, axes: list[int]) -> int:
    if not axes:
        return x
    return ctx.add("Reduce", (x,), {"op": op, "axes": axes, "keep_dim": True})


def _bin(ctx: Context, op: str, a: int, b: int) -> int:
    return ctx.add("Binary", (a, b), {"op": op})


def _act(ctx: Context, kind: str, x: int) -> int:
    return ctx.add("Activation", (x,), {"kind": kind})


@handles("_softmax.default", "_log_softmax.default")
def _softmax(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    axes = _axis(ctx, x, a["dim"])
    shifted = _bin(ctx, "Sub", x, _reduce(ctx, "Max", x, axes))
    e = _act(ctx, "Exp", shifted)
    total = _reduce(ctx, "Sum", e, axes)
    if str(ctx.node.target).startswith("aten._log_softmax"):  # type: ignore[union-attr]
        return _bin(ctx, "Sub", shifted, _act(ctx, "Log", total))
    return _bin(ctx, "Div", e, total)


@handles("_softmax_backward_data.default")
def _softmax_backward(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    g, y = ctx.cast(ctx.t(a["grad_output"]), dt), ctx.cast(ctx.t(a["output"]), dt)
    inner = _reduce(ctx, "Sum", _bin(ctx, "Mul", g, y), _axis(ctx, y, a["dim"]))
    return _bin(ctx, "Mul", y, _bin(ctx, "Sub", g, inner))


@handles("_log_softmax_backward_data.default")
def _log_softmax_backward(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    g, y = ctx.cast(ctx.t(a["grad_output"]), dt), ctx.cast(ctx.t(a["output"]), dt)
    total = _reduce(ctx, "Sum", g, _axis(ctx, g, a["dim"]))
    return _bin(ctx, "Sub", g, _bin(ctx, "Mul", _act(ctx, "Exp", y), total))


_NONE, _MEAN, _SUM = 0, 1, 2  # torch's Reduction enum


def _reduction(ctx: Context, a: dict[str, Any]) -> int:
    r = a["reduction"]
    if r not in (_NONE, _MEAN, _SUM):
        raise ctx.refuse(f"reduction={r!r}")
    return int(r)


@handles("mse_loss.default")
def _mse_loss(ctx: Context, a: dict[str, Any]) -> int:
    reduction = _reduction(ctx, a)
    dt = ctx.out_dtype()
    d = _bin(ctx, "Sub", ctx.cast(ctx.t(a["self"]), dt), ctx.cast(ctx.t(a["target"]), dt))
    sq = _bin(ctx, "Mul", d, d)
    axes = list(range(len(ctx.shape(sq))))
    if reduction == _NONE or not axes:
        return sq
    return ctx.add("Reduce", (sq,), {"op": "Mean" if reduction == _MEAN else "Sum", "axes": axes})


@handles("mse_loss_backward.default")
def _mse_loss_backward(ctx: Context, a: dict[str, Any]) -> int:
    reduction = _reduction(ctx, a)
    shape, dt = ctx.out()
    x, t = ctx.cast(ctx.t(a["self"]), dt), ctx.cast(ctx.t(a["target"]), dt)
    numel = math.prod(list(shape))  # torch: 2 / input.numel() for the mean
    norm = 2.0 / numel if reduction == _MEAN and numel else 2.0
    scaled = _bin(ctx, "Mul", ctx.const(norm, dt), _bin(ctx, "Sub", x, t))
    g = ctx.expand(ctx.cast(ctx.t(a["grad_output"]), dt), shape)
    return _bin(ctx, "Mul", scaled, g)
