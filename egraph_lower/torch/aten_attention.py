"""Scaled dot-product attention onto the format's attention ops (opdefs/attention.py).

torch 2.13 on CPU hands a backend `F.scaled_dot_product_attention` as its flash kernel for CPU when
q, k and v are 4-d with E == Ev (else as the math path's primitives and `_safe_softmax`):

- `_scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p, is_causal, *, attn_mask, scale)`
  -> (Attention, AttentionLogSumExp). No mask is a Constant 0 of shape []; the mask is additive, of
  q's dtype (`F.scaled_dot_product_attention` turns a bool mask into where(mask, 0, -inf) before the
  kernel, which refuses a bool one). scale None is the format's default 1/sqrt(E). For f16/bf16
  the log-sum-exp is computed from q, k and the mask cast to f32, and kept in f32, as torch keeps it.
- `_scaled_dot_product_flash_attention_for_cpu_backward(dy, q, k, v, out, lse, dropout_p, is_causal, *,
  attn_mask, scale)` -> AttentionBackwardQuery/Key/Value.

- `_safe_softmax(x, dim, dtype)` (the math path's softmax, which the flash kernel's conditions send
  other shapes to: E != Ev, a mask that needs a gradient, dropout) -> SafeSoftmax{axis: dim}, in
  `dtype` when given.

Grouped-query attention (`enable_gqa`: k and v of Hkv heads, q of g Hkv, the other batch dims equal)
maps to the same ops with `groups: g` (format version 3); the aten kernels take those shapes as they are.

Refused with a reason (that piece runs in PyTorch): dropout_p != 0 (its random mask is drawn inside
the kernel), and q, k, v whose batch dims differ otherwise (q's heads not a multiple of k's, k's and
v's differing, another batch dim differing).
"""

from __future__ import annotations

from typing import Any

from .context import Context
from .registry import handles

_HALF = ("f16", "bf16")


def _attrs(ctx: Context, a: dict[str, Any]) -> dict[str, Any]:
    p = a.get("dropout_p", 0.0)
    if p:
        raise ctx.refuse(f"dropout_p={p} (the kernel draws its dropout mask inside; only p = 0 is mapped)")
    attrs: dict[str, Any] = {"causal": bool(a.get("is_causal", False))}
    if a.get("scale") is not None:
        attrs["scale"] = float(a["scale"])
    return attrs


def _qkv(ctx: Context, a: dict[str, Any], dt: str, attrs: dict[str, Any]) -> tuple[int, int, int]:
    """q, k, v in `dt`; `attrs` gains `groups` where k and v have fewer heads (axis -3) than q."""
    q, k, v = (ctx.cast(ctx.t(a[n]), dt) for n in ("query", "key", "value"))
    sq, sk, sv = ctx.shape(q), ctx.shape(k), ctx.shape(v)
    if len(sq) >= 2 and sq[:-2] == sk[:-2] == sv[:-2]:
        return q, k, v
    if len(sq) >= 3 and len(sk) == len(sv) == len(sq) and sq[:-3] == sk[:-3] == sv[:-3] and sk[-3] == sv[-3] \
            and sk[-3] > 0 and sq[-3] % sk[-3] == 0:
        attrs["groups"] = sq[-3] // sk[-3]
        return q, k, v
    raise ctx.refuse(f"q {list(sq)}, k {list(sk)} and v {list(sv)} have batch dims that differ other than "
                     "by q's heads being a multiple of k's and v's")


def _mask(ctx: Context, mask: Any, dt: str) -> int:
    """The additive mask in `dt` (a Constant 0 for none)."""
    if mask is None:
        return ctx.const(0.0, dt)
    m = ctx.t(mask)
    if ctx.dtype(m) == "bool":
        raise ctx.refuse("a bool attn_mask (the kernel takes an additive one)")
    return ctx.cast(m, dt)


@handles("_scaled_dot_product_flash_attention_for_cpu.default")
def _flash(ctx: Context, a: dict[str, Any]) -> tuple[int, int]:
    attrs = _attrs(ctx, a)
    dt = ctx.out(0)[1]
    q, k, v = _qkv(ctx, a, dt, attrs)
    mask = _mask(ctx, a.get("attn_mask"), dt)
    out = ctx.add("Attention", (q, k, v, mask), attrs)
    if dt in _HALF:
        q, k, mask = (ctx.cast(n, "f32") for n in (q, k, mask))
    lse = ctx.add("AttentionLogSumExp", (q, k, mask), attrs)
    return out, ctx.cast(lse, ctx.out(1)[1])


@handles("_scaled_dot_product_flash_attention_for_cpu_backward.default")
def _flash_backward(ctx: Context, a: dict[str, Any]) -> tuple[int, int, int]:
    attrs = _attrs(ctx, a)
    dt = ctx.out(0)[1]
    q, k, v = _qkv(ctx, a, dt, attrs)
    mask = _mask(ctx, a.get("attn_mask"), dt)
    out, dy = ctx.cast(ctx.t(a["out"]), dt), ctx.cast(ctx.t(a["grad_out"]), dt)
    lse = ctx.cast(ctx.t(a["logsumexp"]), "f32" if dt in _HALF else dt)
    return (ctx.add("AttentionBackwardQuery", (q, k, v, mask, out, lse, dy), attrs),
            ctx.add("AttentionBackwardKey", (q, k, v, mask, out, lse, dy), attrs),
            ctx.add("AttentionBackwardValue", (q, k, mask, lse, dy), attrs))


@handles("_safe_softmax.default")
def _safe_softmax(ctx: Context, a: dict[str, Any]) -> int:
    x = ctx.cast(ctx.t(a["self"]), ctx.out_dtype())  # `dtype` given: computed in it, as torch does
    return ctx.add("SafeSoftmax", (x,), {"axis": int(a["dim"])})
