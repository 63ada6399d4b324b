"""Shared pieces of the declarations: shape/dtype helpers for `infer`, attribute checks.

Messages name the problem in one line (a user's value shown bounded); the caller adds the node.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Sequence
from typing import Any

from ..dtypes import FLOAT_DTYPES
from .base import Meta

MAX_ELEMENTS = 1 << 62  # a bound on every dimension and element count: int64 arithmetic stays safe

_repr = reprlib.Repr()
_repr.maxlist = _repr.maxstring = _repr.maxother = 40
show = _repr.repr  # a user's value in a message: one line of bounded length


def show_shape(shape: Sequence[int]) -> str:
    return show(list(shape))


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_int_list(v: Any) -> bool:
    return isinstance(v, list) and all(is_int(a) for a in v)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes; ValueError when they do not broadcast."""
    result = tuple(shapes[0]) if shapes else ()
    for shape in shapes[1:]:
        if shape == result:
            continue
        n = max(len(result), len(shape))
        a = (1,) * (n - len(result)) + result
        b = (1,) * (n - len(shape)) + tuple(shape)
        if any(x != y and x != 1 and y != 1 for x, y in zip(a, b)):
            raise ValueError(f"shapes {' and '.join(show_shape(s) for s in shapes)} do not broadcast")
        result = tuple(y if x == 1 else x for x, y in zip(a, b))
    return result


def elementwise_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        shown = " and ".join(show_shape(s) for s in shapes)
        raise ValueError(f"inputs have shapes {shown} that do not broadcast") from None


def shape2(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape of two operands, fast where one is a scalar (a literal) or both agree."""
    if sa == sb or not sb:
        return sa
    return sb if not sa else elementwise_shape((sa, sb))


def join(dtypes: Sequence[str | None]) -> str | None:
    """The one dtype of operands that must agree; literals (None) take it."""
    dt = None
    for d in dtypes:
        if d is not None:
            dt = d if dt is None else same_dtype(dt, d)
    return dt


def same_dtype(da: str | None, db: str | None) -> str | None:
    """`join` of two operands, the hot path of every elementwise e-node."""
    if da is None or da == db:
        return db
    if db is None:
        return da
    raise ValueError(f"inputs have different dtypes {da} and {db} (no implicit promotion: insert a Cast)")


def float_dtype(ins: Sequence[Meta]) -> str | None:
    dt = join([d for _, d in ins])
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"inputs need a float dtype, got {dt}")
    return dt


def same_shape(x: tuple[int, ...], dy: tuple[int, ...], first: str = "x") -> None:
    if x != dy:
        raise ValueError(f"{first} has shape {show_shape(x)} but dy has shape {show_shape(dy)} (they must be equal)")


def check_shape(value: Any, what: str = "shape") -> tuple[int, ...]:
    """A shape as written in a document: a list of non-negative ints of a sane element count."""
    if not is_int_list(value):
        raise ValueError(f"{what} {show(value)} is not a list of non-negative integers")
    if any(d < 0 for d in value):
        hint = " (-1 is not allowed: give every dimension)" if -1 in value else ""
        raise ValueError(f"{what} {show(value)} has a negative dimension{hint}")
    count = 1
    for d in value:  # stops early: a shape of a million huge dims is rejected in linear time
        count = min(count * d, MAX_ELEMENTS + 1)
    if count > MAX_ELEMENTS or any(d > MAX_ELEMENTS for d in value):
        raise ValueError(f"{what} {show(value)} is too large (over 2**62 elements, or a dimension over 2**62)")
    return tuple(value)


def one_of(choices: Sequence[str], what: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if not isinstance(v, str) or v not in choices:
            raise ValueError(f"unknown {what} {show(v)} (expected one of {', '.join(choices)})")
    return check


def attr_check(key: str, ok: Callable[[Any], bool], expected: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if not ok(v):
            raise ValueError(f"attribute {show(key)} must be {expected}, got {show(v)}")
    return check


def _is_eps(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def shape_attr(v: Any) -> None:
    check_shape(v, "attribute 'shape'")


NAME = attr_check("name", lambda v: isinstance(v, str) and v != "", "a non-empty string")
EPS = attr_check("eps", _is_eps, "a finite number >= 0")


def int_list(key: str) -> Callable[[Any], None]:
    return attr_check(key, is_int_list, "a list of integers")


def boolean(key: str) -> Callable[[Any], None]:
    return attr_check(key, lambda v: isinstance(v, bool), "true or false")


def any_value(v: Any) -> None:
    """No check of its own (a Constant's value is checked against the node's shape and dtype)."""
