"""The aten ops of reflection and replication padding and their backward ops, each onto `ModePad` /
`ModePadBackward` (opdefs/padding.py), one node per padded axis (checked against torch's kernels
in tests/test_pad.py).

- `reflection_pad{1,2,3}d(x, padding)`, `replication_pad{1,2,3}d(x, padding)`: padding holds a
  (before, after) pair per padded axis from the last one backwards, as `F.pad` does; each pair that
  is not (0, 0) is a `ModePad{axis, mode: Reflect|Replicate, before, after}` (padding is separable:
  an axis's positions read along that axis only). Negative pads crop, as torch's kernels do.
- `reflection_pad{1,2,3}d_backward(dy, x, padding)`, `replication_pad{1,2,3}d_backward`: a
  `ModePadBackward` per padded axis (the gradients of the axes' paddings commute: each sums along
  its own axis); in f16/bf16 over several axes they compute in float32 and round once, as aten's
  kernel sums a corner's terms of every axis in one accumulator.

Circular padding reaches the importer as what aten's `_pad_circular` (a composite op) decomposes
into: an empty tensor written by slices (`slice_scatter` of `copy`s), and in the backward
`slice_backward`s and adds; each `slice_scatter` is a SliceScatter node (aten_views.py), which the
rules expand into Concats of Slices where a backend has no kernel for it.
"""

from __future__ import annotations

from typing import Any

from .context import Context
from .registry import handles


def _axes(ctx: Context, rank: int, padding: Any, k: int) -> list[tuple[int, int, int]]:
    """(axis, before, after) of each axis the padding pads (not (0, 0)), the last axis first."""
    pad = [int(p) for p in padding]
    if len(pad) != 2 * k or rank < k:
        raise ctx.refuse(f"padding {pad} of a {k}-d padding of a rank-{rank} tensor")
    pairs = [(rank - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(k)]
    return [p for p in pairs if p[1:] != (0, 0)]


def _forward(mode: str, k: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
        for axis, before, after in _axes(ctx, len(ctx.shape(x)), a["padding"], k):
            x = ctx.add("ModePad", (x,), {"axis": axis, "mode": mode, "before": before, "after": after})
        return x
    return handler


def _backward(mode: str, k: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        dt = ctx.out_dtype()
        dy = ctx.cast(ctx.t(a["grad_output"]), dt)
        axes = _axes(ctx, len(ctx.shape(dy)), a["padding"], k)
        # f16/bf16 over several axes: the sums of every axis in float32, rounded once, as aten's kernel
        wide = "f32" if dt in ("f16", "bf16") and len(axes) > 1 else dt
        dy = ctx.cast(dy, wide)
        for axis, before, after in axes:
            dy = ctx.add("ModePadBackward", (dy,), {"axis": axis, "mode": mode, "before": before, "after": after})
        return ctx.cast(dy, dt)
    return handler


for _k in (1, 2, 3):
    for _name, _mode in (("reflection", "Reflect"), ("replication", "Replicate")):
        handles(f"{_name}_pad{_k}d.default")(_forward(_mode, _k))
        handles(f"{_name}_pad{_k}d_backward.default")(_backward(_mode, _k))
