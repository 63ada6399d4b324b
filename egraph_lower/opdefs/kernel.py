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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs
from .base import Attr, Meta, OpDef
from .meta import attr_check, is_int

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


class _Machinery:
    """The pattern's parse, inference and evaluation, which stand above the declarations (they need the
    rule notation and every op's): `egraph_lower.patterns` installs them when imported, and the validator
    and the evaluator import it before they ask a `Kernel` node anything."""

    check: Callable[[Mapping[str, Any]], None] | None = None
    infer: Callable[[Mapping[str, Any], Sequence[Meta]], Meta] | None = None
    evaluate: Callable[[Attrs, Args, str], np.ndarray] | None = None


MACHINERY = _Machinery()


def _need(what: str) -> Any:
    fn = getattr(MACHINERY, what)
    if fn is None:  # (a bug: whoever asks a Kernel node imports egraph_lower.patterns first)
        raise RuntimeError("a Kernel node needs egraph_lower.patterns imported")
    return fn


def _check(attrs: Mapping[str, Any]) -> None:
    _need("check")(attrs)


def _infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _need("infer")(attrs, ins)  # type: ignore[no-any-return]


def _evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _need("evaluate")(attrs, args, dtype)  # type: ignore[no-any-return]


KERNEL = OpDef("Kernel", ("inputs",), _ATTRS, _infer, _evaluate, (), domain=None, torch="kernel", check=_check,
               max_inputs=MAX_KERNEL_INPUTS,
               sample=({"name": "axpy", "inputs": ["a", "x", "y"], "pattern": "(+ (* a x) y)"},
                       (((1,), "f32"), ((2, 3), "f32"), ((2, 3), "f32"))))
OPS: tuple[OpDef, ...] = (KERNEL,)
