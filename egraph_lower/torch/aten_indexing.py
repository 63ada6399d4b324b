"""Advanced indexing, index-put, index_select / index_add and flip, each onto one format op.

Decisions (checked against torch 2.13's CPU kernels; opdefs/indexing.py states the ops):
- `index.Tensor` / `_unsafe_index.Tensor` with k = 1..3 index tensors: `Index`, `Index2`, `Index3` at the
  first indexed axis when the indexed axes are consecutive. Otherwise aten puts the indices' broadcast
  axes first (its kernel transposes the indexed axes to the front and indexes there): x is transposed
  so, and indexed at axis 0. A bool or uint8 index (a mask: as many positions as it holds true values,
  known only at run time) and more than three index tensors are refused.
- `index_put` / `_unsafe_index_put`: `IndexPut`(2, 3) on the same axes (transposed there and back when
  not consecutive); leading size-1 axes of the values beyond the shape the indices read are dropped
  (aten broadcasts them away).
- `index_select(x, dim, i)`: `Take{dim}` (aten refuses a negative index there, as Take does); a 0-d index
  reads one position and keeps the axis ([1]); a 0-d x is taken as [1] (one position) and reshaped back.
- `index_add(x, dim, i, src, alpha)`: `IndexPut{dim, accumulate}` of alpha * src (the same sum).
- `flip(x, dims)`: one `Flip` per dim of size > 1 (flipping an axis of one element changes nothing).
- `scatter.src` / `scatter.value` (the value as a src of the index's shape): `Scatter`; `scatter_reduce.two`:
  `ScatterReduce` (an integer mean is refused: aten floor-divides, the rules' expansion divides floats);
  0-d operands as [1], the result reshaped back.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

from ..dtypes import FLOAT_DTYPES
from .aten_index import _rank1
from .context import Context
from .registry import handles

_INDEX = {1: "Index", 2: "Index2", 3: "Index3"}
_PUT = {1: "IndexPut", 2: "IndexPut2", 3: "IndexPut3"}


def _placed(ctx: Context, x: int, indices: list[Any]) -> tuple[int, int, list[int], list[int] | None]:
    """(x, axis, index nodes, perm): x transposed by `perm` (None: not) so that the indexed axes are
    consecutive from `axis`, as aten indexes them."""
    rank = len(ctx.shape(x))
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if not given:
        raise ctx.refuse("an index with no index tensor")
    if len(indices) > rank:
        raise ctx.refuse(f"{len(indices)} indices for a tensor of rank {rank}")
    if len(given) > 3:
        raise ctx.refuse(f"{len(given)} index tensors (the format indexes up to 3 axes at once)")
    out = []
    for _, i in given:
        v = ctx.val(i)
        if not isinstance(v, torch.Tensor) or v.dtype in (torch.bool, torch.uint8):
            raise ctx.refuse("a mask index (the number of positions it selects is known only at run time)")
        out.append(ctx.cast(ctx.t(i), "i64"))
    dims = [d for d, _ in given]
    if dims == list(range(dims[0], dims[0] + len(dims))):
        return x, dims[0], out, None
    perm = dims + [d for d in range(rank) if d not in dims]
    return ctx.add("Transpose", (x,), {"perm": perm}), 0, out, perm


@handles("index.Tensor", "_unsafe_index.Tensor")
def _index(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    x, axis, idx, _ = _placed(ctx, x, list(a["indices"]))
    return ctx.add(_INDEX[len(idx)], (x, *idx), {"axis": axis})


@handles("index_put.default", "_unsafe_index_put.default")
def _index_put(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x0 = ctx.cast(ctx.t(a["self"]), dt)
    x, axis, idx, perm = _placed(ctx, x0, list(a["indices"]))
    v = ctx.cast(ctx.t(a["values"]), dt)
    xs = ctx.shape(x)
    from ..opdefs.meta import broadcast_shapes

    read = xs[:axis] + broadcast_shapes(*(ctx.shape(i) for i in idx)) + xs[axis + len(idx):]
    vs = ctx.shape(v)
    if len(vs) > len(read):
        extra = len(vs) - len(read)
        if any(s != 1 for s in vs[:extra]):
            raise ctx.refuse(f"values of shape {list(vs)} for positions of shape {list(read)}")
        v = ctx.add("Reshape", (v,), {"shape": list(vs[extra:])})
    out = ctx.add(_PUT[len(idx)], (x, *idx, v), {"axis": axis, "accumulate": bool(a["accumulate"])})
    if perm is None:
        return out
    return ctx.add("Transpose", (out,), {"perm": [perm.index(d) for d in range(len(perm))]})


def _vector(ctx: Context, index: fx.Node) -> int:
    i = ctx.cast(ctx.t(index), "i64")
    return ctx.add("Reshape", (i,), {"shape": [1]}) if ctx.shape(i) == () else i


@handles("index_select.default")
def _index_select(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x = _rank1(ctx, ctx.cast(ctx.t(a["self"]), dt))
    out = ctx.add("Take", (x, _vector(ctx, a["index"])), {"axis": int(a["dim"]) % len(ctx.shape(x))})
    return out if ctx.shape(out) == shape else ctx.add("Reshape", (out,), {"shape": list(shape)})


@handles("index_add.default")
def _index_add(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x = _rank1(ctx, ctx.cast(ctx.t(a["self"]), dt))
    src = _rank1(ctx, ctx.cast(ctx.t(a["source"]), dt))
    if a.get("alpha", 1) != 1:
        src = ctx.add("Binary", (src, ctx.const(a["alpha"], dt)), {"op": "Mul"})
    out = ctx.add("IndexPut", (x, _vector(ctx, a["index"]), src), {"axis": int(a["dim"]) % len(ctx.shape(x)),
                                                                  "accumulate": True})
    return out if ctx.shape(out) == shape else ctx.add("Reshape", (out,), {"shape": list(shape)})


@handles("flip.default")
def _flip(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    shape = ctx.shape(x)
    for d in sorted({int(d) % len(shape) for d in a["dims"]} if shape else ()):
        if shape[d] > 1:
            x = ctx.add("Flip", (x,), {"axis": d})
    return x


def _scatter_operands(ctx: Context, a: dict[str, Any], src: int, dtype: str | None = None) -> tuple[int, int, int, int]:
    """(x in `dtype` (the result's: None), index, src, axis) with 0-d operands as [1] (aten takes them as one
    position)."""
    x = _rank1(ctx, ctx.cast(ctx.t(a["self"]), dtype or ctx.out_dtype()))
    return x, _rank1(ctx, ctx.t(a["index"])), _rank1(ctx, src), int(a["dim"]) % len(ctx.shape(x))


def _reshaped(ctx: Context, nid: int) -> int:
    shape = ctx.out()[0]
    return nid if ctx.shape(nid) == shape else ctx.add("Reshape", (nid,), {"shape": list(shape)})


@handles("scatter.src", "scatter.value")
def _scatter(ctx: Context, a: dict[str, Any]) -> int:
    out = ctx.out_dtype()
    dt = "i32" if out == "bool" else out
    if "src" in a:
        src = ctx.cast(ctx.t(a["src"]), dt)
    else:  # a scalar value: the src of the index's shape holding it
        index_shape = ctx.shape(ctx.t(a["index"]))
        src = ctx.expand(ctx.const(int(bool(a["value"])) if out == "bool" else a["value"], dt), index_shape)
    x, index, src, axis = _scatter_operands(ctx, a, src, dt)
    return ctx.cast(_reshaped(ctx, ctx.add("Scatter", (x, index, src), {"axis": axis})), out)


@handles("scatter_reduce.two")
def _scatter_reduce(ctx: Context, a: dict[str, Any]) -> int:
    if a["reduce"] == "mean" and ctx.out_dtype() not in FLOAT_DTYPES:
        raise ctx.refuse("an integer mean (aten floor-divides; the expansion of backends without the kernel "
                         "divides floats)")
    x, index, src, axis = _scatter_operands(ctx, a, ctx.cast(ctx.t(a["src"]), ctx.out_dtype()))
    attrs = {"axis": axis, "reduce": str(a["reduce"]), "include_self": bool(a["include_self"])}
    return _reshaped(ctx, ctx.add("ScatterReduce", (x, index, src), attrs))
