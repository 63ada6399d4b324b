"""IndexReduce (format version 3): aten's `index_reduce` (`x.index_reduce(dim, index, source, reduce, include_self)`).

    IndexReduce{axis, reduce, include_self}(x, index [K], src)
        = ScatterReduce{axis, reduce, include_self}(x, index expanded to src's shape along `axis`, src):
          src's slice k along the axis is reduced into x's slice index[k]; the `reduce` (prod, mean, amax,
          amin: aten's four) of the values written to a position, and x's own value when include_self; positions no index names keep
          x's value (include_self or not). Repeated indices reduce together; mean divides by the count of
          values reduced (x's included when include_self); amax / amin propagate NaN, as aten's.

x of rank r >= 1, index 1-D of K integers in [0, x.shape[axis]) (aten refuses a negative one), src of x's
shape but K on the axis. The e-node carries the fields of the ScatterReduce of the expanded index
(`opdefs/scatter.py`: x's geometry, the index's M = src's element count and shape) and `icol`, the index
as [1, .., K, .., 1] that is expanded to src's shape; `rules/index_reduce.py` states the op so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..arrays import Args, Attrs
from .base import I64, INPUTS, STRING, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .index import indices
from .indexing import _whole
from .meta import attr_check, boolean, is_int, one_of, show_shape
from .scatter import _op_scatter_reduce, _scatter_fields

REDUCTIONS = ("prod", "mean", "amax", "amin")  # aten's index_reduce has no sum (index_add is that)


def _icol(axis: int, rank: int, k: int) -> tuple[int, ...]:
    return (1,) * axis + (k,) + (1,) * (rank - axis - 1)


def _index_reduce(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sx, dx), (si, di), (ss, ds) = ins
    rank = len(sx)
    if rank == 0:
        raise ValueError("x must have rank >= 1 (aten's 0-d operands reach IndexReduce as [1])")
    if not -rank <= attrs["axis"] < rank:
        raise ValueError(f"axis {attrs['axis']} is out of range for rank {rank}")
    axis = int(attrs["axis"]) % rank
    if len(si) != 1:
        raise ValueError(f"index must be 1-D, got {show_shape(si)}")
    if di is not None and not (di.startswith("i") or di.startswith("u")):
        raise ValueError(f"index must have an integer dtype, got {di}")
    want = sx[:axis] + si + sx[axis + 1:]
    if tuple(ss) != want:
        raise ValueError(f"src of shape {show_shape(ss)} for x of shape {show_shape(sx)} and {si[0]} indices "
                         f"(want {show_shape(want)})")
    if dx is not None and ds is not None and dx != ds:
        raise ValueError(f"x is {dx} but src is {ds} (they must be equal)")
    return sx, dx or ds


def _op_index_reduce(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, src = np.asarray(args[0]), np.asarray(args[2])
    axis = int(attrs["axis"]) % x.ndim
    idx = indices(args[1], x.shape[axis], "IndexReduce").reshape(-1)
    expanded = np.broadcast_to(idx.reshape(_icol(axis, x.ndim, idx.size)), src.shape)
    return _op_scatter_reduce(attrs, [x, expanded, src], dtype, shape)


def _as_expanded(f: Field) -> Field:
    """A ScatterReduce field computed for the expanded index: the shapes it reads are (x, src, src)."""
    encode = f.encode

    def on_expanded(v: Any, s: Any) -> Any:
        return encode(v, (s[0], s[2], s[2]))
    return replace(f, encode=on_expanded)


def _fields() -> tuple[Field, ...]:
    reduce_f = Field("reduce", STRING, lambda v, s: str(v).upper(), lambda v: str(v).lower(), shaped=INPUTS)
    include_f = Field("include_self", I64, lambda v, s: int(bool(v)), bool, shaped=INPUTS)
    icol = _whole("icol", STRING, lambda a, s: ints_text(_icol(int(a["axis"]) % len(s[0]), len(s[0]),
                                                                math.prod(s[1]))))
    return (reduce_f, include_f) + tuple(_as_expanded(f) for f in _scatter_fields()) + (icol,)


_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_REDUCE = Attr("reduce", one_of(REDUCTIONS, "IndexReduce reduce"))
_INCLUDE = Attr("include_self", boolean("include_self"))

OPS: tuple[OpDef, ...] = (
    OpDef("IndexReduce", ("x", "index", "src"), (_AXIS, _REDUCE, _INCLUDE), _index_reduce, _op_index_reduce,
          (Ctor("IndexReduce", "IndexReduce", _fields(), 3, (head("IndexReduce"),)),),
          domain="index_reduce", torch="index_reduce",
          sample=({"axis": 1, "reduce": "prod", "include_self": False},
                  (((2, 3), "f32"), ((4,), "i64"), ((2, 4), "f32")))),
)
