"""The NumPy reference evaluator: what every node of the format means, value by value.

Everything else in the project (lowering rules, backends, importers) is checked
against this module, so its semantics are spelled out here once.

Floating point
    Every float op is computed in float64 from the exact values of its inputs
    and rounded ONCE to the node's dtype (f16, bf16, f32; f64 is not rounded
    again). "Faithful to each node's dtype" means exactly that: a chain of f16
    nodes rounds after every node, never inside one. bf16 rounding is done
    here (round to nearest even, correct from float64): ml_dtypes' own
    float64 -> bfloat16 cast rounds twice (through float32) and is not used.
    Reductions, MatMul and the batch-norm sums accumulate in float64.
    inf and nan follow IEEE float64 arithmetic; no RuntimeWarning escapes.
    Binary Max/Min propagate nan (np.maximum/np.minimum).

Integers (i32, i64)
    Computed in int64 and wrapped (two's complement) to the node's dtype:
    Add, Sub, Mul, Pow and Neg wrap modulo 2**64 and then to the dtype.
    Div truncates toward zero (like C, not like Python's //); x / 0 is 0.
    Pow with a negative exponent is the truncated real power: 1 for a base of
    1, +-1 for a base of -1, else 0 (0 ** -n included).
    Reduce Mean is the int64 sum truncated-divided by the count.
    Integer activations: Neg, Abs, Sign, Relu, Round, Floor, Ceil (the last
    three are the identity); ActivationBackward of those kinds is computed in
    int64 too (with wrt: output only for Relu).

bool
    Only where meaningful: Compare produces it; Where takes it as cond (any
    other dtype counts nonzero as true); Cast, Expand, Reshape, Transpose,
    Where, Constant, Input and MatMul (NumPy's or-of-ands) carry it; Binary
    Max/Min/Mul are or/and/and; Reduce Max/Min are any/all. Everything else on
    bool is a LowerError.

Cast
    float -> float rounds once; int/bool -> float converts (through float64);
    float -> int truncates toward zero, nan becomes 0 and out-of-range values
    (inf included) saturate to the dtype's limits; int -> int wraps;
    anything -> bool is `!= 0` (nan is true); bool -> number is 0/1.

Reduce
    axes may be negative; empty axes is the identity; keep_dim defaults to
    false. Over zero elements: Sum is 0, float Mean is nan, int Mean is 0,
    Max/Min are the identities (-inf/+inf, the integer dtype's min/max,
    False/True for bool).

Activations and derivatives
    `activation`, `activation_grad` and `activation_grad_from_output` work in
    float64 with numerically stable forms. The spec's conventions are followed
    where the derivative is not defined (see graph-format.md). In addition:
    f'(nan) is nan for every kind (also for the piecewise and constant ones),
    f and f' at +-inf are the mathematical limits where those exist (e.g.
    Silu(-inf) = 0, Gelu'(+inf) = 1), and Log'(x) = 1/x for every x.
    ActivationBackward is literally `dy * f'(x)` (or `dy * g(y)` with
    wrt: output), rounded once: dy = inf times f' = 0 is nan. ReluBackward is
    `where(x > 0, dy, 0)`, which is 0 (not nan) where x is nan or <= 0.

Feeds
    `Input`/`Param` nodes take feeds[attrs.name]; unused feeds are ignored.
    A feed must have exactly the node's shape. It is converted to the node's
    dtype when that loses nothing a user would want: float -> float rounds
    to the node's dtype (once); int/bool -> float converts; int -> int must be
    in range; float -> int must be finite, integral and in range; a bool
    input takes bool feeds or numbers that are all 0 or 1. Anything else
    (complex, strings, objects, out-of-range values) is a LowerError that
    names the node, the input and the problem.

Arrays on disk (.npz)
    `write_npz` stores outputs as out0, out1, ... and writes beside the target
    then renames it in place. NumPy stores bfloat16 arrays as 2-byte void
    ('|V2'); `read_npz` reads every '|V2' array back as bfloat16.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import ml_dtypes
import numpy as np

from .dtypes import FLOAT_DTYPES, INT_DTYPES, to_numpy
from .errors import GraphError, LowerError
from .graph import Graph, write_atomic
from .ops import INTEGER_KINDS, OUTPUT_FORM_KINDS

__all__ = [
    "evaluate",
    "apply",
    "activation",
    "activation_grad",
    "activation_grad_from_output",
    "read_npz",
    "write_npz",
]

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_U64 = np.dtype(np.uint64)
_BOOL = np.dtype(np.bool_)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
_U32 = np.dtype(np.uint32)

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


# --------------------------------------------------------------------------- rounding


def _f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float64 to bfloat16, to nearest even, correctly (one rounding).

    Round to float32 by round-to-odd first (truncate, then set the last bit when
    inexact); float32 has 16 more bits than bfloat16 everywhere in its range, so
    the second rounding, float32 -> bfloat16 (nearest even), is then exact.
    """
    x = np.asarray(x, dtype=_F64)
    f = np.asarray(x.astype(_F32))
    back = f.astype(_F64)
    inexact = back != x  # nan too: it stays nan
    toward_zero = inexact & (np.abs(back) > np.abs(x))
    if toward_zero.any():
        f = np.where(toward_zero, np.nextafter(f, np.float32(0)), f)
    bits = np.asarray(f).view(_U32) | inexact.astype(_U32)
    return bits.view(_F32).astype(_BF16)


