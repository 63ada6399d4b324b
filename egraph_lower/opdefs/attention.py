"""Scaled dot-product attention (no dropout) and its backward ops, one per gradient.

With q [..., L, E], k [..., S, E], v [..., S, Ev] (the same batch dims), an additive float mask
broadcastable to [..., L, S] (a Constant 0 of shape [] when there is none) and
t = (q scale) k^T + mask, keep[i, j] = j <= i when `causal` (top-left aligned, as torch), else all:

    P = softmax over the kept j of t (a row with no finite kept t: all 0, as torch's CPU kernel)
    Attention{scale, causal}(q, k, v, mask)                 = P v                    [..., L, Ev]
    AttentionLogSumExp{scale, causal}(q, k, mask)           = log sum_kept exp(t)    [..., L]
                                                              (0 on a row with no finite kept t)
    AttentionBackwardValue{scale, causal}(q, k, mask, lse, dy)          = P^T dy     [..., S, Ev]
    AttentionBackwardQuery{scale, causal}(q, k, v, mask, out, lse, dy)  = scale dS k [..., L, E]
    AttentionBackwardKey{scale, causal}(q, k, v, mask, out, lse, dy)    = scale dS^T q
        dS = P (dP - rowsum(P dP)), dP = dy v^T  (the softmax backward of P)

    SafeSoftmax{axis}(x)  = Softmax{axis}(x), but 0 on a slice along `axis` that is all -inf (torch's
                            `_safe_softmax`, which attention's math path computes P with)

`scale` defaults to 1/sqrt(E). The backward ops are the gradients of Attention at (q, k, v, mask):
`out` and `lse` must be what Attention and AttentionLogSumExp give there (the forward saves them);
the reference computes from q, k, v, mask alone, and the e-graph's rules may use either. `lse` may be
f32 where q is f16 or bf16 (torch's CPU kernel keeps it in f32). docs/format.md ("Attention") derives
each gradient.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .attention_groups import group_fields, kv_batch, repeat_heads, sum_heads
from .base import F64, I64, INPUTS, STRING, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text
from .meta import attr_check, broadcast_shapes, is_int, show_shape

# ---- reference semantics (float64, rounded once) ---------------------------------------------------


def default_scale(e: int) -> float:
    """torch's default: 1/sqrt(E), E the last dimension of q."""
    return 1.0 / math.sqrt(e) if e > 0 else 1.0


def _scale(attrs: Attrs, q: np.ndarray) -> float:
    s = attrs.get("scale")
    return default_scale(q.shape[-1]) if s is None else float(s)


def _check(op: str, dtype: str, attrs: Attrs, q: np.ndarray, k: np.ndarray) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")
    try:
        batch = kv_batch(q.shape, attrs.get("groups")) if q.ndim >= 2 else None
    except ValueError:
        batch = None
    if batch is None or k.ndim != q.ndim or q.shape[-1] != k.shape[-1] or k.shape[:-2] != batch:
        raise LowerError(f"{op}: q {show_shape(q.shape)} and k {show_shape(k.shape)} do not fit")


def probabilities(attrs: Attrs, q: np.ndarray, k: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, lse) in float64: the masked softmax of t over its last axis and its log-sum-exp (without the
    last axis); 0 for both on a row whose kept t are all -inf."""
    t = np.matmul(q * _scale(attrs, q), np.swapaxes(k, -1, -2)) + mask
    if attrs.get("causal", False):
        rows, cols = t.shape[-2:]
        t = np.where(np.arange(cols)[None, :] <= np.arange(rows)[:, None], t, -np.inf)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.max(t, axis=-1, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(t - m)
        z = np.sum(e, axis=-1, keepdims=True)
        p = np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)
        lse = np.where(z > 0, m + np.log(np.where(z > 0, z, 1.0)), 0.0)
    return p, lse[..., 0]


def gradients(attrs: Attrs, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray,
              dy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dq, dk, dv) of Attention at (q, k, v, mask) for the output gradient dy, in float64."""
    p, _ = probabilities(attrs, q, k, mask)
    dp = np.matmul(dy, np.swapaxes(v, -1, -2))
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    scale = _scale(attrs, q)
    dq = np.matmul(ds, k) * scale
    dk = np.matmul(np.swapaxes(ds, -1, -2), q) * scale
    return dq, dk, np.matmul(np.swapaxes(p, -1, -2), dy)


