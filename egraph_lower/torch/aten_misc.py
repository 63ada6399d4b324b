"""index_reduce and put, each onto one format op (issue 19).

Decisions (checked against torch 2.13's CPU kernels):
- `index_reduce(x, dim, index, source, reduce, include_self)`: `IndexReduce{dim, reduce, include_self}`
  (0-d operands as [1], the result reshaped back); an integer mean is refused, as for scatter_reduce
  (aten floor-divides, the expansion of backends without the kernel divides floats). Its gradient is
  aten's formula in primitives (index_select, index_add, masked_fill, where: traced by AOTAutograd).
- `put(x, index, source, accumulate)`: `IndexPut{0, accumulate}` of x, the index and the source
  flattened (put indexes the flattened tensor, negative indices from its end, as IndexPut's do),
  reshaped back to x's shape.
"""

from __future__ import annotations

import math
from typing import Any

from ..dtypes import FLOAT_DTYPES
from .aten_index import _rank1
from .aten_indexing import _reshaped, _vector
from .context import Context
from .registry import handles


@handles("index_reduce.default")
def _index_reduce(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    if a["reduce"] == "mean" and dt not in FLOAT_DTYPES:
        raise ctx.refuse("an integer mean (aten floor-divides; the expansion of backends without the kernel "
                         "divides floats)")
    x = _rank1(ctx, ctx.cast(ctx.t(a["self"]), dt))
    src = _rank1(ctx, ctx.cast(ctx.t(a["source"]), dt))
    attrs = {"axis": int(a["dim"]) % len(ctx.shape(x)), "reduce": str(a["reduce"]),
             "include_self": bool(a.get("include_self", True))}
    return _reshaped(ctx, ctx.add("IndexReduce", (x, _vector(ctx, a["index"]), src), attrs))


def _flat(ctx: Context, nid: int) -> int:
    return ctx.add("Reshape", (nid,), {"shape": [math.prod(ctx.shape(nid))]})


@handles("put.default")
def _put(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    x = _flat(ctx, ctx.cast(ctx.t(a["self"]), dt))
    index = _flat(ctx, ctx.cast(ctx.t(a["index"]), "i64"))
    src = _flat(ctx, ctx.cast(ctx.t(a["source"]), dt))
    out = ctx.add("IndexPut", (x, index, src), {"axis": 0, "accumulate": bool(a.get("accumulate", False))})
    return _reshaped(ctx, out)
