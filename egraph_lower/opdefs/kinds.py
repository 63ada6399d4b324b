"""The activation kinds: f(x), f'(x) and the wrt: output form, each stated once.

Every formula takes an array namespace `xp` (`arraylib.NUMPY`, or the torch one in
`egraph_lower/torch/kernels.py`) and an array, so the float64 reference and the
torch kernels compute the same expression. The forms are numerically stable;
the spec's conventions are followed where the derivative is not defined (see
graph-format.md). In addition: f'(nan) is nan for every kind (also for the
piecewise and constant ones; `grad` applies it), f and f' at +-inf are the
mathematical limits where those exist (e.g. Silu(-inf) = 0, Gelu'(+inf) = 1), and
Log'(x) = 1/x for every x.

Integer kinds (`int_value`, `int_grad`): Neg, Abs, Sign, Relu, Round, Floor, Ceil
(the last three are the identity), on int64 values (torch: the tensor's integer
dtype); their f' is an integer too (Round straight-through: 1). Only Relu has an
integer output form (y > 0 exactly where x > 0).

Parametrised kinds (format version 2) declare their `params`, each with its
default; their formulas take the parameters as keyword arguments. At the
defaults Elu and Softplus are version 1's kinds exactly (every product with a
parameter of 1 is exact). The conventions at the kinks are torch's kernels':
LeakyRelu's slope is 1 where x > 0, else alpha (also at 0); Hardtanh passes the
gradient only strictly inside (min, max); Elu takes the x <= 0 branch at 0;
Softplus is linear (f = x, f' = 1) where beta * x > threshold (threshold None:
never).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Formula = Callable[[Any, Any], Any]  # (xp, x) -> f(x)

SQRT1_2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
GELU_C = math.sqrt(2.0 / math.pi)
GELU_A = 0.044715


@dataclass(frozen=True)
class Kind:
    """One activation kind. `grad_out` is f' written in y = f(x) (None: no wrt: output form);
    `int_value`/`int_grad` are its integer forms (None: float only)."""

    name: str
    value: Formula
    grad: Formula
    grad_out: Formula | None = None
    int_value: Formula | None = None
    int_grad: Formula | None = None
    int_grad_out: Formula | None = None
    params: tuple[tuple[str, float | None], ...] = ()  # (name, default); formulas take them as keywords


# --------------------------------------------------------------------------- helpers

def sigmoid(xp: Any, x: Any) -> Any:
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def sigmoid_prod(xp: Any, x: Any) -> Any:
    """sigmoid(x) * sigmoid(-x) without cancellation."""
    e = xp.exp(-xp.abs(x))
    return e / ((1.0 + e) * (1.0 + e))


def softplus(xp: Any, x: Any) -> Any:
    return xp.maximum(x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))


def _sech2(xp: Any, x: Any) -> Any:
    """1 - tanh(x)^2 without cancellation."""
    return 4.0 * sigmoid_prod(xp, 2.0 * x)


def _xmul(xp: Any, x: Any, g: Any) -> Any:
    """x * g, with the limit 0 where x is infinite and g is 0."""
    return xp.where(xp.isinf(x) & (g == 0), 0.0, x * g)


def _hard6(xp: Any, x: Any) -> Any:
    return xp.clip(x + 3.0, 0.0, 6.0)  # relu6(x + 3)


def _positive(xp: Any, x: Any, fn: Formula) -> Any:
    """fn(x) where x > 0, else 0 (fn never sees a value <= 0)."""
    pos = x > 0
    return xp.where(pos, fn(xp, xp.where(pos, x, 1.0)), 0.0)


def _const(v: float) -> Formula:
    return lambda xp, x: xp.full_like(x, v)


def _identity(xp: Any, x: Any) -> Any:
    return x


# --------------------------------------------------------------------------- the smooth kinds

def _gelu(xp: Any, x: Any) -> Any:
    return 0.5 * _xmul(xp, x, xp.erfc(-x * SQRT1_2))


def _gelu_grad(xp: Any, x: Any) -> Any:
    cdf = 0.5 * xp.erfc(-x * SQRT1_2)
    pdf = xp.exp(-0.5 * x * x) * INV_SQRT_2PI
    return cdf + _xmul(xp, x, pdf)


def _gelu_approx_u(x: Any) -> Any:
    return GELU_C * (x + GELU_A * (x * x * x))


def _gelu_approx(xp: Any, x: Any) -> Any:
    # 0.5 * x * (1 + tanh(u)) == x * sigmoid(2u), without the cancellation of 1 + tanh(u)
    return _xmul(xp, x, sigmoid(xp, 2.0 * _gelu_approx_u(x)))


def _gelu_approx_grad(xp: Any, x: Any) -> Any:
    # d/dx 0.5x(1+tanh u) = 0.5(1+tanh u) + 0.5x sech^2(u) u',  u' = c(1 + 3a x^2)
    u = _gelu_approx_u(x)
    s = sigmoid_prod(xp, 2.0 * u)  # sech^2(u) / 4
    du = GELU_C * (1.0 + 3.0 * GELU_A * (x * x))
    g = xp.where(s == 0, 0.0, 2.0 * s * du)
    return sigmoid(xp, 2.0 * u) + _xmul(xp, x, g)


def _mish_grad(xp: Any, x: Any) -> Any:
    sp = softplus(xp, x)
    return xp.tanh(sp) + _xmul(xp, x, _sech2(xp, sp) * sigmoid(xp, x))


def _softsign(xp: Any, x: Any) -> Any:
    return xp.where(xp.isinf(x), xp.sign(x), x / (1.0 + xp.abs(x)))


def _hard_swish_grad(xp: Any, x: Any) -> Any:
    return xp.where(x <= -3.0, 0.0, xp.where(x < 3.0, x / 3.0 + 0.5, 1.0))


def _relu_grad(xp: Any, x: Any) -> Any:
    return xp.where(x > 0, 1.0, 0.0)


def _int_relu_grad(xp: Any, x: Any) -> Any:
    return xp.where(x > 0, 1, 0)


# --------------------------------------------------------------------------- the parametrised kinds

def _leaky(xp: Any, x: Any, alpha: float = 0.01) -> Any:
    return xp.where(x > 0, x, x * alpha)


def _leaky_grad(xp: Any, x: Any, alpha: float = 0.01) -> Any:
    return xp.where(x > 0, 1.0, alpha)


def _hardtanh(xp: Any, x: Any, min: float = -1.0, max: float = 1.0) -> Any:
    return xp.where(x < min, min, xp.where(x > max, max, x))


def _hardtanh_grad(xp: Any, x: Any, min: float = -1.0, max: float = 1.0) -> Any:
    return xp.where((x > min) & (x < max), 1.0, 0.0)


def _elu(xp: Any, x: Any, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Any:
    return xp.where(x > 0, x * scale, xp.expm1(x * input_scale) * (alpha * scale))


def _elu_grad(xp: Any, x: Any, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Any:
    return xp.where(x > 0, scale, xp.exp(x * input_scale) * (alpha * scale * input_scale))


def _elu_grad_out(xp: Any, y: Any, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Any:
    """f' in y = f(x); y > 0 exactly where x > 0 when scale > 0 and alpha >= 0 (the attribute check)."""
    return xp.where(y > 0, scale, (y + alpha * scale) * input_scale)


