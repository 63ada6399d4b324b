"""aten's convolution and convolution_backward, one to one onto the format's convolution ops.

- `convolution(x, w, bias, stride, padding, dilation, transposed=False, output_padding, groups)`:
  Conv2d, then the bias as a broadcast Add of bias reshaped to [1, O, 1, 1].
- `convolution_backward(dy, x, w, bias_sizes, ..., output_mask)`: output_mask says which of
  Conv2dBackwardInput, Conv2dBackwardWeight and the bias gradient (Reduce Sum of dy over
  N, H, W) are emitted; the others are None, as torch returns them.

1-D convolutions ([N, C, L], weights [O, C/groups, K]) are the same ops on height 1: x, w
and dy are reshaped to [N, C, 1, L], [O, C/groups, 1, K], [N, O, 1, L'] (stride, padding
and dilation 1, 0, 1 along the height) and the results reshaped back. Transposed
convolutions (ConvTranspose1d/2d modules) and 3-D ones are refused with a reason.
"""

from __future__ import annotations

from typing import Any

from .registry import handles
from .context import Context


def _params(ctx: Context, a: dict[str, Any], rank: int) -> dict[str, Any]:
    if a["transposed"]:
        raise ctx.refuse("a transposed convolution (only Conv1d/Conv2d's convolution is mapped)")
    if rank not in (3, 4):
        raise ctx.refuse(f"a rank-{rank} convolution input (only 1-D and 2-D convolutions are mapped)")
    n, out = rank - 2, {}
    for key, height in (("stride", 1), ("padding", 0), ("dilation", 1)):
        v = [int(e) for e in a[key]]
        if len(v) == 1 and n == 2:
            v = v * 2
        if len(v) != n:
            raise ctx.refuse(f"{key} {v} for a {n}-D convolution")
        out[key] = [height] + v if n == 1 else v  # 1-D: height 1, nothing along it
    return {**out, "groups": int(a["groups"])}


def _as_2d(ctx: Context, nid: int) -> int:
    shape = ctx.shape(nid)
    if len(shape) == 4:
        return nid
    return ctx.add("Reshape", (nid,), {"shape": [shape[0], shape[1], 1, shape[2]]})


def _back(ctx: Context, nid: int, shape: tuple[int, ...]) -> int:
    return nid if ctx.shape(nid) == shape else ctx.add("Reshape", (nid,), {"shape": list(shape)})


@handles("convolution.default")
def _convolution(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    x, w = (ctx.cast(ctx.t(a[k]), dt) for k in ("input", "weight"))
    attrs = _params(ctx, a, len(ctx.shape(x)))
    y = ctx.add("Conv2d", (_as_2d(ctx, x), _as_2d(ctx, w)), attrs)
    if a["bias"] is not None:
        o = ctx.shape(y)[1]
        bias = ctx.add("Reshape", (ctx.cast(ctx.t(a["bias"]), dt),), {"shape": [1, o, 1, 1]})
        y = ctx.add("Binary", (y, bias), {"op": "Add"})
    return _back(ctx, y, ctx.out()[0])


@handles("convolution_backward.default")
def _convolution_backward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    dt = ctx.out(0)[1] if a["output_mask"][0] else ctx.out(1)[1]
    x0, w0 = (ctx.cast(ctx.t(a[k]), dt) for k in ("input", "weight"))
    dy0 = ctx.cast(ctx.t(a["grad_output"]), dt)
    attrs = _params(ctx, a, len(ctx.shape(x0)))
    x, w, dy = _as_2d(ctx, x0), _as_2d(ctx, w0), _as_2d(ctx, dy0)
    mask = list(a["output_mask"])
    out: list[Any] = [None, None, None]
    if mask[0]:
        dx = ctx.add("Conv2dBackwardInput", (dy, w), {**attrs, "input_shape": list(ctx.shape(x))})
        out[0] = ctx.cast(_back(ctx, dx, ctx.shape(x0)), ctx.out(0)[1])
    if mask[1]:
        dw = ctx.add("Conv2dBackwardWeight", (x, dy), {**attrs, "weight_shape": list(ctx.shape(w))})
        out[1] = ctx.cast(_back(ctx, dw, ctx.shape(w0)), ctx.out(1)[1])
    if mask[2]:
        db = ctx.add("Reduce", (dy,), {"op": "Sum", "axes": [0, 2, 3]})
        out[2] = ctx.cast(db, ctx.out(2)[1])
    return tuple(out)
