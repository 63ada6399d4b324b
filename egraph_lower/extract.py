"""Extraction for a backend: the cheapest graph the backend runs, from the frozen e-graph.

Works on `egraph.tables.Tables`, without recursion, each pass once per distinct
signature where it can (shapes repeat):
1. `infer_metas`: the shape and dtype of every e-class (from the original nodes,
   then by the format's inference rules through the new e-nodes);
2. `Costs.array`: each e-node's kernel cost on the backend (inf where it cannot run);
3. `extract`: the start, then `improve` (the default, greedy: a DAG-aware local
   search) or `exact` (an integer program). The greedy start is `anchored.price`
   (each e-node priced by the new work it adds, in NumPy rounds) settled from the
   outputs; the `tree` start (also the fallback) is `greedy`, each class's e-node of
   least tree cost, depth first, collected by `walk` with its DAG cost;
4. `check_consistent`: every chosen e-node agrees with its class's shape and dtype.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .anchored import Cycle, Pricer, settle
from .backends import Backend
from .egraph.language import LEAF, SCALAR, decode
from .egraph.tables import Tables, group, representatives
from .errors import IllegalGraphError, LowerError
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


class ClassMetas(Sequence[Meta | None]):
    """Shape and dtype per e-class (None where unknown), looked up when asked for: `ids[c]`
    indexes `table` (-1: unknown), so the vectorised passes compare metas as ints."""

    def __init__(self, ids: np.ndarray, table: list[Meta]) -> None:
        self.ids, self.table = ids, table

    def __getitem__(self, c: int) -> Meta | None:  # type: ignore[override]
        i = self.ids[c]
        return None if i < 0 else self.table[i]

    def __len__(self) -> int:
        return len(self.ids)


_MIX = np.random.default_rng(2026).integers(1, 2**63, size=64, dtype=np.int64).astype(np.uint64) | np.uint64(1)
_PACKED = 1 << 62  # a packed key stays below this


def distinct_rows(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of int64 columns (1-D, or 2-D for several), and for each row the index of
    its distinct row. The values are small (signatures, meta ids), so a row packs exactly into
    one int64 key (each column offset to 0 and scaled by the ranges before it) and one pass of
    `tables.group` over the keys decides; rows too wide to pack are told apart by a 64-bit mix of
    their values, checked exactly afterwards (a collision, never seen, falls back to comparing
    whole rows)."""
    parts = [np.asarray(c, dtype=np.int64) for c in columns]
    parts = [p if p.ndim == 2 else p[:, None] for p in parts]
    n = len(parts[0])
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for col in (p[:, j] for p in parts for j in range(p.shape[1])):
        lo, hi = (int(col.min()), int(col.max())) if n else (0, 0)
        span *= hi - lo + 1
        if span >= _PACKED:
            return _distinct_mixed(np.column_stack(parts))
        key *= hi - lo + 1
        key += col - lo
    distinct, inverse = group(key, span)
    first = representatives(inverse, len(distinct))  # a row of each key
    return np.column_stack([p[first] for p in parts]), inverse


