"""The alternatives of an original node for one backend: what extraction could have chosen, and why it did not.

An original node's alternatives are the e-nodes of its e-class `c` (every form
the rules found for its value). Let `E` be the backend's extraction (the e-node
chosen for each class the outputs reach, its DAG cost `E.cost`). For the
backend, each alternative `n` is described by:

- `cost`: what `n` costs on top of the node's inputs. `kernel(n)` plus the
  kernel of every class `n` needs (transitively, each class once) that the rest
  of the graph does not need, minus the same sum for the node's own inputs.
  "The rest of the graph" is `E` without what only `c`'s chosen e-node needs; a
  class that `n` needs takes its e-node in `E` if it has one, else the cheapest
  legal one of extraction's tree pass (`rank`);
  `kernel` is the backend's cost of one e-node (`extract.Costs`). So values the
  rest of the graph computes anyway (the forward pass's activations, the
  inputs) cost nothing, the upstream gradient a backward op consumes is not
  charged to it, the node left as it is costs its kernel, and a form that does
  without an input only this node used costs less by what that input cost
  (possibly below zero). Every form of the class is offset by the same amount,
  so `E.cost - cost(chosen) + cost(n)` is exactly the DAG cost of the graph with
  `c` switched to `n`: alternatives are ranked as the DAG-aware extraction
  ranks them. None when not legal.
- `legal`: the backend runs `n` and every e-node it adds, and `n` does not need
  its own value (an e-graph cycle through `c`).
- `chosen`: `n` is the e-node `E` holds for `c`. Extraction keeps a form only
  when no single switch lowers the DAG cost (the default extractor's local
  search, run to the end; the exact one is optimal), so the chosen form is the
  cheapest legal one up to rounding. A class `E` does not reach (a value the
  lowered graph no longer needs) has nothing chosen.
- `ops` and `rules`: `n` and the e-nodes it adds on top of the node's inputs
  (the part of the graph `cost` charges to it). `ops` counts their format ops
  (leaves and broadcast scalar literals are not kernels and are not counted);
  `rules` names the rules that produced them (matched after the fact by
  `provenance.Matcher`), outermost first. The node left as it is has no rules
  of its own; on a backend without the op it is an illegal alternative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..egraph.language import LEAF, REF, SCALAR
from ..egraph.tables import Members, Tables
from ..convert import is_own
from ..extract import Costs, Decoded, Extraction, Selection, tree_pass
from ..extract.walks import positions, post_order
from ..graph import Graph, Node
from ..provenance import Matcher

EXPR_LIMIT = 160  # characters of an alternative's expression, for people


@dataclass
class Ranking:
    """The tree pass over every class: kernel cost per e-node, least tree cost and its e-node per class."""

    node_cost: list[float | None]
    best: list[float | None]
    choice: list[int]  # class -> cheapest legal e-node, -1 when the class has none
    kids: list[tuple[int, ...]]  # e-node -> distinct child classes, in extraction's order

    def cost_of(self, n: int) -> float | None:
        """kernel(n) + best of each distinct child class, summed exactly as extraction sums it."""
        k = self.node_cost[n]
        if k is None or any(self.best[c] is None for c in self.kids[n]):
            return None
        return k + sum(self.best[c] for c in self.kids[n])  # type: ignore[misc]


def rank(t: Tables, costs: Costs, roots: Sequence[int]) -> Ranking:
    """Extraction's tree pass (`extract.tree_pass`), kept for every class: the form a
    class takes when an alternative needs a class the extraction left out."""
    g = tree_pass(t, costs.array(), roots)
    best: list[float | None] = [b if c >= 0 else None for b, c in zip(g.best, g.choice)]
    kids = [ks if len(ks) < 2 else tuple(set(ks)) for ks in t.children]
    return Ranking(g.node_cost, best, g.choice, kids)


@dataclass
class Alternative:
    enode: int
    label: str  # the op with its kind or operator: Binary{Mul}, ActivationBackward{Gelu}
    expr: str  # the alternative as an expression over the original graph's values
    cost: float | None
    ops: dict[str, int]
    legal: bool
    chosen: bool
    rules: list[str]
    original: bool  # the node left as it is

    def to_dict(self) -> dict[str, Any]:
        return {"cost": self.cost, "ops": dict(self.ops), "legal": self.legal, "chosen": self.chosen,
                "rules": list(self.rules)}


@dataclass
class Choice:
    node: Node
    eclass: int
    alternatives: list[Alternative] = field(default_factory=list)

    @property
    def chosen(self) -> Alternative | None:
        return next((a for a in self.alternatives if a.chosen), None)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node.id, "op": self.node.op, "alternatives": [a.to_dict() for a in self.alternatives]}


def label(decoded: Decoded, ctor: str, fields: tuple[Any, ...]) -> str:
    op, attrs, _ = decoded(ctor, fields)
    if ctor == LEAF:
        return "Leaf"
    if ctor == SCALAR:
        return "Constant"
    detail = attrs.get("kind") or attrs.get("op")
    if op == "Kernel":  # a backend file's kernel: its name, and which output
        detail = attrs["name"] + (f"[{attrs['output']}]" if attrs.get("output") else "")
    if attrs.get("wrt") == "output":
        detail = f"{detail}, wrt output"
    return f"{op}{{{detail}}}" if detail else op


def value_name(node: Node) -> str:
    """How an original node's value is named in expressions: its name, its feed name, or n<id>."""
    if node.name:
        return node.name
    if node.op in ("Input", "Param"):
        return str(node.attrs.get("name", f"n{node.id}"))
    return f"n{node.id}"


