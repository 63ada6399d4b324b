"""Validation that checks what a graph repeats once.

`validate_counting_keys(doc)` gives what `validate.check_document(doc)` gives, and raises what it
raises; `validate_nodes(graph)` raises what `check_document(graph.to_dict())` raises (for a graph
`to_dict` can write). A graph repeats a few shapes and (op, attributes, input metas) combinations
many times, and every check of a node's shape, attributes, inferred shape and dtype is a function of
exactly those and its declared shape and dtype: each distinct combination is checked once
(`_fast_path`; Input and Param nodes, each fed by its own name, every time). Any node it cannot
pass quickly goes through `check_node`, where every error is worded. tests/test_validate.py holds
both to the definition (`test_memos_pass_only_what_the_checks_pass`,
`test_validate_is_the_node_by_node_checks`, `test_validate_graph_on_*`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ops
from ..dtypes import DTYPES
from ..graph import FORMAT, VERSION, Graph, Node, new_node
from ..validate import (Meta, Seen, check_feed, check_node, check_outputs, check_shape, check_top, check_values,
                        check_version, sizes_of)
from .collector import gc_paused
from .keys import attrs_key

_NO_ATTRS: dict[str, Any] = {}
_ARITY = {name: spec.arity for name, spec in ops.OPS.items()}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_counting_keys(doc: Any, consume: bool = False) -> tuple[Graph, int]:
    """`validate(doc)`, and how many keys the document's objects have, counting the top level, the
    nodes and their attrs (no object twice, maybe not all: a lower bound of the true count).

    With `consume` the document is the caller's to throw away: each node's object is dropped from
    doc["nodes"] once read (for a million nodes, 300 MB less at the peak, and the parsed objects'
    memory reused for the Nodes); after an error, doc is only fit to be dropped."""
    with gc_paused(long_lived=True):
        check_top(doc)
        raw_nodes, outputs = doc["nodes"], doc["outputs"]
        seen = Seen(lambda: {r["id"] for r in raw_nodes if isinstance(r, dict) and _is_int(r.get("id"))})
        fast = _fast_path(seen)
        nodes: list[Node] = []
        append, no_attrs = nodes.append, _NO_ATTRS
        count = len(doc)
        for raw in raw_nodes:
            # The fast path takes the common well-formed node; anything else, valid or not, is
            # decided by `check_node`, the one place every error is worded.
            if type(raw) is dict:
                has_attrs, has_name, n_keys = "attrs" in raw, "name" in raw, len(raw)
                attrs = raw["attrs"] if has_attrs else no_attrs
                count += n_keys + (len(attrs) if type(attrs) is dict else 0)
                if n_keys == 5 + has_attrs + has_name:
                    try:  # all five, so no unknown key: there is no room for one
                        nid, op, inputs, shape, dtype = raw["id"], raw["op"], raw["inputs"], raw["shape"], raw["dtype"]
                    except KeyError:
                        pass
                    else:
                        name = raw["name"] if has_name else None
                        if (type(inputs) is list and type(shape) is list and (not has_name or type(name) is str)
                                and (shape_t := fast(nid, op, inputs, shape, dtype, attrs)) is not None):
                            if consume:  # the ids of error messages (seen.ids) are then in seen.metas
                                raw_nodes[len(nodes)] = None
                            append(new_node(nid, op, tuple(inputs), shape_t, dtype, dict(attrs), name))
                            continue
            append(check_node(raw, len(nodes), seen))
            if consume:
                raw_nodes[len(nodes) - 1] = None
        check_outputs(outputs, seen.metas)
        check_version(nodes, doc["version"])
        return Graph(nodes, list(outputs), doc.get("name"), sizes_of(doc)), count


def validate_nodes(graph: Graph) -> None:
    """The checks of `validate(graph.to_dict())`, run on the Node objects without the round trip:
    raises the same GraphError for the same fault."""
    with gc_paused():
        nodes = graph.nodes
        top: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if graph.name is not None:
            top["name"] = graph.name
        if graph.sizes is not None:
            top["sizes"] = graph.sizes
        top.update(nodes=[], outputs=list(graph.outputs))
        check_top(top)
        seen = Seen(lambda: {n.id for n in nodes if _is_int(n.id)})
        fast = _fast_path(seen)
        for index, n in enumerate(nodes):
            inputs, shape, attrs, name = n.inputs, n.shape, n.attrs, n.name
            if ((type(inputs) is tuple or type(inputs) is list) and (type(shape) is tuple or type(shape) is list)
                    and type(attrs) is dict and (name is None or type(name) is str)
                    and fast(n.id, n.op, inputs, shape, n.dtype, attrs) is not None):
                continue
            check_node(n.to_dict(), index, seen)  # the document's node, as written
        check_outputs(top["outputs"], seen.metas)


def _fast_path(seen: Seen) -> Callable[..., tuple[int, ...] | None]:
    """The per-node check of a validation recording into `seen` (a closure: the hot loop reads its
    memos as cell variables)."""
    metas, feeds = seen.metas, seen.feeds
    shapes: dict[tuple[int, ...], tuple[int, ...]] = {}  # the shapes check_shape passed, interned
    passed: dict[tuple[Any, ...], Meta] = {}  # (op, attrs key, shape, dtype, input metas) -> meta
    arity = _ARITY

    def fast(nid: Any, op: Any, inputs: list[Any] | tuple[Any, ...], shape: list[Any] | tuple[Any, ...],
             dtype: Any, attrs: Any) -> tuple[int, ...] | None:
        """A node's shape (interned) when it passes every check of `check_node`, recorded as
        `check_node` records it; None when this cannot tell quickly, with nothing recorded.

        The caller has checked what differs between documents and Node objects: the node's keys,
        the type of inputs and shape (a list or a tuple), and that name is None or a string."""
        if (type(nid) is not int or nid < 0 or nid in metas or type(op) is not str or type(dtype) is not str
                or type(attrs) is not dict):
            return None
        n = len(inputs)
        if arity.get(op) != n:
            return None
        # Only ints (not bools, which equal 0 and 1) and ids defined before: no cycle, topological order.
        try:
            if n == 2:
                a, b = inputs
                if type(a) is not int or type(b) is not int:
                    return None
                ins: tuple[Meta, ...] = (metas[a], metas[b])
            elif n == 1:
                a, = inputs
                if type(a) is not int:
                    return None
                ins = (metas[a],)
            else:
                for a in inputs:
                    if type(a) is not int:
                        return None
                ins = tuple([metas[a] for a in inputs])
        except KeyError:
            return None
        for d in shape:
            if type(d) is not int:
                return None
        st = tuple(shape)
        shape_t = shapes.get(st)
        if shape_t is None:
            try:
                check_shape(list(shape))
            except ValueError:
                return None
            shape_t = shapes[st] = st
        if op == "Input" or op == "Param":
            # fed by name, a name per node: checked every time, not memoised
            if dtype not in DTYPES:
                return None
            meta: Meta = (shape_t, dtype)
            try:
                check_values(op, attrs, shape_t, dtype, ())
                check_feed(attrs["name"], nid, meta, feeds)
            except Exception:  # `check_node` raises it as it always did
                return None
        else:
            if not attrs:
                akey: tuple[Any, ...] | None = ()
            elif len(akey := tuple(attrs.items())) != 1 or type(akey[0][1]) is not str:  # else: as attrs_key
                if (akey := attrs_key(attrs)) is None:
                    return None
            key = (op, akey, shape_t, dtype, ins)
            known = passed.get(key)
            if known is None:
                if dtype not in DTYPES:
                    return None
                known = (shape_t, dtype)
                try:
                    check_values(op, attrs, shape_t, dtype, list(ins))
                except Exception:  # ValueError, or anything else: `check_node` raises it as it always did
                    return None
                passed[key] = known
            meta = known
        metas[nid] = meta
        return shape_t

    return fast