def _threshold(threshold: float | None) -> float:
    return math.inf if threshold is None else threshold


def _softplus_p(xp: Any, x: Any, beta: float = 1.0, threshold: float | None = None) -> Any:
    if beta == 1.0 and threshold is None:
        return softplus(xp, x)  # version 1's Softplus, exactly
    # softplus(bx) / beta = max(bx, 0) / beta + log1p(exp(-|bx|)) / beta, and max(bx, 0) / beta is x
    # where bx > 0 (for either sign of beta): so no overflow where beta x does and the value does not
    bx = x * beta
    return xp.where(bx > _threshold(threshold), x, xp.where(bx > 0, x, 0.0) + softplus(xp, -xp.abs(bx)) / beta)


def _softplus_p_grad(xp: Any, x: Any, beta: float = 1.0, threshold: float | None = None) -> Any:
    bx = x * beta
    return xp.where(bx > _threshold(threshold), 1.0, sigmoid(xp, bx))


_ELU_PARAMS: tuple[tuple[str, float | None], ...] = (("alpha", 1.0), ("scale", 1.0), ("input_scale", 1.0))
_SOFTPLUS_PARAMS: tuple[tuple[str, float | None], ...] = (("beta", 1.0), ("threshold", None))

_ZERO, _ONE = _const(0.0), _const(1.0)
_IZERO = _const(0)

