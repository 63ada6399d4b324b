"""Array helpers shared by the reference evaluator's modules (evaluate, activations, feeds, npz).

The NumPy dtypes used throughout; float64 values rounded once to a float
dtype (bfloat16 correctly, `dtypes.round_float`); int64 values wrapped to an
integer dtype; Cast conversion (`_convert`); int64 arithmetic that wraps
modulo 2**64 (Div truncating toward zero, Pow with negative exponents); the
argument types of an op function; one-line error text. What these compute is
specified in evaluate.py's module docstring (Floating point, Integers, Cast).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .dtypes import FLOAT_DTYPES, INT_DTYPES, is_bf16, to_numpy
from .dtypes import round_float as _round_float  # (dtypes' own: round_to uses it too)

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_U64 = np.dtype(np.uint64)
_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_U32 = np.dtype(np.uint32)


# --------------------------------------------------------------------------- rounding


def _wrap(x: Any, dtype: str) -> np.ndarray:
    """int64 values wrapped to the integer `dtype`."""
    return np.asarray(x, dtype=_I64).astype(to_numpy(dtype))


def _finish(x: Any, dtype: str) -> np.ndarray:
    if dtype in FLOAT_DTYPES:
        return _round_float(x, dtype)
    if dtype in INT_DTYPES:
        return _wrap(x, dtype)
    return np.asarray(x, dtype=_BOOL)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or is_bf16(a.dtype)


def _f(a: Any) -> np.ndarray:
    return np.asarray(a).astype(_F64, copy=False)


def _i(a: Any) -> np.ndarray:
    return np.asarray(a).astype(_I64, copy=False)


def _convert(a: np.ndarray, dtype: str) -> np.ndarray:
    """Cast semantics (see evaluate.py's module docstring); a no-op when `a` already has `dtype`."""
    nd = to_numpy(dtype)
    if a.dtype == nd:
        return a
    if dtype in FLOAT_DTYPES:
        return _round_float(_f(a), dtype)
    if dtype == "bool":
        return np.asarray(_f(a) != 0 if _is_float(a) else a != 0)
    # integer target
    if _is_float(a):
        info = np.iinfo(nd)
        t = np.trunc(_f(a))
        lo, hi = float(info.min), float(info.max) + 1.0  # both exact powers of two
        inside = (t >= lo) & (t < hi)
        r = np.where(inside, t, 0.0).astype(_I64)
        r = np.where(t >= hi, info.max, np.where(t < lo, info.min, r))
        return np.asarray(r, dtype=_I64).astype(nd)
    return _wrap(_i(a), dtype)


# --------------------------------------------------------------------------- int64 helpers


def _iadd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.add(a.view(_U64), b.view(_U64))).view(_I64)


def _isub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.subtract(a.view(_U64), b.view(_U64))).view(_I64)


def _imul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.multiply(a.view(_U64), b.view(_U64))).view(_I64)


def _ineg(a: np.ndarray) -> np.ndarray:
    return _isub(np.zeros_like(a), a)


def _idiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Division truncated toward zero; x / 0 = 0."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    bs = np.where(zero, 1, b)
    q = np.asarray(np.floor_divide(a, bs))
    r = _isub(a, _imul(q, bs))
    q = np.where((r != 0) & ((a < 0) != (bs < 0)), q + 1, q)
    return np.asarray(np.where(zero, 0, q), dtype=_I64)


def _ipow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power by squaring, modulo 2**64; negative exponents truncate."""
    a, b = np.broadcast_arrays(a, b)
    neg = b < 0
    e = np.where(neg, 0, b).astype(_U64)
    base = np.array(a, dtype=_I64).view(_U64)
    result = np.ones(a.shape, dtype=_U64)
    one = np.uint64(1)
    while e.any():
        odd = (e & one).astype(bool)
        result = np.where(odd, np.multiply(result, base), result)
        base = np.multiply(base, base)
        e = e >> one
    r = np.asarray(result).view(_I64)
    if neg.any():
        negval = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(neg, negval, r)
    return np.asarray(r, dtype=_I64)


# --------------------------------------------------------------------------- op signatures, error text


Attrs = Mapping[str, Any]
Args = Sequence[np.ndarray]


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__
