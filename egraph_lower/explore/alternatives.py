"""The alternatives of an original node for one backend: what extraction could have chosen, and why it did not.

An original node's alternatives are the e-nodes of its e-class (every form the
rules found for its value). For a backend, each alternative `n` is described by:

- `cost`: the cost by which extraction ranks `n` against the other e-nodes of
  the class, `kernel(n) + sum(best(k) for each distinct child class k)`, where
  `kernel` is the backend's cost of the e-node (`extract.Costs`) and `best(k)`
  is the same quantity for the cheapest legal e-node of class `k` (extraction's
  own bottom-up pass, recomputed here for every class, so also for the classes
  the extracted graph does not reach). It is the cost of the sub-DAG below `n`
  down to the graph's leaves, counted as extraction counts it: each distinct
  input of an e-node once, so a value reached along two paths is counted twice
  and the values the rest of the graph computes anyway are included. All the
  alternatives of a class are ranked by it, which makes the chosen one the
  cheapest legal one *by construction*; the graph-level costs (`before`,
  `after`) are DAG costs, each value counted once. `None` when not legal.
- `legal`: the backend runs `n` and every child class has a legal form (so the
  whole sub-DAG below `n` runs).
- `chosen`: `n` is the e-node extraction chose for the class (exactly one per
  class that has a legal form; ties are broken as extraction breaks them).
- `ops` and `rules`: the alternative's own part, what it puts in place of the
  node: `n` and, below it, the cheapest e-node of each class it needs, down to
  (not including) the classes of nodes of the original graph, which the graph
  computes anyway. `ops` counts the format ops of that part (leaves and
  broadcast scalar literals are not kernels and not counted); `rules` names the
  rules that produced `n` and the e-nodes of that part (matched after the fact
  by `provenance.Matcher`), outermost first. The node left as it is has no
  rules; on a backend without the op it is an illegal alternative.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..egraph.language import LEAF, REF, SCALAR, encode
from ..egraph.tables import Tables
from ..extract import Costs, Decoded, Extraction
from ..graph import Graph, Node
from ..provenance import Matcher

EXPR_LIMIT = 160  # characters of an alternative's expression, for people


@dataclass
class Ranking:
    """Extraction's bottom-up pass over every class: kernel cost per e-node, best cost and e-node per class."""

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


def rank(t: Tables, costs: Costs) -> Ranking:
    """The same pass as `extract.extract` (Knuth's Dijkstra generalisation), kept for every class."""
    parents = t.parents_by_class()
    kids = [tuple(set(ks)) for ks in t.children]
    pending = [len(ks) for ks in kids]
    node_cost: list[float | None] = [None] * t.n_nodes
    best: list[float | None] = [None] * t.n_classes
    choice = [-1] * t.n_classes
    heap: list[tuple[float, int]] = []
    for n in range(t.n_nodes):
        if t.ctor[n] == REF:
            continue
        node_cost[n] = costs(n)
        if node_cost[n] is not None and pending[n] == 0:
            heap.append((node_cost[n], n))  # type: ignore[arg-type]
    heapq.heapify(heap)
    while heap:
        total, n = heapq.heappop(heap)
        c = t.eclass[n]
        if best[c] is not None:
            continue
        best[c], choice[c] = total, n
        for p in parents[c]:
            pending[p] -= 1
            if pending[p] == 0 and node_cost[p] is not None:
                heapq.heappush(heap, (node_cost[p] + sum(best[k] for k in kids[p]), p))  # type: ignore[operator,misc]
    return Ranking(node_cost, best, choice, kids)


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


def is_own(t: Tables, n: int, node: Node, graph: Graph) -> bool:
    """Whether e-node `n` is original `node` itself (same constructor, fields and input classes)."""
    if node.op in ("Input", "Param", "Constant"):
        return t.ctor[n] == LEAF and t.fields[n][0] == node.id
    rank_ = len(graph.by_id[node.inputs[0]].shape) if node.inputs else 0
    ctor, fields = encode(node, rank_)
    return t.ctor[n] == ctor and t.fields[n] == fields and t.children[n] == tuple(t.ref[i] for i in node.inputs)


