"""The aten reductions and scans of format version 3 (opdefs/reductions.py), each onto one format op:

- `var.correction(x, dim, correction, keepdim)`, `var.dim(x, dim, unbiased, keepdim)`:
  `Var{axes, correction, keep_dim}` (correction None is 1, unbiased 1 / 0; dim None or [] every axis),
  in the result's dtype; `var_mean.correction`, `var_mean.dim`: `Var` and `Reduce{Mean}` of the same
  x. std, std_mean reach the importer as var, var_mean and `sqrt` (PyTorch's decomposition table,
  `decompose.py`); their backward, and var's, is primitives in aten (mean, sub, mul, div, masked_fill).
- `max.default`, `min.default` (no dim): `Reduce{Max / Min}` over every axis (their backward: eq, isnan,
  sum, div: the gradient shared among the tied maxima). `max.dim`, `min.dim`: `Reduce{Max / Min}` over [dim] and `ArgReduce{Max / Min, dim}` (the first
  extreme, a NaN counting as both: aten's CPU kernel); their backward is aten's `scatter.src` of the
  indices into zeros (mapped by aten_indexing). `argmax`, `argmin`: `ArgReduce` (dim None: over x
  flattened, reshaped to the result's shape for keepdim). bool x is cast to i64 first (the format's
  ArgReduce takes numbers).
- `any.dim`, `any.dims`, `all.dim`, `all.dims`: `Reduce{Max / Min}` of x cast to bool, cast to the result's
  dtype (aten's result is bool, uint8 for a uint8 x, which the format has not).
- `prod.dim_int`, `prod.default`: `Reduce{Prod}` of x cast to the result's dtype (aten's `dtype`
  argument, or int64 for integers and bool); the backward aten hands over is `cumprod` of x with a
  1 shifted in from each side (exclusive products, `prod_safe_zeros_backward`): exact at zeros.
- `cumsum(x, dim, dtype)`, `cumprod`: `Scan{Add / Mul, axis}` in the result's dtype (a 0-d x is its
  own scan). cumsum's backward arrives as `flip`, `cumsum`, `flip`; cumprod's as aten's formula of
  cumsum, cumprod, max.dim, gather, scatter and masks (its handling of zeros).
- `cummax(x, dim)`, `cummin`: `Scan{Max / Min}` and `ArgScan{Max / Min}` (aten's indices: the last of
  ties, the last NaN; bool x in i64, the values cast back); their backward is aten's scatter_add of the
  gradient at the indices.
- `logcumsumexp(x, dim)`: `LogCumSumExp{axis}` (a 0-d x is itself); its backward arrives as primitives
  and logcumsumexp of the flipped gradient terms.
"""

from __future__ import annotations

import math
from typing import Any

from .context import Context
from .registry import handles


def _axes(ctx: Context, dims: Any, rank: int) -> list[int]:
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({int(d) % rank for d in dims}) if rank else []


def _var(ctx: Context, a: dict[str, Any], correction: float, dtype: str) -> int:
    x = ctx.cast(ctx.t(a["self"]), dtype)
    axes = _axes(ctx, a.get("dim"), len(ctx.shape(x)))
    return ctx.add("Var", (x,), {"axes": axes, "correction": correction, "keep_dim": bool(a.get("keepdim", False))})


def _correction(ctx: Context, a: dict[str, Any]) -> float:
    if "unbiased" in a:
        return 1.0 if a["unbiased"] else 0.0
    c = a.get("correction")
    return 1.0 if c is None else float(ctx.scalar(c))


@handles("var.correction", "var.dim")
def _var_handler(ctx: Context, a: dict[str, Any]) -> int:
    return _var(ctx, a, _correction(ctx, a), ctx.out_dtype())


