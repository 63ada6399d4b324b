"""Strided views of a value's elements and masked scatter (format version 3): torch's `as_strided`,
`as_strided_scatter`, `masked_scatter` and its backward op, and the index helpers their rules expand into.

    AsStrided{size, stride, offset}(x)     [size]: out[i] = flat(x)[offset + sum_k i_k stride_k], flat(x) x's
                                           elements in row-major order (x read as a contiguous storage of
                                           its own); every position read in [0, numel x)
    AsStridedScatter{size, stride, offset}(x, src)
                                           x's shape: x, with flat position offset + sum_k i_k stride_k
                                           set to src[i] (src of shape `size`); no position written twice
    MaskedScatter(x, mask, source)         x's shape: the k-th true position of mask (bool, x's shape;
                                           row-major order) takes source's k-th element (row-major), the
                                           others keep x; source holds at least as many elements as mask
                                           has trues
    MaskedScatterBackward{shape}(dy, mask) [shape] (source's): element k is dy at the k-th true position
                                           of mask (dy's shape), 0 for k >= the number of trues
    StridedIndex{size, stride, offset}(like)
                                           i64 [size]: offset + sum_k i_k stride_k (like: read for nothing)
    StridedScatterIndex{size, stride, offset, length}(like)
                                           i64 [length]: at position p, N + k where flat index k of the
                                           window writes p (N = length), else p: the source of p in
                                           concat(flat x, flat src)

The format's values have no storage: a torch value's storage (its strides and offset) is the importer's
(`torch/aten_strided.py`), which states as_strided on a value whose layout is dense (contiguous up to a
permutation of its axes, expanded axes read once) as AsStrided of that value in storage order, and leaves
the rest in PyTorch. Empty sizes read and write nothing; a zero stride reads one position several times.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert, _f, _finish, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import F64, I64, INPUTS, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints, ints_text
from .meta import attr_check, check_shape, float_dtype, is_int, is_int_list, show_shape


def strided_positions(size: Sequence[int], stride: Sequence[int], offset: int) -> np.ndarray:
    """int64 [size]: offset + sum_k i_k stride_k."""
    pos = np.full(tuple(int(s) for s in size), int(offset), dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = int(n)
        pos = pos + (np.arange(int(n), dtype=np.int64) * int(s)).reshape(shape)
    return pos


def scatter_source_index(size: Sequence[int], stride: Sequence[int], offset: int, length: int) -> np.ndarray:
    """int64 [length]: N + k where flat index k writes position p (N = length), else p."""
    out = np.arange(int(length), dtype=np.int64)
    pos = strided_positions(size, stride, offset).reshape(-1)
    out[pos] = int(length) + np.arange(pos.size, dtype=np.int64)
    return out


def _window(attrs: Mapping[str, Any], numel: int, writes: bool) -> int:
    """The number of elements of the window; ValueError where it reads or writes outside [0, numel), or
    (`writes`) writes a position twice."""
    size, stride, offset = list(attrs["size"]), list(attrs["stride"]), int(attrs["offset"])
    if len(size) != len(stride):
        raise ValueError(f"size {size} and stride {stride} have different lengths")
    m = math.prod(size)
    if m == 0:
        return 0
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= numel:
        raise ValueError(f"the window (size {size}, stride {stride}, offset {offset}) reaches position {last}, "
                         f"past the {numel} elements of x")
    if writes and np.unique(strided_positions(size, stride, offset)).size != m:
        raise ValueError(f"the window (size {size}, stride {stride}) writes a position twice")
    return m


def _check_pair(attrs: Mapping[str, Any]) -> None:
    if len(attrs["size"]) != len(attrs["stride"]):
        raise ValueError(f"size {list(attrs['size'])} and stride {list(attrs['stride'])} have different lengths")


def _infer_as_strided(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    _window(attrs, math.prod(ins[0][0]), False)
    return tuple(int(s) for s in attrs["size"]), ins[0][1]


def _infer_scatter(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (x, dx), (src, ds) = ins
    _window(attrs, math.prod(x), True)
    if tuple(src) != tuple(attrs["size"]):
        raise ValueError(f"src has shape {show_shape(src)}, the window {show_shape(attrs['size'])}")
    if dx is not None and ds is not None and dx != ds:
        raise ValueError(f"src is {ds}, x {dx}")
    return tuple(x), dx


def _op_as_strided(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    try:
        _window(attrs, x.size, False)
    except ValueError as e:
        raise LowerError(f"AsStrided: {e}") from None
    pos = strided_positions(attrs["size"], attrs["stride"], attrs["offset"])
    return _convert(x.reshape(-1)[pos], dtype)


def _op_as_strided_scatter(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, src = (np.asarray(a) for a in args)
    try:
        _window(attrs, x.size, True)
    except ValueError as e:
        raise LowerError(f"AsStridedScatter: {e}") from None
    if tuple(src.shape) != tuple(attrs["size"]):
        raise LowerError(f"AsStridedScatter: src has shape {show_shape(src.shape)}, the window "
                         f"{show_shape(attrs['size'])}")
    out = _convert(x, dtype).reshape(-1).copy()
    out[strided_positions(attrs["size"], attrs["stride"], attrs["offset"]).reshape(-1)] = \
        _convert(src, dtype).reshape(-1)
    return out.reshape(x.shape)


# ---- MaskedScatter -----------------------------------------------------------------------------

def _check_mask(x: Sequence[int], mask: Meta, what: str) -> None:
    if tuple(mask[0]) != tuple(x):
        raise ValueError(f"mask has shape {show_shape(mask[0])}, {what} {show_shape(x)}")
    if mask[1] is not None and mask[1] != "bool":
        raise ValueError(f"mask must be bool, not {mask[1]}")


def _infer_masked_scatter(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (x, dx), mask, (_, ds) = ins
    _check_mask(x, mask, "x")
    if dx is not None and ds is not None and dx != ds:
        raise ValueError(f"source is {ds}, x {dx}")
    return tuple(x), dx


def _infer_masked_scatter_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    _check_mask(ins[0][0], ins[1], "dy")
    return check_shape(attrs["shape"], "attribute 'shape'"), float_dtype(ins[:1])


def _trues(mask: np.ndarray, room: int, op: str) -> np.ndarray:
    if mask.dtype != np.bool_:  # the checker's evaluation of a rule hands masks on in its dtype
        mask = _f(mask) != 0
    where = np.flatnonzero(mask.reshape(-1))
    if where.size > room:
        raise LowerError(f"{op}: mask has {where.size} true elements, source only {room}")
    return where


def _op_masked_scatter(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, mask, source = (np.asarray(a) for a in args)
    if mask.shape != x.shape:
        raise LowerError(f"MaskedScatter: mask has shape {show_shape(mask.shape)}, x {show_shape(x.shape)}")
    where = _trues(mask, source.size, "MaskedScatter")
    out = _convert(x, dtype).reshape(-1).copy()
    out[where] = _convert(source, dtype).reshape(-1)[:where.size]
    return out.reshape(x.shape)


def _op_masked_scatter_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, mask = np.asarray(args[0]), np.asarray(args[1])
    if mask.shape != dy.shape:
        raise LowerError(f"MaskedScatterBackward: mask has shape {show_shape(mask.shape)}, dy {show_shape(dy.shape)}")
    out_shape = tuple(int(s) for s in attrs["shape"])
    m = math.prod(out_shape)
    where = _trues(mask, m, "MaskedScatterBackward")
    out = np.zeros(m)
    out[:where.size] = _f(dy).reshape(-1)[where]
    return _round_float(out.reshape(out_shape), dtype)


# ---- the helpers -------------------------------------------------------------------------------

def _infer_index(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    _check_pair(attrs)
    return tuple(int(s) for s in attrs["size"]), "i64"


def _infer_scatter_index(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    _window(attrs, int(attrs["length"]), True)
    return (int(attrs["length"]),), "i64"


def _op_index(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _finish(strided_positions(attrs["size"], attrs["stride"], attrs["offset"]), dtype)


def _op_scatter_index(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    try:
        _window(attrs, int(attrs["length"]), True)
    except ValueError as e:
        raise LowerError(f"StridedScatterIndex: {e}") from None
    return _finish(scatter_source_index(attrs["size"], attrs["stride"], attrs["offset"], attrs["length"]), dtype)


# ---- the fields the rules read -----------------------------------------------------------------

def _whole(name: str, sort: str, fn: Any) -> Field:
    """A field computed from all the attributes and every input's shape (not an attribute)."""
    return Field(name, sort, fn, None, source=WHOLE, shaped=INPUTS)


