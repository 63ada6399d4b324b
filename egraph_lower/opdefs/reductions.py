"""Reductions and scans of format version 3: aten's var / var_mean, max.dim / min.dim / argmax / argmin,
cumsum / cumprod (prod is `Reduce{Prod}`, `reduce.py`).

    Var{axes, correction, keep_dim}(x)   = sum_axes((x - mean_axes x)^2) / max(n - correction, 0), n the
                                           count of the reduced elements (aten's: n - correction <= 0
                                           divides by 0, inf, or NaN where the sum is 0); floats only
    ArgReduce{op: Max | Min, axis, keep_dim}(x)
                                         = the index (i64) along `axis` of the first maximum (minimum);
                                           a NaN counts as both, so the first NaN where there is one
                                           (aten's argmax / max.dim on CPU); an empty axis is refused
    Scan{op: Add | Mul | Max | Min, axis}(x)
                                         = the inclusive prefix sum (product, max, min) along `axis`:
                                           out_i = x_0 + ... + x_i; integers wrap as int64 (the importer
                                           casts to aten's result dtype first); a NaN stays in a max or min
                                           from where it is on; not on bool, rank >= 1
    ArgScan{op: Max | Min, axis}(x)      = i64: the index of out_i of Scan{Max | Min} as aten's cummax and
                                           cummin give it: the last j <= i with x_j == out_i (the last of
                                           ties), or the last NaN of the prefix where there is one
    LogCumSumExp{axis}(x)                = log(exp(x_0) + ... + exp(x_i)) along `axis` (aten's logcumsumexp):
                                           floats, rank >= 1; -inf where every term is -inf, +inf where one
                                           is, NaN where one is NaN

The e-graph fields beyond the attributes, for the rules: Var's `div` (max(n - correction, 0), a float);
ArgReduce's `axes` ([axis] normalised) and `size` (the axis' length, the index no element has); Scan's
`axis` normalised and `jaxis` (axis + 1), x's shape `xshape`, `bshape` (x's shape with a 1 inserted
before the axis: x as the j of out_i), `ishape` (a 1 inserted after it: x as the i) and `tshape` (the axis' length inserted: [.., n_i, n_j, ..]),
`jaxes` ([axis + 1]), `pnq` ([P, n, Q]: x as a batch of [n, Q] matrices), `nn` ([n, n]) and `all`
(every axis of x).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _finish, _i, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import F64, I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text, number, string
from .meta import attr_check, boolean, int_list, is_int, one_of
from .norm import centred
from .reduce import _norm_axes

ARG_OPS: tuple[str, ...] = ("Max", "Min")
SCAN_OPS: tuple[str, ...] = ("Add", "Mul", "Max", "Min")


def _axis(axis: Any, rank: int, op: str) -> int:
    if not is_int(axis) or not -max(rank, 1) <= axis < max(rank, 1):
        raise ValueError(f"{op} axis {axis!r} is out of range for rank {rank}")
    return int(axis) % rank if rank else 0


def _kept(shape: tuple[int, ...], axes: Sequence[int], keep: bool) -> tuple[int, ...]:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    return math.prod(shape[a] for a in axes)


def divisor(count: int, correction: float) -> float:
    """aten's divisor of the variance: max(n - correction, 0)."""
    return max(float(count) - float(correction), 0.0)


# ---- Var

def _var(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"Var needs a float dtype, got {dt}")
    try:
        axes = _norm_axes(attrs["axes"], len(shape))
    except LowerError as e:
        raise ValueError(str(e).removeprefix("Reduce ")) from None
    return _kept(shape, axes, bool(attrs.get("keep_dim", False))), dt


def _op_var(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"Var needs a float dtype, not {dtype}")
    x = _f(args[0])
    axes = _norm_axes(attrs["axes"], x.ndim)
    keep = bool(attrs.get("keep_dim", False))
    with np.errstate(all="ignore"):
        d = centred(x, axes) if x.size else x
        s = np.sum(d * d, axis=axes, keepdims=keep)
        return _round_float(s / divisor(_count(x.shape, axes), attrs["correction"]), dtype)


def _var_div(attrs: Mapping[str, Any], shape: tuple[int, ...]) -> float:
    axes = _norm_axes(attrs["axes"], len(shape))
    return divisor(_count(shape, axes), attrs["correction"])


def _encode_axes(axes: Any, rank: int) -> str:
    return ints_text(sorted({ax % rank if rank else ax for ax in axes}))


def _decode_ints(text: Any) -> Any:
    import json

    return json.loads(text)


_VAR_FIELDS = (Field("axes", STRING, _encode_axes, _decode_ints), number("correction"),
               Field("keep_dim", I64, lambda v, rank: int(bool(v)), bool, default=False),
               Field("div", F64, _var_div, None, source=WHOLE, shaped=True))
