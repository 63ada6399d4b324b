"""The NumPy reference evaluator: what every node of the format means, value by value.

Everything else in the project (lowering rules, backends, importers) is checked
against this module, so its semantics are spelled out once: here, and for the
parts that live in their own modules (every public name is importable from
here), in those modules' docstrings:

    opdefs/         each op's evaluation, beside the rest of its declaration
    opdefs/kinds.py f, f' and the wrt: output forms of the activation kinds
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
    opdefs/kinds.py); ActivationBackward of those kinds is computed in int64
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
    f and f' themselves: see opdefs/kinds.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from .arrays import Args, Attrs, _one_line
from .dtypes import FLOAT_DTYPES, INT_DTYPES, to_numpy
from .errors import GraphError, LowerError
from .feeds import _feed_value
from .graph import Graph
from .npz import read_npz, write_npz
from .opdefs import OPDEFS
from .opdefs.activation import activation, activation_grad, activation_grad_from_output

__all__ = [
    "evaluate",
    "apply",
    "activation",
    "activation_grad",
    "activation_grad_from_output",
    "read_npz",
    "write_npz",
]

_OPS = {name: d.evaluate for name, d in OPDEFS.items()}


def _apply(op: str, attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    try:
        fn = _OPS[op]
    except (KeyError, TypeError):
        raise LowerError(f"unknown op {op!r}") from None
    if dtype not in ("bool",) and dtype not in FLOAT_DTYPES and dtype not in INT_DTYPES:
        raise LowerError(f"unknown dtype {dtype!r}")
    if op == "Kernel":
        from . import patterns  # noqa: F401  (installs the Kernel op's pattern machinery)
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
