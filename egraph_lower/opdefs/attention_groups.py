"""Grouped-query attention (format version 3): the attention ops with k and v of fewer heads than q.

With the attribute `groups` = g, q is [..., H, L, E] and k [..., Hkv, S, E], v [..., Hkv, S, Ev] with
H = g Hkv and every other batch dim equal: axis -3 is the head axis, and q's head h reads k's and v's
head h // g (k and v repeated g times along axis -3, as `repeat_interleave`; torch's `enable_gqa`).
The key and value gradients are k's and v's shapes: each kv head's is the sum over its g q heads.
Without `groups` the batch dims are all equal (version 2).

The e-graph constructors of a grouped node (`AttnGqa`, ...) carry, on top of the ungrouped fields,
shapes derived from every input's (`INPUTS`): k and v split and widened ([..., Hkv, 1, S, E],
[..., Hkv, g, S, E]) and flattened to H heads, the widened tensor's group axis (`gaxis`), and for
the folded form (q read as [..., Hkv, g L, E], allowed where `fold` is 1: not causal and a mask
constant along the head and row axes) q's, out's and lse's shapes folded and q's, out's unfolded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import I64, INPUTS, STRING, WHOLE, Field, ints_text
from .meta import show_shape

Shapes = tuple[tuple[int, ...], ...]


# ---- reference semantics ---------------------------------------------------------------------------

def groups_of(attrs: Mapping[str, Any]) -> int:
    g = attrs.get("groups")
    return 1 if g is None else int(g)


def repeat_heads(attrs: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """k or v with its head axis (-3) repeated `groups` times, each head g times in a row."""
    g = groups_of(attrs)
    return x if g == 1 else np.repeat(x, g, axis=-3)


def sum_heads(attrs: Mapping[str, Any], dx: np.ndarray) -> np.ndarray:
    """The gradient of `repeat_heads`: the sum over each run of g heads."""
    g = groups_of(attrs)
    if g == 1:
        return dx
    return dx.reshape(dx.shape[:-3] + (dx.shape[-3] // g, g) + dx.shape[-2:]).sum(axis=-3)


# ---- shape inference -------------------------------------------------------------------------------

def kv_batch(q: tuple[int, ...], groups: Any) -> tuple[int, ...]:
    """The batch dims k and v must have for q (and `groups`); ValueError where groups do not fit q."""
    if groups is None:
        return q[:-2]
    if len(q) < 3:
        raise ValueError(f"q has shape {show_shape(q)}, expected rank >= 3 ([..., H, L, E]) with groups")
    if q[-3] % groups:
        raise ValueError(f"q has {q[-3]} heads, which groups {groups} does not divide")
    return q[:-3] + (q[-3] // groups,)


# ---- e-graph fields ----------------------------------------------------------------------------------

def _layout(op: str) -> tuple[int, Callable[[Shapes], tuple[int, ...]] | None]:
    """The position of the mask among `op`'s inputs, and v's shape (for AttentionBackwardValue: k's
    rows with dy's width) or None (AttentionLogSumExp has no v)."""
    if op == "AttentionLogSumExp":
        return 2, None
    if op == "AttentionBackwardValue":
        return 2, lambda s: s[1][:-1] + s[4][-1:]
    return 3, lambda s: s[2]


def _split(x: tuple[int, ...], g: int) -> tuple[int, ...]:
    return x[:-2] + (1,) + x[-2:]


def _wide(x: tuple[int, ...], g: int) -> tuple[int, ...]:
    return x[:-2] + (g,) + x[-2:]


def _flat(x: tuple[int, ...], g: int) -> tuple[int, ...]:
    return x[:-3] + (x[-3] * g,) + x[-2:] if len(x) >= 3 else x


def _folded(q: tuple[int, ...], g: int, last: tuple[int, ...]) -> tuple[int, ...]:
    return q[:-3] + (q[-3] // g, g * q[-2]) + last if len(q) >= 3 else q


def _foldable(mask_at: int) -> Callable[[Mapping[str, Any], Shapes], int]:
    def fold(attrs: Mapping[str, Any], s: Shapes) -> int:
        q, m = s[0], s[mask_at]
        if attrs.get("causal", False) or len(q) < 3 or len(m) > len(q):
            return 0
        padded = (1,) * (len(q) - len(m)) + tuple(m)
        return int(padded[-3] == 1 and padded[-2] == 1)
    return fold


def _g(name: str, fn: Callable[[int, Shapes], Sequence[int]]) -> Field:
    return Field(name, STRING, lambda g, s: ints_text(fn(int(g), s)), None, source="groups", shaped=INPUTS)


def group_fields(op: str) -> tuple[Field, ...]:
    """The fields a grouped node of `op` carries beyond the ungrouped ones (see the module docstring)."""
    mask_at, v_of = _layout(op)
    fields = [Field("groups", I64, lambda g, s: int(g), int, shaped=INPUTS),
              _g("ksplit", lambda g, s: _split(s[1], g)), _g("kwide", lambda g, s: _wide(s[1], g)),
              _g("kflat", lambda g, s: _flat(s[1], g))]
    if v_of is not None:
        vo = v_of
        fields += [_g("vsplit", lambda g, s: _split(vo(s), g)), _g("vwide", lambda g, s: _wide(vo(s), g)),
                   _g("vflat", lambda g, s: _flat(vo(s), g))]
    if op in ("AttentionBackwardKey", "AttentionBackwardValue"):
        fields.append(_g("gaxis", lambda g, s: [len(s[1]) - 2]))
    fields.append(Field("fold", I64, _foldable(mask_at), None, source=WHOLE, shaped=INPUTS))
    fields.append(_g("qfold", lambda g, s: _folded(s[0], g, s[0][-1:])))
    if op == "Attention":  # its result unfolded
        fields.append(_g("oshape", lambda g, s: s[0][:-1] + s[2][-1:]))
    elif op != "AttentionLogSumExp":  # the backward ops' out and dy folded
        fields.append(_g("ofold", lambda g, s: _folded(s[0], g, s[-1][-1:])))
    fields += [_g("flshape", lambda g, s: _folded(s[0], g, ())), _g("flkeep", lambda g, s: _folded(s[0], g, (1,)))]
    if op == "AttentionBackwardQuery":
        fields.append(_g("qshape", lambda g, s: s[0]))
    return tuple(fields)
