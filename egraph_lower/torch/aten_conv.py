"""aten's convolution and convolution_backward, one to one onto the format's convolution ops (2-D ops
for 1-D and 2-D convolutions, the 3-D ones for 3-D).

- `convolution(x, w, bias, stride, padding, dilation, transposed=False, output_padding, groups)`:
  Conv2d, then the bias as a broadcast Add of bias reshaped to [1, O, 1, 1].
- `convolution_backward(dy, x, w, bias_sizes, ..., output_mask)`: output_mask says which of
  Conv2dBackwardInput, Conv2dBackwardWeight and the bias gradient (Reduce Sum of dy over
  N, H, W) are emitted; the others are None, as torch returns them.

Transposed convolutions (`transposed=True`, w [C_in, C_out/groups, KH, KW]): the forward is
ConvTranspose2d, whose output shape (torch's, with the output padding) is the node's. It is the
adjoint in x of Conv2d(., w) from that output shape, so its gradients are, by definition,
plain convolution ops with the same attributes:
    <ConvT(x, w), dy> = <x, Conv2d(dy, w)>   =>   dx = Conv2d(dy, w),   dw = Conv2dBackwardWeight(dy, x)
(the weight gradient of Conv2d(dy, w) paired with x). Conv2d of the output shape has
H + floor(op / s) rows along an axis with output padding op: x's H and no more unless the
output padding reaches the stride (torch allows op < max(stride, dilation)). Then torch's
transposed convolution is that of x extended by floor(op / s) rows of zeros (the rows it does
not have contribute nothing), so x enters the three ops extended by a Pad, and dx is that
convolution's first H rows (a Slice).

1-D convolutions ([N, C, L], weights [O, C/groups, K]) are the same ops on height 1: x, w
and dy are reshaped to [N, C, 1, L], [O, C/groups, 1, K], [N, O, 1, L'] (stride, padding
and dilation 1, 0, 1 along the height, output padding 0) and the results reshaped back.
3-D convolutions ([N, C, D, H, W]) are the same with Conv3d, ConvTranspose3d, Conv3dBackwardInput and
Conv3dBackwardWeight (everything above over three spatial axes; the bias reshaped to [1, O, 1, 1, 1],
its gradient summed over N, D, H, W).
"""

from __future__ import annotations

from typing import Any

from ..opdefs.conv import names
from .registry import handles
from .context import Context


def _params(ctx: Context, a: dict[str, Any], rank: int) -> dict[str, Any]:
    if rank not in (3, 4, 5):
        raise ctx.refuse(f"a rank-{rank} convolution input (only 1-D, 2-D and 3-D convolutions are mapped)")
    n, out = rank - 2, {}
    for key, height in (("stride", 1), ("padding", 0), ("dilation", 1)):
        v = [int(e) for e in a[key]]
        if len(v) == 1 and n >= 2:
            v = v * n
        if len(v) != n:
            raise ctx.refuse(f"{key} {v} for a {n}-D convolution")
        out[key] = [height] + v if n == 1 else v  # 1-D: height 1, nothing along it
    return {**out, "groups": int(a["groups"])}


def _as_2d(ctx: Context, nid: int) -> int:
    """A 1-D convolution's tensor [N, C, L] as [N, C, 1, L]; 2-D and 3-D ones as they are."""
    shape = ctx.shape(nid)
    if len(shape) != 3:
        return nid
    return ctx.add("Reshape", (nid,), {"shape": [shape[0], shape[1], 1, shape[2]]})


def _back(ctx: Context, nid: int, shape: tuple[int, ...]) -> int:
    return nid if ctx.shape(nid) == shape else ctx.add("Reshape", (nid,), {"shape": list(shape)})


def _rows(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _extension(x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...], attrs: dict[str, Any]) -> list[int]:
    """Per spatial axis, the zero rows x is extended by so that Conv2d(., w) from the transposed
    convolution's output shape `out` gives x's size: floor(output padding / stride)."""
    s, p, d = (attrs[k] for k in ("stride", "padding", "dilation"))
    return [_rows(out[2 + i], w[2 + i], s[i], p[i], d[i]) - x[2 + i] for i in range(len(s))]


def _extend(ctx: Context, nid: int, ext: list[int]) -> int:
    for i, e in enumerate(ext):
        if e > 0:
            nid = ctx.add("Pad", (nid,), {"axis": 2 + i, "before": 0, "after": e})
    return nid