def _distinct_mixed(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.ascontiguousarray(rows)
    if rows.shape[1] <= len(_MIX):
        mixed = rows.view(np.uint64) * _MIX[:rows.shape[1]]
        h = mixed.sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        if np.array_equal(rows[first][inverse], rows):
            return rows[first], inverse
    packed = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    return rows[first], inverse.ravel()


def _child_metas(t: Tables, ids: np.ndarray, enodes: np.ndarray) -> np.ndarray:
    """Meta id of the children of `enodes`; -2 past an e-node's arity, -1 where unknown."""
    kids = t.kids_array[enodes]
    return np.where(kids >= 0, ids[kids], -2)


def infer_metas(t: Tables, graph: Graph, decoded: Decoded) -> ClassMetas:
    """Shape and dtype of each e-class; None where no e-node's inputs are known (dead classes).

    Classes of original nodes are known from the graph. The rest are inferred in rounds:
    each round takes the e-nodes of unknown classes whose children are all known, and
    runs the format's `infer` once per distinct (constructor, fields, child metas).
    """
    table: list[Meta] = []
    index: dict[Meta, int] = {}

    def intern(m: Meta) -> int:
        i = index.get(m)
        if i is None:
            i = index[m] = len(table)
            table.append(m)
        return i

    ids = np.full(t.n_classes, -1, dtype=np.int32)  # (int32: the gathers below move half the bytes)
    by_id = graph.by_id
    # the original nodes' own: the first node (in the reference's order) of each class
    node_ids = np.fromiter(t.ref.keys(), dtype=np.int64, count=len(t.ref))
    classes = np.fromiter(t.ref.values(), dtype=np.int64, count=len(t.ref))
    classes, first = np.unique(classes, return_index=True)
    ids[classes] = [intern((n.shape, n.dtype)) for n in map(by_id.__getitem__, node_ids[first].tolist())]
    eclass, sig = t.eclass_array, t.sig_array
    todo = np.flatnonzero(ids[eclass] < 0)  # e-nodes of classes still unknown
    while todo.size:
        kid = _child_metas(t, ids, todo)
        ready = (kid != -1).all(axis=1)
        idx, kid = todo[ready], kid[ready]
        if idx.size == 0:
            break
        rows, inverse = distinct_rows(sig[idx], kid)
        result = np.empty(len(rows), dtype=np.int32)
        for j, row in enumerate(rows.tolist()):
            ctor, fields = t.sigs[row[0]]
            if ctor == LEAF:
                node = by_id[fields[0]]
                m: Meta | None = (node.shape, node.dtype)
            elif ctor == SCALAR:
                m = ((), None)
            else:
                op, attrs, _ = decoded(ctor, fields)
                ins = [table[i] for i in row[1:] if i != -2]
                try:
                    m = infer(op, attrs, ins)
                except ValueError:
                    m = None  # inputs that do not fit: not a way to compute this class
            result[j] = -1 if m is None else intern(m)
        got = result[inverse]
        ids[eclass[idx[got >= 0]]] = got[got >= 0]
        todo = todo[~ready]  # the e-nodes tried are done (an unfit one never fits)
        todo = todo[ids[eclass[todo]] < 0]
    return ClassMetas(ids, table)


def check_consistent(t: Tables, metas: ClassMetas, chosen: dict[int, int], decoded: Decoded) -> None:
    """Every chosen e-node infers its class's shape and dtype from its children's: what
    validating the converted graph would check, once per distinct signature. A mismatch
    means an unsound rule merged values of different shapes or dtypes."""
    classes = np.fromiter(chosen.keys(), dtype=np.int64, count=len(chosen))
    enodes = np.fromiter(chosen.values(), dtype=np.int64, count=len(chosen))
    kid = _child_metas(t, metas.ids, enodes)
    rows, _ = distinct_rows(t.sig_array[enodes], metas.ids[classes], kid)
    for row in rows.tolist():
        ctor, fields = t.sigs[row[0]]
        if ctor in (LEAF, SCALAR):
            continue
        op, attrs, _ = decoded(ctor, fields)
        want = metas.table[row[1]]
        try:
            got = infer(op, attrs, [metas.table[i] for i in row[2:] if i != -2])
        except ValueError as e:
            got, why = None, str(e)
        if got != want:
            detail = why if got is None else f"gives {got}"
            raise IllegalGraphError(f"an unsound rewrite: {op} {attrs} {detail}, but its e-class is {want}")


@dataclass
class Extraction:
    choice: dict[int, int]  # e-class -> chosen e-node, for every class the roots reach
    cost: float  # DAG cost: each chosen class counted once
    order: list[int] | None = None  # the chosen classes, children first, when known


def dag_cost(node_cost: Sequence[float] | np.ndarray, choice: dict[int, int]) -> float:
    """The DAG cost of a choice: each chosen e-node's kernel once, summed exactly rounded (so in
    whatever order the choice was made)."""
    if isinstance(node_cost, np.ndarray):
        return math.fsum(node_cost[np.fromiter(choice.values(), dtype=np.int64, count=len(choice))].tolist())
    return math.fsum(map(node_cost.__getitem__, choice.values()))


class Costs:
    """The backend's kernel cost of each e-node (inf where the backend cannot run it)."""

    def __init__(self, t: Tables, metas: ClassMetas, backend: Backend, decoded: Decoded) -> None:
        self.t, self.metas, self.backend, self.decoded = t, metas, backend, decoded

    def array(self) -> np.ndarray:
        """The kernel cost of every e-node (inf where the backend cannot run it), computed
        once per distinct (constructor, fields, metas)."""
        t, metas = self.t, self.metas
        ids = metas.ids
        runs = np.array([self._runs(ctor, fields) for ctor, fields in t.sigs], dtype=bool)
        idx = np.flatnonzero(runs[t.sig_array]) if len(runs) else np.empty(0, dtype=np.int64)  # the rest: inf
        out_ids = ids[t.eclass_array[idx]]
        kid = _child_metas(t, ids, idx)
        known = (out_ids >= 0) & (kid != -1).all(axis=1)
        idx, out_ids, kid = idx[known], out_ids[known], kid[known]
        costs = np.full(t.n_nodes, np.inf)
        if idx.size:
            rows, inverse = distinct_rows(t.sig_array[idx], out_ids, kid)
            unique = np.empty(len(rows))
            for j, row in enumerate(rows.tolist()):
                ctor, fields = t.sigs[row[0]]
                unique[j] = self._cost(ctor, fields, [metas.table[i] for i in row[2:] if i != -2], metas.table[row[1]])
            costs[idx] = unique[inverse]
        return costs

    def _runs(self, ctor: str, fields: tuple[Any, ...]) -> bool:
        if ctor == LEAF:
            return True
        op, _attrs, kind = self.decoded(ctor, fields)
        return self.backend.runs(op, kind)

    def _cost(self, ctor: str, fields: tuple[Any, ...], ins: Sequence[Meta], out: Meta) -> float:
        """The kernel cost of an e-node the backend runs (`_runs`)."""
        if ctor == LEAF:
            return 0.0
        op, _attrs, kind = self.decoded(ctor, fields)
        return self.backend.cost.node_cost(op, kind, ins, out)


@dataclass
class Greedy:
    """The bottom-up pass over every e-class: what the improvement and exact passes start from."""

    node_cost: list[float | None]  # kernel cost per e-node, None where the backend cannot run it
    choice: list[int]  # least tree-cost e-node per class, -1 where none is legal
    best: list[float]  # that tree cost
    settled: list[int]  # classes in the order they settled: children before parents


def greedy(t: Tables, costs: Costs, roots: Sequence[int], kernel: np.ndarray | None = None) -> Greedy:
    """The least tree cost of every class the roots reach: an e-node costs its kernel plus
    the cost of its distinct child classes. Depth first and iterative (no recursion limit):
    a class is settled once all the classes below it are. An e-node that would close a
    cycle (a child still being settled above it) is passed over."""
    members = t.nodes_by_class()
    children = t.children
    node_cost = [None if c == np.inf else c for c in (costs.array() if kernel is None else kernel).tolist()]
    choice: list[int] = [-1] * t.n_classes
    # value[c]: the settled tree cost of c; None while unseen or being settled, or without a legal form
    value: list[float | None] = [None] * t.n_classes
    state = bytearray(t.n_classes)  # 0 unseen, 1 being settled, 2 settled
    below: list[list[int] | None] = [None] * t.n_classes  # child classes still to visit
    settled: list[int] = []

    order, starts = members.order, members.starts

    def open_class(c: int) -> None:
        state[c] = 1
        a, b = starts[c], starts[c + 1]
        if b - a == 1:
            n = order[a]
            kids = children[n] if node_cost[n] is not None else ()
        else:
            kids = {k for n in order[a:b] if node_cost[n] is not None for k in children[n]}  # type: ignore[assignment]
        below[c] = [k for k in kids if not state[k]]

    for root in roots:
        if state[root]:
            continue
        open_class(root)
        stack = [root]
        while stack:
            c = stack[-1]
            todo = below[c]
            while todo and state[todo[-1]]:
                todo.pop()
            if todo:
                k = todo.pop()
                open_class(k)
                stack.append(k)
                continue
            stack.pop()
            below[c] = None
            state[c] = 2
            settled.append(c)
            top, pick = 0.0, -1
            for n in order[starts[c]:starts[c + 1]]:
                cost = node_cost[n]
                if cost is None:
                    continue
                ks = children[n]
                if len(ks) == 1:
                    v = value[ks[0]]
                    if v is None:
                        continue  # no legal form below, or a cycle back to a class being settled
                    total = cost + v
                elif ks:
                    vs = [value[k] for k in set(ks)]
                    if None in vs:
                        continue
                    total = cost + sum(vs)  # type: ignore[arg-type]
                else:
                    total = cost
                if pick < 0 or total < top or (total == top and n < pick):
                    top, pick = total, n
            if pick >= 0:
                value[c], choice[c] = top, pick
    best = [-1.0 if v is None else v for v in value]
    return Greedy(node_cost, choice, best, settled)


def walk(t: Tables, roots: Iterable[int], pick: Callable[[int], int], node_cost: Sequence[float | None]) -> Extraction:
    """The extraction that takes e-node `pick(c)` for each class the roots reach, with its DAG cost."""
    chosen: dict[int, int] = {}
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c in chosen:
            continue
        n = chosen[c] = pick(c)
        stack.extend(t.children[n])
    return Extraction(chosen, dag_cost(node_cost, chosen))  # type: ignore[arg-type]


def select(t: Tables, g: Greedy, roots: Iterable[int], backend: str,
           describe: Sequence[tuple[int, str]] = ()) -> Extraction:
    """The greedy choices of the classes the roots reach."""

    def pick(c: int) -> int:
        if g.choice[c] < 0:
            raise LowerError(_no_form(g.choice, describe, backend))
        return g.choice[c]

    return walk(t, roots, pick, g.node_cost)


EXTRACTORS = ("greedy", "exact", "tree")


def extract(t: Tables, costs: Costs, roots: Sequence[int], describe: Sequence[tuple[int, str]] = (),
            method: str = "greedy") -> Extraction:
    """`greedy` (the default): the new-work pass of `anchored`, then the DAG-aware local
    search of `improve`; `tree`: the plain tree-cost pass alone; `exact`: the integer
    program of `exact`. Where the new-work pass cannot decide (a cycle in its choice, or
    infeasibility spreading deep), greedy starts from the tree-cost pass instead."""
    from .exact import extract_exact
    from .improve import improve

    if method not in EXTRACTORS:
        raise LowerError(f"unknown extractor {method!r}: use one of {', '.join(EXTRACTORS)}")
    kernel = costs.array()
    if method == "greedy":
        start = _new_work(t, kernel, roots, costs.backend.name, describe)
        if start is not None:
            ex = improve(t, kernel, start.greedy, start.best, start.extraction, roots, pricer=start.pricer)
            if ex.order is None:  # the search added classes: settle the final choice afresh
                ex.order = _settled(t, ex.choice, roots)
            return ex
    g = greedy(t, costs, roots, kernel)
    ex = select(t, g, roots, costs.backend.name, describe)
    if method == "greedy":
        ex = improve(t, kernel, g.choice, g.best, ex, roots)
    elif method == "exact":
        ex = extract_exact(t, g, roots)
    ex.order = [c for c in g.settled if c in ex.choice]  # a topological order, unless a switch made a cycle-closing choice
    return ex


@dataclass
class _Start:
    extraction: Extraction
    greedy: Sequence[int]  # per class: the new-work choice
    best: Sequence[float]
    pricer: Pricer  # set up for the kernels: the local search prices again with it


def _new_work(t: Tables, kernel: np.ndarray, roots: Sequence[int], backend: str,
              describe: Sequence[tuple[int, str]]) -> _Start | None:
    anchored = np.zeros(t.n_classes, dtype=bool)
    anchored[list(t.ref.values())] = True
    pricer = Pricer(t, kernel)
    priced = pricer.price(anchored)
    if priced is None:
        return None
    try:
        order, picked = settle(t, priced.choice, list(roots))
    except Cycle:
        return None
    if -1 in picked:
        raise LowerError(_no_form(priced.choice.tolist(), describe, backend))
    choice = dict(zip(order, picked))
    ex = Extraction(choice, dag_cost(kernel, choice), order)
    return _Start(ex, array("q", priced.choice.tobytes()), array("d", priced.best.tobytes()), pricer)


def _settled(t: Tables, choice: dict[int, int], roots: Sequence[int]) -> list[int] | None:
    """The chosen classes children first, or None if the choice has a cycle."""
    pick = np.full(t.n_classes, -1, dtype=np.int64)
    pick[np.fromiter(choice.keys(), dtype=np.int64, count=len(choice))] = list(choice.values())
    try:
        return settle(t, pick, list(roots))[0]
    except Cycle:
        return None


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
