"""aten's `_trilinear` (nn.functional.bilinear's forward and each of its three gradients) onto Trilinear.

- `_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)` is
  Trilinear{expand1, expand2, expand3, sumdim}(i1, i2, i3); `unroll_dim` only picks how aten's kernel
  loops, so it is dropped. Where the inputs broadcast (size 1 against n on an axis none of them inserts)
  aten's kernel is not the broadcast product Trilinear states (with unroll_dim on a summed axis it loops
  over i3's size there), so such a call is left in PyTorch; bilinear's calls never broadcast.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import FLOAT_DTYPES
from ..opdefs.trilinear import _EXPANDS, _positions, _shapes
from .context import Context
from .registry import handles


@handles("_trilinear.default")
def _trilinear(ctx: Context, a: dict[str, Any]) -> int:
    _, dt = ctx.out()
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"_trilinear of dtype {dt}")
    ins = [ctx.cast(ctx.t(a[k]), dt) for k in ("i1", "i2", "i3")]
    attrs = {k: [int(v) for v in a[k]] for k in ("expand1", "expand2", "expand3", "sumdim")}
    try:
        shapes = _shapes(attrs, [ctx.shape(i) for i in ins])
    except ValueError as e:
        raise ctx.refuse(f"_trilinear: {e}") from None
    rank = len(shapes[0])
    inserted = [_positions(attrs[k], rank, k) for k in _EXPANDS]
    kept = [{s[d] for s, axes in zip(shapes, inserted) if d not in axes} for d in range(rank)]
    if any(len(sizes) > 1 for sizes in kept):
        raise ctx.refuse("_trilinear of inputs that broadcast (aten's kernel is not their broadcast product)")
    return ctx.add("Trilinear", ins, attrs)
