"""Extraction for a backend: the cheapest graph the backend runs, from the frozen e-graph.

Works on `egraph.tables.Tables`, bottom-up and without recursion:
1. `infer_metas`: the shape and dtype of every e-class (from the original nodes,
   then by the format's inference rules through the new e-nodes);
2. `extract`: only e-nodes the backend runs; each e-class gets the e-node of
   least cost, where an e-node costs its kernel (the backend's cost model) plus
   the cost of its distinct child classes (Knuth's generalisation of Dijkstra);
3. `dag_cost`: the cost of the chosen graph with each shared value counted once.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .backends import Backend
from .egraph.language import LEAF, SCALAR, decode
from .egraph.tables import Tables
from .errors import LowerError
from .graph import Graph
from .validate import Meta, infer

# The field that refines an op for legality and cost: the activation kind, the binary operator.
_KIND_CTORS = ("Act", "ActBwd", "ActBwdOut", "Bin")


class Decoded:
    """(op, attrs, kind) per distinct (constructor, fields): computed once, shared by all e-nodes."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, tuple[Any, ...]], tuple[str, dict[str, Any], str | None]] = {}

    def __call__(self, ctor: str, fields: tuple[Any, ...]) -> tuple[str, dict[str, Any], str | None]:
        key = (ctor, fields)
        hit = self._cache.get(key)
        if hit is None:
            if ctor == LEAF:
                hit = ("Leaf", {}, None)
            elif ctor == SCALAR:
                hit = ("Constant", {"value": fields[0]}, None)
            else:
                op, attrs = decode(ctor, fields)
                hit = (op, attrs, fields[0] if ctor in _KIND_CTORS else None)
            self._cache[key] = hit
        return hit


def infer_metas(t: Tables, graph: Graph, decoded: Decoded) -> list[Meta | None]:
    """Shape and dtype of each e-class; None where no e-node's inputs are known (dead classes)."""
    metas: list[Meta | None] = [None] * t.n_classes
    by_id = graph.by_id
    ready: list[int] = []
    for node_id, c in t.ref.items():
        n = by_id[node_id]
        if metas[c] is None:
            metas[c] = (n.shape, n.dtype)
            ready.append(c)
    parents = t.parents_by_class()
    pending = [len(set(kids)) for kids in t.children]
    cache: dict[tuple[Any, ...], Meta] = {}

    def settle(n: int) -> None:
        c = t.eclass[n]
        if metas[c] is not None:
            return
        ctor, fields = t.ctor[n], t.fields[n]
        if ctor == LEAF:
            node = by_id[fields[0]]
            metas[c] = (node.shape, node.dtype)
        elif ctor == SCALAR:
            metas[c] = ((), None)
        else:
            op, attrs, _ = decoded(ctor, fields)
            ins = tuple(metas[k] for k in t.children[n])
            key = (ctor, fields, ins)
            m = cache.get(key)
            if m is None:
                try:
                    m = cache[key] = infer(op, attrs, ins)  # type: ignore[arg-type]
                except ValueError:
                    return  # an e-node whose inputs do not fit: not a way to compute this class
            metas[c] = m
        ready.append(c)

    for n, p in enumerate(pending):
        if p == 0:
            settle(n)
    while ready:
        c = ready.pop()
        for p in parents[c]:
            pending[p] -= 1
            if pending[p] == 0:
                settle(p)
    return metas


@dataclass
class Extraction:
    choice: dict[int, int]  # e-class -> chosen e-node, for every class the roots reach
    cost: float  # DAG cost: each chosen class counted once
    node_costs: dict[int, float]  # e-class -> cost of its chosen e-node's kernel


class Costs:
    """The backend's kernel cost and legality of each e-node, memoised by what determines them."""

    def __init__(self, t: Tables, metas: Sequence[Meta | None], backend: Backend, decoded: Decoded) -> None:
        self.t, self.metas, self.backend, self.decoded = t, metas, backend, decoded
        self._cache: dict[tuple[Any, ...], float | None] = {}

    def __call__(self, n: int) -> float | None:
        """The kernel cost of e-node `n`, or None when the backend cannot run it."""
        t = self.t
        ctor, fields = t.ctor[n], t.fields[n]
        out = self.metas[t.eclass[n]]
        if out is None:
            return None
        ins = tuple(self.metas[k] for k in t.children[n])
        key = (ctor, fields if ctor != LEAF else (), ins, out)
        if key in self._cache:
            return self._cache[key]
        op, _attrs, kind = self.decoded(ctor, fields)
        if op == "Leaf":
            cost: float | None = 0.0
        elif not self.backend.runs(op, kind) or any(m is None for m in ins):
            cost = None
        else:
            cost = self.backend.cost.node_cost(op, kind, ins, out)  # type: ignore[arg-type]
        self._cache[key] = cost
        return cost


def extract(t: Tables, costs: Costs, roots: Iterable[int], describe: Sequence[tuple[int, str]] = ()) -> Extraction:
    """The least-cost legal e-node of every class the roots reach (bottom-up, no recursion)."""
    parents = t.parents_by_class()
    kids = [tuple(set(ks)) for ks in t.children]
    pending = [len(ks) for ks in kids]
    node_cost: list[float | None] = [None] * t.n_nodes
    best: list[float | None] = [None] * t.n_classes
    choice: list[int] = [-1] * t.n_classes
    heap: list[tuple[float, int]] = []
    for n in range(t.n_nodes):
        if t.ctor[n] == "Ref":
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
    chosen: dict[int, int] = {}
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c in chosen:
            continue
        if choice[c] < 0:
            raise LowerError(_no_form(choice, describe, costs.backend.name))
        chosen[c] = choice[c]
        stack.extend(t.children[choice[c]])
    per_class = {c: node_cost[n] for c, n in chosen.items()}
    return Extraction(chosen, sum(per_class.values()), per_class)  # type: ignore[arg-type]


def _no_form(choice: Sequence[int], describe: Sequence[tuple[int, str]], backend: str) -> str:
    """Name the first original node (in graph order) left without a form the backend runs."""
    for c, what in describe:
        if choice[c] < 0:
            return f"{what}: backend {backend} does not run it and no rule lowers it into what it runs"
    return f"no form the backend {backend} runs was found for an output"


def graph_cost(graph: Graph, backend: Backend) -> float | None:
    """The cost of running `graph` as it is on `backend`; None when it holds an op the backend lacks."""
    by_id = graph.by_id
    total = 0.0
    for node in graph.nodes:
        if not backend.runs_node(node):
            return None
        ins = [(by_id[i].shape, by_id[i].dtype) for i in node.inputs]
        kind = node.attrs.get("op") if node.op == "Binary" else node.attrs.get("kind")
        total += backend.cost.node_cost(node.op, kind, ins, (node.shape, node.dtype))
    return total
