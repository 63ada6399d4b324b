"""The Binary ops of format version 3, each written once against an array namespace.

`xp` is `arraylib.NUMPY` (the float64 reference, int64 for the integer forms) or the torch
namespace of `egraph_lower/torch/kernels_acts.py` (the kernel, f16/bf16 widened to float32 and
rounded once), so the reference and the kernel compute the same expression. The conventions are
PyTorch's kernels' (torch 2.13, CPU), checked against them in tests/test_math.py:

- `And`, `Or`, `Xor`: logical on bool, bitwise (two's complement) on integers; not on floats.
- `FloorDiv`: a / b rounded toward -inf, as `torch.div(a, b, rounding_mode="floor")`: on floats
  through fmod (so that it is the exact floor of the real quotient where a / b rounds up to an
  integer), a / b where b == 0 (+-inf or nan), a signed zero of a / b's sign where the quotient
  is 0. `Rem`: a - b * floor(a / b), the sign of b (`torch.remainder`): fmod(a, b) plus b where
  the two signs differ and it is not 0. `Fmod`: a - b * trunc(a / b), the sign of a (C's fmod).
  On integers the same definitions exactly; where b == 0 each gives 0 (torch raises).
- `Atan2(a, b)`: the angle of the point (b, a), C's atan2 (signed zeros and infinities as C).
  `Hypot`: sqrt(a^2 + b^2) without overflow; inf if either is infinite, even with a nan.
  `Copysign`: |a| with b's sign bit (so -0.0 and -nan count as negative).
- `Xlogy(a, b)`: a * log(b), 0 where a == 0 unless b is nan (torch.xlogy).
- `FMax`, `FMin`: max and min ignoring a nan (nan only where both are), C's fmax/fmin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Formula = Callable[[Any, Any, Any], Any]  # (xp, a, b) -> the op's value

LOGICAL_OPS: tuple[str, ...] = ("And", "Or", "Xor")  # bool and integers only
DIVISION_OPS: tuple[str, ...] = ("FloorDiv", "Rem", "Fmod")  # floats and integers
FLOAT_ONLY_OPS: tuple[str, ...] = ("Atan2", "Hypot", "Copysign", "Xlogy", "FMax", "FMin")
NEW_OPS: tuple[str, ...] = LOGICAL_OPS + DIVISION_OPS + FLOAT_ONLY_OPS
# the rule notation's spelling of each
HEADS: dict[str, str] = {"and": "And", "or": "Or", "xor": "Xor", "floordiv": "FloorDiv", "rem": "Rem",
                         "fmod": "Fmod", "atan2": "Atan2", "hypot": "Hypot", "copysign": "Copysign",
                         "xlogy": "Xlogy", "fmax": "FMax", "fmin": "FMin"}


def _floor_div(xp: Any, a: Any, b: Any) -> Any:
    """torch's div_floor_floating (c10/util/generic_math.h), elementwise."""
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    div = xp.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    fl = xp.floor(div)
    fl = xp.where(div - fl > 0.5, fl + 1.0, fl)
    out = xp.where(div != 0, fl, xp.copysign(xp.zeros_like(a), a / b))
    return xp.where(b == 0, a / b, out)


def _rem(xp: Any, a: Any, b: Any) -> Any:
    mod = xp.fmod(a, b)
    return xp.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def _xlogy(xp: Any, a: Any, b: Any) -> Any:
    return xp.where(xp.isnan(b), b, xp.where(a == 0, 0.0, a * xp.log(b)))


FLOAT: dict[str, Formula] = {
    "FloorDiv": _floor_div,
    "Rem": _rem,
    "Fmod": lambda xp, a, b: xp.fmod(a, b),
    "Atan2": lambda xp, a, b: xp.atan2(a, b),
    "Hypot": lambda xp, a, b: xp.hypot(a, b),
    "Copysign": lambda xp, a, b: xp.copysign(a, b),
    "Xlogy": _xlogy,
    "FMax": lambda xp, a, b: xp.fmax(a, b),
    "FMin": lambda xp, a, b: xp.fmin(a, b),
}


def _safe(xp: Any, b: Any) -> Any:
    return xp.where(b == 0, xp.ones_like(b), b)


def _int_floor_div(xp: Any, a: Any, b: Any) -> Any:
    q = xp.floor_divide(a, _safe(xp, b))
    return xp.where(b == 0, xp.zeros_like(q), q)


def _int_fmod(xp: Any, a: Any, b: Any) -> Any:
    r = xp.fmod(a, _safe(xp, b))
    return xp.where(b == 0, xp.zeros_like(r), r)


def _int_rem(xp: Any, a: Any, b: Any) -> Any:
    r = _int_fmod(xp, a, b)
    return xp.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)


INTEGER: dict[str, Formula] = {
    "And": lambda xp, a, b: xp.bitwise_and(a, b),
    "Or": lambda xp, a, b: xp.bitwise_or(a, b),
    "Xor": lambda xp, a, b: xp.bitwise_xor(a, b),
    "FloorDiv": _int_floor_div,
    "Rem": _int_rem,
    "Fmod": _int_fmod,
}
BOOL: dict[str, Formula] = {op: INTEGER[op] for op in LOGICAL_OPS}


def defined_on(op: str, dtype: str) -> bool:
    """Whether the new Binary `op` has a value on `dtype` (f*, i*, bool)."""
    if dtype == "bool":
        return op in BOOL
    if dtype.startswith("i"):
        return op in INTEGER
    return op in FLOAT
