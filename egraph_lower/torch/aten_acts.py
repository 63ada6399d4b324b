"""The aten ops of the parametrised activations, slicing, selecting and concatenation.

Decisions (checked against torch's kernels in float64: tests/test_torch_acts.py):
- `leaky_relu`/`leaky_relu_backward` are Activation{LeakyRelu, alpha}. With
  `self_is_result` (an in-place forward) the backward gets y = f(x): for alpha >= 0,
  y > 0 exactly where x > 0, so the same node on y is exact; torch itself refuses a
  negative slope there, and so does the importer.
- `rrelu_with_noise_functional` in eval is Activation{LeakyRelu, (lower + upper) / 2} (its noise passed
  through), in training refused (it draws its slopes); `rrelu_with_noise_backward` is that LeakyRelu's
  backward in eval and dy * noise in training (aten's kernels).
- `hardtanh`/`hardtanh_backward` (ReLU6 is hardtanh(0, 6)) are Hardtanh{min, max};
  hardtanh(x) is strictly inside (min, max) exactly where x is, so a backward given
  the result is exact too.
- `elu`/`elu_backward` are Elu{alpha, scale, input_scale}, the parameters written only
  where they differ from 1 (so ELU is version 1's Elu); `is_result` is the output form.
  `celu` and `selu`, where they reach the importer, are the Elus torch's kernels call.
- `softplus`/`softplus_backward` are Softplus{beta, threshold}, exactly torch's (linear
  where beta x > threshold). With beta = 1 and a threshold t where exp(-t) rounds
  away in the dtype (exp(-t) < 2**-(p+1): t = 20 in f32, f16 and bf16) the linear
  branch equals the exact Softplus after rounding, so the node is version 1's
  Softplus (no threshold), which every backend runs or lowers without the branch.
- `log_sigmoid_forward` is Activation{LogSigmoid}; its `buffer` is returned as an
  empty tensor of its shape: `log_sigmoid_backward(grad, x, buffer)` is
  ActivationBackward{LogSigmoid}(x, grad), which needs nothing but x (the CPU kernel
  keeps exp(-|x|) in the buffer to save recomputing it: a value of x alone).
- `sgn` on real tensors is Activation{Sign} (complex tensors never import).
- `slice` is Slice (the bounds as torch gives them: Python's clamping is the format's),
  `slice_backward` SliceBackward, any step (its expansions are rules: `rules/slicing.py`).
  `select` is Slice + Reshape (the axis dropped), and
  `select_backward` Reshape (the axis put back) + SliceBackward: the format has no
  Select op (see docs/format.md). `cat` is a left fold of binary Concats (legacy 1-d
  empty tensors skipped, as torch skips them); `split`/`split_with_sizes` are Slices.
  `slice_scatter` is not mapped here: it is the format's SliceScatter (aten_views.py), whose
  expansions (Concats of Slices for step 1, a masked spread for any step) are rules.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from ..dtypes import FLOAT_DTYPES
from .aten import _grad
from .registry import handles
from .context import Context, Empty

_PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}


def _num(ctx: Context, v: Any) -> float:
    return float(ctx.scalar(v))


def _unary(kind: str, params: Any) -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
        return ctx.add("Activation", (x,), {"kind": kind, **params(ctx, a)})
    return handler


def _backward(kind: str, params: Any, x: str = "self", wrt: Any = lambda a: "input") -> Any:
    def handler(ctx: Context, a: dict[str, Any]) -> int:
        return _grad(ctx, kind, a[x], a["grad_output"], wrt(a), params(ctx, a))
    return handler


def _leaky(ctx: Context, a: dict[str, Any]) -> dict[str, float]:
    return {"alpha": _num(ctx, a["negative_slope"])}


def _leaky_backward_params(ctx: Context, a: dict[str, Any]) -> dict[str, float]:
    if a["self_is_result"] and _num(ctx, a["negative_slope"]) < 0:
        raise ctx.refuse("leaky_relu_backward from the result with a negative slope (y > 0 is not x > 0)")
    return _leaky(ctx, a)


def _hardtanh(ctx: Context, a: dict[str, Any]) -> dict[str, float]:
    return {"min": _num(ctx, a["min_val"]), "max": _num(ctx, a["max_val"])}


def _elu(ctx: Context, a: dict[str, Any]) -> dict[str, float]:
    p = {k: _num(ctx, a[k]) for k in ("alpha", "scale", "input_scale")}
    return {k: v for k, v in p.items() if v != 1.0}


def _softplus(ctx: Context, a: dict[str, Any]) -> dict[str, float]:
    beta, t = _num(ctx, a["beta"]), _num(ctx, a["threshold"])
    p = _PRECISION.get(ctx.out_dtype())
    if beta == 1.0 and p is not None and t > 0 and math.exp(-t) < 2.0 ** -(p + 1):
        return {}  # the linear branch rounds to the exact value: version 1's Softplus
    return {"beta": beta, "threshold": t} if beta != 1.0 else {"threshold": t}


handles("leaky_relu.default")(_unary("LeakyRelu", _leaky))
handles("leaky_relu_backward.default")(_backward("LeakyRelu", _leaky_backward_params))


# rrelu (F.rrelu, nn.RReLU) reaches the backend as rrelu_with_noise_functional (its value and the noise it
# drew) and rrelu_with_noise_backward, in training and in eval alike
def _rrelu_slope(ctx: Context, a: dict[str, Any]) -> dict[str, float]:
    return {"alpha": (_num(ctx, a["lower"]) + _num(ctx, a["upper"])) / 2}  # aten's, in double


@handles("rrelu_with_noise_functional.default")
def _rrelu(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    """Eval (training=False): leaky_relu with slope (lower + upper) / 2, as aten's kernel calls it; the
    noise is returned as it was given. Training draws each negative element's slope from the generator,
    which the format cannot (docs/torch.md, Decisions): refused."""
    if a["training"]:
        raise ctx.refuse("rrelu in training draws its slopes from the generator (the format has none)")
    x = ctx.cast(ctx.t(a["self"]), ctx.out(0)[1])
    return ctx.add("Activation", (x,), {"kind": "LeakyRelu", **_rrelu_slope(ctx, a)}), ctx.t(a["noise"])


@handles("rrelu_with_noise_backward.default")
def _rrelu_backward(ctx: Context, a: dict[str, Any]) -> int:
    """Training: dy * noise (the slopes the forward drew, 1 where x >= 0), aten's kernel whatever lower and
    upper are; eval: leaky_relu_backward with slope (lower + upper) / 2."""
    if a["training"]:
        shape, dt = ctx.out()
        dy, noise = (ctx.expand(ctx.cast(ctx.t(a[k]), dt), shape) for k in ("grad_output", "noise"))
        return ctx.add("Binary", (dy, noise), {"op": "Mul"})
    params = _rrelu_slope(ctx, a)
    if a["self_is_result"] and params["alpha"] < 0:
        raise ctx.refuse("rrelu_with_noise_backward from the result with a negative slope (y > 0 is not x > 0)")
    return _grad(ctx, "LeakyRelu", a["self"], a["grad_output"], "input", params)


handles("hardtanh.default")(_unary("Hardtanh", _hardtanh))
handles("relu6.default")(_unary("Hardtanh", lambda ctx, a: {"min": 0.0, "max": 6.0}))
handles("hardtanh_backward.default")(_backward("Hardtanh", _hardtanh))
handles("elu.default")(_unary("Elu", _elu))
handles("elu_backward.default")(_backward("Elu", _elu, "self_or_result",
                                          lambda a: "output" if a["is_result"] else "input"))
# torch's kernels: celu(x, a) = elu(x, a, 1, 1/a) and selu(x) = elu(x, SELU's alpha, SELU's scale, 1)
handles("celu.default")(_unary("Elu", lambda ctx, a: _elu(ctx, {"alpha": a["alpha"], "scale": 1.0,
                                                                 "input_scale": 1.0 / _num(ctx, a["alpha"])})))
handles("selu.default")(_unary("Elu", lambda ctx, a: {"alpha": 1.6732632423543772848170429916717,
                                                      "scale": 1.0507009873554804934193349852946}))
handles("softplus.default")(_unary("Softplus", _softplus))
handles("softplus_backward.default")(_backward("Softplus", _softplus))
handles("sgn.default")(_unary("Sign", lambda ctx, a: {}))
handles("log_sigmoid_backward.default")(_backward("LogSigmoid", lambda ctx, a: {}))


@handles("log_sigmoid_forward.default")
def _log_sigmoid_forward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    shape, dt = ctx.out(0)
    if dt not in FLOAT_DTYPES:
        raise ctx.refuse(f"log_sigmoid of dtype {dt}")
    y = ctx.add("Activation", (ctx.cast(ctx.t(a["self"]), dt),), {"kind": "LogSigmoid"})
    return y, Empty(*ctx.out(1))


# --------------------------------------------------------------------------- slicing and concatenation

def _bound(v: Any, default: int) -> int:
    return default if v is None else int(v)


def _dim(ctx: Context, axis: Any, rank: int) -> int:
    """aten's dim `axis` of a rank-`rank` tensor normalised to [0, rank); refused where out of range."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ctx.refuse(f"dim {axis} is out of range for rank {rank}")
    return axis % rank


