"""`Kernel` (format version 3): one output of a backend's fused kernel, carrying its own meaning.

    Kernel{name, inputs, pattern, output, params}(i0, i1, ...)

A backend file may declare fused kernels (`backends/kernels.py`): a name, the pattern of format ops
each output computes (in the rule notation, over named inputs), and a cost. Where extraction chooses
one, each output it uses becomes a `Kernel` node, so any reader can evaluate it without knowing the
backend: `pattern` is that output's expression in the rule notation, `inputs` names the pattern's
tensor variables (one per input of the node, in order: 1 to MAX_KERNEL_INPUTS), `params` binds its
primitive variables (axes as "[1]", integers, numbers, as the rule notation writes them), `output` is
which output of the kernel this is (0 for the first). Its value is the pattern's, each op computed
in float64 and the result rounded once to the node's dtype (`patterns.py`); its shape and dtype are
the pattern's. The torch exporter runs the pattern op by op, or a torch function registered for the
kernel's name (`egraph_lower.torch.register_kernel`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs
from ..dtypes import FLOAT_DTYPES, round_float
from ..errors import LowerError
from .base import Attr, Meta, OpDef
from .meta import attr_check, is_int, show

MAX_KERNEL_INPUTS = 7  # the widest e-node the e-graph's tables hold (`egraph.tables.MAX_ARITY`)
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,99}$")
VARIABLE = re.compile(r"[a-z][A-Za-z0-9_]{0,39}$")


def _is_param(v: Any) -> bool:
    return isinstance(v, (str, float)) or is_int(v)


_ATTRS = (
    Attr("name", attr_check("name", lambda v: isinstance(v, str) and NAME.match(v) is not None,
                            "a kernel name (a letter, then letters, digits, _ . -; at most 100)")),
    Attr("inputs", attr_check("inputs", lambda v: isinstance(v, list) and 1 <= len(v) <= MAX_KERNEL_INPUTS
                              and all(isinstance(s, str) and VARIABLE.match(s) for s in v) and len(set(v)) == len(v),
                              f"a list of 1 to {MAX_KERNEL_INPUTS} distinct lower-case variable names")),
    Attr("pattern", attr_check("pattern", lambda v: isinstance(v, str) and 0 < len(v) <= 4000,
                               "a pattern in the rule notation (a string of at most 4000 characters)")),
    Attr("output", attr_check("output", lambda v: is_int(v) and 0 <= v < 64, "an integer from 0 to 63"),
         required=False),
    Attr("params", attr_check("params", lambda v: isinstance(v, dict) and len(v) <= 64
                              and all(isinstance(k, str) and VARIABLE.match(k) and _is_param(x) for k, x in v.items()),
                              "an object of primitive values (strings, integers, numbers) by variable name"),
         required=False),
)


def term_of(attrs: Mapping[str, Any]) -> Any:
    """The node's pattern parsed and checked against its inputs and params (ValueError in one line)."""
    from ..patterns import parsed, primitive_sorts, tensor_variables

    try:
        term = parsed(attrs["pattern"])
    except SyntaxError as e:
        raise ValueError(f"pattern: {e}") from None
    inputs, params = attrs["inputs"], attrs.get("params", {})
    missing = [v for v in tensor_variables(term) if v not in inputs]
    if missing:
        raise ValueError(f"pattern variable {show(missing[0])} is not one of the inputs {show(inputs)}")
    unbound = [v for v in primitive_sorts(term) if v not in params]
    if unbound:
        raise ValueError(f"pattern variable {show(unbound[0])} has no value in params")
    return term


def _check(attrs: Mapping[str, Any]) -> None:
    term_of(attrs)


def _infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    from ..patterns import infer

    names = attrs["inputs"]
    if len(ins) != len(names):
        raise ValueError(f"takes {len(names)} inputs ({', '.join(names)}), one per name in 'inputs', got {len(ins)}")
    return infer(term_of(attrs), dict(zip(names, ins)), attrs.get("params", {}))


def _evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    from ..patterns import evaluate

    try:
        term = term_of(attrs)
    except ValueError as e:
        raise LowerError(f"Kernel: {e}") from None
    value = np.asarray(evaluate(term, dict(zip(attrs["inputs"], args)), attrs.get("params", {})))
    if dtype in FLOAT_DTYPES:
        return round_float(value.astype(np.float64), dtype)
    from ..evaluate import apply

    return apply("Cast", {"to": dtype}, [value], dtype)


KERNEL = OpDef("Kernel", ("inputs",), _ATTRS, _infer, _evaluate, (), domain=None, torch="kernel", check=_check,
               max_inputs=MAX_KERNEL_INPUTS,
               sample=({"name": "axpy", "inputs": ["a", "x", "y"], "pattern": "(+ (* a x) y)"},
                       (((1,), "f32"), ((2, 3), "f32"), ((2, 3), "f32"))))
OPS: tuple[OpDef, ...] = (KERNEL,)
