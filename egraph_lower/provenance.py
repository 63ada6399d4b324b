"""Which rule made an e-node: matched after the fact, so saturation carries no bookkeeping.

At an e-class, the chosen e-node `n` came from rule `r` when some other e-node of
the class matches `r`'s left-hand side and `r`'s right-hand side, under that
match, is `n` (its subterms being the classes `n` points to, or classes that
hold the subterm before it was itself rewritten).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .egraph.language import SCALAR
from .egraph.tables import Tables
from .rules.dsl import App, Lit, Rule, Term, Var

Binding = dict[str, Any]


def _params_fit(params: tuple[str, ...], fields: tuple[Any, ...], b: Binding) -> Binding | None:
    out = dict(b)
    for p, f in zip(params, fields):
        if p[:1].islower():
            if p in out and out[p] != f:
                return None
            out[p] = f
        elif p != str(f):
            return None
    return out


class Matcher:
    def __init__(self, t: Tables, rules: Sequence[Rule]) -> None:
        self.t = t
        self.nodes = t.nodes_by_class()
        self.by_head: dict[tuple[str, str], list[Rule]] = {}
        for r in rules:
            assert isinstance(r.lhs, App)
            self.by_head.setdefault(self._head(r.lhs.ctor, r.lhs.params), []).append(r)

    @staticmethod
    def _head(ctor: str, params: Sequence[Any]) -> tuple[str, str]:
        return ctor, str(params[0]) if ctor in ("Act", "ActBwd", "ActBwdOut") else ""

    def match(self, pat: Term, cls: int, b: Binding) -> list[Binding]:
        """Every way `pat` matches e-class `cls`, extending binding `b`."""
        t = self.t
        if isinstance(pat, Var):
            if pat.name in b:
                return [b] if b[pat.name] == cls else []
            return [{**b, pat.name: cls}]
        if isinstance(pat, Lit):
            hit = any(t.ctor[n] == SCALAR and t.fields[n][0] == pat.value for n in self.nodes[cls])
            return [b] if hit else []
        out: list[Binding] = []
        for n in self.nodes[cls]:
            if t.ctor[n] != pat.ctor:
                continue
            b1 = _params_fit(pat.params, t.fields[n], b)
            if b1 is None:
                continue
            partial = [b1]
            for sub, kid in zip(pat.args, t.children[n]):
                partial = [b3 for b2 in partial for b3 in self.match(sub, kid, b2)]
            out += partial
        return out

    def fits(self, pat: Term, cls: int, b: Binding, chosen: int | None) -> bool:
        """Whether `pat` under `b` is class `cls`, preferring its chosen e-node `chosen`."""
        if isinstance(pat, (Var, Lit)):
            return bool(self.match(pat, cls, b))
        t = self.t
        candidates = ([chosen] if chosen is not None else []) + self.nodes[cls]
        for n in candidates:
            if t.ctor[n] != pat.ctor:
                continue
            b1 = _params_fit(pat.params, t.fields[n], b)
            if b1 is not None and all(
                self.fits(sub, kid, b, None) for sub, kid in zip(pat.args, t.children[n])
            ):
                return True
        return False

    def rule_of(self, cls: int, chosen: int) -> str | None:
        """The rule whose right-hand side is the chosen e-node of `cls`, or None (an original e-node)."""
        t = self.t
        for m in self.nodes[cls]:
            if m == chosen or t.ctor[m] in ("Ref",):
                continue
            for r in self.by_head.get(self._head(t.ctor[m], t.fields[m]), ()):
                for b in self.match(r.lhs, cls, {}):
                    if self.fits(r.rhs, cls, b, chosen) and self._root_is(r.rhs, chosen, b):
                        return r.name
        return None

    def _root_is(self, rhs: Term, n: int, b: Binding) -> bool:
        t = self.t
        if isinstance(rhs, Var):
            return False
        if isinstance(rhs, Lit) or t.ctor[n] != rhs.ctor:
            return False
        return _params_fit(rhs.params, t.fields[n], b) is not None and all(
            self.fits(sub, kid, b, None) for sub, kid in zip(rhs.args, t.children[n])
        )