def _slice(ctx: Context, x: int, axis: int, start: int, end: int, step: int) -> int:
    shape = ctx.shape(x)
    axis = _dim(ctx, axis, len(shape))
    if step < 1:
        raise ctx.refuse(f"slice step {step} (the format's Slice takes step >= 1)")
    if range(*slice(start, end, step).indices(shape[axis])) == range(shape[axis]):
        return x  # the whole axis
    end = min(end, sys.maxsize)
    return ctx.add("Slice", (x,), {"axis": axis, "start": start, "end": end, "step": step})


@handles("slice.Tensor")
def _slice_tensor(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())
    return _slice(ctx, x, int(a["dim"]), _bound(a["start"], 0), _bound(a["end"], sys.maxsize), int(a["step"]))


def _index(ctx: Context, index: int, size: int) -> int:
    if not -size <= index < size:
        raise ctx.refuse(f"index {index} is out of range for size {size}")
    return index % size


@handles("select.int")
def _select(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    x = ctx.cast(ctx.t(a["self"]), dt)
    xs = ctx.shape(x)
    axis = int(a["dim"]) % len(xs)
    i = _index(ctx, int(a["index"]), xs[axis])
    s = _slice(ctx, x, axis, i, i + 1, 1)
    return ctx.add("Reshape", (s,), {"shape": list(shape)})


def _slice_grad(ctx: Context, dy: int, sizes: Sequence[int], axis: int, start: int, end: int, step: int) -> int:
    size = int(sizes[axis])
    if range(*slice(start, end, step).indices(size)) == range(size):
        return dy  # the slice took the whole axis: its gradient is dy
    return ctx.add("SliceBackward", (dy,), {"axis": axis, "start": start, "end": min(end, sys.maxsize),
                                            "step": step, "size": size})


@handles("slice_backward.default")
def _slice_backward(ctx: Context, a: dict[str, Any]) -> int:
    dy = ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype())
    sizes = [int(s) for s in a["input_sizes"]]
    axis = int(a["dim"]) % len(sizes)
    if int(a["step"]) < 1:
        raise ctx.refuse(f"slice step {a['step']} (the format's SliceBackward takes step >= 1)")
    return _slice_grad(ctx, dy, sizes, axis, int(a["start"]), int(a["end"]), int(a["step"]))


