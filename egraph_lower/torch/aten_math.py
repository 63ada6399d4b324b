"""The aten ops of elementwise math: clamping, NaN tests, logical and bitwise ops (format version 3's
`And`, `Or`, `Xor`), each onto the format ops of the same meaning (checked against torch's kernels
in tests/test_math.py).

- `clamp(x, lo, hi)` (scalar or tensor bounds, either may be None), `clamp_min`, `clamp_max`:
  `Min(Max(x, lo), hi)`, torch's definition (`min(max(x, lo), hi)`, so hi wins where lo > hi);
  the format's Max and Min propagate a NaN of either operand, as torch's clamp does (a NaN bound
  gives NaN). Operands are cast to the result's dtype first (a float bound of an integer tensor
  makes a float result, as torch promotes). aten's clamp backward is primitives (`ge`, `le`,
  `logical_and`, `where`).
- `isnan(x)`: `Compare{Ne}(x, x)`, IEEE's definition (false on integers and bool); `isinf(x)`:
  `Compare{Eq}(Abs(x), inf)` (false on integers and bool).
- `logical_and/or/xor(a, b)`: each operand as `Cast{to: bool}` (nonzero, NaN included, is true:
  torch's), `Binary{And|Or|Xor}`, cast to the result's dtype.
- `bitwise_and/or/xor` (tensor or scalar other): `Binary{And|Or|Xor}` in the result's dtype
  (integers or bool; torch refuses floats, and so does the format).
- `floor_divide`, `remainder`, `fmod`, `atan2`, `hypot`, `copysign`, `xlogy`, `fmax`, `fmin` (their
  tensor and scalar overloads): `Binary{FloorDiv, Rem, Fmod, Atan2, Hypot, Copysign, Xlogy, FMax, FMin}`
  in the result's dtype, torch's conventions (opdefs/binary_math.py). `div(rounding_mode='floor')`
  is FloorDiv, `'trunc'` on floats `Activation{Trunc}` of the Div (torch rounds the quotient first:
  aten.py).
- `sinh cosh asinh acosh atanh exp2 expm1 log1p trunc fix log2 log10 asin acos erfinv erfc`:
  `Activation{Sinh ... Trunc, Log2, Log10, Asin, Acos, Erfinv, Erfc}`; their
  backward is primitives in aten (cosh, sinh, mul, ...).
- `empty_like`, `empty_permuted`, `empty.memory_format`, `new_empty`, `empty_strided`,
  `new_empty_strided`: a `Constant` 0 of the result's shape and dtype (an empty tensor's contents are unspecified; what reads it has
  written it first: `fill`, `copy`). `copy(self, src)`: src cast to self's dtype and expanded to
  its shape.
- `logit(x, eps)`: `Activation{Logit}` of x clamped to [eps, 1 - eps] (Max, Min; none for eps None),
  computed in float32 for f16/bf16 and rounded once, as torch's kernel; `logit_backward(grad, x, eps)`:
  `ActivationBackward{Logit}(x, grad)` (NaN outside [0, 1], inf at 0 and 1), with eps
  `Where(x < eps or x > 1 - eps, 0, ...)`, the bounds compared in float32 for f16/bf16 as torch does.
- `lerp(self, end, w)`: torch's kernel, `Where(|w| < 1/2, self + w (end - self), end - (end - self)(1 - w))`,
  in float32 for f16/bf16 and rounded once; `round(x, decimals)`: torch's kernel in the dtype,
  `Round(x * 10^d) / 10^d` (d <= 0: `Round(x / 10^-d) * 10^-d`).
- `ldexp(x, e)`: aten's definition `x * Pow(2, e)` in float32 for f16/bf16, rounded once (it is not
  Core ATen; its gradient arrives as `pow` and `mul`).
- `frac(x)`: `x - Trunc(x)`; `nan_to_num(x, nan, posinf, neginf)`: `Where`s of `x != x`, `x == inf`,
  `x == -inf` (defaults 0 and the dtype's finite extremes); `fill.Tensor`: the value expanded.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import FLOAT_DTYPES
from .aten import _activation
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


@handles("isinf.default")
def _isinf(ctx: Context, a: dict[str, Any]) -> int:
    """|x| == inf on floats (`Compare{Eq}` of `Abs`, both infinities and nothing else); false on integers
    and bool."""
    shape, dt = ctx.out()
    x = ctx.t(a["self"])
    if ctx.dtype(x) not in FLOAT_DTYPES:
        return ctx.const(False, dt, shape)
    inf = ctx.const(float("inf"), ctx.dtype(x))
    return ctx.cast(ctx.add("Compare", (ctx.add("Activation", (x,), {"kind": "Abs"}), inf), {"op": "Eq"}), dt)


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


# --------------------------------------------------------------------------- version 3's Binary ops

def _binary_of(op: str, first: str = "self", second: str = "other") -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        dt = ctx.out_dtype()
        return ctx.add("Binary", (ctx.operand(a[first], dt), ctx.operand(a[second], dt)), {"op": op})
    return handler


_BINARY_MATH: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("FloorDiv", ("floor_divide.default", "floor_divide.Scalar")),
    ("Rem", ("remainder.Tensor", "remainder.Scalar", "remainder.Scalar_Tensor")),
    ("Fmod", ("fmod.Tensor", "fmod.Scalar")),
    ("Atan2", ("atan2.default",)),
    ("Hypot", ("hypot.default",)),
    ("Copysign", ("copysign.Tensor", "copysign.Scalar")),
    ("Xlogy", ("xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other")),
    ("FMax", ("fmax.default",)),
    ("FMin", ("fmin.default",)),
)
for _op, _names in _BINARY_MATH:
    handles(*_names)(_binary_of(_op))


# --------------------------------------------------------------------------- version 3's activation kinds

_KINDS = {"sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "exp2": "Exp2",
          "expm1": "Expm1", "log1p": "Log1p", "trunc": "Trunc", "fix": "Trunc",
          "log2": "Log2", "log10": "Log10", "asin": "Asin", "acos": "Acos", "erfinv": "Erfinv",
          "erfc": "Erfc"}
for _name, _kind in _KINDS.items():
    handles(f"{_name}.default")(_activation(_kind))


# --------------------------------------------------------------------------- empty tensors and copies

@handles("empty_like.default", "empty_permuted.default", "empty.memory_format", "new_empty.default",
         "empty_strided.default", "new_empty_strided.default")
def _empty(ctx: Context, a: dict[str, Any]) -> int:
    """An empty tensor's contents are unspecified: zeros of its shape and dtype (a layout or
    permutation is a matter of strides, which the format does not have)."""
    shape, dt = ctx.out()
    return ctx.const(0, dt, shape)


@handles("copy.default")
def _copy(ctx: Context, a: dict[str, Any]) -> int:
    """copy(self, src): src cast to self's dtype and broadcast to its shape (self's values unused)."""
    shape, dt = ctx.out()
    return ctx.expand(ctx.cast(ctx.t(a["src"]), dt), shape)


# --------------------------------------------------------------------------- logit

def _opmath(dt: str) -> str:
    """The dtype torch's logit kernels compute in: float32 for f16/bf16 (they round once)."""
    return "f64" if dt == "f64" else "f32"


