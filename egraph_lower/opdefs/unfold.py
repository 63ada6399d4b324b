"""Sliding windows (format version 3): `Tensor.unfold` and its backward op, col2im (`F.fold`, and
`F.unfold`'s gradient: the adjoint of `Im2Col`), and the window helpers their rules expand into.

    Unfold{axis, size, step}(x)           x.shape with the axis of length L replaced by the n = (L - size)
                                          // step + 1 windows, and a last axis of `size`: out[.., w, .., k]
                                          = x[.., w step + k, ..] (torch's Tensor.unfold)
    UnfoldBackward{axis, size, step, input_shape}(dy)
                                          dx [input_shape]: each window's dy added back where it was read
    Col2Im{kernel, stride, padding, dilation, output_size}(cols)
                                          cols [N, C KH KW, OH OW] -> [N, C, H, W]: each column's values
                                          added at their window's positions (padding dropped): aten's col2im
    WindowOneHot{windows, size, step, dilation, length, kernel_major}(like)
                                          [windows size, length] in like's dtype: 1 where row (w, k) reads
                                          position w step + k dilation; rows w-major (w size + k), or k-major
                                          (k windows + w) with kernel_major
    WindowIndex{windows, size, step}(like) i64 [windows, size]: w step + k

OH = floor((H + 2 padding - dilation (KH - 1) - 1) / stride) + 1 (likewise OW), as for Im2Col; `kernel`,
`stride`, `padding`, `dilation`, `output_size` are [along H, along W]. The helpers read only their
attributes (like: the dtype); every backend runs them. The constructors carry fields for the rules
(`rules/unfold.py`), computed at load time from the attributes and the first input's shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert, _f, _finish, _round_float
from ..dtypes import FLOAT_DTYPES
from . import convmath
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints, ints_text
from .meta import attr_check, boolean, check_shape, float_dtype, is_int, is_int_list, show_shape


def _positive(key: str, least: int = 1) -> Attr:
    return Attr(key, attr_check(key, lambda v: is_int(v) and v >= least, f"an integer >= {least}"))


def _pair(key: str, least: int) -> Attr:
    return Attr(key, attr_check(key, lambda v: is_int_list(v) and len(v) == 2 and all(a >= least for a in v),
                                f"a list of two integers >= {least}"))


# ---- Unfold ------------------------------------------------------------------------------------

def _windows(length: int, size: int, step: int) -> int:
    return (length - size) // step + 1


def _unfold_meta(attrs: Mapping[str, Any], shape: Sequence[int]) -> tuple[int, int, int]:
    """(the axis in [0, rank), its length L, the window count n) of Unfold on x's shape."""
    rank = len(shape)
    axis = attrs["axis"]
    if not -max(rank, 1) <= axis < max(rank, 1) or rank == 0:
        raise ValueError(f"axis {axis} is out of range for x of rank {rank}")
    a = axis % rank
    if attrs["size"] > shape[a]:
        raise ValueError(f"window size {attrs['size']} exceeds the axis's length {shape[a]}")
    return a, int(shape[a]), _windows(int(shape[a]), int(attrs["size"]), int(attrs["step"]))


def _unfold_shape(attrs: Mapping[str, Any], shape: Sequence[int]) -> tuple[int, ...]:
    a, _, n = _unfold_meta(attrs, shape)
    return tuple(shape[:a]) + (n,) + tuple(shape[a + 1:]) + (int(attrs["size"]),)


