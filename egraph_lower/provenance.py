"""Which rule made an e-node: matched after the fact, so saturation carries no bookkeeping.

At an e-class, the chosen e-node `n` came from rule `r` when another e-node `m`
of the class matches `r`'s left-hand side and `r`'s right-hand side, under that
match, has `n`'s head and `n`'s children (a subterm of the right-hand side
matches a child class that holds an e-node of the subterm's head; two levels
are compared, and where several rules fit so, up to `FIT_DEPTH` levels, which tells the catalogue's
rules apart).
Only classes holding more than one e-node can have been rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .egraph.language import REF, SCALAR
from .egraph.tables import Tables
from .extract import distinct_rows
from .rules.dsl import App, Lit, Rule, Term, Var

Binding = dict[str, Any]
_KINDED = ("Act", "ActBwd", "ActBwdOut", "Bin", "Cmp")
# levels of heads below the chosen e-node's children compared where several rules could have made it: the
# pointwise convolution gradients differ from the im2col ones only five levels down (`Reshape xmat x` in
# place of `Im2Col x`); a rule that made the e-node fits at any depth, since the rule added every e-node
# of its right-hand side
FIT_DEPTH = 6


def _head(ctor: str, fields: Sequence[Any]) -> tuple[str, str]:
    return ctor, str(fields[0]) if ctor in _KINDED else ""


def _params_fit(params: tuple[str, ...], fields: tuple[Any, ...], b: Binding) -> Binding | None:
    out = b
    for p, f in zip(params, fields):
        if p[:1].islower():
            if p in out:
                if out[p] != f:
                    return None
            else:
                out = {**out, p: f}
        elif p != str(f):
            return None
    return out


class Matcher:
    def __init__(self, t: Tables, rules: Sequence[Rule], wide: int = 16) -> None:
        """`wide`: classes of more e-nodes than this are keyed one at a time by `shape_ids`."""
        self.t = t
        self.wide = wide
        self.nodes = t.nodes_by_class()
        self._seen: dict[tuple[Any, ...], str | None] = {}
        # (lhs head, rhs head) -> rules
        self.rules: dict[tuple[tuple[str, str], tuple[str, str]], list[Rule]] = {}
        for r in rules:
            if isinstance(r.lhs, App) and isinstance(r.rhs, App):
                key = (_head(r.lhs.ctor, r.lhs.params), _head(r.rhs.ctor, r.rhs.params))
                self.rules.setdefault(key, []).append(r)

    def _match_node(self, pat: App, n: int, b: Binding) -> list[Binding]:
        t = self.t
        if t.ctor[n] != pat.ctor:
            return []
        b1 = _params_fit(pat.params, t.fields[n], b)
        if b1 is None:
            return []
        partial = [b1]
        for sub, kid in zip(pat.args, t.children[n]):
            partial = [b3 for b2 in partial for b3 in self._match_class(sub, kid, b2)]
            if not partial:
                break
        return partial

    def _match_class(self, pat: Term, cls: int, b: Binding) -> list[Binding]:
        """Every way `pat` matches e-class `cls`, extending binding `b`."""
        if isinstance(pat, Var):
            if pat.name in b:
                return [b] if b[pat.name] == cls else []
            return [{**b, pat.name: cls}]
        if isinstance(pat, Lit):
            return [b] if self._has_scalar(cls, pat.value) else []
        out: list[Binding] = []
        for n in self.nodes[cls]:
            out += self._match_node(pat, n, b)
        return out

    def _has_scalar(self, cls: int, value: float) -> bool:
        t = self.t
        return any(t.ctor[n] == SCALAR and t.fields[n][0] == value for n in self.nodes[cls])

    def _shallow(self, pat: Term, cls: int, b: Binding, depth: int) -> bool:
        """Whether class `cls` can be `pat` under `b`, comparing `depth` levels of heads."""
        if isinstance(pat, Var):
            return b.get(pat.name) == cls
        if isinstance(pat, Lit):
            return self._has_scalar(cls, pat.value)
        t = self.t
        for n in self.nodes[cls]:
            if t.ctor[n] == pat.ctor and _params_fit(pat.params, t.fields[n], b) is not None:
                if depth <= 1 or all(self._shallow(s, k, b, depth - 1) for s, k in zip(pat.args, t.children[n])):
                    return True
        return False

    def rules_of(self, classes: np.ndarray, chosen: np.ndarray) -> list[str | None]:
        """`rule_of` for many classes at once: asked once per distinct local shape."""
        if not len(classes):
            return []
        t = self.t
        kids = t.kids_array[chosen]
        has_kid = kids >= 0
        shape = self.shape_ids(np.concatenate([classes, kids[has_kid]]))
        rows, inverse = distinct_rows(t.sig_array[chosen], shape[classes], np.where(has_kid, shape[np.maximum(kids, 0)], -2))
        first = np.full(len(rows), -1, dtype=np.int64)
        inverse = inverse.ravel()
        first[inverse[::-1]] = np.arange(len(inverse))[::-1]  # the first class of each distinct shape
        answers = [self.rule_of(c, n) for c, n in zip(classes[first].tolist(), chosen[first].tolist())]
        return [answers[i] for i in inverse.tolist()]

    def shape_ids(self, classes: np.ndarray) -> np.ndarray:
        """An id per class of `classes` (repeats allowed), equal for two classes exactly when
        their members' signatures are the same multiset; -1 for every class not asked about.
        Classes of up to `wide` e-nodes are sorted and told apart as rows of a matrix; a
        wider class (rare) as a tuple."""
        t = self.t
        members = self.nodes
        starts = members.starts_array
        asked = np.zeros(t.n_classes, dtype=bool)
        asked[classes] = True
        classes = np.flatnonzero(asked)
        sizes = starts[classes + 1] - starts[classes]
        out = np.full(t.n_classes, -1, dtype=np.int64)
        ids: dict[tuple[int, ...], int] = {}
        narrow = (sizes > 0) & (sizes <= self.wide)
        few, size = classes[narrow], sizes[narrow]
        if len(few):
            owner = np.repeat(np.arange(len(few)), size)
            offset = np.arange(len(owner)) - np.repeat(np.cumsum(size) - size, size)  # position within its class
            matrix = np.full((len(few), int(size.max())), -1, dtype=np.int64)
            matrix[owner, offset] = t.sig_array[members.order_array[starts[few][owner] + offset]]
            matrix.sort(axis=1)  # each class's signatures in ascending order (after the -1 padding)
            rows, inverse = distinct_rows(matrix)
            row_ids = [ids.setdefault(tuple(v for v in row if v >= 0), len(ids)) for row in rows.tolist()]
            out[few] = np.array(row_ids, dtype=np.int64)[inverse]
        sig_l = t.sig
        for c in classes[sizes > self.wide].tolist():
            out[c] = ids.setdefault(tuple(sorted(sig_l[n] for n in members[c])), len(ids))
        return out

    def rule_of(self, cls: int, chosen: int) -> str | None:
        """The rule whose right-hand side is the chosen e-node of `cls`, or None.

        Only a rule whose left-hand side's head is some member's head and whose
        right-hand side's head is the chosen e-node's can have made it; where exactly
        one rule fits that (and the heads one level down), no matching is needed."""
        t = self.t
        members = self.nodes[cls]
        if len(members) < 2:
            return None
        # Graphs repeat themselves: the answer is remembered per local shape (the signatures
        # of the class's e-nodes and of its chosen e-node's child classes).
        sig = t.sig
        key = (sig[chosen], tuple(sorted(sig[m] for m in members)),
               *(tuple(sorted(sig[n] for n in self.nodes[k])) for k in t.children[chosen]))
        if key not in self._seen:
            found = self._find(members, chosen)
            self._seen[key] = None if found is None else found[0]
        return self._seen[key]

    def made_from(self, cls: int, chosen: int) -> tuple[str, int] | None:
        """The rule that made the chosen e-node of `cls` and the member its left-hand side matched (where
        a class holds several e-nodes of that head, as two Conv2d of two input-gradient forms), or None."""
        members = self.nodes[cls]
        return None if len(members) < 2 else self._find(members, chosen)

    def _find(self, members: Sequence[int], chosen: int) -> tuple[str, int] | None:
        t = self.t
        want = _head(t.ctor[chosen], t.fields[chosen])
        found: list[tuple[Rule, int]] = []
        for m in members:
            if m != chosen and t.ctor[m] != REF:
                found += [(r, m) for r in self.rules.get((_head(t.ctor[m], t.fields[m]), want), ())]
        if len(found) > 1:  # tell them apart by the heads one level down
            found = [(r, m) for r, m in found if self._heads_fit(r.rhs, chosen)]
        if len(found) == 1:
            return found[0][0].name, found[0][1]
        for r, m in found:
            if self._fits(r, m, chosen):
                return r.name, m
        return None

    def _heads_fit(self, rhs: Term, chosen: int) -> bool:
        assert isinstance(rhs, App)
        t = self.t
        for sub, kid in zip(rhs.args, t.children[chosen]):
            if isinstance(sub, App):
                want = _head(sub.ctor, sub.params)
                if not any(_head(t.ctor[n], t.fields[n]) == want for n in self.nodes[kid]):
                    return False
            elif isinstance(sub, Lit) and not self._has_scalar(kid, sub.value):
                return False
        return True

    def _fits(self, r: Rule, m: int, chosen: int) -> bool:
        """Whether rule `r`, matched at e-node `m`, makes e-node `chosen`."""
        t = self.t
        lhs, rhs = r.lhs, r.rhs
        assert isinstance(rhs, App) and isinstance(lhs, App)
        for b in self._match_node(lhs, m, {}):
            b1 = _params_fit(rhs.params, t.fields[chosen], b)
            if b1 is not None and all(self._shallow(s, k, b1, FIT_DEPTH) for s, k in zip(rhs.args, t.children[chosen])):
                return True
        return False