KINDS: tuple[Kind, ...] = (
    Kind("Gelu", _gelu, _gelu_grad),
    Kind("GeluApprox", _gelu_approx, _gelu_approx_grad),
    Kind("Silu", lambda xp, x: _xmul(xp, x, sigmoid(xp, x)),
         lambda xp, x: sigmoid(xp, x) + _xmul(xp, x, sigmoid_prod(xp, x))),
    Kind("Relu", lambda xp, x: xp.maximum(x, 0.0) + 0.0,  # + 0.0 turns -0.0 into 0.0
         _relu_grad, _relu_grad, lambda xp, x: xp.maximum(x, 0), _int_relu_grad, _int_relu_grad),
    Kind("Sigmoid", sigmoid, sigmoid_prod, lambda xp, y: y * (1.0 - y)),
    Kind("Tanh", lambda xp, x: xp.tanh(x), _sech2, lambda xp, y: 1.0 - y * y),
    Kind("Exp", lambda xp, x: xp.exp(x), lambda xp, x: xp.exp(x), lambda xp, y: y),
    Kind("Log", lambda xp, x: xp.log(x), lambda xp, x: 1.0 / x),
    Kind("Sqrt", lambda xp, x: xp.sqrt(x), lambda xp, x: _positive(xp, x, lambda xp, v: 0.5 / xp.sqrt(v)),
         lambda xp, y: _positive(xp, y, lambda xp, v: 1.0 / (2.0 * v))),
    Kind("Rsqrt", lambda xp, x: 1.0 / xp.sqrt(x), lambda xp, x: _positive(xp, x, lambda xp, v: -0.5 / (v * xp.sqrt(v))),
         lambda xp, y: xp.where(y > 0, -(y * y * y) / 2.0, 0.0)),
    Kind("Neg", lambda xp, x: xp.neg(x), _const(-1.0), None, lambda xp, x: xp.neg(x), _const(-1)),
    Kind("Abs", lambda xp, x: xp.abs(x), lambda xp, x: xp.sign(x), None,
         lambda xp, x: xp.where(x < 0, xp.neg(x), x), lambda xp, x: xp.sign(x)),
    Kind("Sin", lambda xp, x: xp.sin(x), lambda xp, x: xp.cos(x)),
    Kind("Cos", lambda xp, x: xp.cos(x), lambda xp, x: -xp.sin(x)),
    Kind("Tan", lambda xp, x: xp.tan(x), lambda xp, x: 1.0 + xp.tan(x) ** 2),
    Kind("Atan", lambda xp, x: xp.atan(x), lambda xp, x: 1.0 / (1.0 + x * x)),
    Kind("Recip", lambda xp, x: 1.0 / x, lambda xp, x: -1.0 / (x * x), lambda xp, y: -(y * y)),
    Kind("Round", lambda xp, x: xp.rint(x), _ONE, None, _identity, _const(1)),  # straight-through
    Kind("Floor", lambda xp, x: xp.floor(x), _ZERO, None, _identity, _IZERO),
    Kind("Ceil", lambda xp, x: xp.ceil(x), _ZERO, None, _identity, _IZERO),
    Kind("Sign", lambda xp, x: xp.sign(x), _ZERO, None, lambda xp, x: xp.sign(x), _IZERO),
    Kind("Softplus", _softplus_p, _softplus_p_grad, params=_SOFTPLUS_PARAMS),
    Kind("Elu", _elu, _elu_grad, _elu_grad_out, params=_ELU_PARAMS),
    Kind("Erf", lambda xp, x: xp.erf(x), lambda xp, x: TWO_OVER_SQRT_PI * xp.exp(-(x * x))),
    Kind("HardSwish", lambda xp, x: _xmul(xp, x, _hard6(xp, x)) / 6.0, _hard_swish_grad),
    Kind("HardSigmoid", lambda xp, x: _hard6(xp, x) / 6.0,
         lambda xp, x: xp.where((x > -3.0) & (x < 3.0), 1.0 / 6.0, 0.0)),
    Kind("Mish", lambda xp, x: _xmul(xp, x, xp.tanh(softplus(xp, x))), _mish_grad),
    Kind("Softsign", _softsign, lambda xp, x: 1.0 / ((1.0 + xp.abs(x)) * (1.0 + xp.abs(x)))),
    Kind("LogSigmoid", lambda xp, x: xp.minimum(x, 0.0) - xp.log1p(xp.exp(-xp.abs(x))),
         lambda xp, x: sigmoid(xp, -x)),
    Kind("LeakyRelu", _leaky, _leaky_grad, params=(("alpha", 0.01),)),
    Kind("Hardtanh", _hardtanh, _hardtanh_grad, params=(("min", -1.0), ("max", 1.0))),
)
from .kinds_math import FORMS as _MATH_FORMS  # noqa: E402 (format version 3's kinds)

KINDS += tuple(Kind(name, f, g, None, fi, gi) for name, f, g, fi, gi in _MATH_FORMS)
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}


def params_of(kind: Kind, attrs: Any) -> dict[str, Any]:
    """The kind's parameters from a node's attributes (a mapping; missing ones take their defaults)."""
    return {name: attrs.get(name, default) for name, default in kind.params}


def value(xp: Any, kind: Kind, x: Any, params: Any = None) -> Any:
    """f(x) (with `params`, a mapping of the kind's parameters; None: the defaults): the integer
    form on an integer array."""
    if xp.is_float(x):
        if kind.params:
            return kind.value(xp, x, **params_of(kind, params or {}))  # type: ignore[call-arg]
        return kind.value(xp, x)
    assert kind.int_value is not None
    return kind.int_value(xp, x)


def grad(xp: Any, kind: Kind, x: Any, output: bool = False, params: Any = None) -> Any:
    """f'(x), or with `output` f' written in y = x; nan where a float x is nan."""
    if not xp.is_float(x):
        fn = kind.int_grad_out if output else kind.int_grad
        assert fn is not None
        return fn(xp, x)
    fn = kind.grad_out if output else kind.grad
    assert fn is not None
    if kind.params:
        return xp.where(xp.isnan(x), math.nan, fn(xp, x, **params_of(kind, params or {})))  # type: ignore[call-arg]
    return xp.where(xp.isnan(x), math.nan, fn(xp, x))
