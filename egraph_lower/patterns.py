"""A pattern of format ops in the rule notation, as a `Kernel` node carries it: parsed, its variables
told apart, its shape and dtype inferred and its value computed.

A `Kernel` node (opdefs/kernel.py) names its inputs (`inputs`, one variable of the pattern per input
of the node, in order) and the values of the pattern's primitive variables (`params`: axes, eps, ...,
as the e-graph's fields hold them: a list literal as text like "[1]", an integer, a number). What the
node computes is its pattern, op by op, with the reference semantics of each op: `evaluate` computes
it in float64 and rounds once to the node's dtype, as the evaluator does for every fused op.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .rules.dsl import App, Lit, Term, Var, parse

Meta = tuple[tuple[int, ...], "str | None"]


@functools.lru_cache(maxsize=512)
def parsed(text: str) -> Term:
    """The pattern `text` parsed (SyntaxError naming what is wrong); it must be an application."""
    if not isinstance(text, str) or not text.strip():
        raise SyntaxError("a pattern must be a non-empty string")
    try:
        term = parse(text)
    except IndexError:
        raise SyntaxError(f"unbalanced parentheses in {text!r}") from None
    if not isinstance(term, App):
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
    from .egraph.language import CTORS, SCALAR

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
    from .egraph.language import decode

    return decode(app.ctor, tuple(_field(p, params) for p in app.params))


def infer(t: Term, metas: Mapping[str, Meta], params: Mapping[str, Any]) -> Meta:
    """The shape and dtype of the pattern `t` on inputs of `metas` (ValueError naming the op that fails)."""
    from .egraph.language import SCALAR
    from .validate import check_attrs
    from .validate import infer as infer_op

    if isinstance(t, Var):
        return metas[t.name]
    if isinstance(t, Lit) or (isinstance(t, App) and t.ctor == SCALAR):
        return (), None
    assert isinstance(t, App)
    ins = [infer(a, metas, params) for a in t.args]
    op, attrs = decoded(t, params)
    filled = _fill_dtypes(op, ins)
    try:
        check_attrs(op, attrs, filled)
        return infer_op(op, attrs, filled)
    except ValueError as e:
        raise ValueError(f"{op} in the pattern: {e}") from None


def _fill_dtypes(op: str, ins: Sequence[Meta]) -> list[Meta]:
    """A literal's dtype is that of the op using it: the first float operand's (else the first known)."""
    known = [d for _, d in ins if d is not None]
    dt = next((d for d in known if d.startswith(("f", "bf"))), known[0] if known else "f32")
    return [(s, d if d is not None else dt) for s, d in ins]


def evaluate(t: Term, env: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    """The pattern's value, every op in float64 (the reference of each op, rounded to f64 only)."""
    from .rules.check import eval_term

    return eval_term(t, {**params, **env}, "f64")