@handles("logit.default")
def _logit(ctx: Context, a: dict[str, Any]) -> int:
    """logit(x, eps) = log(z / (1 - z)), z = clamp(x, eps, 1 - eps) (no clamp for eps None), in the
    kernel's opmath dtype and rounded once."""
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"logit of {dt}")
    wide = _opmath(dt)
    x = ctx.cast(ctx.t(a["self"]), wide)
    eps = a.get("eps")
    if eps is not None:
        x = ctx.add("Binary", (x, ctx.const(float(eps), wide)), {"op": "Max"})
        x = ctx.add("Binary", (x, ctx.const(1.0 - float(eps), wide)), {"op": "Min"})
    return ctx.cast(ctx.add("Activation", (x,), {"kind": "Logit"}), dt)


@handles("logit_backward.default")
def _logit_backward(ctx: Context, a: dict[str, Any]) -> int:
    """ActivationBackward{Logit}(x, grad); with eps, 0 where x < eps or x > 1 - eps (torch's kernel,
    its bounds compared in the opmath dtype)."""
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"a gradient of dtype {dt}")
    x = ctx.expand(ctx.cast(ctx.t(a["self"]), dt), shape)
    dy = ctx.expand(ctx.cast(ctx.t(a["grad_output"]), dt), shape)
    g = ctx.add("ActivationBackward", (x, dy), {"kind": "Logit"})
    eps = a.get("eps")
    if eps is None:
        return g
    wide = _opmath(dt)
    xw = ctx.cast(x, wide)
    low = ctx.add("Compare", (xw, ctx.const(float(eps), wide)), {"op": "Lt"})
    high = ctx.add("Compare", (xw, ctx.const(1.0 - float(eps), wide)), {"op": "Gt"})
    outside = ctx.add("Binary", (low, high), {"op": "Or"})
    return ctx.add("Where", (outside, ctx.const(0, dt), g))


# --------------------------------------------------------------------------- lerp, round(decimals)

