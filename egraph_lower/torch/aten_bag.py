"""aten's embedding bags onto the embedding-bag ops (opdefs/bag.py).

- `_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  include_last_offset, padding_idx)` gives four values, each a node: the bags, EmbeddingBag{mode}
  (per_sample_weights, or ones of indices' shape where aten has none); offset2bag,
  EmbeddingBagOffset2Bag, or the empty tensor aten's CPU kernel gives in its fast sum path (the FX
  graph says which: its value has no elements); bag_size, EmbeddingBagSize in modes mean and max and
  aten's zeros in mode sum; max_indices, EmbeddingBagMaxIndices in mode max, aten's copy of bag_size in
  mode mean and zeros in mode sum. `_embedding_bag_forward_only` (what F.embedding_bag calls where the
  weight needs no gradient: inference graphs) is mapped the same way. F.embedding_bag of 2-D indices reaches aten flattened with offsets
  from an arange; a negative padding_idx other than -1 (none) has been made positive by it.
- `_embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
  scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx)`: modes sum and mean,
  EmbeddingBagBackward (offset2bag and bag_size are not read: the op recomputes them from the offsets);
  mode max, EmbeddingBagMaxBackward of (grad, maximum_indices, bag_size). include_last_offset is not an
  argument: the offsets hold one entry more than grad has bags where it was set.
- `_embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode,
  padding_idx)`: EmbeddingBagPerSampleWeightsBackward (mode sum, the only one aten takes weights in).

Refused: scale_grad_by_freq and sparse gradients (neither is a dense value of these ops).
"""

from __future__ import annotations

from typing import Any

from .context import Context
from .registry import handles

_MODES = ("sum", "mean", "max")


def _mode(ctx: Context, a: dict[str, Any]) -> str:
    mode = int(a["mode"])
    if mode not in (0, 1, 2):
        raise ctx.refuse(f"embedding bag mode {mode} (0 sum, 1 mean, 2 max)")
    if a.get("scale_grad_by_freq"):
        raise ctx.refuse("scale_grad_by_freq=True")
    if a.get("sparse"):
        raise ctx.refuse("sparse=True (a sparse gradient)")
    return _MODES[mode]


def _long(ctx: Context, arg: Any, what: str) -> int:
    nid = ctx.t(arg)
    if len(ctx.shape(nid)) != 1:
        raise ctx.refuse(f"{what} of shape {list(ctx.shape(nid))} (aten's embedding bag takes 1-D {what})")
    return ctx.cast(nid, "i64")


def _padding(ctx: Context, a: dict[str, Any]) -> int:
    given = a.get("padding_idx")
    pad = -1 if given is None else int(given)
    if pad < -1:
        raise ctx.refuse(f"padding_idx {pad} (aten's embedding bag takes -1 or a row)")
    return pad


def _weights(ctx: Context, a: dict[str, Any], n: int, dt: str) -> int:
    psw = a.get("per_sample_weights")
    return ctx.const(1.0, dt, (n,)) if psw is None else ctx.cast(ctx.t(psw), dt)


def _like(ctx: Context, nid: int, index: int) -> int:
    shape, dt = ctx.out(index)
    if ctx.shape(nid) != tuple(shape):
        raise ctx.refuse(f"output {index} has shape {list(shape)}, the op {list(ctx.shape(nid))}")
    return ctx.cast(nid, dt)


@handles("_embedding_bag.default")
@handles("_embedding_bag_forward_only.default")
def _embedding_bag(ctx: Context, a: dict[str, Any]) -> tuple[int, int, int, int]:
    mode = _mode(ctx, a)
    dt = ctx.out(0)[1]
    weight = ctx.cast(ctx.t(a["weight"]), dt)
    idx, off = _long(ctx, a["indices"], "indices"), _long(ctx, a["offsets"], "offsets")
    pad, last = _padding(ctx, a), bool(a.get("include_last_offset", False))
    n = ctx.shape(idx)[0]
    bags = ctx.add("EmbeddingBag", (weight, idx, off, _weights(ctx, a, n, dt)),
                   {"mode": mode, "padding_idx": pad, "include_last_offset": last})
    b = ctx.shape(bags)[0]
    if ctx.out(1)[0] == (0,) and n:  # aten's CPU fast path leaves offset2bag empty
        o2b = ctx.const(0, ctx.out(1)[1], (0,))
    else:
        o2b = ctx.add("EmbeddingBagOffset2Bag", (idx, off), {"include_last_offset": last})
    counted = {"padding_idx": pad, "include_last_offset": last}
    size = ctx.const(0, "i64", (b,)) if mode == "sum" else ctx.add("EmbeddingBagSize", (idx, off), counted)
    if mode == "max":
        top = ctx.add("EmbeddingBagMaxIndices", (weight, idx, off), counted)
    else:
        top = size
    return _like(ctx, bags, 0), _like(ctx, o2b, 1), _like(ctx, size, 2), _like(ctx, top, 3)


def _last(ctx: Context, off: int, bags: int) -> bool:
    k = ctx.shape(off)[0]
    if k not in (bags, bags + 1):
        raise ctx.refuse(f"{k} offsets for a gradient of {bags} bags")
    return k == bags + 1


@handles("_embedding_bag_backward.default")
def _embedding_bag_backward(ctx: Context, a: dict[str, Any]) -> int:
    mode = _mode(ctx, a)
    shape, dt = ctx.out()
    dy = ctx.cast(ctx.t(a["grad"]), dt)
    if len(ctx.shape(dy)) != 2:
        raise ctx.refuse(f"grad of shape {list(ctx.shape(dy))}, not [bags, D]")
    nw = int(a["num_weights"])
    if mode == "max":
        mi = ctx.cast(ctx.t(a["maximum_indices"]), "i64")
        size = _long(ctx, a["bag_size"], "bag_size")
        return ctx.add("EmbeddingBagMaxBackward", (dy, mi, size), {"num_weights": nw})
    idx, off = _long(ctx, a["indices"], "indices"), _long(ctx, a["offsets"], "offsets")
    attrs = {"mode": mode, "num_weights": nw, "padding_idx": _padding(ctx, a),
             "include_last_offset": _last(ctx, off, ctx.shape(dy)[0])}
    psw = _weights(ctx, a if mode == "sum" else {}, ctx.shape(idx)[0], dt)
    return ctx.add("EmbeddingBagBackward", (dy, idx, off, psw), attrs)


@handles("_embedding_bag_per_sample_weights_backward.default")
def _per_sample_weights_backward(ctx: Context, a: dict[str, Any]) -> int:
    if int(a["mode"]) != 0:
        raise ctx.refuse(f"per-sample weights in mode {int(a['mode'])} (aten takes them in mode sum only)")
    dt = ctx.out_dtype()
    dy, weight = ctx.cast(ctx.t(a["grad"]), dt), ctx.cast(ctx.t(a["weight"]), dt)
    idx, off = _long(ctx, a["indices"], "indices"), _long(ctx, a["offsets"], "offsets")
    attrs = {"padding_idx": _padding(ctx, a), "include_last_offset": _last(ctx, off, ctx.shape(dy)[0])}
    return ctx.add("EmbeddingBagPerSampleWeightsBackward", (dy, weight, idx, off), attrs)
