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

from . import aten as _aten
from . import aten_acts as _acts
from .context import Context
from .registry import handles


def _bound(v: Any, default: int) -> int:
    return default if v is None else min(int(v), sys.maxsize)


@handles("slice_scatter.default")
def _slice_scatter(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x, src = (ctx.cast(ctx.t(a[k]), dt) for k in ("self", "src"))
    axis = _acts._dim(ctx, a.get("dim", 0), len(shape))
    step = int(a.get("step", 1))
    if step < 1:
        raise ctx.refuse(f"slice_scatter step {step} (the format's SliceScatter takes step >= 1)")
    return ctx.add("SliceScatter", (x, src), {"axis": axis, "start": _bound(a.get("start"), 0),
                                              "end": _bound(a.get("end"), sys.maxsize), "step": step})


def _dims(ctx: Context, a: dict[str, Any], rank: int) -> dict[str, int]:
    """offset, dim1, dim2 of a diagonal op (aten's defaults 0, 0, 1), the dims normalised; refused where
    out of range or the same axis (aten raises there)."""
    d1, d2 = int(a.get("dim1", 0)), int(a.get("dim2", 1))
    if rank < 2 or not (-rank <= d1 < rank and -rank <= d2 < rank) or d1 % rank == d2 % rank:
        raise ctx.refuse(f"dim1 {d1} and dim2 {d2} are no two axes of rank {rank}")
    return {"offset": int(a.get("offset", 0)), "dim1": d1 % rank, "dim2": d2 % rank}


@handles("diagonal.default", "diagonal_copy.default")  # the copy: the same values
def _diagonal(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    return ctx.add("Diagonal", (x,), _dims(ctx, a, len(ctx.shape(x))))


@handles("diagonal_scatter.default")
def _diagonal_scatter(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x, src = (ctx.cast(ctx.t(a[k]), dt) for k in ("self", "src"))
    return ctx.add("DiagonalScatter", (x, src), _dims(ctx, a, len(shape)))


@handles("diagonal_backward.default")
def _diagonal_backward(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    dy = ctx.cast(ctx.t(a["grad_output"]), dt)
    return ctx.add("DiagonalBackward", (dy,), {"shape": list(shape), **_dims(ctx, a, len(shape))})


@handles("select_scatter.default")
def _select_scatter(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x, src = (ctx.cast(ctx.t(a[k]), dt) for k in ("self", "src"))
    axis = _acts._dim(ctx, a["dim"], len(shape))
    n = shape[axis]
    index = int(a["index"])
    if not -n <= index < n:
        raise ctx.refuse(f"index {index} is out of range for an axis of {n}")
    return ctx.add("SelectScatter", (x, src), {"axis": axis, "index": index % n})


@handles("repeat.default")
def _repeat(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    reps = [int(r) for r in a["repeats"]]
    if len(reps) < len(ctx.shape(x)) or any(r < 0 for r in reps):
        raise ctx.refuse(f"repeats {reps} for a tensor of rank {len(ctx.shape(x))}")
    return ctx.add("Repeat", (x,), {"reps": reps})


# The `_copy` variants of the view ops (their OpInfo entries' ops): the same values as the view, in a
# tensor of its own, which every format value is; mapped as the views are.
handles("view_copy.default")(_aten.HANDLERS["aten.view.default"])
handles("permute_copy.default")(_aten.HANDLERS["aten.permute.default"])


@handles("narrow_copy.default")
def _narrow_copy(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    shape = ctx.shape(x)
    axis = _acts._dim(ctx, a["dim"], len(shape))
    n = shape[axis]
    start, length = int(a["start"]), int(a["length"])
    if not -n <= start <= n or length < 0 or (start % n if n and start < 0 else start) + length > n:
        raise ctx.refuse(f"narrow start {start}, length {length} on an axis of {n}")
    start = start + n if start < 0 else start
    return _acts._slice(ctx, x, axis, start, start + length, 1)


@handles("unbind_copy.int")
def _unbind_copy(ctx: Context, a: dict[str, Any]) -> tuple[int, ...]:
    x = ctx.t(a["self"])  # its pieces have its dtype
    shape = ctx.shape(x)
    axis = _acts._dim(ctx, a.get("dim", 0), len(shape))
    piece = [*shape[:axis], *shape[axis + 1:]]
    return tuple(ctx.add("Reshape", (_acts._slice(ctx, x, axis, i, i + 1, 1),), {"shape": piece})
                 for i in range(shape[axis]))


@handles("_efficientzerotensor.default")
def _efficient_zero_tensor(ctx: Context, a: dict[str, Any]) -> int:
    """A tensor of zeros (aten's marker for a gradient known to be zero: sgn's of a real input)."""
    shape, dt = ctx.out()
    return ctx.const(False if dt == "bool" else 0, dt, shape)