def _transposed_shape(ctx: Context, x: int, w: int, a: dict[str, Any], attrs: dict[str, Any], rank: int) -> list[int]:
    """The transposed convolution's output shape (as 4-D for a 1-D one) from torch's output_padding."""
    xs, ws = ctx.shape(x), ctx.shape(w)
    nd = len(xs) - 2
    op = [int(e) for e in a["output_padding"]]
    if len(op) == 1:
        op = [0] + op if rank == 3 else op * nd
    if len(op) != nd or any(e < 0 for e in op):
        raise ctx.refuse(f"output_padding {a['output_padding']}")
    s, p, d = (attrs[k] for k in ("stride", "padding", "dilation"))
    size = [(xs[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (ws[2 + i] - 1) + op[i] + 1 for i in range(nd)]
    return [xs[0], ws[1] * attrs["groups"], *size]


@handles("convolution.default")
def _convolution(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    x, w = (ctx.cast(ctx.t(a[k]), dt) for k in ("input", "weight"))
    rank = len(ctx.shape(x))
    attrs = _params(ctx, a, rank)
    x, w = _as_2d(ctx, x), _as_2d(ctx, w)
    n = names(len(ctx.shape(x)) - 2)
    if a["transposed"]:
        out = _transposed_shape(ctx, x, w, a, attrs, rank)
        x = _extend(ctx, x, _extension(ctx.shape(x), ctx.shape(w), tuple(out), attrs))
        y = ctx.add(n["transpose"], (x, w), {**attrs, "output_shape": out})
    else:
        y = ctx.add(n["conv"], (x, w), attrs)
    if a["bias"] is not None:
        o = ctx.shape(y)[1]
        bias = ctx.add("Reshape", (ctx.cast(ctx.t(a["bias"]), dt),), {"shape": [1, o] + [1] * (len(ctx.shape(y)) - 2)})
        y = ctx.add("Binary", (y, bias), {"op": "Add"})
    return _back(ctx, y, ctx.out()[0])


def _transposed_backward(ctx: Context, dy: int, x: int, w: int, attrs: dict[str, Any],
                         mask: list[bool]) -> tuple[Any, Any]:
    """dx = Conv2d(dy, w) and dw = Conv2dBackwardWeight(dy, x) (x extended, dx cropped, where the
    output padding reaches the stride: see the module's docstring)."""
    ext = _extension(ctx.shape(x), ctx.shape(w), ctx.shape(dy), attrs)
    n = names(len(ctx.shape(x)) - 2)
    dx = dw = None
    if mask[0]:
        dx = ctx.add(n["conv"], (dy, w), attrs)
        for i, e in enumerate(ext):
            if e > 0:
                dx = ctx.add("Slice", (dx,), {"axis": 2 + i, "start": 0, "end": ctx.shape(x)[2 + i], "step": 1})
    if mask[1]:
        dw = ctx.add(n["bwd_weight"], (dy, _extend(ctx, x, ext)), {**attrs, "weight_shape": list(ctx.shape(w))})
    return dx, dw


@handles("convolution_backward.default")
def _convolution_backward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    dt = ctx.out(0)[1] if a["output_mask"][0] else ctx.out(1)[1]
    x0, w0 = (ctx.cast(ctx.t(a[k]), dt) for k in ("input", "weight"))
    dy0 = ctx.cast(ctx.t(a["grad_output"]), dt)
    attrs = _params(ctx, a, len(ctx.shape(x0)))
    x, w, dy = _as_2d(ctx, x0), _as_2d(ctx, w0), _as_2d(ctx, dy0)
    mask = list(a["output_mask"])
    out: list[Any] = [None, None, None]
    if a["transposed"]:
        dx, dw = _transposed_backward(ctx, dy, x, w, attrs, mask)
    else:
        n = names(len(ctx.shape(x)) - 2)
        dx = ctx.add(n["bwd_input"], (dy, w), {**attrs, "input_shape": list(ctx.shape(x))}) if mask[0] else None
        dw = ctx.add(n["bwd_weight"], (x, dy), {**attrs, "weight_shape": list(ctx.shape(w))}) if mask[1] else None
    if dx is not None:
        out[0] = ctx.cast(_back(ctx, dx, ctx.shape(x0)), ctx.out(0)[1])
    if dw is not None:
        out[1] = ctx.cast(_back(ctx, dw, ctx.shape(w0)), ctx.out(1)[1])
    if mask[2]:
        db = ctx.add("Reduce", (dy,), {"op": "Sum", "axes": [0] + list(range(2, len(ctx.shape(dy))))})
        out[2] = ctx.cast(db, ctx.out(2)[1])
    return tuple(out)