def _n(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _dense(attrs: Mapping[str, Any]) -> bool:
    """Whether the window is the run [offset, offset + m) in row-major order (its strides contiguous)."""
    want = 1
    for n, s in reversed(list(zip(attrs["size"], attrs["stride"]))):
        if n != 1 and s != want:
            return False
        want *= n
    return True


def _as_strided_fields(scatter: bool) -> tuple[Field, ...]:
    out: tuple[Field, ...] = (
        _whole("flat", STRING, lambda a, s: ints_text([_n(s[0])])),
        _whole("dense", I64, lambda a, s: int(_dense(a))),
        _whole("end", I64, lambda a, s: int(a["offset"]) + _n(a["size"])),
    )
    if scatter:
        out += (_whole("length", I64, lambda a, s: _n(s[0])),
                _whole("xshape", STRING, lambda a, s: ints_text(s[0])),
                _whole("sflat", STRING, lambda a, s: ints_text([_n(a["size"])])),
                # the run's end clamped to N, so the Slice after it is well formed where the run is empty
                _whole("rest", I64, lambda a, s: min(int(a["offset"]) + _n(a["size"]), _n(s[0]))))
    return out


def _scan_fields(source: int) -> tuple[Field, ...]:
    """Scan's fields (`opdefs/reductions.py`) for a cumsum along axis 0 of input `source`'s N elements
    flattened [N], and [1, N] (a row of them), for the masked-scatter rules."""
    def n(s: Sequence[Sequence[int]]) -> int:
        return _n(s[source])

    return (_whole("nflat", STRING, lambda a, s: ints_text([n(s)])),
            _whole("nb", STRING, lambda a, s: ints_text([1, n(s)])),
            _whole("ni", STRING, lambda a, s: ints_text([n(s), 1])),
            _whole("nt", STRING, lambda a, s: ints_text([n(s), n(s)])),
            _whole("npnq", STRING, lambda a, s: ints_text([1, n(s), 1])),
            _whole("n", F64, lambda a, s: float(n(s))))


def _masked_fields(backward: bool) -> tuple[Field, ...]:
    if backward:
        def m(a: Mapping[str, Any]) -> int:
            return _n(a["shape"])
        return _scan_fields(0) + (_whole("mn", STRING, lambda a, s: ints_text([m(a), _n(s[0])])),)
    return _scan_fields(0) + (_whole("xshape", STRING, lambda a, s: ints_text(s[0])),
                              _whole("sflat", STRING, lambda a, s: ints_text([_n(s[2])])))


def _nonneg(key: str) -> Attr:
    return Attr(key, attr_check(key, lambda v: is_int(v) and v >= 0, "an integer >= 0"))


def _int_list(key: str) -> Attr:
    return Attr(key, attr_check(key, lambda v: is_int_list(v) and all(a >= 0 for a in v), "a list of integers >= 0"))


def _shape_check(v: Any) -> None:
    check_shape(v, "attribute 'shape'")


_WINDOW = (_int_list("size"), _int_list("stride"), _nonneg("offset"))
_WINDOW_FIELDS = (ints("size"), ints("stride"), integer("offset"))

OPS: tuple[OpDef, ...] = (
    OpDef("AsStrided", ("x",), _WINDOW, _infer_as_strided, _op_as_strided,
          (Ctor("AsStrided", "AsStrided", _WINDOW_FIELDS + _as_strided_fields(False), 1, (head("AsStrided"),)),),
          domain="strided", torch="as_strided", check=_check_pair,
          sample=({"size": [2, 3], "stride": [1, 2], "offset": 1}, (((2, 4), "f32"),))),
    OpDef("AsStridedScatter", ("x", "src"), _WINDOW, _infer_scatter, _op_as_strided_scatter,
          (Ctor("AsStridedScatter", "AsStridedScatter", _WINDOW_FIELDS + _as_strided_fields(True), 2,
                (head("AsStridedScatter"),)),),
          domain="strided", torch="as_strided_scatter", check=_check_pair,
          sample=({"size": [2, 2], "stride": [1, 3], "offset": 1}, (((2, 4), "f32"), ((2, 2), "f32")))),
    OpDef("MaskedScatter", ("x", "mask", "source"), (), _infer_masked_scatter, _op_masked_scatter,
          (Ctor("MaskedScatter", "MaskedScatter", _masked_fields(False), 3, (head("MaskedScatter"),)),),
          domain="strided", torch="masked_scatter",
          sample=({}, (((2, 3), "f32"), ((2, 3), "bool"), ((7,), "f32")))),
    OpDef("MaskedScatterBackward", ("dy", "mask"), (Attr("shape", _shape_check),), _infer_masked_scatter_backward,
          _op_masked_scatter_backward,
          (Ctor("MaskedScatterBwd", "MaskedScatterBackward", (ints("shape"),) + _masked_fields(True), 2,
                (head("MaskedScatterBackward"),)),),
          domain="strided", torch="masked_scatter_backward", backward=True,
          sample=({"shape": [7]}, (((2, 3), "f32"), ((2, 3), "bool")))),
    OpDef("StridedIndex", ("like",), _WINDOW, _infer_index, _op_index,
          (Ctor("StridedIndex", "StridedIndex", _WINDOW_FIELDS, 1, (head("StridedIndex"),)),),
          domain=None, torch="strided_index", check=_check_pair,
          sample=({"size": [2, 3], "stride": [0, 2], "offset": 1}, (((2,), "f32"),))),
    OpDef("StridedScatterIndex", ("like",), _WINDOW + (_nonneg("length"),), _infer_scatter_index, _op_scatter_index,
          (Ctor("StridedScatterIndex", "StridedScatterIndex", _WINDOW_FIELDS + (integer("length"),), 1,
                (head("StridedScatterIndex"),)),),
          domain=None, torch="strided_scatter_index", check=_check_pair,
          sample=({"size": [2, 2], "stride": [1, 3], "offset": 1, "length": 8}, (((2,), "f32"),))),
)
