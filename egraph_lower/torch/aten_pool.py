"""The pooling aten ops, one to one onto the pooling family (`opdefs/pool.py`), 2-D and 3-D.

`max_pool{2,3}d_with_indices` and `adaptive_max_pool{2,3}d` give two nodes each, the values
(`MaxPool2d`, ...) and the indices (`MaxPool2dIndices`, ...: the same windows; a backend computes
both in one pass or two); their backward ops, `avg_pool{2,3}d` and their backward ops,
`_adaptive_avg_pool{2,3}d` and their backward ops map to one node each, with the forward input's
shape as `input_shape`. An `int[n]` argument given as one number (or a one-element list) means that
number on every axis; an empty stride is the kernel (aten's conventions). The format's ops take
N, C, [D,] H, W; an unbatched call (no N) is mapped through a Reshape to N = 1 and back. Other ranks
are refused.

The 1-D poolings reach the backend as 2-D ones over an unsqueezed input (aten's own `max_pool1d`,
`avg_pool1d` and `adaptive_*_pool1d` are composites of them); the Core ATen overloads `avg_pool1d`
and `adaptive_avg_pool1d` are mapped the same way: the 2-D op over a unit H axis (kernel 1, stride
1, no padding along it), through a Reshape. `max_unpool{2,3}d` map onto `MaxUnpool{2,3}d` (their
gradient reaches the backend as a `gather`).
"""

from __future__ import annotations

from typing import Any

from .registry import handles
from .context import Context


def _ints(ctx: Context, value: Any, what: str, nd: int, default: list[int] | None = None) -> list[int]:
    if isinstance(value, int):
        return [value] * nd
    values = [int(v) for v in value] if value is not None else []
    if not values and default is not None:
        return list(default)
    if len(values) == 1:
        return values * nd
    if len(values) != nd:
        raise ctx.refuse(f"{what} {values} is not one or {nd} integers")
    return values


def _input_shape(ctx: Context, x: Any, nd: int) -> list[int]:
    """The forward input's shape as N, C, *spatial (an unbatched C, *spatial as N = 1)."""
    shape, _ = ctx.meta_of(ctx.val(x))
    if len(shape) not in (nd + 1, nd + 2):
        raise ctx.refuse(f"{nd}-D pooling of a rank-{len(shape)} input (only N, C and {nd} spatial axes, or C and"
                         f" {nd} spatial axes, are mapped)")
    return [1, *shape] if len(shape) == nd + 1 else list(shape)


def _batched(ctx: Context, nid: int, nd: int) -> int:
    """An unbatched operand (C, *spatial) as 1, C, *spatial (others as they are)."""
    shape = ctx.shape(nid)
    return ctx.add("Reshape", (nid,), {"shape": [1, *shape]}) if len(shape) == nd + 1 else nid


def _like(ctx: Context, nid: int, index: int | None = None) -> int:
    """The result reshaped to the aten result's shape (drops the N = 1 of an unbatched call)."""
    shape = ctx.out(index)[0]
    return nid if ctx.shape(nid) == tuple(shape) else ctx.add("Reshape", (nid,), {"shape": list(shape)})


def _window(ctx: Context, a: dict[str, Any], nd: int, dilation: bool) -> dict[str, Any]:
    kernel = _ints(ctx, a["kernel_size"], "kernel_size", nd)
    attrs: dict[str, Any] = {"kernel": kernel, "stride": _ints(ctx, a.get("stride"), "stride", nd, kernel),
                             "padding": _ints(ctx, a.get("padding", 0), "padding", nd, [0] * nd)}
    if dilation:
        attrs["dilation"] = _ints(ctx, a.get("dilation", 1), "dilation", nd, [1] * nd)
    attrs["ceil_mode"] = bool(a.get("ceil_mode", False))
    return attrs


def _avg(ctx: Context, a: dict[str, Any], nd: int) -> dict[str, Any]:
    attrs = _window(ctx, a, nd, dilation=False)
    attrs["count_include_pad"] = bool(a.get("count_include_pad", True))
    divisor = a.get("divisor_override")
    attrs["divisor_override"] = None if divisor is None else int(divisor)
    return attrs


def _x(ctx: Context, a: dict[str, Any], nd: int, dtype: str) -> int:
    _input_shape(ctx, a["self"], nd)
    return _batched(ctx, ctx.cast(ctx.t(a["self"]), dtype), nd)


def _dy(ctx: Context, a: dict[str, Any], nd: int) -> int:
    return _batched(ctx, ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype()), nd)


