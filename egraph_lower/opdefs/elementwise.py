"""The elementwise ops: Binary, Compare, Where, Cast."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import (_BOOL, Args, Attrs, _convert, _f, _finish, _i, _iadd, _idiv, _imul, _ipow, _is_float, _isub,
                      _round_float, _wrap)
from ..dtypes import DTYPES, FLOAT_DTYPES, INT_DTYPES, to_numpy
from ..errors import LowerError
from . import binary_math as BM
from .arraylib import NUMPY
from .base import Attr, Ctor, Meta, OpDef, head, string
from .meta import elementwise_shape, one_of, same_dtype, shape2

# version 1's seven, then version 3's (binary_math.py)
BASE_BINARY_OPS: tuple[str, ...] = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")
BINARY_OPS: tuple[str, ...] = BASE_BINARY_OPS + BM.NEW_OPS
COMPARE_OPS: tuple[str, ...] = ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")
# the rule notation's spelling of each
BINARY_HEADS = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div", "max": "Max", "min": "Min", "pow": "Pow",
                **BM.HEADS}
COMPARE_HEADS = {"==": "Eq", "!=": "Ne", "<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge"}


_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.true_divide,
    "Max": np.maximum,
    "Min": np.minimum,
    "Pow": np.power,
}



def _bcast_views(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.broadcast_arrays(a, b)
    return a, b



_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": lambda a, b: _iadd(*_bcast_views(a, b)),
    "Sub": lambda a, b: _isub(*_bcast_views(a, b)),
    "Mul": lambda a, b: _imul(*_bcast_views(a, b)),
    "Div": _idiv,
    "Max": np.maximum,
    "Min": np.minimum,
    "Pow": _ipow,
}


_BOOL_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Max": np.logical_or,
    "Min": np.logical_and,
    "Mul": np.logical_and,
}


def binary_ops_on(dtype: str) -> tuple[str, ...]:
    """The Binary ops defined on `dtype`."""
    if dtype == "bool":
        return tuple(BM.BOOL)
    base = BASE_BINARY_OPS if dtype in FLOAT_DTYPES or dtype in INT_DTYPES else ()
    return base + tuple(op for op in BM.NEW_OPS if BM.defined_on(op, dtype))


def _op_binary_new(op: str, a: Any, b: Any, dtype: str) -> np.ndarray:
    """A version-3 op: the float formula in float64 rounded once, or the integer one in int64."""
    if not BM.defined_on(op, dtype):
        raise LowerError(f"Binary {op} is not defined on {dtype}")
    with np.errstate(all="ignore"):
        if dtype in FLOAT_DTYPES:
            x, y = np.broadcast_arrays(_f(a), _f(b))
            return _round_float(np.asarray(BM.FLOAT[op](NUMPY, x, y), dtype=np.float64), dtype)
        if dtype in INT_DTYPES:
            x, y = np.broadcast_arrays(_i(a), _i(b))
            return _wrap(BM.INTEGER[op](NUMPY, x, y), dtype)
        x, y = np.broadcast_arrays(np.asarray(a) != 0, np.asarray(b) != 0)
        return np.asarray(BM.BOOL[op](NUMPY, x, y), dtype=_BOOL)


def _op_binary(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    op = attrs["op"]
    a, b = args
    if op in BM.NEW_OPS:
        return _op_binary_new(op, a, b, dtype)
    table: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]
    conv: Callable[[Any], np.ndarray]
    fin: Callable[[Any, str], np.ndarray]
    if dtype in FLOAT_DTYPES:
        table, conv, fin = _FLOAT_BINARY, _f, _round_float
    elif dtype in INT_DTYPES:
        table, conv, fin = _INT_BINARY, _i, _wrap
    else:
        table, conv, fin = _BOOL_BINARY, lambda v: np.asarray(v) != 0, lambda v, d: np.asarray(v, dtype=_BOOL)
    if op not in table:
        raise LowerError(f"Binary {op} is not defined on {dtype}")
    return fin(table[op](conv(a), conv(b)), dtype)


_COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Eq": np.equal,
    "Ne": np.not_equal,
    "Lt": np.less,
    "Le": np.less_equal,
    "Gt": np.greater,
    "Ge": np.greater_equal,
}


def _op_compare(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    op = attrs["op"]
    if op not in _COMPARE:
        raise LowerError(f"unknown Compare op {op!r}")
    a, b = (np.asarray(v) for v in args)
    conv = _f if (_is_float(a) or _is_float(b)) else _i
    return _finish(_COMPARE[op](conv(a), conv(b)), dtype)


def _op_where(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    cond, a, b = (np.asarray(v) for v in args)
    if cond.dtype != _BOOL:
        cond = _convert(cond, "bool")
    return np.asarray(np.where(cond, _convert(a, dtype), _convert(b, dtype)), dtype=to_numpy(dtype))


def _op_cast(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    to = attrs["to"]
    if to != dtype:
        raise LowerError(f"Cast to {to!r} on a node of dtype {dtype}")
    return _convert(np.asarray(args[0]), dtype)


def _binary(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    dt = same_dtype(da, db)
    op = attrs["op"]
    if op in BM.NEW_OPS:
        if dt is not None and not BM.defined_on(op, dt):
            on = "bool and integers" if op in BM.LOGICAL_OPS else "floats" if op in BM.FLOAT_ONLY_OPS else \
                "floats and integers"
            raise ValueError(f"{op} on {dt}: {op} is defined on {on} only")
    elif dt == "bool":
        raise ValueError(f"{op} on bool: no arithmetic on bool (Cast first)")
    return shape2(sa, sb), dt


def _compare(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    same_dtype(da, db)
    return shape2(sa, sb), "bool"


def _where(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sc, dc), (sa, da), (sb, db) = ins
    if dc is not None and dc != "bool":
        raise ValueError(f"cond must be bool, got {dc}")
    return (sa if sc == sa == sb else elementwise_shape((sc, sa, sb))), same_dtype(da, db)


def _cast(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return ins[0][0], attrs["to"]


OPS: tuple[OpDef, ...] = (
    OpDef("Binary", ("a", "b"), (Attr("op", one_of(BINARY_OPS, "binary op")),), _binary, _op_binary,
          (Ctor("Bin", "Binary", (string("op"),), 2, tuple(head(h, op=o) for h, o in BINARY_HEADS.items())),),
          domain="binary", torch="binary",
          sample=({"op": "Add"}, (((2, 3), "f32"), ((3,), "f32")))),
    OpDef("Compare", ("a", "b"), (Attr("op", one_of(COMPARE_OPS, "compare op")),), _compare, _op_compare,
          (Ctor("Cmp", "Compare", (string("op"),), 2, tuple(head(h, op=o) for h, o in COMPARE_HEADS.items())),),
          domain=None, torch="compare",
          sample=({"op": "Lt"}, (((2, 3), "f32"), ((3,), "f32")))),
    OpDef("Where", ("cond", "a", "b"), (), _where, _op_where, (Ctor("Where", "Where", (), 3, (head("where"),)),),
          domain=None, torch="where",
          sample=({}, (((2, 3), "bool"), ((2, 3), "f32"), ((), None)))),
    OpDef("Cast", ("x",), (Attr("to", one_of(tuple(DTYPES), "'to' dtype")),), _cast, _op_cast,
          (Ctor("Cast", "Cast", (string("to"),), 1, (head("Cast"),)),), domain=None, torch="cast",
          sample=({"to": "f16"}, (((2, 3), "f32"),))),
)
