"""Softmax, log-softmax and the MSE loss, with their backward ops: one format op each.

- `_softmax(x, dim, half_to_float)`, `_log_softmax(...)`: `Softmax`/`LogSoftmax{axis: dim}`.
  With half_to_float (an f16 input, an f32 result) x is cast to f32 first: torch
  computes in f32 and keeps the f32 result, exactly that. A 0-d x (aten takes dim 0 or -1 there)
  is taken as one of shape [1] along axis 0 and reshaped back, as its backward's operands are.
- `_softmax_backward_data(grad_output, output, dim, input_dtype)` and the log form:
  `SoftmaxBackward`/`LogSoftmaxBackward{axis: dim}(output, grad_output)`, computed
  in the dtype of grad_output and output (promoted), then cast to input_dtype (the
  result's dtype), as torch's kernel does.
- `mse_loss(x, target, reduction)`: `MseLoss{reduction}`; torch's enum 0, 1, 2 is
  "none", "mean", "sum". x and target are expanded to their broadcast shape first.
- `mse_loss_backward(grad_output, x, target, reduction)`: `MseLossBackward{reduction}(x,
  target, grad_output)` (x first: see opdefs/mse.py).
"""

from __future__ import annotations

from typing import Any

import torch

from ..opdefs.mse import REDUCTIONS
from .registry import handles
from .common import format_dtype
from .context import Context


def _promoted(ctx: Context, *args: Any) -> str:
    node = ctx.node.name if ctx.node is not None else None
    return format_dtype(torch.result_type(*(ctx.val(a) for a in args)), "softmax backward", node)


def _along(ctx: Context, op: str, inputs: tuple[int, ...], dim: Any) -> int:
    """`op{axis: dim}` of inputs; 0-d inputs (aten accepts dim 0 or -1 there) as [1] along axis 0, the
    result reshaped back to 0-d."""
    if ctx.shape(inputs[0]) != ():
        return ctx.add(op, inputs, {"axis": int(dim)})
    if int(dim) not in (0, -1):
        raise ctx.refuse(f"dim {dim} of a 0-d tensor")
    ones = tuple(ctx.add("Reshape", (v,), {"shape": [1]}) for v in inputs)
    return ctx.add("Reshape", (ctx.add(op, ones, {"axis": 0}),), {"shape": []})


@handles("_softmax.default", "_log_softmax.default")
def _softmax(ctx: Context, a: dict[str, Any]) -> int:
    op = "LogSoftmax" if str(ctx.node.target).startswith("aten._log_softmax") else "Softmax"  # type: ignore[union-attr]
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    return _along(ctx, op, (x,), a["dim"])


def _backward(ctx: Context, a: dict[str, Any], op: str) -> int:
    dt = _promoted(ctx, a["grad_output"], a["output"])
    y, dy = (ctx.cast(ctx.t(a[k]), dt) for k in ("output", "grad_output"))
    return ctx.cast(_along(ctx, op, (y, dy), a["dim"]), ctx.out_dtype())


@handles("_softmax_backward_data.default")
def _softmax_backward(ctx: Context, a: dict[str, Any]) -> int:
    return _backward(ctx, a, "SoftmaxBackward")


@handles("_log_softmax_backward_data.default")
def _log_softmax_backward(ctx: Context, a: dict[str, Any]) -> int:
    return _backward(ctx, a, "LogSoftmaxBackward")


def _reduction(ctx: Context, a: dict[str, Any]) -> str:
    r = a["reduction"]
    if isinstance(r, bool) or r not in range(len(REDUCTIONS)):
        raise ctx.refuse(f"reduction={r!r}")
    return REDUCTIONS[int(r)]


def _operands(ctx: Context, a: dict[str, Any], dt: str) -> tuple[int, int]:
    x, t = ctx.cast(ctx.t(a["self"]), dt), ctx.cast(ctx.t(a["target"]), dt)
    shape = tuple(torch.broadcast_shapes(ctx.shape(x), ctx.shape(t)))
    return ctx.expand(x, shape), ctx.expand(t, shape)


@handles("mse_loss.default")
def _mse_loss(ctx: Context, a: dict[str, Any]) -> int:
    reduction = _reduction(ctx, a)
    return ctx.add("MseLoss", _operands(ctx, a, ctx.out_dtype()), {"reduction": reduction})


@handles("mse_loss_backward.default")
def _mse_loss_backward(ctx: Context, a: dict[str, Any]) -> int:
    reduction = _reduction(ctx, a)
    shape, dt = ctx.out()
    x, t = _operands(ctx, a, dt)
    if ctx.shape(x) != shape:
        raise ctx.refuse(f"target broadcasts x {list(shape)} to {list(ctx.shape(x))}")
    dy = ctx.cast(ctx.t(a["grad_output"]), dt)
    if reduction == "none":
        dy = ctx.expand(dy, shape)
    return ctx.add("MseLossBackward", (x, t, dy), {"reduction": reduction})
