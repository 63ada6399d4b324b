"""A compact s-expression notation for rewrite rules, compiled to egglog.

A rule is written once, in this notation, and both the e-graph (as an egglog
`rewrite`) and the numerical checker (as two expressions to evaluate) read it.
Every head is declared with its op (`opdefs/`, `Ctor.heads`):

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
    (BatchNormAxis eps axis cshape x gamma beta mean var)   the same with `axis` (format
    (BnBackwardInputAxis ...), (BnBackwardGammaAxis ...),   version 2); the normalization
    (BnBackwardBetaAxis ...)                                heads: opdefs/norm.py
    (sum axes e)                           Reduce Sum over `axes`, keep_dim false
    (Reduce.Op axes keep e)                Reduce Sum, Mean, Max or Min over `axes`,
                                           keep_dim `keep` (0 or 1)
    (Cast to x) (Expand shape x) (Reshape shape x) (Transpose perm x) (MatMul a b)
    (lit eps)                              the primitive `eps` as a broadcast scalar
    1.5, -3, 0                             broadcast scalar literals
    x, dy, ...                             pattern variables (lower case)

The first arguments of a head are its constructor's primitive fields that the
head does not fix (in field order), each a primitive variable (lower case: `eps`,
`axes`, `keep`), an integer (`0`, `1`: an i64 field) or a list literal without
spaces (`[-1]`, `[0,1]`: a String field). A loaded node's axes are normalised
(sorted, each in [0, rank)), so an lhs should bind axes by a variable; a literal
like `[-1]` is for the rhs, where the checker and the back-conversion read it as
NumPy does.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Union

from ..egraph.language import CTORS
from ..opdefs import HEADS, OPDEFS

@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Lit:
    value: float


@dataclass(frozen=True)
class App:
    ctor: str  # egglog constructor (language.CTORS, or Scalar for `lit`)
    params: tuple[str, ...]  # its primitive fields: a kind / op name or list literal (quoted in egglog),
    # an integer, or a variable
    args: tuple["Term", ...]

    @property
    def label(self) -> str:
        """The format op, with the kind for activations, as backends name what they run or lack:
        `Activation.Erf`, `ActivationBackward.Gelu` (both forms), `Binary.Add`, `BatchNormInference`."""
        if self.ctor == "Scalar":
            return "Constant"
        c = CTORS[self.ctor]
        if OPDEFS[c.op].kinded:
            implied = dict(c.implies)
            kind = implied["kind"] if "kind" in implied else self.params[[f.name for f in c.fields].index("kind")]
            return f"{c.op}.{kind}"
        if c.op == "Binary":  # backends list the Binary ops they run (`binary_ops`)
            return f"Binary.{self.params[0]}"
        return c.op


Term = Union[Var, Lit, App]
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_INT_LIST = re.compile(r"\[(-?\d+(,-?\d+)*)?\]$")


@dataclass(frozen=True)
class _ListLit:
    """A list literal (`[-1]`), allowed only as a primitive argument."""

    text: str


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
            if _INT_LIST.match(tok):
                return _ListLit(tok)  # type: ignore[return-value]
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
    if isinstance(result, _ListLit):
        raise SyntaxError(f"a list literal is not an expression: {text!r}")
    if pos != len(tokens):
        raise SyntaxError(f"trailing tokens in {text!r}")
    return result


def _app(head: str, items: list, text: str) -> App:
    if head == "lit":
        if len(items) != 1 or not isinstance(items[0], Var):
            raise SyntaxError(f"(lit ...) takes one primitive variable in {text!r}")
        return App("Scalar", (items[0].name,), ())
    if head not in HEADS:
        raise SyntaxError(f"unknown head {head!r} in {text!r}")
    ctor, spelled = HEADS[head]
    fixed = dict(spelled.fixed)
    free = [f for f in ctor.fields if f.name not in fixed]
    if len(items) != len(free) + ctor.arity:
        raise SyntaxError(f"({head} ...) takes {len(free) + ctor.arity} arguments in {text!r}")
    given = iter(items[:len(free)])
    params = tuple(str(fixed[f.name]) if f.name in fixed else _param(head, next(given), text) for f in ctor.fields)
    args = tuple(items[len(free):])
    for a in args:
        if isinstance(a, _ListLit):
            raise SyntaxError(f"({head} ...): a list literal {a.text} is not an expression in {text!r}")
    return App(ctor.name, params, args)


def _param(head: str, item: object, text: str) -> str:
    if isinstance(item, Var):
        return item.name
    if isinstance(item, _ListLit):
        return item.text
    if isinstance(item, Lit) and item.value == int(item.value):
        return str(int(item.value))
    raise SyntaxError(f"({head} ...) needs a primitive variable or literal first in {text!r}")


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

    # (cached: rules are made once per process, and lowering a graph asks each of these of every rule)
    @functools.cached_property
    def lowers(self) -> str:
        """The label of what this rule rewrites away (`ActivationBackward.Sigmoid`, `Activation.Erf`, ...)."""
        assert isinstance(self.lhs, App)
        return self.lhs.label

    @functools.cached_property
    def needs(self) -> tuple[str, ...]:
        """Labels of the ops the right-hand side builds (what the backend must run, or lower further)."""
        return tuple(sorted({a.label for a in apps(self.rhs)}))

    @functools.cached_property
    def ctors(self) -> frozenset[str]:
        """The constructors both sides name."""
        return frozenset(a.ctor for a in apps(self.lhs) + apps(self.rhs))

    @functools.cached_property
    def rhs_apps(self) -> frozenset[App]:
        """The distinct applications of the right-hand side."""
        return frozenset(apps(self.rhs))

    @functools.cached_property
    def _sides(self) -> tuple[str, str]:
        return to_egglog(self.lhs), to_egglog(self.rhs)

    def egglog(self, ruleset: str) -> str:
        lhs, rhs = self._sides
        return f"(rewrite {lhs}\n         {rhs}\n         :ruleset {ruleset} :name \"{self.name}\")"


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
