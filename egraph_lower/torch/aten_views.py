"""The aten ops of views written back and shape ops, one format op each (opdefs/views.py; checked against
aten's kernels in float64: tests/test_views.py).

- `slice_scatter(self, src, dim, start, end, step)` is SliceScatter{axis, start, end, step} (start None: 0,
  end None: the largest int64; Python's clamping is the format's), any step. Its expansions (the
  positions before the slice, src and those after it concatenated, for step 1; src spread into the
  axis and selected by a mask, for any step) are rules (`rules/views.py`), not the importer's.
"""

from __future__ import annotations

import sys
from typing import Any

from .context import Context
from .registry import handles


def _bound(v: Any, default: int) -> int:
    return default if v is None else min(int(v), sys.maxsize)


@handles("slice_scatter.default")
def _slice_scatter(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x, src = (ctx.cast(ctx.t(a[k]), dt) for k in ("self", "src"))
    rank = len(shape)
    axis = int(a.get("dim", 0))
    if not -rank <= axis < rank:
        raise ctx.refuse(f"dim {axis} is out of range for rank {rank}")
    step = int(a.get("step", 1))
    if step < 1:
        raise ctx.refuse(f"slice_scatter step {step} (the format's SliceScatter takes step >= 1)")
    return ctx.add("SliceScatter", (x, src), {"axis": axis % rank, "start": _bound(a.get("start"), 0),
                                              "end": _bound(a.get("end"), sys.maxsize), "step": step})
