"""The NumPy reference evaluator: what every node of the format means, value by value.

Everything else in the project (lowering rules, backends, importers) is checked
against this module, so its semantics are spelled out once: here, and for the
parts that live in their own modules (every public name is importable from
here), in those modules' docstrings:

    activations.py  f, f' and the wrt: output forms of the activation kinds
    feeds.py        fed arrays (Input/Param) and Constant values
    npz.py          read_npz, write_npz: arrays on disk
    arrays.py       rounding once, wrapping, Cast conversion, int64 arithmetic

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
    Integer activations: Neg, Abs, Sign, Relu, Round, Floor, Ceil (see
    activations.py); ActivationBackward of those kinds is computed in int64
    too (with wrt: output only for Relu).

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

ActivationBackward, ReluBackward
    ActivationBackward is literally `dy * f'(x)` (or `dy * g(y)` with
    wrt: output), rounded once: dy = inf times f' = 0 is nan. ReluBackward is
    `where(x > 0, dy, 0)`, which is 0 (not nan) where x is nan or <= 0.
    f and f' themselves: see activations.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from .activations import (
    _int_activation,
    _int_activation_grad,
    activation,
    activation_grad,
    activation_grad_from_output,
)
from .arrays import (
    _BOOL,
    _I64,
    Args,
    Attrs,
    _convert,
    _f,
    _finish,
    _i,
    _iadd,
    _idiv,
    _imul,
    _ipow,
    _is_float,
    _isub,
    _one_line,
    _round_float,
    _wrap,
)
from .dtypes import FLOAT_DTYPES, INT_DTYPES, to_numpy
from .errors import GraphError, LowerError
from .feeds import _feed_value, _op_constant, _op_leaf
from .graph import Graph
from .npz import read_npz, write_npz
from .ops import INTEGER_KINDS

__all__ = [
    "evaluate",
    "apply",
    "activation",
    "activation_grad",
    "activation_grad_from_output",
    "read_npz",
    "write_npz",
]


# --------------------------------------------------------------------------- ops


def _need_float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


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
