"""Dropout, gather / scatter_add, embeddings and the NLL loss, each onto one format op.

Decisions (checked against torch 2.13's CPU kernels; see docs/format.md):
- `native_dropout(x, p, train)`: the mask is a bool `Input` of the graph that the exported
  module draws before it computes anything, as `torch.empty_like(x).bernoulli_(1 - p)` does
  inside eager's kernel (the same generator, consumed the same way, in graph order), so the
  compiled step matches eager under the same seed. `bernoulli_` fills memory in order, so the mask is
  drawn in the memory order of `empty_like(x)` (x's layout, from its FX meta) and transposed back: a
  transposed x (attention's heads) gets eager's mask, not a contiguous tensor's. The output is `Dropout{1/(1-p)}(x, mask)`
  (scale 0 for p = 1); train=False gives x and a mask of ones, drawing nothing.
- `rand(size, dtype, device)` / `randn`: an `Input` of the result's dtype that the exported module draws
  before it computes anything, in graph order with the dropout masks, by eager's own call
  `torch.rand(size, dtype=dtype, device=device)` (`torch.randn`), so the same seed gives eager's numbers.
- `native_dropout_backward(g, mask, scale)` is `DropoutBackward{scale}(g, mask)`.
- `nll_loss_forward` / `nll_loss2d_forward` (and a rank-3 or higher input): `NllLoss` and
  `NllLossTotalWeight`; weight None is a Constant of ones; for reduction none aten's
  total_weight is 0, and so is ours (a Constant). A rank-1 input (one sample: logits [C], a 0-d
  target) is taken as a batch of one ([1, C], [1]) and its results reshaped back; its total_weight
  is the target's weight (0 if ignored) under every reduction, none included, as aten's.
- `embedding(weight, indices)`: `Embedding` (padding_idx only matters to the backward).
  `embedding_dense_backward` with scale_grad_by_freq=True is refused.
- Indices and targets are cast to i64 (the format's index ops take i64 there).
"""

from __future__ import annotations

from typing import Any, Literal

from .registry import handles
from .context import Context

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


@handles("native_dropout.default")
def _native_dropout(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    x = ctx.t(a["input"])
    shape, dt = ctx.out(0)
    p = float(a["p"])
    if a["train"] is False:
        return x, ctx.const(True, "bool", shape)
    order = _memory_order(a["input"], shape)
    mask = ctx.dropout_mask(tuple(shape[d] for d in order), dt, p)
    if order != sorted(order):  # drawn in memory order, as eager's empty_like(x) lays it out
        mask = ctx.add("Transpose", (mask,), {"perm": [order.index(d) for d in range(len(shape))]})
    return ctx.add("Dropout", (x, mask), {"scale": 0.0 if p == 1.0 else 1.0 / (1.0 - p)}), mask


def _memory_order(x: Any, shape: tuple[int, ...]) -> list[int]:
    """The dims of eager's `empty_like(x)` (the tensor its kernel draws the mask into, in memory order),
    outermost first: `bernoulli_` fills memory in order, so a mask of a transposed or sliced x is not
    the one a contiguous tensor of x's shape would get."""
    import torch

    val = x.meta.get("val") if hasattr(x, "meta") else None
    if not isinstance(val, torch.Tensor) or tuple(val.shape) != tuple(shape):
        return list(range(len(shape)))
    strides = torch.empty_like(torch.empty_strided(val.shape, val.stride(), dtype=val.dtype, device="meta")).stride()
    return sorted(range(len(shape)), key=lambda d: (-strides[d] if shape[d] > 1 else 0, d))  # size-1 dims: any place


@handles("rand.default")
def _rand(ctx: Context, a: dict[str, Any]) -> int:
    return _draw(ctx, a, "uniform")


@handles("randn.default")
def _randn(ctx: Context, a: dict[str, Any]) -> int:
    return _draw(ctx, a, "normal")


def _draw(ctx: Context, a: dict[str, Any], kind: Literal["uniform", "normal"]) -> int:
    import torch

    shape, dt = ctx.out()
    if a.get("layout") not in (None, torch.strided):
        raise ctx.refuse(f"layout {a['layout']}")
    device = a.get("device")
    return ctx.random(kind, shape, dt, None if device is None else str(device))


@handles("native_dropout_backward.default")
def _native_dropout_backward(ctx: Context, a: dict[str, Any]) -> int:
    g = ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype())
    return ctx.add("DropoutBackward", (g, ctx.cast(ctx.t(a["mask"]), "bool")), {"scale": float(a["scale"])})


def _rank1(ctx: Context, nid: int) -> int:
    """A 0-d operand as [1] (aten's gather and scatter take 0-d tensors as one position; the format's
    index ops need an axis)."""
    return ctx.add("Reshape", (nid,), {"shape": [1]}) if ctx.shape(nid) == () else nid


def _reshaped(ctx: Context, nid: int, shape: tuple[int, ...]) -> int:
    return nid if ctx.shape(nid) == shape else ctx.add("Reshape", (nid,), {"shape": list(shape)})


