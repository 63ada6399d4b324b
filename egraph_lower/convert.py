"""Extraction -> node graph: topological, scalars as constants of the dtype that uses them.

- Nodes come out in topological order: the scalar constants first, then the chosen
  classes children first (the order extraction settled them in, or a post-order walk).
- A chosen e-node that is an original node's own keeps that node's attributes and name.
- `Scalar v` becomes a `Constant` of shape [] and the dtype of the op that uses it,
  with the value rounded to that dtype, one node per (value, dtype), all at the
  top of the graph; the elementwise
  op broadcasts it, so nothing full-size is materialised.
- Every new node's `name` says which original node and which rules it came from:
  `<original name or nN>/<rule>[/<rule>...]`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from .dtypes import round_to
from .egraph.language import LEAF, SCALAR, TWINS, encode, input_shapes
from .egraph.tables import MAX_ARITY, Tables
from .extract import ClassMetas, Decoded, Extraction, distinct_rows
from .extract.walks import post_order
from .fast.columns import NodeColumns
from .graph import Graph, Node, attrs_key, new_node
from .ops import LEAF_OPS
from .provenance import Matcher
from .validate import Meta


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


def is_own(t: Tables, n: int, node: Node, graph: Graph) -> bool:
    """Whether e-node `n` is original `node` itself (same op, attributes and inputs)."""
    if node.op in ("Input", "Param", "Constant"):
        return t.ctor[n] == LEAF and t.fields[n][0] == node.id
    first = graph.by_id[node.inputs[0]].shape if node.inputs else ()
    shapes = input_shapes(node.op, lambda: tuple(graph.by_id[i].shape for i in node.inputs))
    ctor, fields = encode(node, len(first), first, shapes)
    return t.ctor[n] in (ctor, TWINS.get(ctor)) and t.fields[n] == fields and t.children[n] == tuple(t.ref[i] for i in node.inputs)


def to_graph(
    t: Tables,
    ex: Extraction,
    graph: Graph,
    metas: ClassMetas,
    decoded: Decoded,
    matcher: Matcher | None,
) -> Graph:
    roots = [t.ref[o] for o in graph.outputs]
    if ex.order is not None:
        try:
            return _emit(t, ex, ex.order, graph, metas, decoded, matcher)
        except _NotChildrenFirst:
            pass  # a switch chose a form whose inputs settled later: order it afresh
    choice, children = ex.choice, t.children
    # children first, the first input's side first (the order the nodes are written in)
    order = post_order(roots, lambda c: reversed(children[choice[c]]), t.n_classes)
    return _emit(t, ex, order, graph, metas, decoded, matcher)


_ID, _INPUTS = attrgetter("id"), attrgetter("inputs")


class _NotChildrenFirst(Exception):
    pass


def _own_sigs(t: Tables, graph: Graph, origin: list[Node]) -> np.ndarray:
    """Per original node in `origin`: the signature of its own e-node (-1 if it has none).
    A leaf's own e-node is `Leaf <its id>`; any other's, `encode`d from its op and attributes
    (or that constructor's kernel-only twin, for a half-precision node: `egraph/load.py`)."""
    sig_ids = {key: i for i, key in enumerate(t.sigs)}
    by_id = graph.by_id
    out = np.empty(len(origin), dtype=np.int64)
    cache: dict[tuple[Any, ...], int] = {}
    for i, node in enumerate(origin):
        if node.op in LEAF_OPS:
            out[i] = sig_ids.get((LEAF, (node.id,)), -1)
            continue
        first = by_id[node.inputs[0]].shape if node.inputs else ()
        shapes = input_shapes(node.op, lambda: tuple(by_id[i].shape for i in node.inputs))
        key = (node.op, attrs_key(node.attrs), first, shapes)
        if key not in cache or key[1] is None:
            ctor, fields = encode(node, len(first), first, shapes)
            own = sig_ids.get((ctor, fields), -1)
            if own < 0 and ctor in TWINS:
                own = sig_ids.get((TWINS[ctor], fields), -1)
            cache[key] = own
        out[i] = cache[key]
    return out


def _emit(
    t: Tables,
    ex: Extraction,
    order: Sequence[int],
    graph: Graph,
    metas: ClassMetas,
    decoded: Decoded,
    matcher: Matcher | None,
) -> Graph:
    """The chosen e-nodes as nodes, `order` (children first) prepared as arrays, then one
    loop that makes the nodes: scalar constants first, then one node per non-scalar class."""
    n = len(order)
    cls = np.asarray(order, dtype=np.int64)
    picked = np.fromiter(map(ex.choice.__getitem__, order), dtype=np.int64, count=n)
    sig, kids = t.sig_array[picked], t.kids_array[picked]
    has_kid = kids >= 0
    safe = np.where(has_kid, kids, 0)
    sig_scalar = np.array([ctor == SCALAR for ctor, _ in t.sigs], dtype=bool)
    sig_leaf = np.array([ctor == LEAF for ctor, _ in t.sigs], dtype=bool)
    scalar = sig_scalar[sig]
    pos = np.full(t.n_classes, -1, dtype=np.int64)
    pos[cls] = np.arange(n)
    kpos = np.where(has_kid, pos[safe], -2)
    kid_scalar = (kpos >= 0) & scalar[np.maximum(kpos, 0)]
    if ((kpos == -1) | (has_kid & ~kid_scalar & (kpos >= np.arange(n)[:, None]))).any():
        raise _NotChildrenFirst

    # Scalar literals: one Constant per (value, dtype), the dtype its user's operand needs.
    mids = metas.ids
    uses = np.argwhere(kid_scalar)  # (position, operand)
    const_of_use = np.empty(len(uses), dtype=np.int64)
    constants: dict[tuple[float, str], int] = {}
    if len(uses):
        user, operand = uses[:, 0], uses[:, 1]
        kid_meta = np.where(has_kid[user], mids[safe[user]], -2)
        rows, inverse = distinct_rows(sig[user], operand, mids[cls[user]], kid_meta, sig[kpos[user, operand]])
        use_const = []
        for row in rows.tolist():
            k_metas = [metas.table[i] if i >= 0 else None for i in row[3:3 + MAX_ARITY] if i != -2]
            dtype = _operand_dtype(t.sigs[row[0]][0], row[1], k_metas, metas.table[row[2]])
            use_const.append(constants.setdefault((t.sigs[row[-1]][1][0], dtype), len(constants)))
        const_of_use = np.array(use_const, dtype=np.int64)[inverse.ravel()]
        # numbered in the order of their first use, whatever order the distinct rows came in
        first_use = np.full(len(constants), len(uses))
        np.minimum.at(first_use, const_of_use, np.arange(len(uses)))
        rank = np.empty(len(constants), dtype=np.int64)
        rank[np.argsort(first_use)] = np.arange(len(constants))
        const_of_use = rank[const_of_use]
        constants = {key: int(rank[i]) for key, i in constants.items()}

    # Node ids: the constants, then the non-scalar classes in order.
    n_const = len(constants)
    out_id = np.cumsum(~scalar) - 1 + n_const
    inputs = np.where(has_kid, out_id[np.maximum(kpos, 0)], -1)
    if len(uses):
        inputs[uses[:, 0], uses[:, 1]] = const_of_use

    # Original nodes: a class holding one keeps its attributes and name where its chosen
    # e-node is the node itself (same signature, same input classes).
    node_pos = pos[np.fromiter(map(t.ref.__getitem__, map(_ID, graph.nodes)), dtype=np.int64, count=len(graph.nodes))]
    chosen_at = np.flatnonzero(node_pos >= 0)
    _, first = np.unique(node_pos[chosen_at], return_index=True)  # the first node of each chosen class
    opos = node_pos[chosen_at[first]]
    onodes = [graph.nodes[i] for i in chosen_at[first].tolist()]
    origin_pos = dict(zip(opos.tolist(), onodes))
    own_sig = _own_sigs(t, graph, onodes)
    want_kids = np.full((len(onodes), kids.shape[1]), -1, dtype=np.int64)  # their inputs' classes
    arity = np.fromiter(map(len, map(_INPUTS, onodes)), dtype=np.int64, count=len(onodes))
    want_kids[np.repeat(np.arange(len(onodes)), arity), np.arange(int(arity.sum())) - np.repeat(np.cumsum(arity) - arity, arity)] = \
        np.fromiter(map(t.ref.__getitem__, chain.from_iterable(map(_INPUTS, onodes))), dtype=np.int64, count=int(arity.sum()))
    own = np.zeros(n, dtype=bool)
    own[opos[(sig[opos] == own_sig) & (kids[opos] == want_kids).all(axis=1)]] = True

    # Provenance: a class without an original node belongs to its last user in `order`
    # (the first met from the outputs down), and each rewritten class adds its rule.
    parent = np.full(n, -1, dtype=np.int64)
    used = kpos >= 0
    np.maximum.at(parent, kpos[used], np.broadcast_to(np.arange(n)[:, None], kids.shape)[used])
    suffix = _rules(t, cls, picked, own, matcher)
    base: list[str | None] = [None] * n
    for p_, node in origin_pos.items():
        base[p_] = node.name or f"n{node.id}"
    parent_l = parent.tolist()
    label: list[str] = [""] * n
    for i in range(n - 1, -1, -1):
        here = base[i]
        if here is None:
            j = parent_l[i]
            here = label[j] if j >= 0 else "?"
        rule = suffix[i]
        label[i] = f"{here}/{rule}" if rule else here

    # The nodes: the constants, then one per non-scalar class, made column by column.
    nodes: list[Node] = []
    for (value, dtype), _ in sorted(constants.items(), key=lambda kv: kv[1]):
        nodes.append(new_node(len(nodes), "Constant", (), (), dtype, {"value": round_to(value, dtype)}, None))
    keep = np.flatnonzero(~scalar)
    meta_k = mids[cls[keep]]
    assert (meta_k >= 0).all(), "a chosen class without shape and dtype"
    shape, dtype_ = _objects(m[0] for m in metas.table)[meta_k], _objects(m[1] for m in metas.table)[meta_k]
    decoded_sigs = _sig_decoded(t, decoded)
    ops = _objects(None if d is None else d[0] for d in decoded_sigs)[sig[keep]]
    attrs = _objects(None if d is None else d[1] for d in decoded_sigs)[sig[keep]]
    names = _objects(label)[keep]
    # An original node's own e-node, and a leaf, keep that node's op, attributes and name.
    keep_at = np.full(n, -1, dtype=np.int64)
    keep_at[keep] = np.arange(len(keep))
    for p_, node in origin_pos.items():
        if own[p_] and (k := int(keep_at[p_])) >= 0:
            ops[k], attrs[k], names[k] = node.op, node.attrs, node.name
    sigs = t.sigs
    for j in np.flatnonzero(sig_leaf[sig[keep]]).tolist():
        src = graph.by_id[sigs[sig[keep[j]]][1][0]]
        ops[j], attrs[j], names[j], shape[j], dtype_[j] = src.op, src.attrs, src.name, src.shape, src.dtype
    root_out = out_id[pos[[t.ref[o] for o in graph.outputs]]].tolist()
    # The nodes stay columns (`fast/columns.py`): written, checked and versioned from them, made
    # into `Node`s only if someone reads `nodes`.
    columns = NodeColumns(nodes, ops, attrs, inputs[keep], shape, dtype_, names)
    return Graph.from_columns(columns, root_out, graph.name)


def _objects(values: Iterable[Any]) -> np.ndarray:
    """A 1-D object array of `values` as they are (tuples not unpacked into a second axis)."""
    return np.fromiter(values, dtype=object)


def _sig_decoded(t: Tables, decoded: Decoded) -> list[tuple[str, dict[str, Any]] | None]:
    """(op, attrs) per signature; None for a leaf or a scalar."""
    return [None if ctor in (LEAF, SCALAR) else decoded(ctor, fields)[:2] for ctor, fields in t.sigs]


def _rules(t: Tables, cls: np.ndarray, picked: np.ndarray, own: np.ndarray, matcher: Matcher | None) -> list[str | None]:
    """The rule that made each chosen e-node, where its class was rewritten (holds more than one e-node)."""
    out: list[str | None] = [None] * len(cls)
    if matcher is None:
        return out
    members = t.nodes_by_class()
    sizes = np.diff(members.starts_array)
    ask = np.flatnonzero((sizes[cls] > 1) & ~own)
    for i, rule in zip(ask.tolist(), matcher.rules_of(cls[ask], picked[ask])):
        out[i] = rule
    return out