@handles("select_backward.default")
def _select_backward(ctx: Context, a: dict[str, Any]) -> int:
    dy = ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype())
    sizes = [int(s) for s in a["input_sizes"]]
    axis = int(a["dim"]) % len(sizes)
    i = _index(ctx, int(a["index"]), sizes[axis])
    kept = list(sizes)
    kept[axis] = 1
    dy = ctx.add("Reshape", (dy,), {"shape": kept}) if list(ctx.shape(dy)) != kept else dy
    return _slice_grad(ctx, dy, sizes, axis, i, i + 1, 1)


@handles("cat.default")
def _cat(ctx: Context, a: dict[str, Any]) -> int:
    shape, dt = ctx.out()
    parts = [ctx.cast(ctx.t(t), dt) for t in a["tensors"]]
    # torch skips legacy empty 1-d tensors of shape [0] next to tensors of another rank
    parts = [p for p in parts if not (ctx.shape(p) == (0,) and len(shape) != 1)]
    if not parts:
        raise ctx.refuse("cat of no tensors")
    axis = int(a["dim"]) % len(shape)
    out = parts[0]
    for p in parts[1:]:
        out = ctx.add("Concat", (out, p), {"axis": axis})
    return out


def _split(ctx: Context, x: int, sizes: Sequence[int], axis: int) -> tuple[int, ...]:
    out, start = [], 0
    for s in sizes:
        out.append(_slice(ctx, x, axis, start, start + s, 1))
        start += s
    return tuple(out)


@handles("split.Tensor")
def _split_tensor(ctx: Context, a: dict[str, Any]) -> tuple[int, ...]:
    x = ctx.t(a["self"])
    shape = ctx.shape(x)
    axis = int(a["dim"]) % len(shape)
    n, step = shape[axis], int(a["split_size"])
    if step < 1:
        raise ctx.refuse(f"split size {step}")
    return _split(ctx, x, [min(step, n - s) for s in range(0, n, step)] or [0], axis)


@handles("split_with_sizes.default")
def _split_with_sizes(ctx: Context, a: dict[str, Any]) -> tuple[int, ...]:
    x = ctx.t(a["self"])
    return _split(ctx, x, [int(s) for s in a["split_sizes"]], int(a["dim"]) % len(ctx.shape(x)))