def _round_float(x: Any, dtype: str) -> np.ndarray:
    """float64 values rounded once to the float `dtype`."""
    x = np.asarray(x, dtype=_F64)
    if dtype == "f64":
        return x
    if dtype == "bf16":
        return _f64_to_bf16(x)
    return x.astype(to_numpy(dtype))


def _wrap(x: Any, dtype: str) -> np.ndarray:
    """int64 values wrapped to the integer `dtype`."""
    return np.asarray(x, dtype=_I64).astype(to_numpy(dtype))


def _finish(x: Any, dtype: str) -> np.ndarray:
    if dtype in FLOAT_DTYPES:
        return _round_float(x, dtype)
    if dtype in INT_DTYPES:
        return _wrap(x, dtype)
    return np.asarray(x, dtype=_BOOL)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype == _BF16


def _f(a: Any) -> np.ndarray:
    return np.asarray(a).astype(_F64, copy=False)


def _i(a: Any) -> np.ndarray:
    return np.asarray(a).astype(_I64, copy=False)


def _convert(a: np.ndarray, dtype: str) -> np.ndarray:
    """Cast semantics (see the module docstring); a no-op when `a` already has `dtype`."""
    nd = to_numpy(dtype)
    if a.dtype == nd:
        return a
    if dtype in FLOAT_DTYPES:
        return _round_float(_f(a), dtype)
    if dtype == "bool":
        return np.asarray(_f(a) != 0 if _is_float(a) else a != 0)
    # integer target
    if _is_float(a):
        info = np.iinfo(nd)
        t = np.trunc(_f(a))
        lo, hi = float(info.min), float(info.max) + 1.0  # both exact powers of two
        inside = (t >= lo) & (t < hi)
        r = np.where(inside, t, 0.0).astype(_I64)
        r = np.where(t >= hi, info.max, np.where(t < lo, info.min, r))
        return np.asarray(r, dtype=_I64).astype(nd)
    return _wrap(_i(a), dtype)


# --------------------------------------------------------------------------- int64 helpers


def _iadd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.add(a.view(_U64), b.view(_U64))).view(_I64)


def _isub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.subtract(a.view(_U64), b.view(_U64))).view(_I64)


def _imul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.multiply(a.view(_U64), b.view(_U64))).view(_I64)


def _ineg(a: np.ndarray) -> np.ndarray:
    return _isub(np.zeros_like(a), a)


def _idiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Division truncated toward zero; x / 0 = 0."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    bs = np.where(zero, 1, b)
    q = np.asarray(np.floor_divide(a, bs))
    r = _isub(a, _imul(q, bs))
    q = np.where((r != 0) & ((a < 0) != (bs < 0)), q + 1, q)
    return np.asarray(np.where(zero, 0, q), dtype=_I64)


