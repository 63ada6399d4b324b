"""Max unpooling (format version 3): aten's `max_unpool2d` and `max_unpool3d` (1-D reaches aten as
2-D over an unsqueezed input), declared once by the number of spatial axes.

    MaxUnpool{2,3}d{output_size}(x, indices) = y [N, C, *output_size], zeros but where an index names a
        position: y[n, c, indices[n, c, o]] = x[n, c, o], o over x's spatial positions; of positions
        named more than once the last o in row-major order wins

x is float [N, C, *O], indices i64 of x's shape, flat within the output's spatial volume (max pooling's
indices). aten's CPU kernel writes in that order on one thread; with several it leaves the winner of a
repeated position unspecified (as its documentation says). An index outside the volume is refused
(aten refuses it too). Its gradient is not an op: aten hands it over as a `gather` of dy at the indices.
The rules (`rules/unpool.py`) read the derived fields below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..errors import LowerError
from .base import I64, INPUTS, STRING, Attr, Ctor, Field, Meta, OpDef, WHOLE, head, ints, ints_text
from .meta import attr_check, is_int_list, show_shape
from .pool import float_input


def _size(nd: int) -> Attr:
    def ok(v: Any) -> bool:
        return is_int_list(v) and len(v) == nd and all(d >= 1 for d in v)
    return Attr("output_size", attr_check("output_size", ok, f"a list of {('two', 'three')[nd - 2]} integers >= 1"))


def _infer(nd: int) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        (shape, dt), (ishape, idt) = ins
        float_input(ins[0], nd)
        if idt is not None and idt != "i64":
            raise ValueError(f"indices must be i64, got {idt}")
        if tuple(ishape) != tuple(shape):
            raise ValueError(f"indices {show_shape(ishape)} do not have x's shape {show_shape(shape)}")
        return (*shape[:2], *attrs["output_size"]), dt
    return infer


def unpool(output_size: Sequence[int], x: np.ndarray, indices: np.ndarray, op: str) -> np.ndarray:
    """y [N, C, *output_size] float64: x written at its indices, the last of repeated ones winning."""
    n, c = x.shape[:2]
    volume, cells = math.prod(output_size), math.prod(x.shape[2:])
    idx = indices.astype(np.int64).reshape(n * c, cells)
    bad = idx[(idx < 0) | (idx >= volume)]
    if bad.size:
        raise LowerError(f"{op}: index {int(bad.flat[0])} is outside the {' x '.join(map(str, output_size))} volume")
    flat = (idx + np.arange(n * c)[:, None] * volume).reshape(-1)
    vals = _f(x).reshape(-1)
    out = np.zeros(n * c * volume)
    last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]  # of each position, its last writer
    out[flat[last]] = vals[last]
    return out.reshape(n, c, *output_size)


def _evaluate(nd: int) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        return _round_float(unpool(attrs["output_size"], np.asarray(args[0]), np.asarray(args[1]),
                                   f"MaxUnpool{nd}d"), dtype)
    return evaluate


def _field(name: str, fn: Any) -> Field:
    """A field computed from output_size and x's shape (not an attribute)."""
    return Field(name, STRING, fn, None, source=WHOLE, shaped=INPUTS)


def _nc(s: Sequence[Sequence[int]]) -> tuple[int, int]:
    return int(s[0][0]), int(s[0][1])


def _vol(a: Mapping[str, Any]) -> int:
    return math.prod(int(v) for v in a["output_size"])


def _cells(s: Sequence[Sequence[int]]) -> int:
    return math.prod(int(v) for v in s[0][2:])


# The rules' fields: the output's shape (`yshape`, [N, C, *output_size]), x and the indices with their
# spatial axes flattened (`xflat`, [N, C, M]), the output's volume P (`plane`), and Scatter's fields for
# a scatter into zeros [N, C, P] along axis 2 of indices [N, C, M] (`opdefs/scatter.py`).
_FIELDS = (ints("output_size"),
           _field("yshape", lambda a, s: ints_text([*_nc(s), *a["output_size"]])),
           _field("xflat", lambda a, s: ints_text([*_nc(s), _cells(s)])),
           Field("plane", I64, lambda a, s: _vol(a), None, source=WHOLE, shaped=INPUTS),
           _field("sflat", lambda a, s: ints_text([math.prod(_nc(s)) * _vol(a)])),
           _field("sshape", lambda a, s: ints_text([*_nc(s), _vol(a)])),
           _field("snshape", lambda a, s: ints_text([math.prod(_nc(s)) * _vol(a), 1, 1, 1])),
           _field("iflat", lambda a, s: ints_text([math.prod(_nc(s)) * _cells(s)])))


def _op(nd: int) -> OpDef:
    name = f"MaxUnpool{nd}d"
    x = (2, 3, 2, 3) if nd == 2 else (2, 3, 2, 2, 3)
    size = [4, 6] if nd == 2 else [3, 4, 6]
    return OpDef(name, ("x", "indices"), (_size(nd),), _infer(nd), _evaluate(nd),
                 (Ctor(name, name, _FIELDS, 2, (head(name),)),), domain="unpool", torch=f"max_unpool{nd}d",
                 sample=({"output_size": size}, ((x, "f32"), (x, "i64"))))


OPS: tuple[OpDef, ...] = (_op(2), _op(3))