class Describer:
    """Alternatives of original nodes for one backend, from its extraction and its tree-pass ranking.

    Each alternative is tried as the local search tries a switch (`extract.Selection.switch`,
    the classes a switch makes needed taking their extracted e-node, else the ranking's),
    then undone."""

    def __init__(self, t: Tables, graph: Graph, decoded: Decoded, matcher: Matcher, ranking: Ranking,
                 extraction: Extraction | None, roots: Sequence[int]) -> None:
        self.t, self.graph, self.decoded, self.matcher = t, graph, decoded, matcher
        self.ranking, self.extraction = ranking, extraction
        self.nodes_by_class = matcher.nodes
        self.origins: dict[int, Node] = {}
        for node in graph.nodes:
            self.origins.setdefault(t.ref[node.id], node)
        self._rule_cache: dict[tuple[int, int], str | None] = {}
        self.chosen: dict[int, int] = dict(extraction.choice) if extraction is not None else {}
        kernel = [math.inf if k is None else k for k in ranking.node_cost]
        self.selection = Selection(t, kernel, ranking.choice, dict(self.chosen), roots if extraction else ())
        # each extracted class's place in an order where every class follows the classes it needs
        children, chosen = t.children, self.chosen
        self.topo = positions(post_order(chosen, lambda c: children[chosen[c]], t.n_classes))

    def form_of(self, k: int) -> int:
        """The e-node a class takes when an alternative needs it: its extracted one, else the tree pass's."""
        n = self.chosen.get(k)
        return self.ranking.choice[k] if n is None else n

    def _rule(self, c: int, n: int) -> str | None:
        key = (c, n)
        if key not in self._rule_cache:
            self._rule_cache[key] = self.matcher.rule_of(c, n)
        return self._rule_cache[key]

    def _needs_itself(self, c: int, n: int) -> bool:
        """Whether e-node n of class c needs c's own value, through the selection as switched to n:
        the classes the switch selected, and the extracted ones (which only reach classes before
        them in `topo`, so the walk stops below c's place)."""
        topo, chosen, choice, children = self.topo, self.chosen, self.selection.choice, self.t.children
        floor = topo.get(c)
        seen: set[int] = set()
        stack = list(children[n])
        while stack:
            x = stack.pop()
            if x == c:
                return True
            if x in seen:
                continue
            seen.add(x)
            place = topo.get(x)
            if place is not None and (floor is None or place < floor):
                continue  # an extracted class below c's place (or c not extracted): it cannot need c
            m = chosen[x] if place is not None else choice.get(x, -1)
            if m >= 0:
                stack.extend(children[m])
        return False

    def switch(self, c: int, n: int) -> tuple[dict[int, int], set[int], bool]:
        """Class c computed by e-node n instead of its chosen one, as the local search tries it:
        (the classes that become needed -> the e-node each takes, in the order selected; the
        extracted classes nothing needs any more; whether every new class has a legal form and
        n does not need c's own value). The selection is left as it was."""
        sel = self.selection
        sel.keep()
        sel.switch(c, n)
        selected = {k: m for k, m in sel.selected() if k != c}
        dropped = {k for k, _ in sel.dropped()}
        legal = all(m >= 0 for m in selected.values()) and not self._needs_itself(c, n)
        sel.undo()
        return {k: m for k, m in selected.items() if m >= 0}, dropped, legal

    def expr(self, n: int, limit: int = EXPR_LIMIT) -> str:
        """`n` as an expression over the original graph's values (their names), shortened past `limit`."""
        t = self.t
        out: list[str] = []
        size = 0

        def emit(s: str) -> bool:
            nonlocal size
            out.append(s)
            size += len(s)
            return size < limit

        def walk(m: int, top: bool) -> bool:
            c = t.eclass[m]
            if not top and c in self.origins:
                return emit(value_name(self.origins[c]))
            ctor, fields = t.ctor[m], t.fields[m]
            if ctor == SCALAR:
                return emit(f"{fields[0]:g}")
            if ctor == LEAF:
                return emit(value_name(self.graph.by_id[fields[0]]))
            op, attrs, _ = self.decoded(ctor, fields)
            head = {"Activation": attrs.get("kind"), "Binary": attrs.get("op"), "Compare": attrs.get("op"),
                    "Where": "where"}.get(op) or label(self.decoded, ctor, fields)
            if not emit(f"{head}("):
                return False
            for i, k in enumerate(t.children[m]):
                if i and not emit(", "):
                    return False
                if k in self.origins:
                    ok = emit(value_name(self.origins[k]))
                elif self.form_of(k) < 0:
                    ok = emit("?")
                else:
                    ok = walk(self.form_of(k), False)
                if not ok:
                    return False
            return emit(")")

        if not walk(n, True):
            return "".join(out)[:limit] + "…"
        return "".join(out)

    def alternative(self, c: int, n: int, base: tuple[dict[int, int], set[int]]) -> Alternative:
        t, kernel = self.t, self.ranking.node_cost
        ctor, fields = t.ctor[n], t.fields[n]
        is_original = c in self.origins and is_own(t, n, self.origins[c], self.graph)
        selected, dropped, legal = self.switch(c, n)
        legal = legal and kernel[n] is not None
        inputs_new, region = base  # the baseline: c computed for free from the node's inputs
        # charged to n: the new classes it needs beyond the inputs', and what of the chosen form's own region it
        # keeps; credited: what of the inputs' part it lets go
        charged = {k: m for k, m in selected.items() if k not in inputs_new}
        charged.update((k, self.chosen[k]) for k in region if k not in dropped)
        credited = [m for k, m in inputs_new.items() if k not in selected]
        credited += [self.chosen[k] for k in dropped if k not in region]
        cost = ((kernel[n] or 0.0) + sum(kernel[m] for m in charged.values())  # type: ignore[misc]
                - sum(kernel[m] for m in credited))  # type: ignore[misc]
        part = self._outermost_first(n, charged)
        ops: dict[str, int] = {}
        rules: list[str] = []
        for i, m in enumerate(part):
            if t.ctor[m] in (LEAF, SCALAR):
                continue
            op, _, _ = self.decoded(t.ctor[m], t.fields[m])
            ops[op] = ops.get(op, 0) + 1
            if i == 0 and is_original:
                continue
            r = self._rule(t.eclass[m], m)
            if r and r not in rules:
                rules.append(r)
        return Alternative(
            enode=n, label=label(self.decoded, ctor, fields) if ctor != LEAF else self.graph.by_id[fields[0]].op,
            expr=self.expr(n), cost=cost if legal else None, ops=ops, legal=legal,
            chosen=self.chosen.get(c) == n, rules=rules, original=is_original,
        )

    def _outermost_first(self, n: int, charged: dict[int, int]) -> list[int]:
        """n, then the charged classes' e-nodes in a depth-first walk from n (each once)."""
        t = self.t
        out = [n]
        seen: set[int] = set()
        stack = list(reversed(t.children[n]))
        while stack:
            k = stack.pop()
            if k in seen or k not in charged:
                continue
            seen.add(k)
            out.append(charged[k])
            stack.extend(reversed(t.children[charged[k]]))
        out += [m for k, m in charged.items() if k not in seen]  # reached only through uncharged classes
        return out

    def choice(self, node: Node) -> Choice:
        t = self.t
        c = t.ref[node.id]
        # the baseline every form is costed against: c computed for free from the node's own inputs
        own = next(n for n in self.nodes_by_class[c] if is_own(t, n, node, self.graph))
        inputs_new, region, _ = self.switch(c, own)
        alts = [self.alternative(c, n, (inputs_new, region)) for n in self.nodes_by_class[c] if t.ctor[n] != REF]
        alts.sort(key=lambda a: (not a.legal, a.cost if a.cost is not None else 0.0, not a.original, a.enode))
        return Choice(node, c, alts)


def rewritten(t: Tables, graph: Graph, nodes_by_class: Members, node: Node) -> bool:
    """Whether the node's class holds a form other than the node itself (leaves are never listed)."""
    if node.op in ("Input", "Param", "Constant"):
        return False
    c = t.ref[node.id]
    return any(t.ctor[n] != REF and not is_own(t, n, node, graph) for n in nodes_by_class[c])


def choices_for(describer: Describer, backward: frozenset[str]) -> list[Choice]:
    """One per original node that was rewritten, and every backward op (graph order)."""
    t, graph = describer.t, describer.graph
    return [
        describer.choice(node)
        for node in graph.nodes
        if node.op in backward or rewritten(t, graph, describer.nodes_by_class, node)
    ]