_CORRECTION = Attr("correction", attr_check("correction", lambda v: isinstance(v, (int, float)) and not
                                            isinstance(v, bool) and math.isfinite(v) and v >= 0,
                                            "a finite number >= 0"))


# ---- ArgReduce

def _arg_reduce(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if dt == "bool":
        raise ValueError("ArgReduce on bool: Cast to a number dtype first")
    axis = _axis(attrs["axis"], len(shape), "ArgReduce")
    if shape and shape[axis] == 0:
        raise ValueError(f"ArgReduce over an empty axis {axis}")
    if not shape:
        return (), "i64"
    return _kept(shape, (axis,), bool(attrs.get("keep_dim", False))), "i64"


def arg_reduce(x: np.ndarray, op: str, axis: int, keep: bool) -> np.ndarray:
    """The first index of the max (min) along axis, a NaN counting as both (float64 or int64 x)."""
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        best = np.where(nan, np.inf if op == "Max" else -np.inf, x)  # a NaN beats every number
        r = np.argmax(best, axis=axis) if op == "Max" else np.argmin(best, axis=axis)
        first_nan = np.argmax(nan, axis=axis)
        r = np.where(np.any(nan, axis=axis), first_nan, r)
        # argmax of a row of +inf and NaN: the first NaN; of a row with no NaN the first extreme
    else:
        r = np.argmax(x, axis=axis) if op == "Max" else np.argmin(x, axis=axis)
    r = np.asarray(r, dtype=np.int64)
    return np.expand_dims(r, axis) if keep else r


def _op_arg_reduce(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    if x.dtype == np.bool_:
        raise LowerError("ArgReduce on bool: Cast to a number dtype first")
    if x.ndim and x.shape[int(attrs["axis"]) % x.ndim] == 0:
        raise LowerError("ArgReduce over an empty axis")
    v = _f(x) if x.dtype.kind == "f" else _i(x)
    axis = int(attrs["axis"]) % x.ndim if x.ndim else 0
    return arg_reduce(v, attrs["op"], axis, bool(attrs.get("keep_dim", False)))


def _arg_axes(axis: Any, rank: int) -> str:
    return ints_text([int(axis) % rank if rank else 0])


_ARG_FIELDS = (string("op"), integer("axis"), Field("keep_dim", I64, lambda v, rank: int(bool(v)), bool, default=False),
               Field("axes", STRING, _arg_axes, None, source="axis"),
               Field("size", F64, lambda axis, shape: float(shape[int(axis) % len(shape)] if shape else 1), None,
                     source="axis", shaped=True))


# ---- Scan

def _prefix(name: str, floats: bool = False, index: bool = False) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    """The shape function of a scan along `axis` (Scan, ArgScan, LogCumSumExp): rank >= 1 (a 0-d scan
    is its input), a number dtype (a float one where `floats`), the input's shape, i64 for an index."""
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape, dt = ins[0]
        if floats and dt is not None and dt not in FLOAT_DTYPES:
            raise ValueError(f"{name} needs a float dtype, got {dt}")
        if dt == "bool":
            raise ValueError(f"{name} on bool: Cast to a number dtype first")
        if not shape:
            raise ValueError(f"{name} needs rank >= 1 (a 0-d scan is its input)")
        _axis(attrs["axis"], len(shape), name)
        return shape, "i64" if index else dt
    return infer


def scan(x: np.ndarray, op: str, axis: int) -> np.ndarray:
    """The inclusive prefix sum, product, max or min along axis (float64 or int64, which wraps)."""
    with np.errstate(all="ignore"):
        if op == "Max":
            return np.maximum.accumulate(x, axis=axis)  # np.maximum propagates NaN
        if op == "Min":
            return np.minimum.accumulate(x, axis=axis)
        return np.cumsum(x, axis=axis) if op == "Add" else np.cumprod(x, axis=axis)


def arg_scan(x: np.ndarray, op: str, axis: int) -> np.ndarray:
    """aten's cummax / cummin indices: out = x_i, idx = i where x_i is NaN or (out is not NaN and x_i >= out
    (<= for Min)); the index kept otherwise."""
    v = np.moveaxis(x, axis, 0)
    idx = np.zeros(v.shape, dtype=np.int64)
    if v.shape[0] == 0:
        return np.moveaxis(idx, 0, axis)
    best, cur = v[0].copy(), np.zeros(v.shape[1:], dtype=np.int64)
    for i in range(v.shape[0]):
        xi = v[i]
        with np.errstate(invalid="ignore"):
            better = (xi >= best) if op == "Max" else (xi <= best)
        take = np.isnan(xi) | (~np.isnan(best) & better) if v.dtype.kind == "f" else better
        best = np.where(take, xi, best)
        cur = np.where(take, i, cur)
        idx[i] = cur
    return np.moveaxis(idx, 0, axis)


def _op_scan(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    if dtype == "bool" or x.ndim == 0:
        raise LowerError("Scan needs a number dtype and rank >= 1")
    axis = int(attrs["axis"]) % x.ndim
    v = _f(x) if dtype in FLOAT_DTYPES else _i(x)
    return _finish(scan(v, attrs["op"], axis), dtype)


def _scan_axis(axis: Any, shape: tuple[int, ...]) -> int:
    return int(axis) % len(shape) if shape else 0


def _shape_field(name: str, fn: Any) -> Field:
    return Field(name, STRING, lambda axis, shape: ints_text(fn(_scan_axis(axis, shape), tuple(shape))),
                 None, source="axis", shaped=True)


_SCAN_FIELDS = (string("op"), Field("axis", I64, lambda v, shape: _scan_axis(v, shape), int, shaped=True),
                Field("jaxis", I64, lambda axis, shape: _scan_axis(axis, shape) + 1, None, source="axis", shaped=True),
                _shape_field("xshape", lambda a, s: s),
                _shape_field("bshape", lambda a, s: s[:a] + (1, s[a]) + s[a + 1:]),
                _shape_field("ishape", lambda a, s: s[:a + 1] + (1,) + s[a + 1:]),
                _shape_field("tshape", lambda a, s: s[:a] + (s[a], s[a]) + s[a + 1:]),
                _shape_field("jaxes", lambda a, s: [a + 1]),
                _shape_field("pnq", lambda a, s: [math.prod(s[:a]), s[a], math.prod(s[a + 1:])]),
                _shape_field("nn", lambda a, s: [s[a], s[a]]),
                _shape_field("all", lambda a, s: range(len(s))))

def _op_arg_scan(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    if x.dtype == np.bool_ or x.ndim == 0:
        raise LowerError("ArgScan needs a number dtype and rank >= 1")
    v = _f(x) if x.dtype.kind == "f" else _i(x)
    return arg_scan(v, attrs["op"], int(attrs["axis"]) % x.ndim)


def _op_log_cum_sum_exp(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    if dtype not in FLOAT_DTYPES or x.ndim == 0:
        raise LowerError("LogCumSumExp needs a float dtype and rank >= 1")
    with np.errstate(all="ignore"):
        return _round_float(np.logaddexp.accumulate(_f(x), axis=int(attrs["axis"]) % x.ndim), dtype)


_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_KEEP = Attr("keep_dim", boolean("keep_dim"), required=False)

OPS: tuple[OpDef, ...] = (
    OpDef("Var", ("x",), (Attr("axes", int_list("axes")), _CORRECTION, _KEEP), _var, _op_var,
          (Ctor("Var", "Var", _VAR_FIELDS, 1, (head("Var"),)),), domain="reductions", torch="var",
          sample=({"axes": [-1], "correction": 1, "keep_dim": True}, (((2, 3), "f32"),))),
    OpDef("ArgReduce", ("x",), (Attr("op", one_of(ARG_OPS, "ArgReduce op")), _AXIS, _KEEP), _arg_reduce,
          _op_arg_reduce,
          (Ctor("ArgReduce", "ArgReduce", _ARG_FIELDS, 1, tuple(head(f"ArgReduce.{o}", op=o) for o in ARG_OPS)),),
          domain="reductions", torch="arg_reduce",
          sample=({"op": "Max", "axis": 1, "keep_dim": False}, (((2, 3), "f32"),))),
    OpDef("Scan", ("x",), (Attr("op", one_of(SCAN_OPS, "Scan op")), _AXIS), _prefix("Scan"), _op_scan,
          (Ctor("Scan", "Scan", _SCAN_FIELDS, 1, tuple(head(f"Scan.{o}", op=o) for o in SCAN_OPS)),),
          domain="reductions", torch="scan", sample=({"op": "Add", "axis": 0}, (((3, 2), "f32"),))),
    OpDef("ArgScan", ("x",), (Attr("op", one_of(ARG_OPS, "ArgScan op")), _AXIS), _prefix("ArgScan", index=True),
          _op_arg_scan,
          (Ctor("ArgScan", "ArgScan", _SCAN_FIELDS, 1, tuple(head(f"ArgScan.{o}", op=o) for o in ARG_OPS)),),
          domain="reductions", torch="arg_scan", sample=({"op": "Max", "axis": 1}, (((3, 2), "f32"),))),
    OpDef("LogCumSumExp", ("x",), (_AXIS,), _prefix("LogCumSumExp", floats=True), _op_log_cum_sum_exp,
          (Ctor("LogCumSumExp", "LogCumSumExp", _SCAN_FIELDS[1:], 1, (head("LogCumSumExp"),)),),
          domain="reductions", torch="log_cum_sum_exp", sample=({"axis": -1}, (((3, 2), "f32"),))),
)
