"""Values that enter a graph: fed arrays of Input/Param nodes and Constant values.

Both are converted to the node's dtype and checked against its shape, with
one-line LowerErrors that name the input (`_feed_value`, `_op_leaf`,
`_op_constant`; evaluate.py runs them as ops).

Feeds
    `Input`/`Param` nodes take feeds[attrs.name]; unused feeds are ignored.
    A feed must have exactly the node's shape. It is converted to the node's
    dtype when that loses nothing a user would want: float -> float rounds
    to the node's dtype (once); int/bool -> float converts; int -> int must be
    in range; float -> int must be finite, integral and in range; a bool
    input takes bool feeds or numbers that are all 0 or 1. Anything else
    (complex, strings, objects, out-of-range values) is a LowerError that
    names the node, the input and the problem.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .arrays import _F64, Args, Attrs, _f, _is_float, _one_line, _round_float
from .dtypes import FLOAT_DTYPES, bf16, is_bf16, to_numpy
from .errors import LowerError


def _feed_value(name: Any, value: Any, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    """A fed array converted to `dtype` and checked against `shape` (messages name the input)."""
    what = f"feed {name!r}"
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise LowerError(f"{what} is not an array: {_one_line(e)}") from None
    if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and arr.dtype.fields is None and not is_bf16(arr.dtype):
        arr = arr.view(bf16())
    if shape is not None and arr.shape != tuple(shape):
        raise LowerError(f"{what} has shape {list(arr.shape)}, expected {list(shape)}")
    nd = to_numpy(dtype)
    if arr.dtype == nd:
        return arr
    src_float = _is_float(arr)
    if not (src_float or arr.dtype.kind in "biu"):
        raise LowerError(f"{what} has dtype {arr.dtype}, expected {dtype}")
    if dtype in FLOAT_DTYPES:
        return _round_float(_f(arr), dtype)
    if dtype == "bool":
        v = _f(arr) if src_float else arr
        if not np.all((v == 0) | (v == 1)):
            raise LowerError(f"{what} has values other than 0 and 1, expected {dtype}")
        return np.asarray(v != 0)
    info = np.iinfo(nd)
    if src_float:
        v = _f(arr)
        if not np.all(np.isfinite(v) & (v == np.trunc(v))):
            raise LowerError(f"{what} of dtype {arr.dtype} has non-integral values, expected {dtype}")
        if not np.all((v >= float(info.min)) & (v < float(info.max) + 1.0)):
            raise LowerError(f"{what} has values out of range for {dtype}")
        return v.astype(nd)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise LowerError(f"{what} has values out of range for {dtype}")
    return arr.astype(nd)


def _op_leaf(op: str) -> Callable[[Attrs, Args, str, Sequence[int] | None], np.ndarray]:
    def run(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        if len(args) != 1:
            raise LowerError(f"{op} {attrs.get('name')!r}: pass the fed array as the only argument")
        return _feed_value(attrs.get("name"), args[0], dtype, shape)

    return run


def _op_constant(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    value = attrs["value"]
    nd = to_numpy(dtype)
    try:
        raw = np.array(value)
    except ValueError:
        raise LowerError("Constant value is a ragged nested list") from None
    if raw.dtype.kind not in "biuf":
        raise LowerError("Constant value must be numbers or true/false of one shape, within int64 range")
    if shape is None:
        shape = raw.shape
    shape = tuple(shape)
    if raw.ndim == 0:
        raw = np.broadcast_to(raw, shape)
    elif raw.shape != shape:
        raise LowerError(f"Constant value has shape {list(raw.shape)}, the node has shape {list(shape)}")
    if dtype in FLOAT_DTYPES:
        return _round_float(raw.astype(_F64), dtype)
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.trunc(raw))):
        raise LowerError(f"Constant value is not integral, the dtype is {dtype}")
    if dtype == "bool":
        if not np.all((raw == 0) | (raw == 1)):
            raise LowerError("Constant value of a bool node must be true/false (or 0/1)")
        return raw.astype(nd)
    info = np.iinfo(nd)
    if raw.dtype.kind == "f":
        ok = np.all((raw >= float(info.min)) & (raw < float(info.max) + 1.0))
    else:
        ok = np.all((raw >= info.min) & (raw <= info.max))
    if not ok:
        raise LowerError(f"Constant value is out of range for {dtype}")
    return raw.astype(nd)
