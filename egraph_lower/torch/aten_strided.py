"""Strided views and masked scatter (`opdefs/strided.py`): `as_strided`, `as_strided_scatter`,
`masked_scatter` and `masked_scatter_backward`.

`as_strided(x, size, stride, storage_offset)` addresses x's STORAGE, not its elements: position
storage_offset + sum_k i_k stride_k of the memory x lives in, as laid out by x's strides and offset
(the FX node's `meta["val"]`, which the contract, `contract.py`, makes the lowered values' layout).
The format's values have no storage, so the mapping states the op only where x's storage is a function
of x's elements: a dense layout, contiguous up to a permutation of the axes, expanded axes (stride 0)
held once (`storage_order`). Then the storage from x's offset on is x' = Reshape[-1](Transpose(x)) in
storage order, and the view is `AsStrided{size, stride, storage_offset - x's offset}(x')` wherever it
reads inside those elements. A layout with gaps (a slice with a step, a view into a larger base: the
gap holds memory of another tensor, which the lowered graph does not have), a view that reads before
x's offset or past its last element, and symbolic sizes are refused: the op stays in PyTorch, with
the reason. `partition._needs_base` then makes sure PyTorch's as_strided reads a value of that layout
as PyTorch computed it (the value and the views it came from are recomputed from their base), not a
fresh tensor whose gaps hold nothing.

`as_strided_scatter(x, src, ...)` is a copy of x (x's layout) with the window written: the same storage
order, `AsStridedScatter` on x', and the permutation undone; an expanded x or a window that writes a
position twice is refused. `masked_scatter(x, mask, source)`: x and mask broadcast to the result's shape,
`MaskedScatter`; `masked_scatter_backward(grad, mask, sizes)`: `MaskedScatterBackward{shape: sizes}`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from .context import Context
from .registry import handles


def storage_order(shape: Sequence[int], stride: Sequence[int]) -> list[int] | None:
    """The axes of size > 1 and stride > 0 from the largest stride to the smallest, where they lay out
    a dense run of memory (the smallest stride 1, each next one the product of the sizes below it);
    None where the layout has gaps or overlaps."""
    axes = [d for d, (n, s) in enumerate(zip(shape, stride)) if n > 1 and s != 0]
    axes.sort(key=lambda d: -int(stride[d]))
    want = 1
    for d in reversed(axes):
        if int(stride[d]) != want:
            return None
        want *= int(shape[d])
    return axes


def has_gaps(val: Any) -> bool:
    """Whether a tensor's storage, over the extent its strides span, holds positions that are no element of
    it (or elements that overlap), so that reading that storage needs the memory itself, not the values."""
    if not isinstance(val, torch.Tensor) or val.numel() == 0:
        return False
    try:
        return storage_order(tuple(int(n) for n in val.shape), tuple(int(s) for s in val.stride())) is None
    except TypeError:  # symbolic strides
        return True


def _ints(ctx: Context, values: Any, what: str) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, torch.SymInt) or not isinstance(v, int):
            raise ctx.refuse(f"{what} {list(values)} is not a list of integers (compile with dynamic=False)")
        out.append(int(v))
    return out


def _layout(ctx: Context, arg: Any) -> tuple[tuple[int, ...], list[int], int, list[int]]:
    """x's shape, strides, storage offset and storage order (`storage_order`); refused where it has none."""
    val = ctx.val(arg)
    shape = tuple(_ints(ctx, val.shape, "shape"))
    stride = _ints(ctx, val.stride(), "stride")
    offset = val.storage_offset()
    if not isinstance(offset, int):
        raise ctx.refuse("symbolic storage offset (compile with dynamic=False)")
    order = storage_order(shape, stride)
    if order is None:
        raise ctx.refuse(f"the input's layout (shape {list(shape)}, strides {stride}) has gaps or overlaps: its "
                         "storage holds memory that is no element of it, which the format's values do not have")
    return shape, stride, int(offset), order


