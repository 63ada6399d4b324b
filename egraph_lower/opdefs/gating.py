"""Activations with a tensor operand (format version 3): GluBackward, PreluBackward.

    GluBackward{axis}(x, dy)         the gradient of glu(x) = a sigmoid(b), x = [a, b] split in halves
                                     along `axis`: dx = [dy s, dy a s (1 - s)], s = sigmoid(b)
    PreluBackward{wrt}(x, w, dy)     the gradients of prelu(x, w) = where(x > 0, x, w x), w broadcast to
                                     x: wrt input, dx = where(x > 0, dy, w dy); wrt weight, the
                                     per-element dw = where(x > 0, 0, x dy) (x's shape, not summed)

The forward ops reach the importer decomposed (PyTorch's table writes glu as two narrows, a sigmoid
and a product, and `_prelu_kernel` as a where); their gradients are aten ops of their own
(`glu_backward`, `_prelu_kernel_backward`), so a backend with a kernel keeps them. aten's prelu
gradient is per element, as PreluBackward's wrt weight is: the sum over all but the channel axis
follows it in aten's graph (a `sum` the importer maps to Reduce).

The derivatives: d/da (a s) = s; d/db (a s) = a s'(b) = a s (1 - s), which the rule writes as the
ActivationBackward{Sigmoid} of b applied to dy a (its own expansions are accurate where s is near 1,
as 1 - s is not). d/dx where(x > 0, x, w x) = 1 for x > 0, else w (at x = 0: w, as aten); d/dw = 0
for x > 0, else x.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import I64, Attr, Ctor, Field, Meta, OpDef, head
from .meta import attr_check, broadcast_shapes, float_dtype, is_int, one_of, same_shape, show, show_shape


def _glu_axis(axis: Any, shape: Sequence[int]) -> int:
    rank = len(shape)
    if rank == 0:
        raise ValueError("glu of a 0-d tensor (it needs an axis to split)")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")
    a = int(axis) % rank
    if shape[a] % 2:
        raise ValueError(f"glu splits axis {a} in halves, but it has odd size {shape[a]}")
    return a


def _glu_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (xs, _), (dys, _) = ins
    a = _glu_axis(attrs["axis"], xs)
    want = tuple(xs[:a]) + (xs[a] // 2,) + tuple(xs[a + 1:])
    if tuple(dys) != want:
        raise ValueError(f"dy has shape {show_shape(dys)}, not glu's output shape {show_shape(want)}")
    return tuple(xs), float_dtype(ins)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(v))  # in (0, 1]: no overflow
    return np.where(v >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _op_glu_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"GluBackward needs a float dtype, not {dtype}")
    x, dy = (_f(v) for v in args)
    try:
        axis = _glu_axis(attrs["axis"], x.shape)
    except ValueError as e:
        raise LowerError(f"GluBackward: {e}") from None
    a, b = np.split(x, 2, axis=axis)
    s, sn = _sigmoid(b), _sigmoid(-b)  # s (1 - s) = s sigmoid(-b), exact where s is near 1
    with np.errstate(all="ignore"):
        return _round_float(np.concatenate([dy * s, dy * a * (s * sn)], axis=axis), dtype)


def _half_field(name: str, fn: Any) -> Field:
    """A field computed from the axis and x's shape (the half and the whole of the split axis)."""
    def encode(axis: Any, shape: Sequence[int]) -> int:
        return int(fn(shape[int(axis) % len(shape)])) if shape else 0
    return Field(name, I64, encode, None, source="axis", shaped=True)


_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_AXIS_FIELD = Field("axis", I64, lambda v, rank: int(v) % rank if rank else int(v), int)

GLU: tuple[OpDef, ...] = (
    OpDef("GluBackward", ("x", "dy"), (_AXIS,), _glu_backward, _op_glu_backward,
          (Ctor("GluBwd", "GluBackward", (_AXIS_FIELD, _half_field("h", lambda n: n // 2),
                                          _half_field("n", lambda n: n)), 2, (head("GluBackward"),)),),
          domain="gating", torch="glu_backward", backward=True,
          sample=({"axis": -1}, (((2, 4), "f32"), ((2, 2), "f32")))),
)



def _prelu_w(ws: Sequence[int], xs: Sequence[int]) -> None:
    """w broadcasts to x's shape without growing it (aten's prelu weight, viewed [1, C, 1, ...])."""
    try:
        if broadcast_shapes(tuple(ws), tuple(xs)) == tuple(xs):
            return
    except ValueError:
        pass
    raise ValueError(f"w of shape {show_shape(ws)} does not broadcast to x's shape {show_shape(xs)}")


def _prelu_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (xs, _), (ws, _), (dys, _) = ins
    same_shape(tuple(xs), tuple(dys))
    _prelu_w(ws, xs)
    return tuple(xs), float_dtype(ins)


def _op_prelu_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"PreluBackward needs a float dtype, not {dtype}")
    x, w, dy = (_f(v) for v in args)
    try:
        _prelu_w(w.shape, x.shape)
        if x.shape != dy.shape:
            raise ValueError(f"dy has shape {show_shape(dy.shape)}, not x's {show_shape(x.shape)}")
    except ValueError as e:
        raise LowerError(f"PreluBackward: {e}") from None
    with np.errstate(all="ignore"):
        if attrs["wrt"] == "input":
            out = np.where(x > 0, dy, w * dy)
        else:
            out = np.where(x > 0, 0.0, x * dy)
    return _round_float(np.broadcast_to(out, x.shape), dtype)


PRELU_WRT = ("input", "weight")

PRELU: tuple[OpDef, ...] = (
    OpDef("PreluBackward", ("x", "w", "dy"), (Attr("wrt", one_of(PRELU_WRT, "wrt")),), _prelu_backward,
          _op_prelu_backward,
          # one constructor per gradient (a lower-case field value would read as a rule variable)
          (Ctor("PreluBwdInput", "PreluBackward", (), 3, (head("PreluBwdInput"),), implies=(("wrt", "input"),)),
           Ctor("PreluBwdWeight", "PreluBackward", (), 3, (head("PreluBwdWeight"),), implies=(("wrt", "weight"),))),
          domain="gating", torch="prelu_backward", backward=True,
          sample=({"wrt": "weight"}, (((2, 3, 2), "f32"), ((1, 3, 1), "f32"), ((2, 3, 2), "f32")))),
)

OPS: tuple[OpDef, ...] = GLU + PRELU