@handles("lerp.Scalar", "lerp.Tensor")
def _lerp(ctx: Context, a: dict[str, Any]) -> int:
    """torch's kernel: where(|w| < 1/2, self + w (end - self), end - (end - self)(1 - w)), in the
    opmath dtype (float32 for f16/bf16), rounded once."""
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"lerp of {dt}")
    wide = _opmath(dt)
    x, end, w = (ctx.operand(a[k], wide) for k in ("self", "end", "weight"))
    diff = ctx.add("Binary", (end, x), {"op": "Sub"})
    near = ctx.add("Binary", (x, ctx.add("Binary", (w, diff), {"op": "Mul"})), {"op": "Add"})
    one_minus = ctx.add("Binary", (ctx.const(1, wide), w), {"op": "Sub"})
    far = ctx.add("Binary", (end, ctx.add("Binary", (diff, one_minus), {"op": "Mul"})), {"op": "Sub"})
    small = ctx.add("Compare", (ctx.add("Activation", (w,), {"kind": "Abs"}), ctx.const(0.5, wide)), {"op": "Lt"})
    return ctx.cast(ctx.add("Where", (small, near, far)), dt)


@handles("ldexp.Tensor")
def _ldexp(ctx: Context, a: dict[str, Any]) -> int:
    """ldexp(x, e) = x 2^e, aten's own definition (`mul(x, pow(2.0, e))`), in the opmath dtype (float32
    for f16/bf16: eager's f16 ldexp(4, -25) is 2^-23, not 0) and rounded once. A Pow of 2: exact for
    an integer e, where an Exp2 expansion (exp(e ln 2)) need not be."""
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"ldexp of {dt}")
    wide = _opmath(dt)
    x, e = ctx.operand(a["self"], wide), ctx.operand(a["other"], wide)
    return ctx.cast(ctx.add("Binary", (x, ctx.add("Binary", (ctx.const(2, wide), e), {"op": "Pow"})), {"op": "Mul"}), dt)


@handles("round.decimals")
def _round_decimals(ctx: Context, a: dict[str, Any]) -> int:
    """torch's kernel, in the tensor's dtype: round(x * 10^d) / 10^d for d > 0, round(x / 10^-d) * 10^-d
    for d <= 0 (Round is half to even, as nearbyint)."""
    shape, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"round(decimals) of {dt}")
    d = int(a["decimals"])
    x = ctx.cast(ctx.t(a["self"]), dt)
    ten = ctx.const(10.0 ** abs(d), dt)
    first, second = ("Mul", "Div") if d > 0 else ("Div", "Mul")
    r = ctx.add("Activation", (ctx.add("Binary", (x, ten), {"op": first}),), {"kind": "Round"})
    return ctx.add("Binary", (r, ten), {"op": second})


# --------------------------------------------------------------------------- frac, nan_to_num, fill

@handles("frac.default")
def _frac(ctx: Context, a: dict[str, Any]) -> int:
    """x - trunc(x), torch's definition (exact: the difference is representable)."""
    dt = ctx.out_dtype()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"frac of {dt}")
    x = ctx.cast(ctx.t(a["self"]), dt)
    return ctx.add("Binary", (x, ctx.add("Activation", (x,), {"kind": "Trunc"})), {"op": "Sub"})


@handles("nan_to_num.default")
def _nan_to_num(ctx: Context, a: dict[str, Any]) -> int:
    """NaN to `nan` (0), +inf to `posinf` and -inf to `neginf` (the dtype's largest and lowest finite
    values by default): Where of Compares, torch's definition; integers and bool pass unchanged."""
    shape, dt = ctx.out()
    x = ctx.cast(ctx.t(a["self"]), dt)
    if dt not in FLOAT_DTYPES:
        return x
    import torch

    from .common import FORMAT_TO_TORCH
    info = torch.finfo(FORMAT_TO_TORCH[dt])
    nan, pos, neg = (a.get("nan"), a.get("posinf"), a.get("neginf"))
    values = (0.0 if nan is None else nan, info.max if pos is None else pos, info.min if neg is None else neg)
    out = x
    for v, test in zip(values[::-1], ("neginf", "posinf", "nan")):
        if test == "nan":
            cond = ctx.add("Compare", (x, x), {"op": "Ne"})
        else:
            cond = ctx.add("Compare", (x, ctx.const(float("inf") if test == "posinf" else float("-inf"), dt)),
                           {"op": "Eq"})
        out = ctx.add("Where", (cond, ctx.const(float(v), dt), out))
    return out


@handles("fill.Tensor")
def _fill_tensor(ctx: Context, a: dict[str, Any]) -> int:
    """fill(self, value): the 0-d value cast to self's dtype and expanded to its shape."""
    shape, dt = ctx.out()
    return ctx.expand(ctx.cast(ctx.t(a["value"]), dt), shape)
