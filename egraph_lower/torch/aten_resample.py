"""The upsample aten ops and their backward ops, one to one onto `Interpolate` / `InterpolateBackward`
(`opdefs/resample.py`).

`upsample_nearest{1,2,3}d`, `_upsample_nearest_exact{1,2,3}d`, `upsample_linear1d`, `upsample_bilinear2d`,
`upsample_trilinear3d` and `upsample_bicubic2d` (`.default` and `.vec`) and each one's `_backward`: the
mode from the op's name, the output size from the node's result, the scales from `scales`/`scales_h`/...
(`.default`) or `scale_factors` (`.vec`, where they are what aten hands its kernel). Under torch.compile
most of them never reach a backend: PyTorch decomposes the nearest ones, bilinear and bicubic at the
autograd level (into `_unsafe_index`, mapped by `aten_indexing.py`), so what arrives is linear and
trilinear interpolation and their backward ops, and any of them from a graph traced without it.
`_upsample_bilinear2d_aa` and `_upsample_bicubic2d_aa` (F.interpolate's `antialias=True`, which
reaches a backend as they are) and their `_backward` onto the same ops with `antialias`; aten's
forward kernel copies an axis whose length it keeps whatever scale it is given, so the forward gives
such an axis no scale (the format's weights apply a scale there, as aten's backward kernel does).

Sliding windows (`opdefs/unfold.py`): `unfold` (Tensor.unfold) and `unfold_backward` onto `Unfold` and
`UnfoldBackward`; `im2col` (F.unfold) onto `Im2Col` with one group, reshaped to aten's [N, C KH KW, L];
`col2im` (F.fold, and im2col's gradient) onto `Col2Im`. An unbatched im2col / col2im goes through N = 1.
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


def _attrs(ctx: Context, prefix: str, a: dict[str, Any], k: int, aa: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {"mode": _MODES[prefix], "scales": _scales(a, k)}
    if len(attrs["scales"]) != k:
        raise ctx.refuse(f"{len(attrs['scales'])} scale factors for {k} spatial axes")
    if "align_corners" in a:
        attrs["align_corners"] = bool(a["align_corners"])
    if aa:
        attrs["antialias"] = True
    return attrs


def _forward(prefix: str, k: int, aa: bool = False) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        shape, dt = ctx.out()
        x = ctx.cast(ctx.t(a["self"] if "self" in a else a["input"]), dt)
        attrs = _attrs(ctx, prefix, a, k, aa)
        if aa:  # aten's antialiased forward copies an axis of unchanged length, whatever its scale
            attrs["scales"] = [None if o == n else s for o, n, s in zip(shape[2:], ctx.shape(x)[2:], attrs["scales"])]
        return ctx.add("Interpolate", (x,), {**attrs, "size": list(shape[2:])})
    return handler


def _backward(prefix: str, k: int, aa: bool = False) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        shape, dt = ctx.out()
        dy = ctx.cast(ctx.t(a["grad_output"]), dt)
        return ctx.add("InterpolateBackward", (dy,), {**_attrs(ctx, prefix, a, k, aa), "input_shape": list(shape)})
    return handler


for _prefix, _ranks in _RANKS.items():
    for _k in _ranks:
        _name = f"{_prefix}{_k}d"
        handles(f"{_name}.default", f"{_name}.vec")(_forward(_prefix, _k))
        handles(f"{_name}_backward.default")(_backward(_prefix, _k))
for _prefix in ("upsample_bilinear", "upsample_bicubic"):
    _name = f"_{_prefix}2d_aa"
    handles(f"{_name}.default", f"{_name}.vec")(_forward(_prefix, 2, aa=True))
    handles(f"{_name}_backward.default")(_backward(_prefix, 2, aa=True))


# ---- sliding windows: Tensor.unfold and its backward, im2col (F.unfold) and col2im (F.fold)

def _pair(ctx: Context, value: Any, what: str) -> list[int]:
    values = [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        values *= 2
    if len(values) != 2:
        raise ctx.refuse(f"{what} {values} is not one or two integers")
    return values


def _windows(ctx: Context, a: dict[str, Any]) -> dict[str, list[int]]:
    return {k: _pair(ctx, a[src], src) for k, src in (("kernel", "kernel_size"), ("stride", "stride"),
                                                       ("padding", "padding"), ("dilation", "dilation"))}


def _reshaped(ctx: Context, nid: int, shape: tuple[int, ...] | list[int]) -> int:
    return nid if ctx.shape(nid) == tuple(shape) else ctx.add("Reshape", (nid,), {"shape": list(shape)})


def _unfold_attrs(ctx: Context, dim: Any, a: dict[str, Any], rank: int) -> dict[str, Any]:
    """Unfold's attributes; a 0-d tensor (aten unfolds it as one of shape [1]) along axis 0."""
    if int(a["size"]) < 1:
        raise ctx.refuse(f"unfold into windows of size {a['size']}")
    return {"axis": int(dim) if rank else 0, "size": int(a["size"]), "step": int(a["step"])}


@handles("unfold.default")
def _unfold(ctx: Context, a: dict[str, Any]) -> int:
    shape, _ = ctx.out()
    x = ctx.t(a["self"])
    rank = len(ctx.shape(x))
    out = ctx.add("Unfold", (x if rank else _reshaped(ctx, x, [1]),), _unfold_attrs(ctx, a["dimension"], a, rank))
    return _reshaped(ctx, out, shape)


@handles("unfold_backward.default")
def _unfold_backward(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    dy = ctx.cast(ctx.t(a["grad_in"]), dt)
    attrs = {**_unfold_attrs(ctx, a["dim"], a, len(shape)), "input_shape": list(shape) if shape else [1]}
    if not shape:
        dy = _reshaped(ctx, dy, [1, int(a["size"])])
    return _reshaped(ctx, ctx.add("UnfoldBackward", (dy,), attrs), shape)


@handles("im2col.default")
def _im2col(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x = ctx.cast(ctx.t(a["self"]), dt)
    if len(ctx.shape(x)) == 3:
        x = _reshaped(ctx, x, (1, *ctx.shape(x)))
    cols = ctx.add("Im2Col", (x,), {**_windows(ctx, a), "groups": 1})
    return _reshaped(ctx, cols, shape)


@handles("col2im.default")
def _col2im(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    cols = ctx.cast(ctx.t(a["self"]), dt)
    if len(ctx.shape(cols)) == 2:
        cols = _reshaped(ctx, cols, (1, *ctx.shape(cols)))
    out = ctx.add("Col2Im", (cols,), {**_windows(ctx, a), "output_size": _pair(ctx, a["output_size"], "output_size")})
    return _reshaped(ctx, out, shape)
