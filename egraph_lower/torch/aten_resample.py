"""The upsample aten ops and their backward ops, one to one onto `Interpolate` / `InterpolateBackward`
(`opdefs/resample.py`).

`upsample_nearest{1,2,3}d`, `_upsample_nearest_exact{1,2,3}d`, `upsample_linear1d`, `upsample_bilinear2d`,
`upsample_trilinear3d` and `upsample_bicubic2d` (`.default` and `.vec`) and each one's `_backward`: the
mode from the op's name, the output size from the node's result, the scales from `scales`/`scales_h`/...
(`.default`) or `scale_factors` (`.vec`, where they are what aten hands its kernel). Under torch.compile
most of them never reach a backend: PyTorch decomposes the nearest ones, bilinear and bicubic at the
autograd level (into `_unsafe_index`, mapped by `aten_indexing.py`), so what arrives is linear and
trilinear interpolation and their backward ops, and any of them from a graph traced without it.
"""

from __future__ import annotations

from typing import Any

from .context import Context
from .registry import handles

_MODES = {"upsample_nearest": "nearest", "_upsample_nearest_exact": "nearest_exact", "upsample_linear": "linear",
          "upsample_bilinear": "linear", "upsample_trilinear": "linear", "upsample_bicubic": "cubic"}
_RANKS = {"upsample_nearest": (1, 2, 3), "_upsample_nearest_exact": (1, 2, 3), "upsample_linear": (1,),
          "upsample_bilinear": (2,), "upsample_trilinear": (3,), "upsample_bicubic": (2,)}
_SCALE_ARGS = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}


def _scales(a: dict[str, Any], k: int) -> list[float | None]:
    if "scale_factors" in a:
        given = a.get("scale_factors")
        return [None] * k if not given else [float(s) for s in given]
    return [None if a.get(n) is None else float(a[n]) for n in _SCALE_ARGS[k]]


def _attrs(ctx: Context, prefix: str, a: dict[str, Any], k: int) -> dict[str, Any]:
    attrs: dict[str, Any] = {"mode": _MODES[prefix], "scales": _scales(a, k)}
    if len(attrs["scales"]) != k:
        raise ctx.refuse(f"{len(attrs['scales'])} scale factors for {k} spatial axes")
    if "align_corners" in a:
        attrs["align_corners"] = bool(a["align_corners"])
    return attrs


def _forward(prefix: str, k: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        shape, dt = ctx.out()
        x = ctx.cast(ctx.t(a["self"] if "self" in a else a["input"]), dt)
        return ctx.add("Interpolate", (x,), {**_attrs(ctx, prefix, a, k), "size": list(shape[2:])})
    return handler


def _backward(prefix: str, k: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        shape, dt = ctx.out()
        dy = ctx.cast(ctx.t(a["grad_output"]), dt)
        return ctx.add("InterpolateBackward", (dy,), {**_attrs(ctx, prefix, a, k), "input_shape": list(shape)})
    return handler


for _prefix, _ranks in _RANKS.items():
    for _k in _ranks:
        _name = f"{_prefix}{_k}d"
        handles(f"{_name}.default", f"{_name}.vec")(_forward(_prefix, _k))
        handles(f"{_name}_backward.default")(_backward(_prefix, _k))