def _as_out(ctx: Context, nid: int, index: int | None = None) -> int:
    """nid reshaped to the node's result (its `index`-th) where a 0-d operand was taken as [1]."""
    return _reshaped(ctx, nid, ctx.out(index)[0])


def _empty(ctx: Context, index: int) -> bool:
    """An index without elements: aten skips gather's and scatter's shape checks for it (an empty
    [2, 0] index of a 1-d x is OpInfo's sample), which the format's Gather and ScatterAdd make."""
    return 0 in ctx.shape(index)


@handles("gather.default")
def _gather(ctx: Context, a: dict[str, Any]) -> int:
    if _empty(ctx, ctx.t(a["index"])):  # its result is empty too: nothing is read
        shape, dt = ctx.out()
        return ctx.const(0, dt, shape)
    x, index = (_rank1(ctx, ctx.t(a[k])) for k in ("self", "index"))
    return _as_out(ctx, ctx.add("Gather", (x, index), {"axis": int(a["dim"])}))


@handles("scatter_add.default")
def _scatter_add(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    if _empty(ctx, ctx.t(a["index"])):  # nothing is added: x
        return ctx.cast(ctx.t(a["self"]), dt)
    x, src = (_rank1(ctx, ctx.cast(ctx.t(a[k]), dt)) for k in ("self", "src"))
    return _as_out(ctx, ctx.add("ScatterAdd", (x, _rank1(ctx, ctx.t(a["index"])), src), {"axis": int(a["dim"])}))


@handles("embedding.default")
def _embedding(ctx: Context, a: dict[str, Any]) -> int:
    return ctx.add("Embedding", (ctx.t(a["weight"]), ctx.cast(ctx.t(a["indices"]), "i64")))


@handles("embedding_dense_backward.default")
def _embedding_backward(ctx: Context, a: dict[str, Any]) -> int:
    if a["scale_grad_by_freq"]:
        raise ctx.refuse("scale_grad_by_freq=True (the format's EmbeddingBackward sums without scaling)")
    pad = int(a["padding_idx"])
    if pad < -1:
        raise ctx.refuse(f"padding_idx={pad} (the format takes -1 for none or a row index)")
    g = ctx.cast(ctx.t(a["grad_output"]), ctx.out_dtype())
    return ctx.add("EmbeddingBackward", (g, ctx.cast(ctx.t(a["indices"]), "i64")),
                   {"num_weights": int(a["num_weights"]), "padding_idx": pad})


def _loss_inputs(ctx: Context, a: dict[str, Any], dt: str) -> tuple[int, int, int, str, int]:
    """(logp, target, weight, reduction, ignore_index); a rank-1 logp [C] and its 0-d target as a batch
    of one, [1, C] and [1]."""
    logp, target = ctx.cast(ctx.t(a["self"]), dt), ctx.cast(ctx.t(a["target"]), "i64")
    shape = ctx.shape(logp)
    if len(shape) == 1 and ctx.shape(target) == ():
        shape = (1, *shape)
        logp, target = _reshaped(ctx, logp, shape), _reshaped(ctx, target, (1,))
    if len(shape) < 2:
        raise ctx.refuse(f"input of shape {list(shape)} (the format's NllLoss takes [N, C, ...] or [C])")
    reduction = _REDUCTIONS.get(a["reduction"])
    if reduction is None:
        raise ctx.refuse(f"reduction={a['reduction']!r}")
    w = a["weight"]
    weight = ctx.const(1.0, dt, shape[1:2]) if w is None else ctx.cast(ctx.t(w), dt)
    return logp, target, weight, reduction, int(a["ignore_index"])


@handles("nll_loss_forward.default", "nll_loss2d_forward.default")
def _nll_loss(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    dt = ctx.out(0)[1]
    logp, target, weight, reduction, ignore = _loss_inputs(ctx, a, dt)
    loss = _as_out(ctx, ctx.add("NllLoss", (logp, target, weight), {"reduction": reduction, "ignore_index": ignore}), 0)
    if reduction == "none" and len(ctx.shape(ctx.t(a["self"]))) > 1:  # one sample: its weight, as aten's
        return loss, ctx.const(0.0, dt)
    return loss, ctx.add("NllLossTotalWeight", (target, weight), {"ignore_index": ignore})


@handles("nll_loss_backward.default", "nll_loss2d_backward.default")
def _nll_loss_backward(ctx: Context, a: dict[str, Any]) -> int:
    dt = ctx.out_dtype()
    logp, target, weight, reduction, ignore = _loss_inputs(ctx, a, dt)
    dy, total = ctx.cast(ctx.t(a["grad_output"]), dt), ctx.cast(ctx.t(a["total_weight"]), dt)
    if reduction == "none":
        dy = _reshaped(ctx, dy, ctx.shape(target))
    return _as_out(ctx, ctx.add("NllLossBackward", (logp, dy, target, weight, total),
                                {"reduction": reduction, "ignore_index": ignore}))
