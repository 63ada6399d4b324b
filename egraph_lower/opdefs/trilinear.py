"""Trilinear: aten's `_trilinear`, the product of three tensors summed over some axes (version 3).

    Trilinear{expand1, expand2, expand3, sumdim}(a, b, c)

Each input gains a size-1 axis at each position of its `expand` list, so that all three reach one
rank R (rank(a) + len(expand1), and the same for b and c); the three are multiplied with broadcasting
and summed over the axes in `sumdim`, which are dropped. Positions are in [-R, R) and may not
repeat. `nn.functional.bilinear` arrives as one (x1 [N, I], W [O, I, J], x2 [N, J] with expand
[1, 3], [0], [1, 2] and sumdim [2, 3]) and its three gradients as three more, so the op is its own
backward. aten's `unroll_dim` only chooses how its kernel loops, not what it computes: not kept.

The e-graph fields: each input's shape once its axes are inserted (`s1`, `s2`, `s3`) and `sumdim`
sorted in [0, R), as Reduce's axes are, so a rule reduces with `(Reduce.Sum sumdim 0 ...)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..errors import LowerError
from .base import INPUTS, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, _ints, head, ints_text
from .meta import broadcast_shapes, float_dtype, int_list, is_int, show_shape

_EXPANDS = ("expand1", "expand2", "expand3")


def _positions(values: Sequence[Any], rank: int, key: str) -> tuple[int, ...]:
    """`values` as sorted positions in [0, rank); ValueError where one is out of range or repeats."""
    if not all(is_int(v) for v in values):
        raise ValueError(f"{key} must be a list of integers, got {list(values)}")
    if not all(-rank <= int(v) < rank for v in values):
        raise ValueError(f"{key} {list(values)} is out of range for rank {rank}")
    out = sorted({int(v) % rank for v in values})
    if len(out) != len(values):
        raise ValueError(f"{key} {list(values)} repeats an axis")
    return tuple(out)


def _rank(attrs: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> int:
    ranks = {len(s) + len(attrs[k]) for s, k in zip(shapes, _EXPANDS)}
    if len(ranks) != 1:
        raise ValueError("the inputs' ranks with their expand axes differ: "
                         + ", ".join(f"{len(s)} + {len(attrs[k])}" for s, k in zip(shapes, _EXPANDS)))
    return ranks.pop()


def _expanded(shape: tuple[int, ...], axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """`shape` with a 1 inserted at each of `axes` (sorted positions of the result, of rank `rank`)."""
    rest = iter(shape)
    return tuple(1 if d in axes else next(rest) for d in range(rank))


def _shapes(attrs: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> tuple[tuple[int, ...], ...]:
    """The three inputs' shapes with their expand axes inserted."""
    rank = _rank(attrs, shapes)
    return tuple(_expanded(tuple(s), _positions(attrs[k], rank, k), rank) for s, k in zip(shapes, _EXPANDS))


def _trilinear(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shapes = _shapes(attrs, [s for s, _ in ins])
    try:
        full = broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError("the expanded inputs " + ", ".join(show_shape(s) for s in shapes)
                         + " do not broadcast") from None
    summed = _positions(attrs["sumdim"], len(full), "sumdim")
    return tuple(n for d, n in enumerate(full) if d not in summed), float_dtype(ins)


def _op_trilinear(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    arrays = [_f(a) for a in args]
    try:
        shapes = _shapes(attrs, [a.shape for a in arrays])
        a, b, c = (x.reshape(s) for x, s in zip(arrays, shapes))
        product = a * b * c
        summed = _positions(attrs["sumdim"], product.ndim, "sumdim")
    except ValueError as e:
        raise LowerError(f"Trilinear: {e}") from None
    return _round_float(np.sum(product, axis=summed), dtype)


def _shape_field(k: int) -> Field:
    """The k-th input's shape with its expand axes inserted (a Reshape's shape in the rules)."""
    return Field(f"s{k + 1}", STRING, lambda a, s: ints_text(_shapes(a, s)[k]), None, source=WHOLE, shaped=INPUTS)


def _list_field(key: str) -> Field:
    """An attribute kept as given (a node's own spelling round-trips); normalised in `_shapes`."""
    return Field(key, STRING, lambda v, s: ints_text(v), _ints, shaped=INPUTS)


def _sumdim(a: Mapping[str, Any], s: Sequence[tuple[int, ...]]) -> str:
    return ints_text(_positions(a["sumdim"], _rank(a, s), "sumdim"))


OPS: tuple[OpDef, ...] = (
    OpDef("Trilinear", ("a", "b", "c"), tuple(Attr(k, int_list(k)) for k in (*_EXPANDS, "sumdim")),
          _trilinear, _op_trilinear,
          (Ctor("Trilinear", "Trilinear",
                (*(_list_field(k) for k in (*_EXPANDS, "sumdim")),
                 Field("axes", STRING, _sumdim, None, source=WHOLE, shaped=INPUTS),
                 *(_shape_field(k) for k in range(3))), 3, (head("Trilinear"),)),),
          domain="trilinear", torch="trilinear",
          sample=({"expand1": [1, 3], "expand2": [0], "expand3": [1, 2], "sumdim": [2, 3]},
                  (((2, 3), "f32"), ((4, 3, 5), "f32"), ((2, 5), "f32")))),
)
