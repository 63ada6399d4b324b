"""Reflect, replicate and circular padding along one axis, and its gradient (format version 3).

    ModePad{axis, mode, before, after}(x)          x padded along `axis` by `before` positions ahead and
                                                  `after` behind, each reading x at `source(j)`
    ModePadBackward{axis, mode, before, after}(dy) its gradient: dx[i] = the sum of dy[j] over the
                                                  positions j with source(j) = i

With n = x.shape[axis] and m = n + before + after positions out, output position j reads x at
`source(j)` of i = j - before (`sources` below, the one statement of each mode, which the NumPy
reference and the torch kernel both read):

- `Reflect`: i mirrored about the end elements, which are not repeated: |i| for i < 0,
  2 (n - 1) - i for i >= n (numpy.pad's `reflect`). Each of before and after must be less than n.
- `Replicate`: i clamped to [0, n - 1] (numpy.pad's `edge`); n >= 1.
- `Circular`: i mod n (numpy.pad's `wrap`); 0 <= before, after <= n.

A negative `before` or `after` (Reflect and Replicate; aten allows them) crops: the positive sides
are padded, then as many positions are dropped from the negative ones (torch's reflection and
replication kernels). m must be >= 1 (aten's check). Circular refuses negative padding (aten's
circular padding with a negative pad reads memory it never wrote, in torch 2.13).

aten pads the last k axes (`reflection_pad2d`: the last two); the format pads one axis per node,
as `Pad` does, which the importer composes (padding is separable: each axis's source map is its own).
ModePadBackward's x has n = dy.shape[axis] - before - after.

The e-nodes carry, per mode (one constructor each), the fields the rules need (`rules/padding.py`):
the positive parts `bp`, `ap` of the padding, the crop `[cs, ce)` of the padded run of `full` =
n + bp + ap, which side has a band (`lc`, `rc`: 0 none, 1 one position, 2 more; the rules fix them),
`crop` (1 if a pad is negative), and the slice bounds, flip lengths and shapes of the expansions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import F64, I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text
from .meta import attr_check, float_dtype, is_int, one_of, show

MODES = ("Reflect", "Replicate", "Circular")


def check_padding(mode: str, n: int, before: int, after: int) -> int:
    """The output length m of padding an axis of n by (before, after) in `mode`; ValueError naming the problem."""
    if mode == "Circular":
        if before < 0 or after < 0:
            raise ValueError(f"Circular padding ({before}, {after}) is negative (only Reflect and Replicate crop)")
        if before > n or after > n:
            raise ValueError(f"Circular padding ({before}, {after}) wraps around an axis of {n} more than once")
    elif mode == "Reflect":
        if before >= n or after >= n:
            raise ValueError(f"Reflect padding ({before}, {after}) must be less than the axis's size {n}")
    elif n < 1:
        raise ValueError("Replicate padding of an empty axis")
    m = n + before + after
    if m < 1 and not (mode == "Circular" and n == 0):
        raise ValueError(f"padding ({before}, {after}) of an axis of {n} leaves {m} positions")
    return m


def sources(mode: str, n: int, before: int, after: int) -> np.ndarray:
    """The position of x (an axis of n) that each of the m output positions reads (int64)."""
    i = np.arange(n + before + after, dtype=np.int64) - before
    if mode == "Reflect":
        return (n - 1) - np.abs((n - 1) - np.abs(i))
    if mode == "Replicate":
        return np.clip(i, 0, n - 1)
    return np.mod(i, n) if n else i


def _norm_axis(axis: Any, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")
    return int(axis) % rank


def _mode_pad(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    a = _norm_axis(attrs["axis"], len(shape))
    out = list(shape)
    out[a] = check_padding(attrs["mode"], shape[a], int(attrs["before"]), int(attrs["after"]))
    return tuple(out), dt


def _mode_pad_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, _ = ins[0]
    a = _norm_axis(attrs["axis"], len(shape))
    b, e = int(attrs["before"]), int(attrs["after"])
    n = shape[a] - b - e
    if n < 0:
        raise ValueError(f"dy has {shape[a]} on axis {a}, fewer than the padding ({b}, {e}) adds")
    m = check_padding(attrs["mode"], n, b, e)
    if m != shape[a]:  # n == 0 of Circular: m = 0 = dy's axis
        raise ValueError(f"dy has {shape[a]} on axis {a}, not the {m} a padding of {n} gives")
    out = list(shape)
    out[a] = n
    return tuple(out), float_dtype(ins)


def _take(op: str, attrs: Attrs, shape: Sequence[int], n: int) -> tuple[int, np.ndarray]:
    a = int(attrs["axis"]) % len(shape)
    mode, b, e = attrs["mode"], int(attrs["before"]), int(attrs["after"])
    try:
        check_padding(mode, n, b, e)
    except ValueError as err:
        raise LowerError(f"{op}: {err}") from None
    return a, sources(mode, n, b, e)


def _op_mode_pad(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _convert(np.asarray(args[0]), dtype)
    a, src = _take("ModePad", attrs, x.shape, x.shape[int(attrs["axis"]) % x.ndim])
    return np.take(x, src, axis=a)


def _op_mode_pad_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"ModePadBackward needs a float dtype, not {dtype}")
    dy = _f(args[0])
    axis = int(attrs["axis"]) % dy.ndim
    n = dy.shape[axis] - int(attrs["before"]) - int(attrs["after"])
    a, src = _take("ModePadBackward", attrs, dy.shape, n)
    moved = np.moveaxis(dy, a, 0)
    out = np.zeros((n,) + moved.shape[1:])
    np.add.at(out, src, moved)  # float64: each sum of at most a band's terms, rounded once
    return _round_float(np.moveaxis(out, 0, a), dtype)


# ---- the e-node fields the rules read -------------------------------------------------------------


def geometry(attrs: Mapping[str, Any], shape: Sequence[int], backward: bool) -> dict[str, Any]:
    """The rules' fields of a node with `attrs` whose first input has `shape` (x's, or dy's for the backward)."""
    rank = len(shape)
    a = int(attrs["axis"]) % rank if rank else 0
    b, e = int(attrs["before"]), int(attrs["after"])
    n = (shape[a] - b - e if backward else shape[a]) if rank else 0
    bp, ap, cs, ca = max(b, 0), max(e, 0), max(-b, 0), max(-e, 0)
    full = n + bp + ap

    def band(p: int) -> int:
        return min(p, 1) if attrs.get("mode") == "Circular" else min(p, 2)

    def along(w: int) -> str:
        return ints_text([*shape[:a], w, *shape[a + 1:]]) if rank else "[]"

    return {"bp": bp, "ap": ap, "cs": cs, "ce": full - ca, "ca": ca, "full": full, "n": n,
            "lc": band(bp), "rc": band(ap), "crop": int(cs > 0 or ca > 0),
            "l1": bp + 1, "rs": -1 - ap, "lflip": float(bp - 1), "rflip": float(ap - 1),
            "edge": n - 1, "lshape": along(bp), "rshape": along(ap), "cl": n - bp,
            "bpn": bp + n, "lrest": n - 1 - bp, "rpre": n - 1 - ap, "nmb": n - bp, "nma": n - ap,
            "axes": ints_text([a])}


