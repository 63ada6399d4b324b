"""aten's sort and topk (format version 3, opdefs/sort.py), each onto its two format ops:

- `sort.default(x, dim, descending)`, `sort.stable(x, stable, dim, descending)`: `Sort` and `ArgSort`
  with the same attributes (stable None is false); argsort and msort reach the importer as sort
  (PyTorch's decomposition table). A 0-d x is its own sort, index 0. bool x is sorted as i64 (the format
  sorts numbers), the values cast back.
- `topk.default(x, k, dim, largest, sorted)`: `TopK` and `ArgTopK`; a 0-d x with k = 1 is itself.

Their backward is aten's `scatter.src` of the gradient at the indices into zeros (mapped by
aten_indexing), which a permutation of tied values changes only within the tie group.
"""

from __future__ import annotations

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
