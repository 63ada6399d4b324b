"""A compact s-expression notation for rewrite rules, compiled to egglog.

A rule is written once, in this notation, and both the e-graph (as an egglog
`rewrite`) and the numerical checker (as two expressions to evaluate) read it.

    (+ a b) (- a b) (* a b) (/ a b) (max a b) (min a b) (pow a b)   Binary
    (== a b) (!= a b) (< a b) (<= a b) (> a b) (>= a b)              Compare
    (where c a b)                                                    Where
    (Sigmoid x), (Erf x), ... any activation kind                    Activation
    (ReluBackward x dy)                                              ReluBackward
    (Backward.Kind x dy)                   ActivationBackward{Kind}, wrt input
    (BackwardOut.Kind y dy)                ActivationBackward{Kind}, wrt output
    (BatchNorm eps x gamma beta mean var)  BatchNormInference
    (BnBackwardInput eps x gamma mean var dy)
    (BnBackwardGamma eps axes x mean var dy)
    (BnBackwardBeta axes dy)
    (sum axes e)                           Reduce Sum over `axes`, keep_dim false
    (lit eps)                              the primitive `eps` as a broadcast scalar
    1.5, -3, 0                             broadcast scalar literals
    x, dy, ...                             pattern variables (lower case)

`eps` and `axes` are primitive variables: they only appear as the first
arguments of the batch-norm forms, `sum` and `lit`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from ..egraph.language import CTORS
from ..ops import ACTIVATION_KINDS

BINARY = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div", "max": "Max", "min": "Min", "pow": "Pow"}
COMPARE = {"==": "Eq", "!=": "Ne", "<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge"}
# head -> (constructor, number of primitive parameters, number of children)
SPECIAL = {
    "where": ("Where", 0, 3),
    "ReluBackward": ("ReluBwd", 0, 2),
    "Backward": ("ActBwd", 1, 2),
    "BackwardOut": ("ActBwdOut", 1, 2),
    "BatchNorm": ("BN", 1, 5),
    "BnBackwardInput": ("BnBwdInput", 1, 5),
    "BnBackwardGamma": ("BnBwdGamma", 2, 4),
    "BnBackwardBeta": ("BnBwdBeta", 1, 1),
    "sum": ("Reduce", 1, 1),
    "lit": ("Scalar", 1, 0),
}


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Lit:
    value: float


@dataclass(frozen=True)
class App:
    ctor: str  # egglog constructor (language.CTORS, or Scalar for `lit`)
    params: tuple[str, ...]  # primitive parameters: a kind / op name (quoted in egglog) or a variable
    args: tuple["Term", ...]

    @property
    def label(self) -> str:
        """The format op, with the kind for activations, as backends name what they run or lack:
        `Activation.Erf`, `ActivationBackward.Gelu` (both forms), `Binary`, `BatchNormInference`."""
        if self.ctor == "Scalar":
            return "Constant"
        op = CTORS[self.ctor].op
        if self.ctor in ("Act", "ActBwd", "ActBwdOut"):
            return f"{op}.{self.params[0]}"
        return op


Term = Union[Var, Lit, App]
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def parse(text: str, lets: dict[str, Term] | None = None) -> Term:
    tokens = _tokens(text)
    pos = 0

    def term() -> Term:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            if tok == ")":
                raise SyntaxError(f"unexpected ')' in {text!r}")
            if _NUMBER.match(tok):
                return Lit(float(tok))
            if lets and tok in lets:
                return lets[tok]
            if not tok[0].islower():
                raise SyntaxError(f"{tok!r} is not a variable (lower case) or number in {text!r}")
            return Var(tok)
        head = tokens[pos]
        pos += 1
        items: list[str | Term] = []
        while tokens[pos] != ")":
            items.append(term())
        pos += 1
        return _app(head, items, text)

    result = term()
    if pos != len(tokens):
        raise SyntaxError(f"trailing tokens in {text!r}")
    return result


def _app(head: str, items: list, text: str) -> App:
    def args(n: int, skip: int = 0) -> tuple[Term, ...]:
        rest = items[skip:]
        if len(rest) != n:
            raise SyntaxError(f"({head} ...) takes {skip + n} arguments in {text!r}")
        return tuple(rest)

    def param(item: object) -> str:
        if isinstance(item, Var):
            return item.name
        raise SyntaxError(f"({head} ...) needs a primitive variable first in {text!r}")

    if head in BINARY:
        return App("Bin", (BINARY[head],), args(2))
    if head in COMPARE:
        return App("Cmp", (COMPARE[head],), args(2))
    if head in ACTIVATION_KINDS:
        return App("Act", (head,), args(1))
    if head in ("Backward", "BackwardOut"):
        raise SyntaxError(f"write ({head}.Kind ...) with the activation kind in the head, in {text!r}")
    if head.startswith(("Backward.", "BackwardOut.")):
        base, kind = head.split(".", 1)
        if kind not in ACTIVATION_KINDS:
            raise SyntaxError(f"unknown activation kind {kind!r} in {text!r}")
        return App(SPECIAL[base][0], (kind,), args(2))
    if head in SPECIAL:
        ctor, n_params, n_args = SPECIAL[head]
        params = tuple(param(i) for i in items[:n_params])
        if head == "sum":
            return App("Reduce", ("Sum",) + params + ("0",), args(n_args, n_params))
        return App(ctor, params, args(n_args, n_params))
    raise SyntaxError(f"unknown head {head!r} in {text!r}")


def variables(t: Term) -> set[str]:
    if isinstance(t, Var):
        return {t.name}
    if isinstance(t, App):
        out = {p for p in t.params if p[:1].islower()}
        for a in t.args:
            out |= variables(a)
        return out
    return set()


def apps(t: Term) -> list[App]:
    """Every application in `t`, outermost first."""
    if not isinstance(t, App):
        return []
    out = [t]
    for a in t.args:
        out += apps(a)
    return out


def _fmt_float(v: float) -> str:
    s = repr(float(v))
    return s if ("." in s or "e" in s or "inf" in s or "nan" in s) else s + ".0"


def to_egglog(t: Term) -> str:
    if isinstance(t, Var):
        return t.name
    if isinstance(t, Lit):
        return f"(Scalar {_fmt_float(t.value)})"
    parts = [t.ctor]
    for p in t.params:
        if p[:1].islower():
            parts.append(p)  # a primitive variable
        elif re.fullmatch(r"-?\d+", p):
            parts.append(p)  # an i64 field
        else:
            parts.append(f'"{p}"')
    parts += [to_egglog(a) for a in t.args]
    return "(" + " ".join(parts) + ")"


@dataclass(frozen=True)
class Rule:
    """One rewrite `lhs => rhs`, with a name used in reports and a one-line identity."""

    name: str
    identity: str
    lhs: Term
    rhs: Term
    group: str
    source: tuple[str, str] = field(default=("", ""), compare=False)

    @property
    def lowers(self) -> str:
        """The label of what this rule rewrites away (`ActivationBackward.Sigmoid`, `Activation.Erf`, ...)."""
        assert isinstance(self.lhs, App)
        return self.lhs.label

    @property
    def needs(self) -> tuple[str, ...]:
        """Labels of the ops the right-hand side builds (what the backend must run, or lower further)."""
        return tuple(sorted({a.label for a in apps(self.rhs)}))

    def egglog(self, ruleset: str) -> str:
        return (
            f"(rewrite {to_egglog(self.lhs)}\n         {to_egglog(self.rhs)}\n"
            f"         :ruleset {ruleset} :name \"{self.name}\")"
        )


def rule(name: str, identity: str, lhs: str, rhs: str, *, group: str, lets: dict[str, str] | None = None) -> Rule:
    """Parse and check one rule: every variable of the rhs is bound by the lhs."""
    parsed_lets: dict[str, Term] = {}
    for key, text in (lets or {}).items():
        parsed_lets[key] = parse(text, parsed_lets)
    left = parse(lhs)
    right = parse(rhs, parsed_lets)
    if not isinstance(left, App):
        raise SyntaxError(f"rule {name}: the left-hand side must be an application")
    if isinstance(right, Lit):
        raise SyntaxError(f"rule {name}: the right-hand side cannot be a bare literal (it has no dtype)")
    unbound = variables(right) - variables(left)
    if unbound:
        raise SyntaxError(f"rule {name}: {sorted(unbound)} not bound by the left-hand side")
    return Rule(name, identity, left, right, group, (lhs, rhs))