# With `groups`, k and v are repeated along their head axis first (q's head h reads head h // g) and
# the key and value gradients summed back over each run of g heads (attention_groups.py).

def _op_attention(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    q, k, v, mask = (_f(a) for a in args)
    _check("Attention", dtype, attrs, q, k)
    k, v = repeat_heads(attrs, k), repeat_heads(attrs, v)
    return _round_float(np.matmul(probabilities(attrs, q, k, mask)[0], v), dtype)


def _op_lse(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    q, k, mask = (_f(a) for a in args)
    _check("AttentionLogSumExp", dtype, attrs, q, k)
    return _round_float(probabilities(attrs, q, repeat_heads(attrs, k), mask)[1], dtype)


def _op_bwd_value(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    q, k, mask, _lse, dy = (_f(a) for a in args)
    _check("AttentionBackwardValue", dtype, attrs, q, k)
    p, _ = probabilities(attrs, q, repeat_heads(attrs, k), mask)
    return _round_float(sum_heads(attrs, np.matmul(np.swapaxes(p, -1, -2), dy)), dtype)


def _op_bwd(which: int, op: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        q, k, v, mask, _out, _lse, dy = (_f(a) for a in args)
        _check(op, dtype, attrs, q, k)
        grad = gradients(attrs, q, repeat_heads(attrs, k), repeat_heads(attrs, v), mask, dy)[which]
        return _round_float(grad if which == 0 else sum_heads(attrs, grad), dtype)
    return evaluate


def _op_safe_softmax(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"SafeSoftmax needs a float dtype, not {dtype}")
    axis = attrs["axis"]
    if not -x.ndim <= axis < x.ndim:
        raise LowerError(f"SafeSoftmax axis {axis!r} is out of range for rank {x.ndim}")
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        e = np.exp(x - m)
        y = e / np.sum(e, axis=axis, keepdims=True)
    return _round_float(np.where(m == -np.inf, 0.0, y), dtype)


# ---- shape and dtype inference ---------------------------------------------------------------------


def _dtype(named: Sequence[tuple[str, Meta]], lse: Meta | None = None) -> str | None:
    dt = None
    for name, (_, d) in named:
        if d is None:
            continue
        if d not in FLOAT_DTYPES:
            raise ValueError(f"{name} needs a float dtype, got {d}")
        if dt is not None and d != dt:
            raise ValueError(f"{name} is {d} but q is {dt} (they must be equal)")
        dt = dt or d
    if lse is not None and lse[1] is not None and dt is not None and lse[1] != dt \
            and not (lse[1] == "f32" and dt in ("f16", "bf16")):
        raise ValueError(f"lse is {lse[1]} but q is {dt} (it must be {dt}, or f32 for f16/bf16)")
    return dt


def _qk(attrs: Mapping[str, Any], q: tuple[int, ...], k: tuple[int, ...]) -> None:
    if len(q) < 2:
        raise ValueError(f"q has shape {show_shape(q)}, expected rank >= 2 ([..., L, E])")
    batch, g = kv_batch(q, attrs.get("groups")), attrs.get("groups")
    if len(k) != len(q) or k[:-2] != batch or k[-1] != q[-1]:
        raise ValueError(f"k has shape {show_shape(k)}, expected {_spec(batch, 'S', q[-1])} for q {show_shape(q)}"
                         + (f" in groups of {g}" if g is not None else ""))


def _spec(batch: tuple[int, ...], rows: str, last: Any) -> str:
    return "[" + ", ".join([str(d) for d in batch] + [rows, str(last)]) + "]"


def _v(attrs: Mapping[str, Any], q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...]) -> None:
    if len(v) != len(q) or v[:-2] != k[:-2] or v[-2] != k[-2]:
        raise ValueError(f"v has shape {show_shape(v)}, expected {_spec(k[:-2], str(k[-2]), 'Ev')} "
                         f"for k {show_shape(k)}")


def _mask(q: tuple[int, ...], k: tuple[int, ...], mask: tuple[int, ...]) -> None:
    scores = q[:-1] + (k[-2],)
    try:
        ok = len(mask) <= len(scores) and broadcast_shapes(mask, scores) == scores
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"mask has shape {show_shape(mask)}, which does not broadcast to the scores "
                         f"{show_shape(scores)}")


def _exact(name: str, shape: tuple[int, ...], want: tuple[int, ...]) -> None:
    if shape != want:
        raise ValueError(f"{name} has shape {show_shape(shape)}, expected {show_shape(want)}")


def _infer_attention(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (q, _), (k, _), (v, _), (mask, _) = ins
    _qk(attrs, q, k)
    _v(attrs, q, k, v)
    _mask(q, k, mask)
    return q[:-1] + (v[-1],), _dtype(list(zip(("q", "k", "v", "mask"), ins)))


def _infer_lse(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (q, _), (k, _), (mask, _) = ins
    _qk(attrs, q, k)
    _mask(q, k, mask)
    return q[:-1], _dtype(list(zip(("q", "k", "mask"), ins)))


def _infer_bwd_value(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (q, _), (k, _), (mask, _), (lse, _), (dy, _) = ins
    _qk(attrs, q, k)
    _mask(q, k, mask)
    _exact("lse", lse, q[:-1])
    if len(dy) != len(q) or dy[:-1] != q[:-1]:
        raise ValueError(f"dy has shape {show_shape(dy)}, expected {_spec(q, str(q[-2]), 'Ev')} for q {show_shape(q)}")
    dt = _dtype([("q", ins[0]), ("k", ins[1]), ("mask", ins[2]), ("dy", ins[4])], ins[3])
    return k[:-1] + (dy[-1],), dt


def _infer_bwd(out: str) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        (q, _), (k, _), (v, _), (mask, _), (o, _), (lse, _), (dy, _) = ins
        _qk(attrs, q, k)
        _v(attrs, q, k, v)
        _mask(q, k, mask)
        _exact("out", o, q[:-1] + (v[-1],))
        _exact("lse", lse, q[:-1])
        _exact("dy", dy, q[:-1] + (v[-1],))
        named = [("q", ins[0]), ("k", ins[1]), ("v", ins[2]), ("mask", ins[3]), ("out", ins[4]), ("dy", ins[6])]
        return (q if out == "q" else k), _dtype(named, ins[5])
    return infer


# ---- attributes and e-graph fields -------------------------------------------------------------------


def _is_scale(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _encode_scale(value: Any, shapes: tuple[tuple[int, ...], ...]) -> float:
    q = shapes[0]
    return default_scale(q[-1] if q else 0) if value is None else float(value)


def _is_groups(v: Any) -> bool:
    return is_int(v) and v >= 1


_ATTRS = (Attr("scale", attr_check("scale", _is_scale, "a finite number"), required=False),
          Attr("causal", attr_check("causal", lambda v: isinstance(v, bool), "true or false"), required=False),
          Attr("groups", attr_check("groups", _is_groups, "a positive integer"), required=False))


def _shape_field(name: str, fn: Any) -> Field:
    return Field(name, STRING, lambda v, shapes: ints_text(fn(tuple(shapes[0]))), None, source="causal",
                 shaped=INPUTS)


# scale (1/sqrt(E) when absent: needs q's shape), causal; then derived: the scores' last axis, the
# permutation that swaps the last two axes, q's shape without its last axis (lse's shape) and with it as 1.
# Every field reads every input's shape (INPUTS: the grouped constructors' fields need k's and v's), q first.
_FIELDS = (Field("scale", F64, _encode_scale, float, shaped=INPUTS),
           Field("causal", I64, lambda v, shapes: int(bool(v)), bool, default=False, shaped=INPUTS),
           _shape_field("axes", lambda s: [len(s) - 1]),
           _shape_field("perm", lambda s: list(range(len(s) - 2)) + [len(s) - 1, len(s) - 2]),
           _shape_field("lshape", lambda s: s[:-1]),
           _shape_field("lkeep", lambda s: s[:-1] + (1,)))


def _infer_safe_softmax(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if not -len(shape) <= attrs["axis"] < len(shape):
        raise ValueError(f"axis {attrs['axis']} is out of range for rank {len(shape)}")
    return shape, _dtype([("x", ins[0])])


def _ungrouped(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("groups") is None


def _grouped(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("groups") is not None


def _ctor(name: str, op: str, arity: int) -> tuple[Ctor, ...]:
    """The ungrouped constructor, and the grouped one (`groups` given, even 1: version 3) with its
    derived shapes (attention_groups.py)."""
    grouped = f"{name}Gqa"
    return (Ctor(name, op, _FIELDS, arity, (head(name),), accepts=_ungrouped),
            Ctor(grouped, op, _FIELDS + group_fields(op), arity, (head(grouped),), accepts=_grouped))


_F = "f32"
_Q, _K, _V, _M = ((2, 3, 4), _F), ((2, 5, 4), _F), ((2, 5, 2), _F), ((3, 5), _F)
_SAMPLE_ATTRS = {"scale": 0.5, "causal": True}

OPS: tuple[OpDef, ...] = (
    OpDef("Attention", ("q", "k", "v", "mask"), _ATTRS, _infer_attention, _op_attention,
          _ctor("Attention", "Attention", 4), domain="attention", torch="attention",
          sample=(_SAMPLE_ATTRS, (_Q, _K, _V, _M))),
    OpDef("AttentionLogSumExp", ("q", "k", "mask"), _ATTRS, _infer_lse, _op_lse,
          _ctor("AttnLse", "AttentionLogSumExp", 3), domain="attention", torch="attention_lse",
          sample=({}, (_Q, _K, ((), _F)))),
    OpDef("AttentionBackwardQuery", ("q", "k", "v", "mask", "out", "lse", "dy"), _ATTRS, _infer_bwd("q"),
          _op_bwd(0, "AttentionBackwardQuery"), _ctor("AttnBwdQuery", "AttentionBackwardQuery", 7),
          domain="attention", torch="attention_backward_query", backward=True,
          sample=(_SAMPLE_ATTRS, (_Q, _K, _V, _M, ((2, 3, 2), _F), ((2, 3), _F), ((2, 3, 2), _F)))),
    OpDef("AttentionBackwardKey", ("q", "k", "v", "mask", "out", "lse", "dy"), _ATTRS, _infer_bwd("k"),
          _op_bwd(1, "AttentionBackwardKey"), _ctor("AttnBwdKey", "AttentionBackwardKey", 7),
          domain="attention", torch="attention_backward_key", backward=True,
          sample=(_SAMPLE_ATTRS, (_Q, _K, _V, _M, ((2, 3, 2), _F), ((2, 3), _F), ((2, 3, 2), _F)))),
    OpDef("AttentionBackwardValue", ("q", "k", "mask", "lse", "dy"), _ATTRS, _infer_bwd_value, _op_bwd_value,
          _ctor("AttnBwdValue", "AttentionBackwardValue", 5), domain="attention",
          torch="attention_backward_value", backward=True,
          sample=({"causal": False}, (_Q, _K, _M, ((2, 3), _F), ((2, 3, 2), _F)))),
)

# the one-axis list the reductions of its rule use, normalised as a loaded Reduce's axes (as Softmax's)
_SAFE_AXES = Field("axes", STRING, lambda axis, rank: ints_text([axis % rank if rank else axis]), None, source="axis")
SAFE_SOFTMAX: OpDef = OpDef("SafeSoftmax", ("x",), (Attr("axis", attr_check("axis", is_int, "an integer")),),
                     _infer_safe_softmax, _op_safe_softmax,
                     (Ctor("SafeSoftmax", "SafeSoftmax", (integer("axis"), _SAFE_AXES), 1, (head("SafeSoftmax"),)),),
                     domain="softmax", torch="safe_softmax", sample=({"axis": -1}, (((2, 3), _F),)))
OPS += (SAFE_SOFTMAX,)
