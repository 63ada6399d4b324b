"""The aten norms and distances of format version 3 (opdefs/distance.py), each onto one format op:

- `linalg_vector_norm(x, ord, dim, keepdim, dtype)`: `VectorNorm{ord, axes, keep_dim}` of x cast to the
  result's dtype (aten's `dtype` argument, else x's); dim None or [] is every axis; ord inf / -inf as
  "inf" / "-inf". It is not Core ATen and PyTorch's Core ATen table has no decomposition for it, so it
  reaches the importer whole (from norm, normalize, cosine_similarity, pairwise_distance, ...); its
  backward is primitives in aten (div, masked_fill at norm 0, sgn, abs, pow, eq).
- `dist(self, other, p)`: `Dist{ord: p}(self, other)` in the result's dtype (it is not Core ATen and
  reaches the importer whole; its expansion into VectorNorm of a Sub is a rule, not the importer's; its
  backward is aten's norm_backward of self - other, primitives).
- `_cdist_forward(x1, x2, p, compute_mode)`: `Cdist{ord: p}(x1, x2)` where aten's kernel computes the
  direct form; for p = 2 with compute_mode 1 (use_mm_for_euclid_dist) or None / 0 with more than 25 rows
  in x1 or x2 its kernel takes the matrix-product form sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), whose values
  differ from the distance by its cancellation (about sqrt(eps) |a| at equal rows): refused, so it runs
  in PyTorch (torch.cdist itself reaches `_cdist_forward` only for the direct form: past 25 rows it calls
  the matrix-product path, `_euclidean_dist`, instead);
- `_cdist_backward(grad, x1, x2, p, cdist)`: `CdistBackward{ord: p}(grad, x1, x2, cdist)`; for an empty x1
  or x2 aten's kernel returns zeros of x1's own shape (not the broadcast batch's): a Constant 0 of it;
- `_pdist_forward(self, p)`, `_pdist_backward(grad, self, p, pdist)`: `Pdist{ord: p}(self)`,
  `PdistBackward{ord: p}(grad, self, pdist)` (aten's pdist kernel has the direct form only).
"""

from __future__ import annotations

import math
from typing import Any

from .context import Context
from .registry import handles


def _ord(ctx: Context, v: Any) -> Any:
    p = float(ctx.scalar(v))
    if math.isnan(p):
        raise ctx.refuse("a NaN norm order")
    if math.isinf(p):
        return "inf" if p > 0 else "-inf"
    return int(p) if p == int(p) else p


@handles("linalg_vector_norm.default")
def _vector_norm(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    rank = len(ctx.shape(x))
    dims = a.get("dim")
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        axes = list(range(rank))
    else:
        dims = [dims] if isinstance(dims, int) else list(dims)
        axes = sorted({int(d) % rank for d in dims}) if rank else []
    return ctx.add("VectorNorm", (x,), {"ord": _ord(ctx, a.get("ord", 2)), "axes": axes,
                                        "keep_dim": bool(a.get("keepdim", False))})


@handles("dist.default")
def _dist(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    x, y = (ctx.cast(ctx.t(a[k]), dt) for k in ("self", "other"))
    return ctx.add("Dist", (x, y), {"ord": _ord(ctx, a.get("p", 2))})


def _cdist_ord(ctx: Context, v: Any) -> Any:
    p = _ord(ctx, v)
    if p == "-inf" or (not isinstance(p, str) and p < 0):
        raise ctx.refuse("a negative cdist order (aten raises)")
    return p


@handles("_cdist_forward.default")
def _cdist(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    x1, x2 = (ctx.cast(ctx.t(a[k]), dt) for k in ("x1", "x2"))
    p = _cdist_ord(ctx, a["p"])
    mode = a.get("compute_mode")
    mode = 0 if mode is None else int(mode)
    rows = (ctx.shape(x1)[-2], ctx.shape(x2)[-2])
    empty = 0 in ctx.out()[0] or ctx.shape(x1)[-1] == 0  # aten's kernel computes no distance then
    if p == 2 and not empty and (mode == 1 or (mode == 0 and max(rows) > 25)):
        raise ctx.refuse("_cdist_forward's matrix-product form (p = 2 past 25 rows or use_mm_for_euclid_dist)")
    return ctx.add("Cdist", (x1, x2), {"ord": p})


@handles("_cdist_backward.default")
def _cdist_backward(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    ins = tuple(ctx.cast(ctx.t(a[k]), dt) for k in ("grad", "x1", "x2", "cdist"))
    p = _cdist_ord(ctx, a["p"])
    if 0 in ctx.shape(ins[1]) or 0 in ctx.shape(ins[2]):
        # aten's kernel returns zeros of x1's own shape for empty inputs (no distance, no gradient), not
        # the broadcast batch's: that value, with nothing to compute
        return ctx.const(0, dt, shape)
    return ctx.add("CdistBackward", ins, {"ord": p})


@handles("_pdist_forward.default")
def _pdist(ctx: Context, a: dict[str, Any]) -> int:
    return ctx.add("Pdist", (ctx.cast(ctx.t(a["self"]), ctx.out_dtype()),), {"ord": _cdist_ord(ctx, a.get("p", 2))})


@handles("_pdist_backward.default")
def _pdist_backward(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    ins = tuple(ctx.cast(ctx.t(a[k]), dt) for k in ("grad", "self", "pdist"))
    return ctx.add("PdistBackward", ins, {"ord": _cdist_ord(ctx, a["p"])})