def _max_pool(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
        x = _x(ctx, a, nd, ctx.out(0)[1])
        attrs = _window(ctx, a, nd, dilation=True)
        return (_like(ctx, ctx.add(f"MaxPool{nd}d", (x,), attrs), 0),
                _like(ctx, ctx.add(f"MaxPool{nd}dIndices", (x,), attrs), 1))
    return handler


def _max_pool_backward(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        attrs = {**_window(ctx, a, nd, dilation=True), "input_shape": _input_shape(ctx, a["self"], nd)}
        idx = _batched(ctx, ctx.t(a["indices"]), nd)
        return _like(ctx, ctx.add(f"MaxPool{nd}dBackward", (_dy(ctx, a, nd), idx), attrs))
    return handler


def _avg_pool(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        return _like(ctx, ctx.add(f"AvgPool{nd}d", (_x(ctx, a, nd, ctx.out_dtype()),), _avg(ctx, a, nd)))
    return handler


def _avg_pool_backward(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        attrs = {**_avg(ctx, a, nd), "input_shape": _input_shape(ctx, a["self"], nd)}
        return _like(ctx, ctx.add(f"AvgPool{nd}dBackward", (_dy(ctx, a, nd),), attrs))
    return handler


def _adaptive(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        size = _ints(ctx, a["output_size"], "output_size", nd)
        x = _x(ctx, a, nd, ctx.out_dtype())
        return _like(ctx, ctx.add(f"AdaptiveAvgPool{nd}d", (x,), {"output_size": size}))
    return handler


def _adaptive_backward(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        attrs = {"input_shape": _input_shape(ctx, a["self"], nd)}
        return _like(ctx, ctx.add(f"AdaptiveAvgPool{nd}dBackward", (_dy(ctx, a, nd),), attrs))
    return handler


def _adaptive_max(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
        size = {"output_size": _ints(ctx, a["output_size"], "output_size", nd)}
        x = _x(ctx, a, nd, ctx.out(0)[1])
        return (_like(ctx, ctx.add(f"AdaptiveMaxPool{nd}d", (x,), size), 0),
                _like(ctx, ctx.add(f"AdaptiveMaxPool{nd}dIndices", (x,), size), 1))
    return handler


def _adaptive_max_backward(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        attrs = {"input_shape": _input_shape(ctx, a["self"], nd)}
        idx = _batched(ctx, ctx.t(a["indices"]), nd)
        return _like(ctx, ctx.add(f"AdaptiveMaxPool{nd}dBackward", (_dy(ctx, a, nd), idx), attrs))
    return handler


for _nd in (2, 3):
    handles(f"max_pool{_nd}d_with_indices.default")(_max_pool(_nd))
    handles(f"max_pool{_nd}d_with_indices_backward.default")(_max_pool_backward(_nd))
    handles(f"avg_pool{_nd}d.default")(_avg_pool(_nd))
    handles(f"avg_pool{_nd}d_backward.default")(_avg_pool_backward(_nd))
    handles(f"_adaptive_avg_pool{_nd}d.default")(_adaptive(_nd))
    handles(f"_adaptive_avg_pool{_nd}d_backward.default")(_adaptive_backward(_nd))
    handles(f"adaptive_max_pool{_nd}d.default")(_adaptive_max(_nd))
    handles(f"adaptive_max_pool{_nd}d_backward.default")(_adaptive_max_backward(_nd))


def _unit_h(ctx: Context, a: dict[str, Any]) -> int:
    """A 1-D pooling's input (N, C, L) or (C, L) as (N, C, 1, L)."""
    shape, _ = ctx.meta_of(ctx.val(a["self"]))
    if len(shape) not in (2, 3):
        raise ctx.refuse(f"1-D pooling of a rank-{len(shape)} input (only N, C, L or C, L is mapped)")
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    n, c, length = (1, *shape) if len(shape) == 2 else shape
    return ctx.add("Reshape", (x,), {"shape": [n, c, 1, length]})


@handles("avg_pool1d.default")
def _avg_pool1d(ctx: Context, a: dict[str, Any]) -> int:
    one = _avg(ctx, a, 1)
    attrs = {**one, "kernel": [1, *one["kernel"]], "stride": [1, *one["stride"]], "padding": [0, *one["padding"]]}
    return _like(ctx, ctx.add("AvgPool2d", (_unit_h(ctx, a),), attrs))


@handles("adaptive_avg_pool1d.default")
def _adaptive_avg_pool1d(ctx: Context, a: dict[str, Any]) -> int:
    size = [1, *_ints(ctx, a["output_size"], "output_size", 1)]
    return _like(ctx, ctx.add("AdaptiveAvgPool2d", (_unit_h(ctx, a),), {"output_size": size}))


def _max_unpool(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        _input_shape(ctx, a["self"], nd)
        x = _batched(ctx, ctx.cast(ctx.t(a["self"]), ctx.out_dtype()), nd)
        idx = _batched(ctx, ctx.t(a["indices"]), nd)
        size = _ints(ctx, a["output_size"], "output_size", nd)
        return _like(ctx, ctx.add(f"MaxUnpool{nd}d", (x, idx), {"output_size": size}))
    return handler


for _nd in (2, 3):  # max_unpool3d's stride and padding only check the sizes; the indices say where
    handles(f"max_unpool{_nd}d.default")(_max_unpool(_nd))
