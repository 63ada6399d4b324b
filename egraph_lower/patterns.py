"""A pattern of format ops in the rule notation, as a `Kernel` node carries it: parsed, checked against
the node's inputs and params, its shape and dtype inferred and its value computed.

A `Kernel` node (opdefs/kernel.py) names its inputs (`inputs`, one variable of the pattern per input
of the node, in order) and the values of the pattern's primitive variables (`params`: axes, eps, ...,
as the e-graph's fields hold them: a list literal as text like "[1]", an integer, a number). What the
node computes is its pattern, op by op, with each op's declared meaning: computed in float64 and
rounded once to the node's dtype, as the evaluator computes every fused op. Importing this module
installs these functions as the `Kernel` op's (`opdefs.kernel.MACHINERY`): they need the rule notation,
which stands above the declarations, and every op's own declaration.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .arrays import Args, Attrs
from .dtypes import FLOAT_DTYPES, round_float
from .egraph.language import CTORS, SCALAR, decode
from .errors import LowerError
from .opdefs import OPDEFS
from .opdefs.binary_math import LOGICAL_OPS
from .opdefs.kernel import MACHINERY
from .opdefs.meta import show
from .rules.dsl import App, Lit, Term, Var, parse

Meta = tuple[tuple[int, ...], "str | None"]


@functools.lru_cache(maxsize=512)
def parsed(text: str) -> App:
    """The pattern `text` parsed (SyntaxError naming what is wrong); it must apply an op of the format."""
    if not isinstance(text, str) or not text.strip():
        raise SyntaxError("a pattern must be a non-empty string")
    try:
        term = parse(text)
    except IndexError:
        raise SyntaxError(f"unbalanced parentheses in {text!r}") from None
    if not isinstance(term, App) or term.ctor == SCALAR:
        raise SyntaxError(f"a pattern must apply an op, not be a variable or number: {text!r}")
    return term


def tensor_variables(t: Term) -> list[str]:
    """The variables standing for tensors (children of an op), in order of first appearance."""
    out: dict[str, None] = {}

    def walk(u: Term) -> None:
        if isinstance(u, Var):
            out.setdefault(u.name)
        elif isinstance(u, App):
            for a in u.args:
                walk(a)
    walk(t)
    return list(out)


def primitive_sorts(t: Term) -> dict[str, str]:
    """The primitive variables (fields of an op: axes, eps, ...) and the egglog sort of each: the sort
    of the field it stands in (`lit v`: f64). ValueError when one variable stands in two sorts."""
    out: dict[str, str] = {}

    def note(name: str, sort: str) -> None:
        if out.setdefault(name, sort) != sort:
            raise ValueError(f"variable {name!r} stands for a {out[name]} and a {sort}")

    def walk(u: Term) -> None:
        if not isinstance(u, App):
            return
        if u.ctor == SCALAR:
            note(u.params[0], "f64")
            return
        for f, p in zip(CTORS[u.ctor].fields, u.params):
            if p[:1].islower():
                note(p, f.sort)
        for a in u.args:
            walk(a)
    walk(t)
    return out


def _field(param: str, params: Mapping[str, Any]) -> Any:
    if param[:1].islower():
        return params[param]
    if param.lstrip("-").isdigit():
        return int(param)
    return param


def decoded(app: App, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The format op and attributes of one application, its primitive variables bound by `params`."""
    return decode(app.ctor, tuple(_field(p, params) for p in app.params))


def term_of(attrs: Mapping[str, Any]) -> App:
    """A `Kernel` node's pattern parsed and checked against its inputs and params (ValueError in one line)."""
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


def infer(t: Term, metas: Mapping[str, Meta], params: Mapping[str, Any]) -> Meta:
    """The shape and dtype of the pattern `t` on inputs of `metas` (ValueError naming the op that fails)."""
    if isinstance(t, Var):
        return metas[t.name]
    if isinstance(t, Lit) or (isinstance(t, App) and t.ctor == SCALAR):
        return (), None
    assert isinstance(t, App)
    ins = [infer(a, metas, params) for a in t.args]
    op, attrs = decoded(t, params)
    filled = _fill_dtypes(ins)
    d = OPDEFS[op]
    try:
        for a in d.attrs:  # each attribute, then together, then the fit to the inputs (as validate does)
            if a.name in attrs:
                a.check(attrs[a.name])
        if d.check is not None:
            d.check(attrs)
        assert d.infer is not None
        return d.infer(attrs, filled)
    except ValueError as e:
        raise ValueError(f"{op} in the pattern: {e}") from None


def _fill_dtypes(ins: Sequence[Meta]) -> list[Meta]:
    """A literal's dtype is that of the op using it: the first float operand's (else the first known)."""
    known = [d for _, d in ins if d is not None]
    dt = next((d for d in known if d in FLOAT_DTYPES), known[0] if known else "f32")
    return [(s, d if d is not None else dt) for s, d in ins]


def value(t: Term, env: Mapping[str, Any], params: Mapping[str, Any]) -> np.ndarray:
    """The pattern's value, every op in float64 (each op's declared evaluation, rounded to f64 only)."""
    if isinstance(t, Var):
        return np.asarray(env[t.name])
    constant = OPDEFS["Constant"].evaluate
    if isinstance(t, Lit):
        return constant({"value": t.value}, [], "f64", [])
    assert isinstance(t, App)
    if t.ctor == SCALAR:
        return constant({"value": float(params[t.params[0]])}, [], "f64", [])
    op, attrs = decoded(t, params)
    args = [value(a, env, params) for a in t.args]
    logical = op == "Binary" and attrs["op"] in LOGICAL_OPS  # of bool operands (Compare results)
    return np.asarray(OPDEFS[op].evaluate(attrs, args, "bool" if op == "Compare" or logical else "f64", None))


def _check(attrs: Mapping[str, Any]) -> None:
    term_of(attrs)


def _infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    names = attrs["inputs"]
    if len(ins) != len(names):
        raise ValueError(f"takes {len(names)} inputs ({', '.join(names)}), one per name in 'inputs', got {len(ins)}")
    return infer(term_of(attrs), dict(zip(names, ins)), attrs.get("params", {}))


def _evaluate(attrs: Attrs, args: Args, dtype: str) -> np.ndarray:
    try:
        term = term_of(attrs)
    except ValueError as e:
        raise LowerError(f"Kernel: {e}") from None
    with np.errstate(all="ignore"):
        v = value(term, dict(zip(attrs["inputs"], (np.asarray(a) for a in args))), attrs.get("params", {}))
    if dtype in FLOAT_DTYPES:
        return round_float(v.astype(np.float64), dtype)
    return np.asarray(OPDEFS["Cast"].evaluate({"to": dtype}, [v], dtype, None))


MACHINERY.check, MACHINERY.infer, MACHINERY.evaluate = _check, _infer, _evaluate