_SORTS = {"lflip": F64, "rflip": F64, "lshape": STRING, "rshape": STRING, "axes": STRING}


def _field(name: str, backward: bool) -> Field:
    def encode(attrs: Mapping[str, Any], shape: Sequence[int]) -> Any:
        return geometry(attrs, shape, backward)[name]
    return Field(name, _SORTS.get(name, I64), encode, None, source=WHOLE, shaped=True)


COMMON = ("bp", "ap", "cs", "ce", "full", "lc", "rc", "crop")
# each mode's fields beyond COMMON, forward and backward
FORWARD = {"Reflect": ("l1", "rs", "lflip", "rflip"), "Replicate": ("edge", "n", "lshape", "rshape"),
           "Circular": ("cl", "n")}
BACKWARD = {"Reflect": ("n", "bpn", "ca", "lrest", "rpre", "lflip", "rflip"),
            "Replicate": ("n", "bpn", "ca", "edge", "axes"), "Circular": ("n", "bpn", "nmb", "nma")}
_AXIS_FIELD = Field("axis", I64, lambda v, rank: int(v) % rank if rank else int(v), int)
ATTR_FIELDS = (_AXIS_FIELD, integer("before"), integer("after"))


def fields(mode: str, backward: bool) -> tuple[Field, ...]:
    """A mode's constructor's fields: axis, before, after (the attributes), then COMMON and the mode's own."""
    own = (BACKWARD if backward else FORWARD)[mode]
    return ATTR_FIELDS + tuple(_field(k, backward) for k in COMMON + own)


def ctor_name(mode: str, backward: bool) -> str:
    return f"{mode}Pad{'Bwd' if backward else ''}"


def _ctors(op: str, backward: bool) -> tuple[Ctor, ...]:
    return tuple(Ctor(ctor_name(m, backward), op, fields(m, backward), 1, (head(ctor_name(m, backward)),),
                      implies=(("mode", m),)) for m in MODES)


_ATTRS = (Attr("axis", attr_check("axis", is_int, "an integer")), Attr("mode", one_of(MODES, "padding mode")),
          Attr("before", attr_check("before", is_int, "an integer")),
          Attr("after", attr_check("after", is_int, "an integer")))

OPS: tuple[OpDef, ...] = (
    OpDef("ModePad", ("x",), _ATTRS, _mode_pad, _op_mode_pad, _ctors("ModePad", False), domain="padding",
          torch="mode_pad", sample=({"axis": -1, "mode": "Reflect", "before": 2, "after": 1}, (((2, 4), "f32"),))),
    OpDef("ModePadBackward", ("dy",), _ATTRS, _mode_pad_backward, _op_mode_pad_backward,
          _ctors("ModePadBackward", True), domain="padding", torch="mode_pad_backward", backward=True,
          sample=({"axis": 0, "mode": "Replicate", "before": 1, "after": -1}, (((4, 3), "f32"),))),
)