def _ipow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power by squaring, modulo 2**64; negative exponents truncate."""
    a, b = np.broadcast_arrays(a, b)
    neg = b < 0
    e = np.where(neg, 0, b).astype(_U64)
    base = np.array(a, dtype=_I64).view(_U64)
    result = np.ones(a.shape, dtype=_U64)
    one = np.uint64(1)
    while e.any():
        odd = (e & one).astype(bool)
        result = np.where(odd, np.multiply(result, base), result)
        base = np.multiply(base, base)
        e = e >> one
    r = np.asarray(result).view(_I64)
    if neg.any():
        negval = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(neg, negval, r)
    return np.asarray(r, dtype=_I64)


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


# --------------------------------------------------------------------------- ops


Attrs = Mapping[str, Any]
Args = Sequence[np.ndarray]


def _need_float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _op_leaf(op: str) -> Callable[[Attrs, Args, str, Sequence[int] | None], np.ndarray]:
    def run(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        if len(args) != 1:
            raise LowerError(f"{op} {attrs.get('name')!r}: pass the fed array as the only argument")
        return _feed_value(attrs.get("name"), args[0], dtype, shape)

    return run


def _op_constant(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    value = attrs["value"]
    nd = to_numpy(dtype)
    try:
        raw = np.array(value)
    except ValueError:
        raise LowerError("Constant value is a ragged nested list") from None
    if raw.dtype.kind not in "biuf":
        raise LowerError("Constant value must be numbers or true/false of one shape, within int64 range")
    if shape is None:
        shape = raw.shape
    shape = tuple(shape)
    if raw.ndim == 0:
        raw = np.broadcast_to(raw, shape)
    elif raw.shape != shape:
        raise LowerError(f"Constant value has shape {list(raw.shape)}, the node has shape {list(shape)}")
    if dtype in FLOAT_DTYPES:
        return _round_float(raw.astype(_F64), dtype)
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.trunc(raw))):
        raise LowerError(f"Constant value is not integral, the dtype is {dtype}")
    if dtype == "bool":
        if not np.all((raw == 0) | (raw == 1)):
            raise LowerError("Constant value of a bool node must be true/false (or 0/1)")
        return raw.astype(nd)
    info = np.iinfo(nd)
    if raw.dtype.kind == "f":
        ok = np.all((raw >= float(info.min)) & (raw < float(info.max) + 1.0))
    else:
        ok = np.all((raw >= info.min) & (raw <= info.max))
    if not ok:
        raise LowerError(f"Constant value is out of range for {dtype}")
    return raw.astype(nd)


def _op_activation(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    kind = attrs["kind"]
    (x,) = args
    if dtype in FLOAT_DTYPES:
        return _round_float(activation(kind, x), dtype)
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
        d = activation_grad(kind, x) if wrt == "input" else activation_grad_from_output(kind, x)
        return _round_float(_f(dy) * d, dtype)
    if dtype in INT_DTYPES and kind in INTEGER_KINDS and (wrt == "input" or kind == "Relu"):
        # Relu from the output: y > 0 exactly where x > 0
        g = _int_activation_grad(kind, _i(x))
        dy_i, g = np.broadcast_arrays(_i(dy), g)
        return _wrap(_imul(np.ascontiguousarray(dy_i), np.ascontiguousarray(g)), dtype)
    raise LowerError(f"ActivationBackward {kind} (wrt {wrt}) is not defined on {dtype}")


_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.true_divide,
    "Max": np.maximum,
    "Min": np.minimum,
    "Pow": np.power,
}


def _bcast_views(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.broadcast_arrays(a, b)
    return a, b


_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": lambda a, b: _iadd(*_bcast_views(a, b)),
    "Sub": lambda a, b: _isub(*_bcast_views(a, b)),
    "Mul": lambda a, b: _imul(*_bcast_views(a, b)),
    "Div": _idiv,
    "Max": np.maximum,
    "Min": np.minimum,
    "Pow": _ipow,
}

_BOOL_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Max": np.logical_or,
    "Min": np.logical_and,
    "Mul": np.logical_and,
}


def _op_binary(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    op = attrs["op"]
    a, b = args
    table: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]
    conv: Callable[[Any], np.ndarray]
    fin: Callable[[Any, str], np.ndarray]
    if dtype in FLOAT_DTYPES:
        table, conv, fin = _FLOAT_BINARY, _f, _round_float
    elif dtype in INT_DTYPES:
        table, conv, fin = _INT_BINARY, _i, _wrap
    else:
        table, conv, fin = _BOOL_BINARY, lambda v: np.asarray(v) != 0, lambda v, d: np.asarray(v, dtype=_BOOL)
    if op not in table:
        raise LowerError(f"Binary {op} is not defined on {dtype}")
    return fin(table[op](conv(a), conv(b)), dtype)


_COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Eq": np.equal,
    "Ne": np.not_equal,
    "Lt": np.less,
    "Le": np.less_equal,
    "Gt": np.greater,
    "Ge": np.greater_equal,
}


def _op_compare(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    op = attrs["op"]
    if op not in _COMPARE:
        raise LowerError(f"unknown Compare op {op!r}")
    a, b = (np.asarray(v) for v in args)
    conv = _f if (_is_float(a) or _is_float(b)) else _i
    return _finish(_COMPARE[op](conv(a), conv(b)), dtype)


def _op_where(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    cond, a, b = (np.asarray(v) for v in args)
    if cond.dtype != _BOOL:
        cond = _convert(cond, "bool")
    return np.asarray(np.where(cond, _convert(a, dtype), _convert(b, dtype)), dtype=to_numpy(dtype))


def _op_cast(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    to = attrs["to"]
    if to != dtype:
        raise LowerError(f"Cast to {to!r} on a node of dtype {dtype}")
    return _convert(np.asarray(args[0]), dtype)


def _op_expand(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return np.broadcast_to(_convert(np.asarray(args[0]), dtype), tuple(attrs["shape"]))


def _op_reshape(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return np.reshape(_convert(np.asarray(args[0]), dtype), tuple(attrs["shape"]))


def _op_transpose(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return np.transpose(_convert(np.asarray(args[0]), dtype), tuple(attrs["perm"]))


def _norm_axes(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    out = []
    for ax in axes:
        if isinstance(ax, bool) or not isinstance(ax, (int, np.integer)) or not -ndim <= ax < ndim:
            raise LowerError(f"Reduce axis {ax!r} is out of range for rank {ndim}")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise LowerError(f"Reduce axes {list(axes)} repeat an axis")
    return tuple(sorted(out))


def _op_reduce(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    op = attrs["op"]
    keep = bool(attrs.get("keep_dim", False))
    x = np.asarray(args[0])
    axes = _norm_axes(attrs["axes"], x.ndim)
    if op not in ("Sum", "Mean", "Max", "Min"):
        raise LowerError(f"unknown Reduce op {op!r}")
    if not axes:
        return _convert(x, dtype)
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    if dtype in FLOAT_DTYPES:
        v = _f(x)
        if op == "Sum":
            r = np.sum(v, axis=axes, keepdims=keep)
        elif op == "Mean":
            r = np.sum(v, axis=axes, keepdims=keep) / float(count)
        elif op == "Max":
            r = np.max(v, axis=axes, keepdims=keep, initial=-np.inf)
        else:
            r = np.min(v, axis=axes, keepdims=keep, initial=np.inf)
        return _round_float(r, dtype)
    if dtype in INT_DTYPES:
        v = _i(x)
        info = np.iinfo(to_numpy(dtype))
        if op in ("Sum", "Mean"):
            r = np.sum(v, axis=axes, keepdims=keep, dtype=_I64)
            if op == "Mean":
                r = _idiv(np.asarray(r), np.asarray(count, dtype=_I64))
        elif op == "Max":
            r = np.max(v, axis=axes, keepdims=keep, initial=info.min)
        else:
            r = np.min(v, axis=axes, keepdims=keep, initial=info.max)
        return _wrap(r, dtype)
    v = np.asarray(x) != 0
    if op == "Max":
        return np.asarray(np.any(v, axis=axes, keepdims=keep))
    if op == "Min":
        return np.asarray(np.all(v, axis=axes, keepdims=keep))
    raise LowerError(f"Reduce {op} is not defined on bool")


def _op_matmul(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    a, b = (np.asarray(v) for v in args)
    if a.ndim == 0 or b.ndim == 0:
        raise LowerError("MatMul operands must have rank >= 1")
    if dtype in FLOAT_DTYPES:
        return _round_float(np.matmul(_f(a), _f(b)), dtype)
    if dtype in INT_DTYPES:
        return _wrap(np.matmul(_i(a), _i(b)), dtype)
    return np.asarray(np.matmul(a != 0, b != 0), dtype=_BOOL)


def _eps(attrs: Attrs) -> float:
    eps = attrs["eps"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.number)):
        raise LowerError(f"eps must be a number, not {eps!r}")
    return float(eps)


def _op_bn(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInference", dtype)
    x, gamma, beta, mean, var = (_f(v) for v in args)
    return _round_float((x - mean) / np.sqrt(var + _eps(attrs)) * gamma + beta, dtype)


def _op_bn_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardInput", dtype)
    x, gamma, mean, var, dy = (_f(v) for v in args)
    r = dy * gamma / np.sqrt(var + _eps(attrs))
    return _round_float(np.broadcast_to(r, np.broadcast_shapes(x.shape, r.shape)), dtype)


def _all_but_last(ndim: int) -> tuple[int, ...]:
    return tuple(range(max(ndim - 1, 0)))


def _op_bn_gamma(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardGamma", dtype)
    x, mean, var, dy = (_f(v) for v in args)
    t = dy * (x - mean) / np.sqrt(var + _eps(attrs))
    return _round_float(np.sum(t, axis=_all_but_last(t.ndim)), dtype)


def _op_bn_beta(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardBeta", dtype)
    dy = _f(args[0])
    return _round_float(np.sum(dy, axis=_all_but_last(dy.ndim)), dtype)


def _op_relu_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, dy = (np.asarray(v) for v in args)
    pos = (_f(x) if _is_float(x) else _i(x)) > 0
    dy = _convert(dy, dtype)
    return np.asarray(np.where(pos, dy, np.zeros((), dtype=dy.dtype)), dtype=to_numpy(dtype))


_OPS: dict[str, Callable[[Attrs, Args, str, Sequence[int] | None], np.ndarray]] = {
    "Input": _op_leaf("Input"),
    "Param": _op_leaf("Param"),
    "Constant": _op_constant,
    "Activation": _op_activation,
    "Binary": _op_binary,
    "Compare": _op_compare,
    "Where": _op_where,
    "Cast": _op_cast,
    "Expand": _op_expand,
    "Reshape": _op_reshape,
    "Transpose": _op_transpose,
    "Reduce": _op_reduce,
    "MatMul": _op_matmul,
    "BatchNormInference": _op_bn,
    "ReluBackward": _op_relu_backward,
    "ActivationBackward": _op_activation_backward,
    "BatchNormInferenceBackwardInput": _op_bn_input,
    "BatchNormInferenceBackwardGamma": _op_bn_gamma,
    "BatchNormInferenceBackwardBeta": _op_bn_beta,
}


def _apply(op: str, attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    try:
        fn = _OPS[op]
    except (KeyError, TypeError):
        raise LowerError(f"unknown op {op!r}") from None
    if dtype not in ("bool",) and dtype not in FLOAT_DTYPES and dtype not in INT_DTYPES:
        raise LowerError(f"unknown dtype {dtype!r}")
    return np.asarray(fn(attrs, args, dtype, shape))


def apply(
    op: str,
    attrs: Mapping[str, Any],
    args: Sequence[np.ndarray],
    dtype: str,
    shape: Sequence[int] | None = None,
) -> np.ndarray:
    """One node of the format on arrays; returns an array of `dtype`.

    `args` are arrays of their dtypes (0-d arrays broadcast like any operand).
    `shape` is used by Constant (a scalar value fills it) and by Input/Param,
    whose only argument is the fed array (converted and checked as a feed).
    Bad attributes or operands raise LowerError. The result may be a read-only
    view of an argument (Expand, Reshape, Transpose): copy it before writing.
    """
    args = [np.asarray(a) for a in args]
    attrs = attrs or {}
    with np.errstate(all="ignore"):
        try:
            return _apply(op, attrs, args, dtype, shape)
        except LowerError:
            raise
        except KeyError as e:
            raise LowerError(f"{op}: missing attribute {e.args[0]!r}") from None
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            raise LowerError(f"{op}: {_one_line(e)}") from None


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


# --------------------------------------------------------------------------- feeds


def _feed_value(name: Any, value: Any, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    """A fed array converted to `dtype` and checked against `shape` (messages name the input)."""
    what = f"feed {name!r}"
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise LowerError(f"{what} is not an array: {_one_line(e)}") from None
    if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and arr.dtype.fields is None and arr.dtype != _BF16:
        arr = arr.view(_BF16)
    if shape is not None and arr.shape != tuple(shape):
        raise LowerError(f"{what} has shape {list(arr.shape)}, expected {list(shape)}")
    nd = to_numpy(dtype)
    if arr.dtype == nd:
        return arr
    src_float = _is_float(arr)
    if not (src_float or arr.dtype.kind in "biu"):
        raise LowerError(f"{what} has dtype {arr.dtype}, expected {dtype}")
    if dtype in FLOAT_DTYPES:
        return _round_float(_f(arr), dtype)
    if dtype == "bool":
        v = _f(arr) if src_float else arr
        if not np.all((v == 0) | (v == 1)):
            raise LowerError(f"{what} has values other than 0 and 1, expected {dtype}")
        return np.asarray(v != 0)
    info = np.iinfo(nd)
    if src_float:
        v = _f(arr)
        if not np.all(np.isfinite(v) & (v == np.trunc(v))):
            raise LowerError(f"{what} of dtype {arr.dtype} has non-integral values, expected {dtype}")
        if not np.all((v >= float(info.min)) & (v < float(info.max) + 1.0)):
            raise LowerError(f"{what} has values out of range for {dtype}")
        return v.astype(nd)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise LowerError(f"{what} has values out of range for {dtype}")
    return arr.astype(nd)


# --------------------------------------------------------------------------- graphs


def evaluate(graph: Graph, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Run `graph` on `feeds` (by Input/Param name); the outputs in the order of `graph.outputs`.

    Each output is a fresh array of its node's declared shape and dtype.
    Intermediate arrays are dropped after their last user. Errors name the node.
    """
    nodes = graph.nodes
    keep = set(graph.outputs)
    last_use: dict[int, int] = {}
    for i, node in enumerate(nodes):
        for j in node.inputs:
            last_use[j] = i
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for i, node in enumerate(nodes):
            op = node.op
            if op == "Input" or op == "Param":
                name = (node.attrs or {}).get("name")
                if name not in feeds:
                    raise LowerError(f"node {node.id} ({op} {name!r}): no value fed for {name!r}")
                try:
                    out = _feed_value(name, feeds[cast(str, name)], node.dtype, node.shape)  # a key of feeds: a str
                except LowerError as e:
                    raise LowerError(f"node {node.id} ({op} {name!r}): {e}") from None
            else:
                try:
                    args = [values[j] for j in node.inputs]
                except KeyError as e:
                    raise GraphError(f"input {e.args[0]} is not a node listed before this one", node.id, op) from None
                try:
                    out = _apply(op, node.attrs or {}, args, node.dtype, node.shape)
                except LowerError as e:
                    raise GraphError(str(e), node.id, op) from None
                except KeyError as e:
                    raise GraphError(f"missing attribute {e.args[0]!r}", node.id, op) from None
                except (ValueError, TypeError, IndexError, AttributeError) as e:
                    raise GraphError(_one_line(e), node.id, op) from None
            if out.shape != tuple(node.shape):
                raise GraphError(
                    f"computes shape {list(out.shape)} but declares {list(node.shape)}", node.id, op
                )
            if node.id in last_use or node.id in keep:  # a node nobody reads is not kept
                values[node.id] = out
            for j in node.inputs:
                if last_use.get(j) == i and j not in keep:
                    values.pop(j, None)
    result = []
    for o in graph.outputs:
        if o not in values:
            raise GraphError(f"output {o} is not a node of the graph")
        node = graph.node(o)
        result.append(np.array(values[o], dtype=to_numpy(node.dtype), copy=True))
    return result


