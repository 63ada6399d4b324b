"""The aten norms and distances of format version 3 (opdefs/distance.py), each onto one format op:

- `linalg_vector_norm(x, ord, dim, keepdim, dtype)`: `VectorNorm{ord, axes, keep_dim}` of x cast to the
  result's dtype (aten's `dtype` argument, else x's); dim None or [] is every axis; ord inf / -inf as
  "inf" / "-inf". It is not Core ATen and PyTorch's Core ATen table has no decomposition for it, so it
  reaches the importer whole (from norm, normalize, cosine_similarity, pairwise_distance, ...); its
  backward is primitives in aten (div, masked_fill at norm 0, sgn, abs, pow, eq).
- `dist(self, other, p)`: `Dist{ord: p}(self, other)` in the result's dtype (it is not Core ATen and
  reaches the importer whole; its expansion into VectorNorm of a Sub is a rule, not the importer's; its
  backward is aten's norm_backward of self - other, primitives).
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
