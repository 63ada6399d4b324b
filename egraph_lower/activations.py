"""The activation kinds' math in float64: f(x), f'(x) and the wrt: output forms.

The reference for `Activation` and `ActivationBackward` nodes: evaluate.py
rounds these float64 results once to the node's dtype. `_int_activation` and
`_int_activation_grad` are the integer kinds on int64 values.

Activations and derivatives
    `activation`, `activation_grad` and `activation_grad_from_output` work in
    float64 with numerically stable forms. The spec's conventions are followed
    where the derivative is not defined (see graph-format.md). In addition:
    f'(nan) is nan for every kind (also for the piecewise and constant ones),
    f and f' at +-inf are the mathematical limits where those exist (e.g.
    Silu(-inf) = 0, Gelu'(+inf) = 1), and Log'(x) = 1/x for every x.

Integer kinds
    Neg, Abs, Sign, Relu, Round, Floor, Ceil (the last three are the
    identity), computed in int64; evaluate.py wraps the result to the node's
    dtype. Their f' is int64 too (Round straight-through: 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .arrays import _F64, _I64, _f, _ineg
from .errors import LowerError
from .ops import OUTPUT_FORM_KINDS

__all__ = ["activation", "activation_grad", "activation_grad_from_output"]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715

_erf_obj = np.frompyfunc(math.erf, 1, 1)
_erfc_obj = np.frompyfunc(math.erfc, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf_obj(x), dtype=_F64)


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erfc_obj(x), dtype=_F64)

# --------------------------------------------------------------------------- activations


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _sigmoid_prod(x: np.ndarray) -> np.ndarray:
    """sigmoid(x) * sigmoid(-x) without cancellation."""
    e = np.exp(-np.abs(x))
    return e / ((1.0 + e) * (1.0 + e))


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _sech2(x: np.ndarray) -> np.ndarray:
    """1 - tanh(x)^2 without cancellation."""
    return 4.0 * _sigmoid_prod(2.0 * x)


def _xmul(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """x * g, with the limit 0 where x is infinite and g is 0."""
    return np.where(np.isinf(x) & (g == 0), 0.0, x * g)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0) + 0.0  # + 0.0 turns -0.0 into 0.0


def _hard6(x: np.ndarray) -> np.ndarray:
    return np.clip(x + 3.0, 0.0, 6.0)  # relu6(x + 3)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * _xmul(x, _erfc(-x * _SQRT1_2))


def _gelu_grad(x: np.ndarray) -> np.ndarray:
    cdf = 0.5 * _erfc(-x * _SQRT1_2)
    pdf = np.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return cdf + _xmul(x, pdf)


def _gelu_approx_u(x: np.ndarray) -> np.ndarray:
    return _GELU_C * (x + _GELU_A * (x * x * x))


def _gelu_approx(x: np.ndarray) -> np.ndarray:
    # 0.5 * x * (1 + tanh(u)) == x * sigmoid(2u), without the cancellation of 1 + tanh(u)
    return _xmul(x, _sigmoid(2.0 * _gelu_approx_u(x)))


def _gelu_approx_grad(x: np.ndarray) -> np.ndarray:
    # d/dx 0.5x(1+tanh u) = 0.5(1+tanh u) + 0.5x sech^2(u) u',  u' = c(1 + 3a x^2)
    u = _gelu_approx_u(x)
    s = _sigmoid_prod(2.0 * u)  # sech^2(u) / 4
    du = _GELU_C * (1.0 + 3.0 * _GELU_A * (x * x))
    g = np.where(s == 0, 0.0, 2.0 * s * du)
    return _sigmoid(2.0 * u) + _xmul(x, g)


def _mish(x: np.ndarray) -> np.ndarray:
    return _xmul(x, np.tanh(_softplus(x)))


def _mish_grad(x: np.ndarray) -> np.ndarray:
    sp = _softplus(x)
    return np.tanh(sp) + _xmul(x, _sech2(sp) * _sigmoid(x))


def _softsign(x: np.ndarray) -> np.ndarray:
    return np.where(np.isinf(x), np.sign(x), x / (1.0 + np.abs(x)))


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))


def _hard_swish_grad(x: np.ndarray) -> np.ndarray:
    return np.where(x <= -3.0, 0.0, np.where(x < 3.0, x / 3.0 + 0.5, 1.0))


def _const(v: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.full(np.shape(x), v)


def _sqrt_grad(x: np.ndarray) -> np.ndarray:
    pos = x > 0
    return np.where(pos, 0.5 / np.sqrt(np.where(pos, x, 1.0)), 0.0)


def _rsqrt_grad(x: np.ndarray) -> np.ndarray:
    pos = x > 0
    xs = np.where(pos, x, 1.0)
    return np.where(pos, -0.5 / (xs * np.sqrt(xs)), 0.0)


_FORWARD: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Gelu": _gelu,
    "GeluApprox": _gelu_approx,
    "Silu": lambda x: _xmul(x, _sigmoid(x)),
    "Relu": _relu,
    "Sigmoid": _sigmoid,
    "Tanh": np.tanh,
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1.0 / np.sqrt(x),
    "Neg": np.negative,
    "Abs": np.abs,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Atan": np.arctan,
    "Recip": lambda x: 1.0 / x,
    "Round": np.rint,  # half to even
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Sign": np.sign,
    "Softplus": _softplus,
    "Elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "Erf": _erf,
    "HardSwish": lambda x: _xmul(x, _hard6(x)) / 6.0,
    "HardSigmoid": lambda x: _hard6(x) / 6.0,
    "Mish": _mish,
    "Softsign": _softsign,
    "LogSigmoid": _log_sigmoid,
}

_GRAD: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Gelu": _gelu_grad,
    "GeluApprox": _gelu_approx_grad,
    "Silu": lambda x: _sigmoid(x) + _xmul(x, _sigmoid_prod(x)),
    "Relu": lambda x: np.where(x > 0, 1.0, 0.0),
    "Sigmoid": _sigmoid_prod,
    "Tanh": _sech2,
    "Exp": np.exp,
    "Log": lambda x: 1.0 / x,
    "Sqrt": _sqrt_grad,
    "Rsqrt": _rsqrt_grad,
    "Neg": _const(-1.0),
    "Abs": np.sign,
    "Sin": np.cos,
    "Cos": lambda x: -np.sin(x),
    "Tan": lambda x: 1.0 + np.tan(x) ** 2,
    "Atan": lambda x: 1.0 / (1.0 + x * x),
    "Recip": lambda x: -1.0 / (x * x),
    "Round": _const(1.0),  # straight-through
    "Floor": _const(0.0),
    "Ceil": _const(0.0),
    "Sign": _const(0.0),
    "Softplus": _sigmoid,
    "Elu": lambda x: np.where(x > 0, 1.0, np.exp(x)),
    "Erf": lambda x: _TWO_OVER_SQRT_PI * np.exp(-(x * x)),
    "HardSwish": _hard_swish_grad,
    "HardSigmoid": lambda x: np.where((x > -3.0) & (x < 3.0), 1.0 / 6.0, 0.0),
    "Mish": _mish_grad,
    "Softsign": lambda x: 1.0 / ((1.0 + np.abs(x)) * (1.0 + np.abs(x))),
    "LogSigmoid": lambda x: _sigmoid(-x),
}

_GRAD_FROM_OUTPUT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Sigmoid": lambda y: y * (1.0 - y),
    "Tanh": lambda y: 1.0 - y * y,
    "Exp": lambda y: y,
    "Relu": lambda y: np.where(y > 0, 1.0, 0.0),
    "Sqrt": lambda y: np.where(y > 0, 1.0 / (2.0 * np.where(y > 0, y, 1.0)), 0.0),
    "Rsqrt": lambda y: np.where(y > 0, -(y * y * y) / 2.0, 0.0),
    "Recip": lambda y: -(y * y),
    "Elu": lambda y: np.where(y > 0, 1.0, y + 1.0),
}


def _kind_fn(table: dict[str, Callable[[np.ndarray], np.ndarray]], kind: str, what: str) -> Callable:
    try:
        return table[kind]
    except (KeyError, TypeError):
        raise LowerError(f"{what}: unknown activation kind {kind!r}") from None


def activation(kind: str, x: np.ndarray) -> np.ndarray:
    """f(x) of `Activation{kind}` in float64."""
    fn = _kind_fn(_FORWARD, kind, "Activation")
    x = _f(x)
    with np.errstate(all="ignore"):
        return np.asarray(fn(x), dtype=_F64)


def activation_grad(kind: str, x: np.ndarray) -> np.ndarray:
    """f'(x) of `Activation{kind}` in float64, with the spec's conventions; nan where x is nan."""
    fn = _kind_fn(_GRAD, kind, "ActivationBackward")
    x = _f(x)
    with np.errstate(all="ignore"):
        d = np.asarray(fn(x), dtype=_F64)
        return np.asarray(np.where(np.isnan(x), np.nan, d), dtype=_F64)


def activation_grad_from_output(kind: str, y: np.ndarray) -> np.ndarray:
    """The derivative of `Activation{kind}` written in y = f(x) (wrt: output), float64; nan where y is nan."""
    if kind not in _GRAD_FROM_OUTPUT:
        raise LowerError(
            f"ActivationBackward: kind {kind!r} has no wrt: output form (allowed: {', '.join(OUTPUT_FORM_KINDS)})"
        )
    y = _f(y)
    with np.errstate(all="ignore"):
        d = np.asarray(_GRAD_FROM_OUTPUT[kind](y), dtype=_F64)
        return np.asarray(np.where(np.isnan(y), np.nan, d), dtype=_F64)


def _int_activation(kind: str, x: np.ndarray) -> np.ndarray:
    if kind == "Neg":
        return _ineg(x)
    if kind == "Abs":
        return np.where(x < 0, _ineg(x), x)
    if kind == "Sign":
        return np.sign(x)
    if kind == "Relu":
        return np.maximum(x, 0)
    return x  # Round, Floor, Ceil: the identity on integers


def _int_activation_grad(kind: str, x: np.ndarray) -> np.ndarray:
    if kind == "Neg":
        return np.full(x.shape, -1, dtype=_I64)
    if kind == "Abs":
        return np.sign(x)
    if kind == "Relu":
        return (x > 0).astype(_I64)
    if kind == "Round":
        return np.ones(x.shape, dtype=_I64)
    return np.zeros(x.shape, dtype=_I64)  # Sign, Floor, Ceil
