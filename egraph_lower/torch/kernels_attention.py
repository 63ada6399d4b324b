"""The attention ops (opdefs/attention.py) as PyTorch functions, with the format's semantics.

`Attention` is torch's flash attention for CPU where it applies (4-d, E == Ev; its output on a fully
masked row is 0, as the format's), the query and key gradients its backward kernel. Elsewhere (another
rank, E != Ev), and for the log-sum-exp and the value gradient, the same math in plain torch ops.
With `groups` (grouped-query attention), the flash kernels take k and v of fewer heads as they are
(their key and value gradients are k's and v's shapes); the plain math repeats k and v along axis -3
(`repeat_interleave`) and sums the key and value gradients back over each run of g heads.
f16/bf16 are computed in float32 and rounded once to q's dtype (`in_float32_as`: the lse may be float32;
torch's half flash kernels round the probabilities before multiplying by V, and the backward's
intermediates).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .kernels_half import in_float32, in_float32_as

_FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def _scale(q: Tensor, scale: float | None) -> float:
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _flash_fits(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> bool:
    return q.dim() == 4 and q.shape[-1] == v.shape[-1] and mask.dim() <= 4 and q.shape[-1] > 0


def _mask4(q: Tensor, k: Tensor, mask: Tensor) -> Tensor | None:
    """The mask as flash attention takes it (None for a scalar 0), in q's dtype."""
    if mask.dim() == 0 and float(mask) == 0.0:
        return None
    return mask.to(q.dtype).expand(*q.shape[:-1], k.shape[-2])


def _repeat(x: Tensor, groups: int | None) -> Tensor:
    return x if not groups or groups == 1 else x.repeat_interleave(int(groups), dim=-3)


def _sum_heads(dx: Tensor, groups: int | None) -> Tensor:
    if not groups or groups == 1:
        return dx
    g = int(groups)
    return dx.reshape(*dx.shape[:-3], dx.shape[-3] // g, g, *dx.shape[-2:]).sum(dim=-3)


def _probs(q: Tensor, k: Tensor, mask: Tensor, scale: float, causal: bool) -> tuple[Tensor, Tensor]:
    """(P, lse) in float32 (float64 for f64): the format's masked softmax and its log-sum-exp."""
    dt = torch.float64 if q.dtype == torch.float64 else torch.float32
    t = (q.to(dt) * scale) @ k.to(dt).transpose(-1, -2) + mask.to(dt)
    if causal:
        keep = torch.ones(t.shape[-2:], dtype=torch.bool, device=t.device).tril()
        t = t.masked_fill(~keep, -math.inf)
    m = t.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(t - m)
    z = e.sum(dim=-1, keepdim=True)
    p = e / torch.clamp(z, min=1.0)
    return p, (m + torch.log(torch.clamp(z, min=1.0)))[..., 0]


@in_float32_as("q")
def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float | None = None,
              causal: bool = False, groups: int | None = None) -> Tensor:
    s = _scale(q, scale)
    if _flash_fits(q, k, v, mask):
        return _FLASH(q, k, v, 0.0, bool(causal), attn_mask=_mask4(q, k, mask), scale=s)[0]
    p, _ = _probs(q, _repeat(k, groups), mask, s, bool(causal))
    return (p @ _repeat(v, groups).to(p.dtype)).to(q.dtype)


def attention_lse(q: Tensor, k: Tensor, mask: Tensor, scale: float | None = None, causal: bool = False,
                  groups: int | None = None) -> Tensor:
    _, lse = _probs(q, _repeat(k, groups), mask, _scale(q, scale), bool(causal))
    return lse.to(q.dtype)


def _grads(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, out: Tensor, lse: Tensor, dy: Tensor,
           scale: float | None, causal: bool, groups: int | None) -> tuple[Tensor, Tensor, Tensor]:
    s = _scale(q, scale)
    if _flash_fits(q, k, v, mask):
        lse32 = lse.to(torch.float64 if q.dtype == torch.float64 else torch.float32)
        return _FLASH_BWD(dy, q, k, v, out, lse32, 0.0, bool(causal), attn_mask=_mask4(q, k, mask), scale=s)
    k, v = _repeat(k, groups), _repeat(v, groups)
    p, _ = _probs(q, k, mask, s, bool(causal))
    dt = p.dtype
    dp = dy.to(dt) @ v.to(dt).transpose(-1, -2)
    ds = p * (dp - (p * dp).sum(dim=-1, keepdim=True))
    dq = (ds @ k.to(dt)) * s
    dk = _sum_heads((ds.transpose(-1, -2) @ q.to(dt)) * s, groups)
    dv = _sum_heads(p.transpose(-1, -2) @ dy.to(dt), groups)
    return dq.to(q.dtype), dk.to(q.dtype), dv.to(q.dtype)


@in_float32_as("q")
def attention_backward_query(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, out: Tensor, lse: Tensor, dy: Tensor,
                             scale: float | None = None, causal: bool = False, groups: int | None = None) -> Tensor:
    return _grads(q, k, v, mask, out, lse, dy, scale, causal, groups)[0]


@in_float32_as("q")
def attention_backward_key(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, out: Tensor, lse: Tensor, dy: Tensor,
                           scale: float | None = None, causal: bool = False, groups: int | None = None) -> Tensor:
    return _grads(q, k, v, mask, out, lse, dy, scale, causal, groups)[1]


def attention_backward_value(q: Tensor, k: Tensor, mask: Tensor, lse: Tensor, dy: Tensor,
                             scale: float | None = None, causal: bool = False, groups: int | None = None) -> Tensor:
    s = _scale(q, scale)
    p, _ = _probs(q, _repeat(k, groups), mask, s, bool(causal))
    return _sum_heads(p.transpose(-1, -2) @ dy.to(p.dtype), groups).to(q.dtype)


@in_float32
def safe_softmax(x: Tensor, axis: int) -> Tensor:
    return torch.ops.aten._safe_softmax(x, axis)