def label(decoded: Decoded, ctor: str, fields: tuple[Any, ...]) -> str:
    op, attrs, _ = decoded(ctor, fields)
    if ctor == LEAF:
        return "Leaf"
    if ctor == SCALAR:
        return "Constant"
    detail = attrs.get("kind") or attrs.get("op")
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
    """Alternatives of original nodes for one backend, from its ranking and (where reached) its extraction."""

    def __init__(self, t: Tables, graph: Graph, decoded: Decoded, matcher: Matcher, ranking: Ranking,
                 extraction: Extraction | None) -> None:
        self.t, self.graph, self.decoded, self.matcher = t, graph, decoded, matcher
        self.ranking, self.extraction = ranking, extraction
        self.nodes_by_class = matcher.nodes
        self.origins: dict[int, Node] = {}
        for node in graph.nodes:
            self.origins.setdefault(t.ref[node.id], node)
        self._rule_cache: dict[tuple[int, int], str | None] = {}

    def chosen_of(self, c: int) -> int:
        if self.extraction is not None and c in self.extraction.choice:
            return self.extraction.choice[c]
        return self.ranking.choice[c]

    def _rule(self, c: int, n: int) -> str | None:
        key = (c, n)
        if key not in self._rule_cache:
            self._rule_cache[key] = self.matcher.rule_of(c, n)
        return self._rule_cache[key]

    def _own_part(self, n: int) -> list[int]:
        """`n` and the cheapest e-nodes of the non-original classes below it (each class once, outermost first)."""
        t, choice = self.t, self.ranking.choice
        order = [n]
        seen: set[int] = {t.eclass[n]}
        stack = list(reversed(t.children[n]))
        while stack:
            c = stack.pop()
            if c in seen or c in self.origins:
                continue
            seen.add(c)
            m = choice[c]
            if m < 0:
                continue
            order.append(m)
            stack.extend(reversed(t.children[m]))
        return order

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
                elif self.ranking.choice[k] < 0:
                    ok = emit("?")
                else:
                    ok = walk(self.ranking.choice[k], False)
                if not ok:
                    return False
            return emit(")")

        if not walk(n, True):
            return "".join(out)[:limit] + "…"
        return "".join(out)

    def alternative(self, c: int, n: int, chosen: int) -> Alternative:
        t = self.t
        ctor, fields = t.ctor[n], t.fields[n]
        own = c in self.origins and is_own(t, n, self.origins[c], self.graph)
        cost = self.ranking.cost_of(n)
        part = self._own_part(n)
        ops: dict[str, int] = {}
        rules: list[str] = []
        for i, m in enumerate(part):
            if t.ctor[m] in (LEAF, SCALAR):
                continue
            op, _, _ = self.decoded(t.ctor[m], t.fields[m])
            ops[op] = ops.get(op, 0) + 1
            if i == 0 and own:
                continue
            r = self._rule(t.eclass[m], m)
            if r and r not in rules:
                rules.append(r)
        return Alternative(
            enode=n, label=label(self.decoded, ctor, fields) if ctor != LEAF else self.graph.by_id[fields[0]].op,
            expr=self.expr(n), cost=cost, ops=ops, legal=cost is not None, chosen=n == chosen and cost is not None,
            rules=rules, original=own,
        )

    def choice(self, node: Node) -> Choice:
        c = self.t.ref[node.id]
        chosen = self.chosen_of(c)
        alts = [self.alternative(c, n, chosen) for n in self.nodes_by_class[c] if self.t.ctor[n] != REF]
        alts.sort(key=lambda a: (not a.legal, a.cost if a.cost is not None else 0.0, not a.original, a.enode))
        return Choice(node, c, alts)


def rewritten(t: Tables, graph: Graph, nodes_by_class: Sequence[Sequence[int]], node: Node) -> bool:
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

