"""The layout ops: Expand, Reshape, Transpose (views of their input's values)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert
from .base import Attr, Ctor, Meta, OpDef, head, ints
from .meta import int_list, shape_attr, show_shape


def _op_expand(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return np.broadcast_to(_convert(np.asarray(args[0]), dtype), tuple(attrs["shape"]))


def _op_reshape(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return np.reshape(_convert(np.asarray(args[0]), dtype), tuple(attrs["shape"]))


def _op_transpose(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return np.transpose(_convert(np.asarray(args[0]), dtype), tuple(attrs["perm"]))


def _expand(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), target = ins[0], tuple(attrs["shape"])
    n = len(target) - len(shape)
    if n < 0 or any(x != 1 and x != t for x, t in zip(shape, target[n:])):
        raise ValueError(f"cannot expand shape {show_shape(shape)} to {show_shape(target)} (NumPy broadcasting)")
    return target, dt


def _reshape(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), target = ins[0], tuple(attrs["shape"])
    if math.prod(shape) != math.prod(target):
        raise ValueError(f"cannot reshape {show_shape(shape)} ({math.prod(shape)} elements) "
                         f"to {show_shape(target)} ({math.prod(target)} elements)")
    return target, dt


def _transpose(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), perm = ins[0], attrs["perm"]
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"perm {list(perm)} is not a permutation of the {len(shape)} axes of {show_shape(shape)}")
    return tuple(shape[p] for p in perm), dt


OPS: tuple[OpDef, ...] = (
    OpDef("Expand", ("x",), (Attr("shape", shape_attr),), _expand, _op_expand,
          (Ctor("Expand", "Expand", (ints("shape"),), 1, (head("Expand"),)),), domain=None, torch="expand",
          sample=({"shape": [4, 3]}, (((1, 3), "f32"),))),
    OpDef("Reshape", ("x",), (Attr("shape", shape_attr),), _reshape, _op_reshape,
          (Ctor("Reshape", "Reshape", (ints("shape"),), 1, (head("Reshape"),)),), domain=None, torch="reshape",
          sample=({"shape": [3, 2]}, (((2, 3), "f32"),))),
    OpDef("Transpose", ("x",), (Attr("perm", int_list("perm")),), _transpose, _op_transpose,
          (Ctor("Transpose", "Transpose", (ints("perm"),), 1, (head("Transpose"),)),), domain=None,
          torch="transpose",
          sample=({"perm": [1, 0]}, (((2, 3), "f32"),))),
)
