"""aten's sort, topk (format version 3, opdefs/sort.py), kthvalue, median, nanmedian and mode (opdefs/order_stats.py),
each onto its two format ops (values and indices):

- `sort.default(x, dim, descending)`, `sort.stable(x, stable, dim, descending)`: `Sort` and `ArgSort`
  with the same attributes (stable None is false); argsort and msort reach the importer as sort
  (PyTorch's decomposition table). A 0-d x is its own sort, index 0. bool x is sorted as i64 (the format
  sorts numbers), the values cast back.
- `topk.default(x, k, dim, largest, sorted)`: `TopK` and `ArgTopK`; a 0-d x with k = 1 is itself.
- `kthvalue.default(x, k, dim, keepdim)`: `KthValue` and `ArgKthValue`; `median.dim(x, dim, keepdim)`,
  `nanmedian.dim`: `Median` and `ArgMedian{ignore_nan}`; a 0-d x is itself, index 0.
  `median.default`, `nanmedian.default` (no dim, no index): `Median` of x flattened (a `Reshape`);
  an empty x is refused (aten gives NaN: there is no element to take).
- `mode.default(x, dim, keepdim)`: `Mode` and `ArgMode` (the smallest of the most frequent values, its
  last index; a 0-d x is itself, index 0).

Their backward is aten's `scatter.src` of the gradient at the indices into zeros (mapped by
aten_indexing), which a permutation of tied values changes only within the tie group; median's and
nanmedian's without a dim is the gradient shared among the elements equal to the median, NaNs included
(isnan, logical_and, eq, logical_or, sum, div, mul).
"""

from __future__ import annotations

import math
from typing import Any

from .context import Context
from .registry import handles


def _number(ctx: Context, x: int) -> int:
    return ctx.cast(x, "i64") if ctx.dtype(x) == "bool" else x


def _back(ctx: Context, values: int, dtype: str) -> int:
    return ctx.cast(values, dtype)


@handles("sort.default", "sort.stable")
def _sort(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    x0 = ctx.t(a["self"])
    dt = ctx.dtype(x0)
    if not ctx.shape(x0):
        return x0, ctx.const(0, "i64")
    x = _number(ctx, x0)
    attrs = {"axis": int(a.get("dim", -1)) % len(ctx.shape(x)), "descending": bool(a.get("descending", False)),
             "stable": bool(a.get("stable") or False)}
    return _back(ctx, ctx.add("Sort", (x,), attrs), dt), ctx.add("ArgSort", (x,), attrs)


@handles("topk.default")
def _topk(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    x0 = ctx.t(a["self"])
    dt, shape, k = ctx.dtype(x0), ctx.shape(x0), int(ctx.scalar(a["k"]))
    if not shape:
        if k != 1:
            raise ctx.refuse(f"topk of a 0-d tensor with k {k}")
        return x0, ctx.const(0, "i64")
    x = _number(ctx, x0)
    attrs = {"k": k, "axis": int(a.get("dim", -1)) % len(shape), "largest": bool(a.get("largest", True)),
             "sorted": bool(a.get("sorted", True))}
    return _back(ctx, ctx.add("TopK", (x,), attrs), dt), ctx.add("ArgTopK", (x,), attrs)


@handles("kthvalue.default")
def _kthvalue(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    x0 = ctx.t(a["self"])
    dt, shape, k = ctx.dtype(x0), ctx.shape(x0), int(ctx.scalar(a["k"]))
    if not shape:
        if k != 1:
            raise ctx.refuse(f"kthvalue of a 0-d tensor with k {k}")
        return x0, ctx.const(0, "i64")
    attrs = {"k": k, "axis": int(a.get("dim", -1)) % len(shape), "keep_dim": bool(a.get("keepdim", False))}
    x = _number(ctx, x0)
    return _back(ctx, ctx.add("KthValue", (x,), attrs), dt), ctx.add("ArgKthValue", (x,), attrs)


def _median_dim(ignore_nan: bool) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
        x0 = ctx.t(a["self"])
        dt, shape = ctx.dtype(x0), ctx.shape(x0)
        if not shape:
            return x0, ctx.const(0, "i64")
        attrs = {"axis": int(a["dim"]) % len(shape), "keep_dim": bool(a.get("keepdim", False)), "ignore_nan": ignore_nan}
        x = _number(ctx, x0)
        return _back(ctx, ctx.add("Median", (x,), attrs), dt), ctx.add("ArgMedian", (x,), attrs)

    return handler


def _median_all(ignore_nan: bool) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x0 = ctx.t(a["self"])
        dt, shape = ctx.dtype(x0), ctx.shape(x0)
        if not shape:
            return x0
        if 0 in shape:
            raise ctx.refuse("the median of an empty tensor")
        flat = ctx.add("Reshape", (_number(ctx, x0),), {"shape": [math.prod(shape)]})
        return _back(ctx, ctx.add("Median", (flat,), {"axis": 0, "keep_dim": False, "ignore_nan": ignore_nan}), dt)

    return handler


handles("median.dim")(_median_dim(False))
handles("nanmedian.dim")(_median_dim(True))
handles("median.default")(_median_all(False))
handles("nanmedian.default")(_median_all(True))


@handles("mode.default")
def _mode(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    x0 = ctx.t(a["self"])
    dt, shape = ctx.dtype(x0), ctx.shape(x0)
    if not shape:
        return x0, ctx.const(0, "i64")
    attrs = {"axis": int(a.get("dim", -1)) % len(shape), "keep_dim": bool(a.get("keepdim", False))}
    x = _number(ctx, x0)
    return _back(ctx, ctx.add("Mode", (x,), attrs), dt), ctx.add("ArgMode", (x,), attrs)
