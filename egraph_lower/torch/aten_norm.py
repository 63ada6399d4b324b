"""Layer norm and batch norm (training and eval mode) onto the format's normalization ops.

- `native_layer_norm(x, normalized_shape, w, b, eps)` -> (LayerNorm, mean, rstd) with axis = rank -
  len(normalized_shape); the saved mean is `Reduce{Mean, keep_dim}` and rstd `InvStd{keep_dim}`, aten's
  keep-dim shapes. A missing weight or bias is a Constant of ones or zeros.
- `native_layer_norm_backward` -> LayerNormBackwardInput/Weight/Bias, only what `output_mask` asks.
- Batch norm, channels on axis 1, any rank >= 2. Training (`training=True`, `_native_batch_norm_legit`
  and its `_functional` and `no_stats` forms, `native_batch_norm`, `_batch_norm_with_update_functional`): BatchNormTraining, saved mean
  `Reduce{Mean}` [C] and saved invstd `InvStd` [C]. The functional form's updated running statistics are
  computed here as torch does: (1 - momentum) * running + momentum * batch, the variance unbiased
  (n / (n - 1)) from the batch's own mean((x - mean)^2), in float32 for half precision and rounded once
  into each buffer's dtype (eager's CPU kernel accumulates them in float32). They are a few Binary/Reduce nodes of the same
  graph, so the forward stays one piece. Eval mode (running statistics): BatchNormInference, without
  `axis` on [N, C] (version 1's last axis: such graphs stay version-1 documents), with `axis: 1` on
  higher ranks.
- `native_batch_norm_backward`: train=True -> BatchNormTrainingBackward* from the saved statistics;
  train=False -> BatchNormInferenceBackward*, `axis` as in the forward. `batch_norm_backward` (the
  backward of `_batch_norm_with_update`) is the same with `update` as train, `save_var` as the saved invstd.
- RMS norm: torch 2.13 under AOTAutograd emits `F.rms_norm` as primitives (pow, mean, rsqrt, mul) on
  CPU, not `_fused_rms_norm`, so there is nothing to map; the RmsNorm ops are for graphs written in the
  format.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from .registry import handles
from .context import Context, Empty, workspace


def _dtype(ctx: Context, *args: Any) -> str:
    """The dtype torch computes in: the promotion of the given tensors' dtypes."""
    dts = [ctx.val(x).dtype for x in args if x is not None]
    dt = dts[0]
    for d in dts[1:]:
        dt = torch.promote_types(dt, d)
    return ctx.format_dtype(dt)


def _or_fill(ctx: Context, arg: Any, fill: float, shape: Sequence[int], dt: str) -> int:
    return ctx.const(fill, dt, tuple(shape)) if arg is None else ctx.cast(ctx.t(arg), dt)


def _result(ctx: Context, nid: int, index: int) -> int:
    return ctx.cast(nid, ctx.out(index)[1])


# --------------------------------------------------------------------------- layer norm

def _ln_axis(ctx: Context, x: int, normalized_shape: Sequence[int]) -> int:
    shape, k = ctx.shape(x), len(normalized_shape)
    if k == 0 or k > len(shape) or tuple(shape[len(shape) - k:]) != tuple(normalized_shape):
        raise ctx.refuse(f"normalized_shape {list(normalized_shape)} is not the trailing shape of {list(shape)}")
    return len(shape) - k