@handles("var_mean.correction", "var_mean.dim")
def _var_mean(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    dt = ctx.out(0)[1]
    v = _var(ctx, a, _correction(ctx, a), dt)
    x = ctx.cast(ctx.t(a["self"]), dt)
    axes = _axes(ctx, a.get("dim"), len(ctx.shape(x)))
    keep = bool(a.get("keepdim", False))
    return v, (ctx.add("Reduce", (x,), {"op": "Mean", "axes": axes, "keep_dim": keep}) if axes else x)


def _arg_input(ctx: Context, x: int) -> int:
    return ctx.cast(x, "i64") if ctx.dtype(x) == "bool" else x


def _max_dim(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
        x = ctx.cast(ctx.t(a["self"]), ctx.out(0)[1])
        rank, keep = len(ctx.shape(x)), bool(a.get("keepdim", False))
        if rank == 0:
            return x, ctx.const(0, "i64")
        axis = int(a["dim"]) % rank
        values = ctx.add("Reduce", (x,), {"op": op, "axes": [axis], "keep_dim": keep})
        return values, ctx.add("ArgReduce", (_arg_input(ctx, x),), {"op": op, "axis": axis, "keep_dim": keep})

    return handler


handles("max.dim")(_max_dim("Max"))
handles("min.dim")(_max_dim("Min"))


def _max_all(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
        rank = len(ctx.shape(x))
        if ctx.shape(x) and 0 in ctx.shape(x):
            raise ctx.refuse("max/min of an empty tensor (aten raises)")
        return ctx.add("Reduce", (x,), {"op": op, "axes": list(range(rank))}) if rank else x

    return handler


handles("max.default")(_max_all("Max"))  # the whole tensor's max (amax without a dim)
handles("min.default")(_max_all("Min"))


def _argmax(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = _arg_input(ctx, ctx.t(a["self"]))
        shape, keep = ctx.shape(x), bool(a.get("keepdim", False))
        if not shape:
            return ctx.const(0, "i64")
        if a.get("dim") is not None:
            return ctx.add("ArgReduce", (x,), {"op": op, "axis": int(a["dim"]) % len(shape), "keep_dim": keep})
        flat = ctx.add("Reshape", (x,), {"shape": [math.prod(shape)]}) if len(shape) > 1 else x
        out = ctx.add("ArgReduce", (flat,), {"op": op, "axis": 0, "keep_dim": False})
        return ctx.add("Reshape", (out,), {"shape": list(ctx.out()[0])}) if ctx.out()[0] else out

    return handler


handles("argmax.default")(_argmax("Max"))
handles("argmin.default")(_argmax("Min"))


def _any_all(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), "bool")
        axes = _axes(ctx, a.get("dim"), len(ctx.shape(x)))
        if axes:
            x = ctx.add("Reduce", (x,), {"op": op, "axes": axes, "keep_dim": bool(a.get("keepdim", False))})
        return ctx.cast(x, ctx.out_dtype())

    return handler


handles("any.dim", "any.dims")(_any_all("Max"))
handles("all.dim", "all.dims")(_any_all("Min"))


@handles("prod.dim_int", "prod.default")
def _prod(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    axes = _axes(ctx, a.get("dim"), len(ctx.shape(x)))
    if not axes:
        return x
    return ctx.add("Reduce", (x,), {"op": "Prod", "axes": axes, "keep_dim": bool(a.get("keepdim", False))})


def _scan(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
        rank = len(ctx.shape(x))
        if rank == 0:
            return x
        return ctx.add("Scan", (x,), {"op": op, "axis": int(a["dim"]) % rank})

    return handler


handles("cumsum.default")(_scan("Add"))
handles("cumprod.default")(_scan("Mul"))


def _cum_extreme(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
        dt = ctx.out(0)[1]
        x = ctx.cast(ctx.t(a["self"]), "i64" if dt == "bool" else dt)
        rank = len(ctx.shape(x))
        if rank == 0:
            return ctx.cast(x, dt), ctx.const(0, "i64")
        axis = int(a["dim"]) % rank
        values = ctx.add("Scan", (x,), {"op": op, "axis": axis})
        return ctx.cast(values, dt), ctx.add("ArgScan", (x,), {"op": op, "axis": axis})

    return handler


handles("cummax.default")(_cum_extreme("Max"))
handles("cummin.default")(_cum_extreme("Min"))


@handles("logcumsumexp.default")
def _logcumsumexp(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    rank = len(ctx.shape(x))
    return ctx.add("LogCumSumExp", (x,), {"axis": int(a["dim"]) % rank}) if rank else x