def _storage(ctx: Context, x: int, shape: tuple[int, ...], stride: Sequence[int], order: list[int],
             expanded: bool) -> int:
    """x's elements in storage order, flat: an expanded axis (stride 0) read once, then the others
    from the largest stride to the smallest."""
    if not expanded:
        for d, (n, s) in enumerate(zip(shape, stride)):
            if n > 1 and s == 0:
                x = ctx.add("Slice", (x,), {"axis": d, "start": 0, "end": 1, "step": 1})
    kept = [d for d in range(len(shape)) if d in order]
    rest = [d for d in range(len(shape)) if d not in order]  # axes of one (or sliced to one)
    perm = order + rest
    if perm != list(range(len(shape))):
        x = ctx.add("Transpose", (x,), {"perm": perm})
    n = math.prod(shape[d] for d in kept)
    return x if ctx.shape(x) == (n,) else ctx.add("Reshape", (x,), {"shape": [n]})


def _window(ctx: Context, a: dict[str, Any], offset: int) -> dict[str, Any]:
    size, stride = _ints(ctx, a["size"], "size"), _ints(ctx, a["stride"], "stride")
    if len(size) != len(stride) or any(s < 0 for s in size + stride):
        raise ctx.refuse(f"size {size} and stride {stride} are not a window")
    given = a.get("storage_offset")
    start = offset if given is None else given
    if not isinstance(start, int):
        raise ctx.refuse("symbolic storage offset (compile with dynamic=False)")
    rel = int(start) - offset
    if math.prod(size) and rel < 0:
        raise ctx.refuse(f"the view starts at storage offset {start}, before the input's first element ({offset}): "
                         "memory the format's value does not have")
    return {"size": size, "stride": stride, "offset": max(rel, 0)}


def _refuse_outside(ctx: Context, attrs: dict[str, Any], n: int) -> None:
    if math.prod(attrs["size"]):
        last = attrs["offset"] + sum((s - 1) * t for s, t in zip(attrs["size"], attrs["stride"]))
        if last >= n:
            raise ctx.refuse(f"the view reads storage position {last} past the input's {n} elements: memory the "
                             "format's value does not have")


@handles("as_strided.default", "as_strided_copy.default")  # the copy: the same values
def _as_strided(ctx: Context, a: dict[str, Any]) -> int:
    shape, stride, offset, order = _layout(ctx, a["self"])
    attrs = _window(ctx, a, offset)
    n = math.prod(shape[d] for d in order)
    _refuse_outside(ctx, attrs, n)
    x = _storage(ctx, ctx.t(a["self"]), shape, stride, order, False)
    return ctx.add("AsStrided", (x,), attrs)


@handles("as_strided_scatter.default")
def _as_strided_scatter(ctx: Context, a: dict[str, Any]) -> int:
    shape, stride, offset, order = _layout(ctx, a["self"])
    if any(n > 1 and s == 0 for n, s in zip(shape, stride)):
        raise ctx.refuse("the input is expanded (a stride 0): writing its storage writes several elements")
    attrs = _window(ctx, a, offset)
    n = math.prod(shape)
    _refuse_outside(ctx, attrs, n)
    dt = ctx.out_dtype()
    x = ctx.cast(ctx.t(a["self"]), dt)
    flat = _storage(ctx, x, shape, stride, order, True)
    src = ctx.cast(ctx.t(a["src"]), dt)
    if ctx.shape(src) != tuple(attrs["size"]):
        src = ctx.add("Reshape", (src,), {"shape": attrs["size"]})
    out = ctx.add("AsStridedScatter", (flat, src), attrs)
    rest = [d for d in range(len(shape)) if d not in order]
    perm = order + rest
    out = ctx.add("Reshape", (out,), {"shape": [shape[d] for d in perm]})
    if perm != list(range(len(shape))):
        out = ctx.add("Transpose", (out,), {"perm": [perm.index(d) for d in range(len(shape))]})
    return out


@handles("masked_scatter.default")
def _masked_scatter(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x = ctx.expand(ctx.cast(ctx.t(a["self"]), dt), shape)
    mask = ctx.expand(ctx.cast(ctx.t(a["mask"]), "bool"), shape)
    return ctx.add("MaskedScatter", (x, mask, ctx.cast(ctx.t(a["source"]), dt)))


@handles("masked_scatter_backward.default")
def _masked_scatter_backward(ctx: Context, a: dict[str, Any]) -> int:
    sizes = _ints(ctx, a["sizes"], "sizes")
    dt = ctx.out_dtype()
    dy = ctx.cast(ctx.t(a["grad_output"]), dt)
    mask = ctx.expand(ctx.cast(ctx.t(a["mask"]), "bool"), ctx.shape(dy))
    return ctx.add("MaskedScatterBackward", (dy, mask), {"shape": sizes})
