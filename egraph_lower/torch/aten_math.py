"""The aten ops of elementwise math: clamping, NaN tests, logical and bitwise ops (format version 3's
`And`, `Or`, `Xor`), each onto the format ops of the same meaning (checked against torch's kernels
in tests/test_math.py).

- `clamp(x, lo, hi)` (scalar or tensor bounds, either may be None), `clamp_min`, `clamp_max`:
  `Min(Max(x, lo), hi)`, torch's definition (`min(max(x, lo), hi)`, so hi wins where lo > hi);
  the format's Max and Min propagate a NaN of either operand, as torch's clamp does (a NaN bound
  gives NaN). Operands are cast to the result's dtype first (a float bound of an integer tensor
  makes a float result, as torch promotes). aten's clamp backward is primitives (`ge`, `le`,
  `logical_and`, `where`).
- `isnan(x)`: `Compare{Ne}(x, x)`, IEEE's definition (false on integers and bool).
- `logical_and/or/xor(a, b)`: each operand as `Cast{to: bool}` (nonzero, NaN included, is true:
  torch's), `Binary{And|Or|Xor}`, cast to the result's dtype.
- `bitwise_and/or/xor` (tensor or scalar other): `Binary{And|Or|Xor}` in the result's dtype
  (integers or bool; torch refuses floats, and so does the format).
"""

from __future__ import annotations

from typing import Any

from ..dtypes import FLOAT_DTYPES
from .context import Context
from .registry import handles


def _clamp(ctx: Context, x_arg: Any, lo: Any, hi: Any) -> int:
    dt = ctx.out_dtype()
    out = ctx.cast(ctx.t(x_arg), dt)
    if lo is None and hi is None:
        raise ctx.refuse("clamp with neither bound")
    if lo is not None:
        out = ctx.add("Binary", (out, ctx.operand(lo, dt)), {"op": "Max"})
    if hi is not None:
        out = ctx.add("Binary", (out, ctx.operand(hi, dt)), {"op": "Min"})
    return out


@handles("clamp.default", "clamp.Tensor")
def _clamp_handler(ctx: Context, a: dict[str, Any]) -> int:
    return _clamp(ctx, a["self"], a.get("min"), a.get("max"))


@handles("clamp_min.default", "clamp_min.Tensor")
def _clamp_min(ctx: Context, a: dict[str, Any]) -> int:
    return _clamp(ctx, a["self"], a["min"], None)


@handles("clamp_max.default", "clamp_max.Tensor")
def _clamp_max(ctx: Context, a: dict[str, Any]) -> int:
    return _clamp(ctx, a["self"], None, a["max"])


@handles("isnan.default")
def _isnan(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.t(a["self"])
    return ctx.cast(ctx.add("Compare", (x, x), {"op": "Ne"}), ctx.out_dtype())


_LOGICAL = {"and": "And", "or": "Or", "xor": "Xor"}


def _logical(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x, y = (ctx.cast(ctx.t(a[k]), "bool") for k in ("self", "other"))
        return ctx.cast(ctx.add("Binary", (x, y), {"op": op}), ctx.out_dtype())
    return handler


def _bitwise(op: str) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        dt = ctx.out_dtype()
        if dt in FLOAT_DTYPES:
            raise ctx.refuse(f"bitwise {op} of {dt}")
        return ctx.add("Binary", (ctx.operand(a["self"], dt), ctx.operand(a["other"], dt)), {"op": op})
    return handler


for _name, _op in _LOGICAL.items():
    handles(f"logical_{_name}.default")(_logical(_op))
    handles(f"bitwise_{_name}.Tensor", f"bitwise_{_name}.Scalar")(_bitwise(_op))
