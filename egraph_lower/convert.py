"""Extraction -> node graph: topological, scalars as constants of the dtype that uses them.

- Nodes come out in topological order (an iterative post-order walk from the outputs).
- A chosen e-node that is an original node's own keeps that node's attributes and name.
- `Scalar v` becomes a `Constant` of shape [] and the dtype of the op that uses it,
  with the value rounded to that dtype, one node per (value, dtype); the elementwise
  op broadcasts it, so nothing full-size is materialised.
- Every new node's `name` says which original node and which rules it came from:
  `<original name or nN>/<rule>[/<rule>...]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .dtypes import round_to
from .egraph.language import LEAF, SCALAR, encode
from .egraph.tables import Tables
from .extract import Decoded, Extraction
from .graph import Graph, Node, new_node
from .provenance import Matcher
from .validate import Meta


def _post_order(choice: dict[int, int], children: Sequence[tuple[int, ...]], roots: Sequence[int]) -> list[int]:
    order: list[int] = []
    done: set[int] = set()
    for root in roots:
        stack: list[tuple[int, bool]] = [(root, False)]
        while stack:
            c, expanded = stack.pop()
            if c in done:
                continue
            if expanded:
                done.add(c)
                order.append(c)
                continue
            stack.append((c, True))
            for k in reversed(children[choice[c]]):
                if k not in done:
                    stack.append((k, False))
    return order


def _operand_dtype(ctor: str, pos: int, kid_metas: Sequence[Meta | None], out: Meta) -> str:
    """The dtype a scalar literal takes at input `pos` of an e-node: the other operand's for a
    Binary or Compare, bool for Where's condition, else the node's own."""
    if ctor == "Where":
        return "bool" if pos == 0 else out[1]  # type: ignore[return-value]
    if len(kid_metas) == 2:
        other = kid_metas[1 - pos]
        if other is not None and other[1] is not None:
            return other[1]
    if out[1] is None or out[1] == "bool":
        raise ValueError(f"no dtype for a scalar literal under {ctor}")
    return out[1]


def _origins(t: Tables, graph: Graph) -> dict[int, Node]:
    """E-class -> the original node it holds (the first one, for merged duplicates)."""
    out: dict[int, Node] = {}
    for node in graph.nodes:
        out.setdefault(t.ref[node.id], node)
    return out


def is_own(t: Tables, n: int, node: Node, graph: Graph) -> bool:
    """Whether e-node `n` is original `node` itself (same op, attributes and inputs)."""
    if node.op in ("Input", "Param", "Constant"):
        return t.ctor[n] == LEAF and t.fields[n][0] == node.id
    rank = len(graph.by_id[node.inputs[0]].shape) if node.inputs else 0
    ctor, fields = encode(node, rank)
    return t.ctor[n] == ctor and t.fields[n] == fields and t.children[n] == tuple(t.ref[i] for i in node.inputs)


def to_graph(
    t: Tables,
    ex: Extraction,
    graph: Graph,
    metas: Sequence[Meta | None],
    decoded: Decoded,
    matcher: Matcher | None,
) -> Graph:
    roots = [t.ref[o] for o in graph.outputs]
    if ex.order is not None:
        try:
            return _emit(t, ex, ex.order, graph, metas, decoded, matcher)
        except _NotChildrenFirst:
            pass  # a switch chose a form whose inputs settled later: order it afresh
    return _emit(t, ex, _post_order(ex.choice, t.children, roots), graph, metas, decoded, matcher)


class _NotChildrenFirst(Exception):
    pass


def _emit(
    t: Tables,
    ex: Extraction,
    order: Sequence[int],
    graph: Graph,
    metas: Sequence[Meta | None],
    decoded: Decoded,
    matcher: Matcher | None,
) -> Graph:
    roots = [t.ref[o] for o in graph.outputs]
    origins = _origins(t, graph)
    own = {c: is_own(t, ex.choice[c], node, graph) for c, node in origins.items() if c in ex.choice}
    members = t.nodes_by_class()
    # Provenance flows from the outputs down: a class with no original node of its own
    # belongs to the original node above it, and adds the rule that made it (only a
    # class holding several e-nodes can have been rewritten).
    label: dict[int, str] = {}
    for c in reversed(order):
        n = ex.choice[c]
        node = origins.get(c)
        here = (node.name or f"n{node.id}") if node is not None else label.get(c, "?")
        if matcher is not None and members.size(c) > 1 and not own.get(c, False):
            rule = matcher.rule_of(c, n)
            if rule:
                here = f"{here}/{rule}"
        label[c] = here
        for k in t.children[n]:
            if k not in label:
                label[k] = here

    nodes: list[Node] = []
    ids: dict[int, int] = {}
    scalars: dict[tuple[float, str], int] = {}

    def add(op: str, inputs: Sequence[int], meta: Meta, attrs: dict[str, Any], name: str | None) -> int:
        nid = len(nodes)
        nodes.append(new_node(nid, op, tuple(inputs), tuple(meta[0]), meta[1], attrs, name))  # type: ignore[arg-type]
        return nid

    def scalar(value: float, dtype: str) -> int:
        key = (value, dtype)
        if key not in scalars:
            scalars[key] = add("Constant", (), ((), dtype), {"value": round_to(value, dtype)}, None)
        return scalars[key]

    for c in order:
        n = ex.choice[c]
        ctor = t.ctor[n]
        meta = metas[c]
        assert meta is not None
        if ctor == SCALAR:
            continue
        if ctor == LEAF:
            src = graph.by_id[t.fields[n][0]]
            ids[c] = add(src.op, (), (src.shape, src.dtype), dict(src.attrs), src.name)
            continue
        kids = t.children[n]
        inputs = [ids.get(k, -1) for k in kids]
        if -1 in inputs:  # scalar literals, as constants of the dtype their user needs
            kid_metas = [metas[k] for k in kids]
            for pos, k in enumerate(kids):
                if inputs[pos] == -1:
                    if t.ctor[ex.choice[k]] != SCALAR:
                        raise _NotChildrenFirst
                    value = t.fields[ex.choice[k]][0]
                    inputs[pos] = scalar(value, _operand_dtype(ctor, pos, kid_metas, meta))
        if own.get(c, False):
            node = origins[c]
            ids[c] = add(node.op, inputs, meta, dict(node.attrs), node.name)
        else:
            op, attrs, _ = decoded(ctor, t.fields[n])
            ids[c] = add(op, inputs, meta, dict(attrs), label[c])
    # Scalar constants were appended when first used, so every input precedes its user.
    return Graph(nodes=nodes, outputs=[ids[r] for r in roots], name=graph.name)