def _infer_unfold(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _unfold_shape(attrs, ins[0][0]), ins[0][1]


def _infer_unfold_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = check_shape(attrs["input_shape"], "attribute 'input_shape'")
    want = _unfold_shape(attrs, shape)
    if tuple(ins[0][0]) != want:
        raise ValueError(f"dy has shape {show_shape(ins[0][0])}, the unfold of {show_shape(shape)} has {show_shape(want)}")
    return shape, float_dtype(ins)


def _op_unfold(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    a, _, n = _unfold_meta(attrs, x.shape)
    idx = window_index(n, int(attrs["size"]), int(attrs["step"]))
    return _convert(np.moveaxis(np.take(x, idx, axis=a), a + 1, -1), dtype)


def _op_unfold_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, ishape = _f(args[0]), list(attrs["input_shape"])
    a, length, n = _unfold_meta(attrs, ishape)
    size, step = int(attrs["size"]), int(attrs["step"])
    moved = np.moveaxis(dy, (a, dy.ndim - 1), (-2, -1))  # [.., n, size]
    m = window_one_hot(n, size, step, 1, length, False)  # [n size, L]
    out = moved.reshape(moved.shape[:-2] + (n * size,)) @ m
    return _round_float(np.moveaxis(out, -1, a), dtype)


# ---- Col2Im ------------------------------------------------------------------------------------

def _col2im_meta(attrs: Mapping[str, Any], cols: Sequence[int]) -> tuple[int, int, int, int]:
    """(C, OH, OW, and the columns' K = KH KW) of Col2Im on cols' shape; ValueError where they do not fit."""
    kh, kw = attrs["kernel"]
    (sh, sw), (ph, pw), (dh, dw) = attrs["stride"], attrs["padding"], attrs["dilation"]
    h, w = attrs["output_size"]
    if len(cols) != 3:
        raise ValueError(f"cols must be 3-D [N, C KH KW, L], got {show_shape(cols)}")
    oh, ow = convmath.out_size(h, kh, sh, ph, dh), convmath.out_size(w, kw, sw, pw, dw)
    if oh < 1 or ow < 1:
        raise ValueError(f"the kernel {[kh, kw]} (dilation {[dh, dw]}) does not fit output_size {[h, w]} padded by "
                         f"{[ph, pw]}")
    if cols[1] % (kh * kw) or cols[2] != oh * ow:
        raise ValueError(f"cols {show_shape(cols)} must be [N, C * {kh * kw}, {oh * ow}] for kernel {[kh, kw]} over "
                         f"output_size {[h, w]}")
    return cols[1] // (kh * kw), oh, ow, kh * kw


def _infer_col2im(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    cols, dt = ins[0]
    c, _, _, _ = _col2im_meta(attrs, cols)
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"cols needs a float dtype, got {dt}")
    return (cols[0], c) + tuple(attrs["output_size"]), dt


def _axis_matrix(attrs: Mapping[str, Any], axis: int, windows: int) -> np.ndarray:
    """[K O, L + 2 p] along spatial axis `axis` (k-major rows), for the padded plane."""
    length = attrs["output_size"][axis] + 2 * attrs["padding"][axis]
    return window_one_hot(windows, attrs["kernel"][axis], attrs["stride"][axis], attrs["dilation"][axis], length,
                          True)


def _op_col2im(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    cols = _f(args[0])
    c, oh, ow, _ = _col2im_meta(attrs, cols.shape)
    kh, kw = attrs["kernel"]
    t = cols.reshape(cols.shape[0], c, kh, kw, oh, ow).transpose(0, 1, 2, 4, 3, 5)
    t = t.reshape(cols.shape[0], c, kh * oh, kw * ow)
    mh, mw = _axis_matrix(attrs, 0, oh), _axis_matrix(attrs, 1, ow)
    padded = mh.T @ t @ mw
    (ph, pw), (h, w) = attrs["padding"], attrs["output_size"]
    return _round_float(padded[:, :, ph:ph + h, pw:pw + w], dtype)


# ---- the helpers -------------------------------------------------------------------------------

def window_index(windows: int, size: int, step: int) -> np.ndarray:
    return np.arange(windows)[:, None] * step + np.arange(size)[None, :]


def window_one_hot(windows: int, size: int, step: int, dilation: int, length: int, kernel_major: bool) -> np.ndarray:
    w, k = np.meshgrid(np.arange(windows), np.arange(size), indexing="ij")
    pos = w * step + k * dilation
    if kernel_major:
        pos = pos.T
    out = np.zeros((windows * size, length))
    rows = np.arange(windows * size)
    keep = pos.reshape(-1) < length
    out[rows[keep], pos.reshape(-1)[keep]] = 1.0
    return out


def _infer_one_hot(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    if ins[0][1] is not None and ins[0][1] not in FLOAT_DTYPES:
        raise ValueError(f"like needs a float dtype, got {ins[0][1]}")
    return (int(attrs["windows"]) * int(attrs["size"]), int(attrs["length"])), ins[0][1]


def _op_one_hot(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    m = window_one_hot(int(attrs["windows"]), int(attrs["size"]), int(attrs["step"]), int(attrs["dilation"]),
                       int(attrs["length"]), bool(attrs["kernel_major"]))
    return _round_float(m, dtype)


def _op_index(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _finish(window_index(int(attrs["windows"]), int(attrs["size"]), int(attrs["step"])), dtype)


# ---- the fields the rules read -----------------------------------------------------------------

def _whole(name: str, sort: str, fn: Any) -> Field:
    return Field(name, sort, fn, None, source=WHOLE, shaped=True)


def _inverse(perm: Sequence[int]) -> list[int]:
    return [int(i) for i in np.argsort(perm)]


def _unfold_fields(backward: bool) -> tuple[Field, ...]:
    """Unfold's (x's shape) or UnfoldBackward's (input_shape) layout: a the axis, r the rank of x."""
    def x_shape(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
        return list(attrs["input_shape"]) if backward else list(shape)

    def meta(attrs: Mapping[str, Any], shape: Sequence[int]) -> tuple[list[int], int, int, int]:
        x = x_shape(attrs, shape)
        a, length, n = _unfold_meta(attrs, x)
        return x, a, length, n

    def take_perm(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
        # x[:a] + [n, size] + x[a+1:] -> the size axis (a + 1) last
        x, a, _, _ = meta(attrs, shape)
        r = len(x)
        return list(range(a + 1)) + list(range(a + 2, r + 1)) + [a + 1]

    def split(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
        x, a, _, n = meta(attrs, shape)
        return x[:a] + [n, int(attrs["size"])] + x[a + 1:]

    def to_last(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:  # x's axis a last
        x, a, _, _ = meta(attrs, shape)
        return [d for d in range(len(x)) if d != a] + [a]

    def rest(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
        x, a, _, _ = meta(attrs, shape)
        return x[:a] + x[a + 1:]

    def from_last(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
        # [..rest, n, size] -> rest[:a] + [n] + rest[a:] + [size]
        x, a, _, _ = meta(attrs, shape)
        r = len(x)
        return list(range(a)) + [r - 1] + list(range(a, r - 1)) + [r]

    def text(fn: Any) -> Any:
        return lambda attrs, shape: ints_text(fn(attrs, shape))

    fields: tuple[Field, ...] = (
        _whole("ax", I64, lambda a, s: meta(a, s)[1]),
        _whole("n", I64, lambda a, s: meta(a, s)[3]),
        _whole("len", I64, lambda a, s: meta(a, s)[2]),
        _whole("tiled", I64, lambda a, s: int(a["size"] == a["step"])),
        _whole("end", I64, lambda a, s: meta(a, s)[3] * int(a["size"])),
        _whole("tail", I64, lambda a, s: meta(a, s)[2] - meta(a, s)[3] * int(a["size"])),
        _whole("split", STRING, text(split)),
        _whole("merged", STRING, text(lambda a, s: x_shape(a, s)[:meta(a, s)[1]] + [meta(a, s)[3] * int(a["size"])]
                                        + x_shape(a, s)[meta(a, s)[1] + 1:])),
        _whole("wins", STRING, text(lambda a, s: rest(a, s) + [meta(a, s)[3], int(a["size"])])),
        _whole("flatw", STRING, text(lambda a, s: rest(a, s) + [meta(a, s)[3] * int(a["size"])])),
    )
    if backward:
        return fields + (_whole("untake", STRING, text(lambda a, s: _inverse(take_perm(a, s)))),
                         _whole("tolastdy", STRING, text(lambda a, s: _inverse(from_last(a, s)))),
                         _whole("back", STRING, text(lambda a, s: _inverse(to_last(a, s)))))
    return fields + (_whole("takeperm", STRING, text(take_perm)), _whole("tolast", STRING, text(to_last)),
                     _whole("fromlast", STRING, text(from_last)))


def _col2im_fields() -> tuple[Field, ...]:
    def m(attrs: Mapping[str, Any], shape: Sequence[int]) -> tuple[int, int, int]:
        c, oh, ow, _ = _col2im_meta(attrs, shape)
        return c, oh, ow

    def hp(attrs: Mapping[str, Any], j: int) -> int:
        return int(attrs["output_size"][j]) + 2 * int(attrs["padding"][j])

    def pair(key: str, j: int) -> Field:
        return Field(f"{key[0]}{'hw'[j]}", I64, lambda v, rank: int(v[j]), None, source=key)

    def six(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        c, oh, ow = m(attrs, shape)
        return ints_text([shape[0], c, *attrs["kernel"], oh, ow])

    def tiles(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        c, oh, ow = m(attrs, shape)
        return ints_text([shape[0], c, oh * attrs["kernel"][0], ow * attrs["kernel"][1]])

    def seps(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        c, oh, ow = m(attrs, shape)
        return ints_text([shape[0], c, attrs["kernel"][0] * oh, attrs["kernel"][1] * ow])

    return (
        *(pair(k, j) for k in ("kernel", "stride", "padding", "dilation") for j in (0, 1)),
        _whole("oh", I64, lambda a, s: m(a, s)[1]), _whole("ow", I64, lambda a, s: m(a, s)[2]),
        _whole("lh", I64, lambda a, s: hp(a, 0)), _whole("lw", I64, lambda a, s: hp(a, 1)),
        _whole("oh2", I64, lambda a, s: int(a["output_size"][0])), _whole("ow2", I64, lambda a, s: int(a["output_size"][1])),
        _whole("eh", I64, lambda a, s: int(a["padding"][0]) + int(a["output_size"][0])),
        _whole("ew", I64, lambda a, s: int(a["padding"][1]) + int(a["output_size"][1])),
        _whole("six", STRING, six),
        _whole("tiled", I64, lambda a, s: int(list(a["kernel"]) == list(a["stride"]) and list(a["dilation"]) == [1, 1])),
        _whole("tiles", STRING, tiles),
        _whole("ah", I64, lambda a, s: hp(a, 0) - m(a, s)[1] * int(a["kernel"][0])),
        _whole("aw", I64, lambda a, s: hp(a, 1) - m(a, s)[2] * int(a["kernel"][1])),
        _whole("seps", STRING, seps),
    )


def _shape_check(v: Any) -> None:
    check_shape(v, "attribute 'input_shape'")


_UNFOLD_ATTRS = (Attr("axis", attr_check("axis", is_int, "an integer")), _positive("size"), _positive("step"))
_UNFOLD_FIELDS = (integer("axis"), integer("size"), integer("step"))
_COL2IM_ATTRS = (_pair("kernel", 1), _pair("stride", 1), _pair("padding", 0), _pair("dilation", 1),
                 _pair("output_size", 1))
_COL2IM_BASE = tuple(ints(k) for k in ("kernel", "stride", "padding", "dilation", "output_size"))
_ONE_HOT_ATTRS = (_positive("windows"), _positive("size"), _positive("step"), _positive("dilation"),
                  _positive("length"), Attr("kernel_major", boolean("kernel_major")))
_FLAG = Field("kernel_major", I64, lambda v, rank: int(bool(v)), lambda v: bool(v))

OPS: tuple[OpDef, ...] = (
    OpDef("Unfold", ("x",), _UNFOLD_ATTRS, _infer_unfold, _op_unfold,
          (Ctor("Unfold", "Unfold", _UNFOLD_FIELDS + _unfold_fields(False), 1, (head("Unfold"),)),),
          domain="unfold", torch="unfold", sample=({"axis": 1, "size": 3, "step": 2}, (((2, 8, 3), "f32"),))),
    OpDef("UnfoldBackward", ("dy",), _UNFOLD_ATTRS + (Attr("input_shape", _shape_check),), _infer_unfold_backward,
          _op_unfold_backward,
          (Ctor("UnfoldBwd", "UnfoldBackward", _UNFOLD_FIELDS + (ints("input_shape"),) + _unfold_fields(True), 1,
                (head("UnfoldBackward"),)),),
          domain="unfold", torch="unfold_backward", backward=True,
          sample=({"axis": -2, "size": 3, "step": 2, "input_shape": [2, 8, 3]}, (((2, 3, 3, 3), "f32"),))),
    OpDef("Col2Im", ("cols",), _COL2IM_ATTRS, _infer_col2im, _op_col2im,
          (Ctor("Col2Im", "Col2Im", _COL2IM_BASE + _col2im_fields(), 1, (head("Col2Im"),)),),
          domain="unfold", torch="col2im",
          sample=({"kernel": [2, 3], "stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "output_size": [5, 7]},
                  (((2, 18, 9), "f32"),))),
    OpDef("WindowOneHot", ("like",), _ONE_HOT_ATTRS, _infer_one_hot, _op_one_hot,
          (Ctor("WindowOneHot", "WindowOneHot", (integer("windows"), integer("size"), integer("step"),
                                                 integer("dilation"), integer("length"), _FLAG), 1,
                (head("WindowOneHot"),)),),
          domain=None, torch="window_one_hot",
          sample=({"windows": 3, "size": 2, "step": 2, "dilation": 2, "length": 8, "kernel_major": True},
                  (((2,), "f32"),))),
    OpDef("WindowIndex", ("like",), _ONE_HOT_ATTRS[:3], lambda a, ins: ((int(a["windows"]), int(a["size"])), "i64"),
          _op_index,
          (Ctor("WindowIndex", "WindowIndex", (integer("windows"), integer("size"), integer("step")), 1,
                (head("WindowIndex"),)),),
          domain=None, torch="window_index", sample=({"windows": 3, "size": 2, "step": 2}, (((2,), "f32"),))),
)
