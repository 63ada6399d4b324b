"""Masks, ranges and padding: the forward ops that build attention masks, position ids and shifted
labels, each onto the format ops of the same meaning (checked against torch's kernels in
tests/test_torch_models.py).

- `masked_fill(x, mask, v)`: `Where(mask, v, x)`; the mask broadcasts to x's shape, v is cast
  to x's dtype (-inf, nanoGPT's fill, as every non-finite constant: `Context.non_finite`).
- `logical_not(x)`: `Compare{Eq}(x, 0)`; `bitwise_not` of bool is the same, of integers
  `Binary{Sub}(-1, x)` (two's complement; it never overflows).
- `arange(start, end, step)`: `Iota{axis: 0}` in i64, `* step + start`, cast to the result's
  dtype: torch computes these integer values exactly and rounds once. A fractional start or
  step is refused (torch's float rounding there depends on its kernel's vectorisation).
- `tril(x, d)`, `triu(x, d)`: `Where(col <= row + d, x, 0)` (`>=` for triu), row and col
  `Iota`s along the last two axes.
- `constant_pad_nd(x, pad, v)`: a `Pad` per padded axis (pad's pairs from the last axis
  backwards); v != 0 is `Where(Pad(ones), Pad(x), v)`. A negative pad crops: a `Slice` of the
  positions it leaves, first (constant_pad_nd's backward is constant_pad_nd with the pads negated).
"""

from __future__ import annotations

from typing import Any

from ..dtypes import FLOAT_DTYPES
from .context import Context
from .registry import handles


@handles("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    mask = ctx.cast(ctx.t(a["mask"]), "bool")
    return ctx.add("Where", (mask, ctx.operand(a["value"], dt), ctx.cast(ctx.t(a["self"]), dt)))


@handles("logical_not.default")
def _logical_not(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.t(a["self"])
    is_zero = ctx.add("Compare", (x, ctx.const(0, ctx.dtype(x))), {"op": "Eq"})
    return ctx.cast(is_zero, ctx.out_dtype())


@handles("bitwise_not.default")
def _bitwise_not(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    if dt == "bool":
        return _logical_not(ctx, a)
    if dt in FLOAT_DTYPES:
        raise ctx.refuse(f"bitwise_not of {dt}")
    return ctx.add("Binary", (ctx.const(-1, dt), ctx.t(a["self"])), {"op": "Sub"})


@handles("arange.default", "arange.start", "arange.start_step")
def _arange(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    start, step = ctx.scalar(a.get("start", 0)), ctx.scalar(a.get("step", 1))
    if any(isinstance(v, float) and v != int(v) for v in (start, step)):
        raise ctx.refuse(f"arange with a fractional start or step ({start}, {step})")
    at = dt if dt in ("i32", "i64") else "i64"
    out = ctx.add("Iota", (ctx.const(0, at, shape),), {"axis": 0, "dtype": at})
    if step != 1:
        out = ctx.add("Binary", (out, ctx.const(int(step), at)), {"op": "Mul"})
    if start != 0:
        out = ctx.add("Binary", (out, ctx.const(int(start), at)), {"op": "Add"})
    return ctx.cast(out, dt)


@handles("tril.default", "triu.default")
def _triangle(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.t(a["self"])
    rank = len(ctx.shape(x))
    if rank < 2:
        raise ctx.refuse(f"a triangle of a rank-{rank} tensor")
    rows = ctx.add("Iota", (x,), {"axis": rank - 2, "dtype": "i64"})
    cols = ctx.add("Iota", (x,), {"axis": rank - 1, "dtype": "i64"})
    diagonal = int(ctx.scalar(a.get("diagonal", 0)))
    if diagonal:
        rows = ctx.add("Binary", (rows, ctx.const(diagonal, "i64")), {"op": "Add"})
    lower = str(ctx.node.target).startswith("aten.tril")  # type: ignore[union-attr]
    keep = ctx.add("Compare", (cols, rows), {"op": "Le" if lower else "Ge"})
    return ctx.add("Where", (keep, x, ctx.const(0, ctx.dtype(x))))


@handles("constant_pad_nd.default")
def _constant_pad_nd(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.t(a["self"])
    pad = [int(p) for p in a["pad"]]
    rank = len(ctx.shape(x))
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise ctx.refuse(f"pad {pad} for a rank-{rank} tensor")
    pairs = [(rank - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]
    for axis, before, after in pairs:  # negative pads crop: those positions sliced off first
        if before < 0 or after < 0:
            n = ctx.shape(x)[axis]
            start, end = max(-before, 0), n - max(-after, 0)
            if start > end:
                raise ctx.refuse(f"pad ({before}, {after}) crops more than the {n} positions of dim {axis}")
            x = ctx.add("Slice", (x,), {"axis": axis, "start": start, "end": end, "step": 1})
    value = ctx.scalar(a.get("value", 0))
    cropped = ctx.shape(x)
    inside = ctx.const(True, "bool", cropped) if value != 0 else None
    for axis, before, after in pairs:
        if before > 0 or after > 0:
            attrs = {"axis": axis, "before": max(before, 0), "after": max(after, 0)}
            x = ctx.add("Pad", (x,), attrs)
            inside = ctx.add("Pad", (inside,), attrs) if inside is not None else None
    if inside is None or ctx.shape(inside) == cropped:
        return x
    return ctx.add("Where", (inside, x, ctx.const(value, ctx.dtype(x))))