# --------------------------------------------------------------------------- npz files


def read_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by name (2-byte void arrays come back as bfloat16).

    Missing, unreadable or corrupt files raise a one-line LowerError.
    """
    where = f"cannot read arrays {os.fspath(path)!r}"
    if os.path.isdir(path):
        raise LowerError(f"{where}: it is a directory")
    try:
        # open the file here: np.load leaks its own handle when the archive is corrupt
        with open(path, "rb") as fh:
            z = np.load(fh, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise LowerError(f"{where}: not an .npz archive (a single .npy array?)")
            with z:
                arrays = {k: z[k] for k in z.files}
    except LowerError:
        raise
    except FileNotFoundError:
        raise LowerError(f"{where}: no such file") from None
    except PermissionError:
        raise LowerError(f"{where}: permission denied") from None
    except Exception as e:  # BadZipFile, zlib.error, ValueError (pickled data), EOFError, ...
        raise LowerError(f"{where}: not a valid .npz file ({_one_line(e)})") from None
    for k, a in arrays.items():
        if a.dtype.kind == "V" and a.dtype.itemsize == 2 and a.dtype.fields is None:
            arrays[k] = a.view(_BF16)
    return arrays


def write_npz(path: str | os.PathLike[str], arrays: Sequence[np.ndarray]) -> None:
    """Write `arrays` as out0, out1, ... to an .npz file, beside the target first, then renamed."""
    buf = io.BytesIO()
    # Values typed Any: to mypy a **dict of arrays could also fill savez's `allow_pickle: bool`
    # (numpy >= 2.1); the keys are out0, out1, ..., never that name.
    named: dict[str, Any] = {f"out{i}": np.asarray(a) for i, a in enumerate(arrays)}
    np.savez(buf, **named)
    try:
        write_atomic(path, buf.getvalue())
    except OSError as e:
        raise LowerError(f"cannot write arrays {os.fspath(path)!r}: {e.strerror or _one_line(e)}") from None
