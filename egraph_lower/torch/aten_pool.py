"""The pooling aten ops, one to one onto the pooling family (`opdefs/pool.py`).

`max_pool2d_with_indices` gives two nodes, `MaxPool2d` and `MaxPool2dIndices` (the same
windows; a backend computes both in one pass or two); its backward, `avg_pool2d` and its
backward, `_adaptive_avg_pool2d` and its backward map to one node each, with the forward
input's shape as `input_shape`. An `int[2]` argument given as one number (or a one-element
list) means that number on both axes; an empty stride is the kernel (aten's conventions).
The format's ops take N, C, H, W; an unbatched (C, H, W) call is mapped through a Reshape
to N = 1 and back. Other ranks are refused.
"""

from __future__ import annotations

from typing import Any

from .registry import handles
from .context import Context


def _pair(ctx: Context, value: Any, what: str, default: list[int] | None = None) -> list[int]:
    if isinstance(value, int):
        return [value, value]
    values = [int(v) for v in value] if value is not None else []
    if not values and default is not None:
        return list(default)
    if len(values) == 1:
        return values * 2
    if len(values) != 2:
        raise ctx.refuse(f"{what} {values} is not one or two integers")
    return values


def _input_shape(ctx: Context, x: Any) -> list[int]:
    """The forward input's shape as N, C, H, W (an unbatched C, H, W as N = 1)."""
    shape, _ = ctx.meta_of(ctx.val(x))
    if len(shape) not in (3, 4):
        raise ctx.refuse(f"pooling of a rank-{len(shape)} input (only N, C, H, W or C, H, W is mapped)")
    return [1, *shape] if len(shape) == 3 else list(shape)


def _batched(ctx: Context, nid: int) -> int:
    """A C, H, W operand as 1, C, H, W (others as they are)."""
    shape = ctx.shape(nid)
    return ctx.add("Reshape", (nid,), {"shape": [1, *shape]}) if len(shape) == 3 else nid


def _like(ctx: Context, nid: int, index: int | None = None) -> int:
    """The result reshaped to the aten result's shape (drops the N = 1 of an unbatched call)."""
    shape = ctx.out(index)[0]
    return nid if ctx.shape(nid) == tuple(shape) else ctx.add("Reshape", (nid,), {"shape": list(shape)})


def _window(ctx: Context, a: dict[str, Any], dilation: bool) -> dict[str, Any]:
    kernel = _pair(ctx, a["kernel_size"], "kernel_size")
    attrs: dict[str, Any] = {"kernel": kernel, "stride": _pair(ctx, a.get("stride"), "stride", kernel),
                             "padding": _pair(ctx, a.get("padding", 0), "padding", [0, 0])}
    if dilation:
        attrs["dilation"] = _pair(ctx, a.get("dilation", 1), "dilation", [1, 1])
    attrs["ceil_mode"] = bool(a.get("ceil_mode", False))
    return attrs


def _avg(ctx: Context, a: dict[str, Any]) -> dict[str, Any]:
    attrs = _window(ctx, a, dilation=False)
    attrs["count_include_pad"] = bool(a.get("count_include_pad", True))
    divisor = a.get("divisor_override")
    attrs["divisor_override"] = None if divisor is None else int(divisor)
    return attrs


@handles("max_pool2d_with_indices.default")
def _max_pool(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    _input_shape(ctx, a["self"])
    x = _batched(ctx, ctx.cast(ctx.t(a["self"]), ctx.out(0)[1]))
    attrs = _window(ctx, a, dilation=True)
    return (_like(ctx, ctx.add("MaxPool2d", (x,), attrs), 0),
            _like(ctx, ctx.add("MaxPool2dIndices", (x,), attrs), 1))


@handles("max_pool2d_with_indices_backward.default")
def _max_pool_backward(ctx: Context, a: dict[str, Any]) -> int:
    attrs = {**_window(ctx, a, dilation=True), "input_shape": _input_shape(ctx, a["self"])}
    dy = _batched(ctx, ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype()))
    return _like(ctx, ctx.add("MaxPool2dBackward", (dy, _batched(ctx, ctx.t(a["indices"]))), attrs))


@handles("avg_pool2d.default")
def _avg_pool(ctx: Context, a: dict[str, Any]) -> int:
    _input_shape(ctx, a["self"])
    x = _batched(ctx, ctx.cast(ctx.t(a["self"]), ctx.out_dtype()))
    return _like(ctx, ctx.add("AvgPool2d", (x,), _avg(ctx, a)))


@handles("avg_pool2d_backward.default")
def _avg_pool_backward(ctx: Context, a: dict[str, Any]) -> int:
    attrs = {**_avg(ctx, a), "input_shape": _input_shape(ctx, a["self"])}
    dy = _batched(ctx, ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype()))
    return _like(ctx, ctx.add("AvgPool2dBackward", (dy,), attrs))


@handles("_adaptive_avg_pool2d.default")
def _adaptive(ctx: Context, a: dict[str, Any]) -> int:
    _input_shape(ctx, a["self"])
    size = _pair(ctx, a["output_size"], "output_size")
    x = _batched(ctx, ctx.cast(ctx.t(a["self"]), ctx.out_dtype()))
    return _like(ctx, ctx.add("AdaptiveAvgPool2d", (x,), {"output_size": size}))


@handles("_adaptive_avg_pool2d_backward.default")
def _adaptive_backward(ctx: Context, a: dict[str, Any]) -> int:
    attrs = {"input_shape": _input_shape(ctx, a["self"])}
    dy = _batched(ctx, ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype()))
    return _like(ctx, ctx.add("AdaptiveAvgPool2dBackward", (dy,), attrs))
