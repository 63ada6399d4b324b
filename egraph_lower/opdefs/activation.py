"""Activation, ActivationBackward (both forms), ReluBackward.

The kinds' own math is `kinds.py` (one formula for NumPy and torch); here are the
ops that apply it, and the NumPy reference's float64 wrappers (`activation`,
`activation_grad`, `activation_grad_from_output`), re-exported by evaluate.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import _F64, Args, Attrs, _convert, _f, _i, _imul, _is_float, _round_float, _wrap
from ..dtypes import FLOAT_DTYPES, INT_DTYPES, to_numpy
from ..errors import LowerError
from . import activation_params as P
from . import kinds as K
from .arraylib import NUMPY
from .base import Attr, Ctor, Meta, OpDef, head, string
from .meta import float_dtype, one_of, same_shape, show

ACTIVATION_KINDS: tuple[str, ...] = tuple(k.name for k in K.KINDS)
# Kinds that `ActivationBackward` may take with `"wrt": "output"` (the input is y = f(x)).
OUTPUT_FORM_KINDS: tuple[str, ...] = tuple(k.name for k in K.KINDS if k.grad_out is not None)
# Kinds that make sense on integer tensors too; every other kind needs a float dtype.
INTEGER_KINDS: frozenset[str] = frozenset(k.name for k in K.KINDS if k.int_value is not None)
WRT: tuple[str, ...] = ("input", "output")


def _kind(kind: Any, what: str) -> K.Kind:
    try:
        return K.BY_NAME[kind]
    except (KeyError, TypeError):
        raise LowerError(f"{what}: unknown activation kind {kind!r}") from None


def activation(kind: str, x: np.ndarray, params: Mapping[str, Any] | None = None) -> np.ndarray:
    """f(x) of `Activation{kind}` in float64 (`params`: the kind's parameters; None: the defaults)."""
    k = _kind(kind, "Activation")
    x = _f(x)
    with np.errstate(all="ignore"):
        return np.asarray(K.value(NUMPY, k, x, params), dtype=_F64)


def activation_grad(kind: str, x: np.ndarray, params: Mapping[str, Any] | None = None) -> np.ndarray:
    """f'(x) of `Activation{kind}` in float64, with the spec's conventions; nan where x is nan."""
    k = _kind(kind, "ActivationBackward")
    x = _f(x)
    with np.errstate(all="ignore"):
        return np.asarray(K.grad(NUMPY, k, x, params=params), dtype=_F64)


def activation_grad_from_output(kind: str, y: np.ndarray, params: Mapping[str, Any] | None = None) -> np.ndarray:
    """The derivative of `Activation{kind}` written in y = f(x) (wrt: output), float64; nan where y is nan."""
    k = K.BY_NAME.get(kind) if isinstance(kind, str) else None
    if k is None or k.grad_out is None:
        raise LowerError(
            f"ActivationBackward: kind {kind!r} has no wrt: output form (allowed: {', '.join(OUTPUT_FORM_KINDS)})"
        )
    y = _f(y)
    with np.errstate(all="ignore"):
        return np.asarray(K.grad(NUMPY, k, y, output=True, params=params), dtype=_F64)


def _int_activation(kind: str, x: np.ndarray) -> np.ndarray:
    return np.asarray(K.value(NUMPY, K.BY_NAME[kind], x))


def _int_activation_grad(kind: str, x: np.ndarray, output: bool = False) -> np.ndarray:
    return np.asarray(K.grad(NUMPY, K.BY_NAME[kind], x, output))


def _op_activation(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    kind = attrs["kind"]
    (x,) = args
    if dtype in FLOAT_DTYPES:
        return _round_float(activation(kind, x, attrs), dtype)
    if dtype in INT_DTYPES and kind in INTEGER_KINDS:
        return _wrap(_int_activation(kind, _i(x)), dtype)
    raise LowerError(f"Activation {kind} is not defined on {dtype}")


def _op_activation_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    kind = attrs["kind"]
    wrt = attrs.get("wrt", "input")
    x, dy = args
    if wrt not in ("input", "output"):
        raise LowerError(f"ActivationBackward wrt must be 'input' or 'output', not {wrt!r}")
    if dtype in FLOAT_DTYPES:
        d = activation_grad(kind, x, attrs) if wrt == "input" else activation_grad_from_output(kind, x, attrs)
        return _round_float(_f(dy) * d, dtype)
    k = K.BY_NAME.get(kind)
    if dtype in INT_DTYPES and k is not None and (k.int_grad if wrt == "input" else k.int_grad_out) is not None:
        g = _int_activation_grad(kind, _i(x), wrt == "output")
        dy_i, g = np.broadcast_arrays(_i(dy), g)
        return _wrap(_imul(np.ascontiguousarray(dy_i), np.ascontiguousarray(g)), dtype)
    raise LowerError(f"ActivationBackward {kind} (wrt {wrt}) is not defined on {dtype}")


def _op_relu_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, dy = (np.asarray(v) for v in args)
    pos = (_f(x) if _is_float(x) else _i(x)) > 0
    dy = _convert(dy, dtype)
    return np.asarray(np.where(pos, dy, np.zeros((), dtype=dy.dtype)), dtype=to_numpy(dtype))


def _activation(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt, kind = ins[0][1], attrs["kind"]
    if dt is not None and dt not in FLOAT_DTYPES and not (dt in INT_DTYPES and kind in INTEGER_KINDS):
        allowed = ", ".join(sorted(INTEGER_KINDS))
        raise ValueError(f"{kind} needs a float dtype, got {dt} (on integers only {allowed})")
    return ins[0]


def _pointwise_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    first = "y" if attrs.get("wrt") == "output" else "x"
    same_shape(ins[0][0], ins[1][0], first)
    return ins[1][0], float_dtype(ins)


def _wrt_output_form(attrs: Mapping[str, Any]) -> None:
    if attrs.get("wrt") == "output" and attrs["kind"] not in OUTPUT_FORM_KINDS:
        raise ValueError(f"wrt 'output' is not defined for kind {show(attrs['kind'])} "
                         f"(only {', '.join(OUTPUT_FORM_KINDS)})")
    P.check_params(attrs)


_KIND = Attr("kind", one_of(ACTIVATION_KINDS, "kind"))
_KIND_FIELD = string("kind")
# the kinds version 1's constructors (a String `kind` field) spell; LeakyRelu and Hardtanh have only
# their parametrised constructors (`activation_params.py`)
_PLAIN_KINDS = tuple(k for k in ACTIVATION_KINDS if k not in P.PARAM_ONLY)
_OUT_KINDS = tuple(k for k in OUTPUT_FORM_KINDS if k not in P.PARAM_ONLY)

ACTIVATION = OpDef(
    "Activation", ("x",), (_KIND,) + P.ATTRS, _activation, _op_activation,
    (Ctor("Act", "Activation", (_KIND_FIELD,), 1, tuple(head(k, kind=k) for k in _PLAIN_KINDS)),) + P.FORWARD_CTORS,
    domain="activation", torch="activation", kinded=True, check=P.check_params,
          sample=({"kind": "Tanh"}, (((2, 3), "f32"),)))

BACKWARD: tuple[OpDef, ...] = (
    OpDef("ReluBackward", ("x", "dy"), (), _pointwise_backward, _op_relu_backward,
          (Ctor("ReluBwd", "ReluBackward", (), 2, (head("ReluBackward"),)),),
          domain="relu", torch="relu_backward", backward=True,
          sample=({}, (((2, 3), "f32"), ((2, 3), "f32")))),
    OpDef("ActivationBackward", ("x", "dy"), (_KIND, Attr("wrt", one_of(WRT, "wrt"), required=False)) + P.ATTRS,
          _pointwise_backward, _op_activation_backward,
          (Ctor("ActBwd", "ActivationBackward", (_KIND_FIELD,), 2,
                tuple(head(f"Backward.{k}", kind=k) for k in _PLAIN_KINDS)),
           Ctor("ActBwdOut", "ActivationBackward", (_KIND_FIELD,), 2,
                tuple(head(f"BackwardOut.{k}", kind=k) for k in _OUT_KINDS), implies=(("wrt", "output"),)))
          + P.BACKWARD_CTORS,
          domain="activation", torch="activation_backward", backward=True, kinded=True,
          check=_wrt_output_form,
          sample=({"kind": "Sigmoid", "wrt": "output"}, (((2, 3), "f32"), ((2, 3), "f32")))),
)