@handles("native_layer_norm.default")
def _layer_norm(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    x0 = ctx.t(a["input"])
    axis = _ln_axis(ctx, x0, a["normalized_shape"])
    dt = _dtype(ctx, a["input"], a["weight"], a["bias"])
    x = ctx.cast(x0, dt)
    tail = ctx.shape(x)[axis:]
    w, b = _or_fill(ctx, a["weight"], 1.0, tail, dt), _or_fill(ctx, a["bias"], 0.0, tail, dt)
    eps = float(a["eps"])
    axes = list(range(axis, len(ctx.shape(x))))
    y = ctx.add("LayerNorm", (x, w, b), {"axis": axis, "eps": eps})
    mean = ctx.add("Reduce", (x,), {"op": "Mean", "axes": axes, "keep_dim": True})
    rstd = ctx.add("InvStd", (x,), {"axes": axes, "eps": eps, "keep_dim": True})
    return _result(ctx, y, 0), _result(ctx, mean, 1), _result(ctx, rstd, 2)


@handles("native_layer_norm_backward.default")
def _layer_norm_backward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    x0 = ctx.t(a["input"])
    axis = _ln_axis(ctx, x0, a["normalized_shape"])
    dt = _dtype(ctx, a["grad_out"], a["input"], a["weight"])
    x, dy = ctx.cast(x0, dt), ctx.cast(ctx.t(a["grad_out"]), dt)
    mean, rstd = ctx.cast(ctx.t(a["mean"]), dt), ctx.cast(ctx.t(a["rstd"]), dt)
    attrs = {"axis": axis}
    mask = list(a["output_mask"])
    out: list[Any] = [None, None, None]
    if mask[0]:
        w = _or_fill(ctx, a["weight"], 1.0, ctx.shape(x)[axis:], dt)
        out[0] = _result(ctx, ctx.add("LayerNormBackwardInput", (x, w, mean, rstd, dy), attrs), 0)
    if mask[1] and a["weight"] is not None:
        out[1] = _result(ctx, ctx.add("LayerNormBackwardWeight", (x, mean, rstd, dy), attrs), 1)
    if mask[2] and a["bias"] is not None:
        out[2] = _result(ctx, ctx.add("LayerNormBackwardBias", (dy,), attrs), 2)
    return tuple(out)


# --------------------------------------------------------------------------- batch norm

def _channels(ctx: Context, x: int) -> tuple[int, list[int]]:
    """C and the axes the statistics reduce over (all but torch's channel axis 1)."""
    shape = ctx.shape(x)
    if len(shape) < 2:
        raise ctx.refuse(f"batch norm on a rank-{len(shape)} input {list(shape)}: the channels are on axis 1")
    return shape[1], [i for i in range(len(shape)) if i != 1]


_HALF = ("f16", "bf16")


def _stats_dtype(*dts: str) -> str:
    """The dtype the running statistics are computed in: float32 for half precision (as eager's CPU kernel
    accumulates them), else the widest of the given dtypes."""
    wide = [d for d in dts if d not in _HALF]
    return "f64" if "f64" in wide else "f32"


def _running(ctx: Context, running: Any, batch: int, momentum: float, index: int) -> int:
    """(1 - momentum) * running + momentum * batch, computed in `batch`'s dtype (float32 or wider) and
    rounded once into the running statistic's dtype."""
    rdt, cdt = ctx.out(index)[1], ctx.dtype(batch)
    r = ctx.cast(ctx.t(running), cdt)
    old = ctx.add("Binary", (r, ctx.const(1.0 - momentum, cdt)), {"op": "Mul"})
    new = ctx.add("Binary", (batch, ctx.const(momentum, cdt)), {"op": "Mul"})
    return ctx.cast(ctx.add("Binary", (old, new), {"op": "Add"}), rdt)


def _bn_training(ctx: Context, a: dict[str, Any], functional: bool, running: tuple[int, int] = (3, 4)) -> tuple[Any, ...]:
    """BatchNormTraining and its saved statistics; `functional`: also the updated running statistics, the
    results at `running`."""
    x0 = ctx.t(a["input"])
    c, others = _channels(ctx, x0)
    dt = _dtype(ctx, a["input"], a["weight"], a["bias"])
    x = ctx.cast(x0, dt)
    eps = float(a["eps"])
    gamma, beta = _or_fill(ctx, a["weight"], 1.0, (c,), dt), _or_fill(ctx, a["bias"], 0.0, (c,), dt)
    y = ctx.add("BatchNormTraining", (x, gamma, beta), {"axis": 1, "eps": eps})
    mean = ctx.add("Reduce", (x,), {"op": "Mean", "axes": others})
    invstd = ctx.add("InvStd", (x,), {"axes": others, "eps": eps})
    out: list[Any] = [_result(ctx, y, 0), _result(ctx, mean, 1), _result(ctx, invstd, 2)]
    if not functional:
        return tuple(out)
    momentum = a["momentum"]
    if not isinstance(momentum, (int, float)):
        raise ctx.refuse(f"batch norm momentum {momentum!r} (a cumulative average) is not mapped")
    n = math.prod(ctx.shape(x)) // max(c, 1)
    if n < 2:
        raise ctx.refuse(f"training-mode batch norm over {n} value per channel (the unbiased variance needs 2)")
    # in float32 for half precision, rounded once into each buffer's dtype (eager's CPU kernel: a half
    # constant n / (n - 1) and half intermediates would round several times, 4/3 to 1.3359375 in bf16)
    sdt = _stats_dtype(dt, ctx.out(running[0])[1], ctx.out(running[1])[1])
    xs = ctx.cast(x, sdt)
    smean = ctx.add("Reduce", (xs,), {"op": "Mean", "axes": others})
    cshape = [c] + [1] * (len(ctx.shape(x)) - 2)
    d = ctx.add("Binary", (xs, ctx.add("Reshape", (smean,), {"shape": cshape})), {"op": "Sub"})
    var = ctx.add("Reduce", (ctx.add("Binary", (d, d), {"op": "Mul"}),), {"op": "Mean", "axes": others})
    unbiased = ctx.add("Binary", (var, ctx.const(n / (n - 1), sdt)), {"op": "Mul"})
    out.append(_running(ctx, a["running_mean"], smean, float(momentum), running[0]))
    out.append(_running(ctx, a["running_var"], unbiased, float(momentum), running[1]))
    return tuple(out)


def _bn_eval(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    if a["running_mean"] is None or a["running_var"] is None:
        raise ctx.refuse("eval-mode batch norm without running statistics")
    x0 = ctx.t(a["input"])
    c, attrs = _eval_channels(ctx, x0)
    dt = _dtype(ctx, a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"])
    ins = (ctx.cast(x0, dt), _or_fill(ctx, a["weight"], 1.0, (c,), dt), _or_fill(ctx, a["bias"], 0.0, (c,), dt),
           ctx.cast(ctx.t(a["running_mean"]), dt), ctx.cast(ctx.t(a["running_var"]), dt))
    y = _result(ctx, ctx.add("BatchNormInference", ins, {"eps": float(a["eps"]), **attrs}), 0)
    stats = []
    for i in (1, 2):
        shape, sdt = ctx.out(i)
        if math.prod(shape) != 0:
            raise ctx.refuse(f"eval-mode batch norm returning non-empty statistics of shape {list(shape)}")
        stats.append(Empty(shape, sdt))
    return (y, *stats)


def _eval_channels(ctx: Context, x: int) -> tuple[int, dict[str, Any]]:
    """C and the `axis` attribute of the inference ops: none on [N, C] (version 1's last axis, so such
    graphs stay version-1 documents), axis 1 on higher ranks."""
    c, _ = _channels(ctx, x)
    return c, ({} if len(ctx.shape(x)) == 2 else {"axis": 1})


@handles("native_batch_norm.default", "_native_batch_norm_legit.default")
def _bn_forward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    return _bn_training(ctx, a, False) if a["training"] else _bn_eval(ctx, a)


@handles("_native_batch_norm_legit_functional.default")
def _bn_functional(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    if not a["training"]:
        raise ctx.refuse("eval-mode _native_batch_norm_legit_functional")
    return _bn_training(ctx, a, True)


@handles("_batch_norm_with_update_functional.default")
def _bn_with_update(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    """Training mode: (y, saved mean, saved invstd, reserve, running mean, running var); the reserve is
    cuDNN's workspace, empty on the CPU (and read by nothing but batch_norm_backward, which ignores it)."""
    assert ctx.node is not None
    reserve = workspace(ctx.val(ctx.node)[3])
    if reserve is None:
        raise ctx.refuse("batch norm with a reserve that is not an empty uint8 workspace")
    y, mean, invstd, rm, rv = _bn_training(ctx, a, True, running=(4, 5))
    return y, mean, invstd, reserve, rm, rv


@handles("_native_batch_norm_legit.no_stats")
def _bn_no_stats(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    if not a["training"]:
        raise ctx.refuse("eval-mode batch norm without running statistics")
    return _bn_training(ctx, a, False)


@handles("_native_batch_norm_legit_no_training.default")
def _bn_no_training(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    return _bn_eval(ctx, a)


@handles("batch_norm_backward.default")
def _bn_backward_new(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    """The backward of `_batch_norm_with_update` (and `_no_update`): native_batch_norm_backward with
    `update` as `train` and `save_var` holding the saved invstd, as aten's CPU kernel takes them; the
    reserve is ignored."""
    return _bn_backward(ctx, {**a, "train": a["update"], "save_invstd": a["save_var"]})


@handles("native_batch_norm_backward.default")
def _bn_backward(ctx: Context, a: dict[str, Any]) -> tuple[Any, ...]:
    x0 = ctx.t(a["input"])
    mask = list(a["output_mask"])
    out: list[Any] = [None, None, None]
    if a["train"]:
        c, _ = _channels(ctx, x0)
        if a["save_mean"] is None or a["save_invstd"] is None:
            raise ctx.refuse("training-mode batch norm backward without the saved statistics")
        dt = _dtype(ctx, a["grad_out"], a["input"], a["weight"])
        x, dy = ctx.cast(x0, dt), ctx.cast(ctx.t(a["grad_out"]), dt)
        mean, invstd = ctx.cast(ctx.t(a["save_mean"]), dt), ctx.cast(ctx.t(a["save_invstd"]), dt)
        attrs = {"axis": 1}
        if mask[0]:
            gamma = _or_fill(ctx, a["weight"], 1.0, (c,), dt)
            out[0] = _result(ctx, ctx.add("BatchNormTrainingBackwardInput", (x, gamma, mean, invstd, dy), attrs), 0)
        if mask[1]:
            out[1] = _result(ctx, ctx.add("BatchNormTrainingBackwardGamma", (x, mean, invstd, dy), attrs), 1)
        if mask[2]:
            out[2] = _result(ctx, ctx.add("BatchNormTrainingBackwardBeta", (dy,), attrs), 2)
        return tuple(out)
    if a["running_mean"] is None or a["running_var"] is None:
        raise ctx.refuse("eval-mode batch norm backward without running statistics")
    c, axis = _eval_channels(ctx, x0)
    dt = _dtype(ctx, a["grad_out"], a["input"], a["weight"], a["running_mean"], a["running_var"])
    x, dy = ctx.cast(x0, dt), ctx.cast(ctx.t(a["grad_out"]), dt)
    mean, var = ctx.cast(ctx.t(a["running_mean"]), dt), ctx.cast(ctx.t(a["running_var"]), dt)
    eps = {"eps": float(a["eps"]), **axis}
    if mask[0]:
        gamma = _or_fill(ctx, a["weight"], 1.0, (c,), dt)
        out[0] = _result(ctx, ctx.add("BatchNormInferenceBackwardInput", (x, gamma, mean, var, dy), eps), 0)
    if mask[1]:
        out[1] = _result(ctx, ctx.add("BatchNormInferenceBackwardGamma", (x, mean, var, dy), eps), 1)
    if mask[2]:
        out[2] = _result(ctx, ctx.add("BatchNormInferenceBackwardBeta", (dy,), axis), 2)
    return tuple(out)
