"""Fractional max pooling's aten ops onto `opdefs/fractional_pool.py`, 2-D and 3-D.

- `fractional_max_pool{2,3}d(x, kernel_size, output_size, random_samples)` gives two nodes,
  `FractionalMaxPool{2,3}d` and `FractionalMaxPool{2,3}dIndices` of (x, samples); the samples are
  the graph's value (in an AOT graph an `aten.rand` of [N, C, nd] in x's dtype, which the exported
  module draws as eager does: aten_index.py). An unbatched x (C, *spatial) is mapped through a Reshape
  to N = 1 and back, its samples ([1, C, nd], as torch draws them, or [C, nd]) as [1, C, nd]. Samples
  of another dtype than x are refused (aten's kernel reads them as x's scalar type).
- `fractional_max_pool{2,3}d_backward(dy, x, kernel_size, output_size, indices)` adds dy at the
  indices, which is `MaxPool{2,3}dBackward(dy, indices)`: no new op. Its window attributes only have
  to give dy's shape (its shape inference checks it): stride 1, kernel L - O + 1 and no padding, or
  where O = L kernel 3 and padding 1, so that O comes out on every axis and the kernel is never the
  stride: its rules then read the indices alone (the tiled form, for windows that tile the volume,
  is never taken: bf16's fractional windows need not be the positions even where O = L).
"""

from __future__ import annotations

from typing import Any

from .aten_pool import _batched, _input_shape, _ints, _like
from .context import Context
from .registry import handles


def _forward(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
        shape = _input_shape(ctx, a["self"], nd)
        dt = ctx.out(0)[1]
        x = _batched(ctx, ctx.t(a["self"]), nd)
        if ctx.dtype(x) != dt:
            raise ctx.refuse(f"x of dtype {ctx.dtype(x)}, result {dt}")
        s = ctx.t(a["random_samples"])
        if ctx.dtype(s) != dt:
            raise ctx.refuse(f"random_samples of dtype {ctx.dtype(s)}, x of {dt} (aten reads them as x's)")
        want = (shape[0], shape[1], nd)
        if ctx.shape(s) != want:
            if len(ctx.shape(s)) not in (2, 3) or tuple(ctx.shape(s))[-2:] != want[1:] or shape[0] != 1:
                raise ctx.refuse(f"random_samples of shape {list(ctx.shape(s))}, expected {list(want)}")
            s = ctx.add("Reshape", (s,), {"shape": list(want)})
        attrs = {"kernel": _ints(ctx, a["kernel_size"], "kernel_size", nd),
                 "output_size": _ints(ctx, a["output_size"], "output_size", nd)}
        return (_like(ctx, ctx.add(f"FractionalMaxPool{nd}d", (x, s), attrs), 0),
                _like(ctx, ctx.add(f"FractionalMaxPool{nd}dIndices", (x, s), attrs), 1))
    return handler


def _backward(nd: int) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        shape = _input_shape(ctx, a["self"], nd)
        out = _ints(ctx, a["output_size"], "output_size", nd)
        if any(o > size for o, size in zip(out, shape[2:])):
            raise ctx.refuse(f"output_size {out} larger than the input {shape}")
        # O = L - k + 1 with stride 1; where O = L, kernel 3 with padding 1 (kernel 1 would be stride 1 too,
        # which the tiled rule takes for windows that are the positions themselves: bf16's windows are not)
        kernel = [size - o + 1 if size > o else 3 for o, size in zip(out, shape[2:])]
        attrs = {"kernel": kernel, "stride": [1] * nd, "padding": [1 if k == 3 and o == size else 0
                                                                for k, o, size in zip(kernel, out, shape[2:])],
                 "dilation": [1] * nd, "ceil_mode": False, "input_shape": shape}
        dy = _batched(ctx, ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype()), nd)
        idx = _batched(ctx, ctx.t(a["indices"]), nd)
        return _like(ctx, ctx.add(f"MaxPool{nd}dBackward", (dy, idx), attrs))
    return handler


for _nd in (2, 3):
    handles(f"fractional_max_pool{_nd}d.default")(_forward(_nd))
    handles(f"fractional_max_pool{_nd}d_backward.default")(_backward(_nd))
