"""Every check of the graph format (version 1), and shape/dtype inference for one node.

`infer` is the single source of truth for what an op computes from its inputs'
shapes and dtypes; `validate` calls it for every distinct (op, attributes, input
metas) of a document's non-leaf nodes and the e-graph side calls it for every
e-node it builds. A dtype of None marks a broadcast scalar literal whose dtype is
decided by the op that uses it. `validate_graph` makes validate's checks on a
Graph's nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from . import ops
from .dtypes import DTYPES, FLOAT_DTYPES, INT_DTYPES
from .errors import GraphError
from .graph import FORMAT, VERSION, Graph, Node, attrs_key, gc_paused, new_node
from .opdefs import OPDEFS
from .opdefs.base import Meta
from .opdefs.meta import MAX_ELEMENTS, broadcast_shapes, check_shape
from .opdefs.meta import NAME as _NAME
from .opdefs.meta import is_int as _is_int
from .opdefs.meta import show as _r
from .opdefs.meta import show_shape as _s

_FLOAT_MAX = {name: float(ml_dtypes.finfo(DTYPES[name]).max) for name in FLOAT_DTYPES}
_INT_RANGE = {"i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1)}
_TOP_KEYS = {"format", "version", "name", "nodes", "outputs"}
_NODE_KEYS = {"id", "op", "attrs", "inputs", "shape", "dtype", "name"}
_REQUIRED_NODE_KEYS = ("inputs", "shape", "dtype")

__all__ = ["Meta", "MAX_ELEMENTS", "broadcast_shapes", "check_shape", "infer", "check_attrs", "validate",
           "validate_counting_keys", "validate_graph"]


def infer(op: str, attrs: Mapping[str, Any], inputs: Sequence[Meta]) -> Meta:
    """The (shape, dtype) of an `op` node with these inputs; ValueError on a mismatch.

    Attributes are assumed checked (`check_attrs`) and the arity right. Leaves raise: theirs is declared."""
    d = OPDEFS.get(op) if isinstance(op, str) else None
    if d is None:
        raise ValueError(f"unknown op {_r(op)}")
    if d.infer is None:
        raise ValueError("a leaf has no inputs to infer from: its shape and dtype are declared")
    return d.infer(attrs, inputs)


def check_attrs(op: str, attrs: Mapping[str, Any], inputs: Sequence[Meta] | None = None) -> None:
    """The attributes of an `op` node: keys, types and values; with `inputs`, also their fit to them."""
    d = OPDEFS.get(op) if isinstance(op, str) else None
    if d is None:
        raise ValueError(f"unknown op {_r(op)}")
    declared = {a.name for a in d.attrs}
    for key in attrs:
        if key not in declared:
            takes = ", ".join(a.name for a in d.attrs) or "no attributes"
            raise ValueError(f"unknown attribute {_r(key)} ({op} takes {takes})")
    for a in d.attrs:
        if a.name in attrs:
            a.check(attrs[a.name])
        elif a.required:
            raise ValueError(f"missing attribute {_r(a.name)}")
    if d.check is not None:
        d.check(attrs)
    if inputs is not None and d.infer is not None:
        d.infer(attrs, inputs)


def _leaves(value: Any, shape: tuple[int, ...]) -> list[Any]:
    """The scalars of a Constant's value: a scalar fills the shape, nested lists must have exactly it."""
    if not isinstance(value, list):
        return [value]
    level = [value]
    for d in shape:
        if not all(isinstance(v, list) and len(v) == d for v in level):
            break
        level = [x for v in level for x in v]
    else:
        if not any(isinstance(v, list) for v in level):
            return level
    apparent: list[int] = []
    v: Any = value
    while isinstance(v, list):
        apparent.append(len(v))
        v = v[0] if v else None
    raise ValueError(f"value is a nested list of shape {apparent} (or ragged), not {_s(shape)}")


def _constant(value: Any, shape: tuple[int, ...], dtype: str) -> None:
    """A Constant's value: of the node's shape (or a scalar) and of its dtype."""
    limit = _FLOAT_MAX.get(dtype, math.inf)
    for v in _leaves(value, shape):
        if dtype == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"value {_r(v)} is not a bool (write true or false)")
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"value {_r(v)} is not a number")
        elif isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"value {_r(v)} is not finite")
        elif dtype in INT_DTYPES:
            lo, hi = _INT_RANGE[dtype]
            if isinstance(v, float) and not v.is_integer():
                raise ValueError(f"value {_r(v)} is not an integer (dtype {dtype})")
            if not lo <= v <= hi:
                raise ValueError(f"value {_r(v)} is out of range for {dtype}")
        elif abs(v) > limit and not _rounds_finite(v, dtype):
            raise ValueError(f"value {_r(v)} overflows {dtype}")


def _rounds_finite(v: int | float, dtype: str) -> bool:
    try:
        with np.errstate(over="ignore"):
            return bool(np.isfinite(np.float64(v).astype(DTYPES[dtype])))
    except OverflowError:  # an int beyond float64
        return False


# ---- the document -------------------------------------------------------------------------------


def validate(doc: Any) -> Graph:
    """The Graph of a parsed document, after every check of the format (GraphError otherwise)."""
    return validate_counting_keys(doc)[0]


def validate_counting_keys(doc: Any, consume: bool = False) -> tuple[Graph, int]:
    """`validate(doc)`, and how many keys the document's objects have, counting the top level, the
    nodes and their attrs (no object twice, maybe not all: a lower bound of the true count).

    With `consume` the document is the caller's to throw away: each node's object is dropped from
    doc["nodes"] once read (for a million nodes, 300 MB less at the peak, and the parsed objects'
    memory reused for the Nodes); after an error, doc is only fit to be dropped."""
    with gc_paused(long_lived=True):
        _check_top(doc)
        raw_nodes, outputs = doc["nodes"], doc["outputs"]
        chk = _Checker(lambda: {r["id"] for r in raw_nodes if isinstance(r, dict) and _is_int(r.get("id"))})
        nodes: list[Node] = []
        append, fast, no_attrs = nodes.append, chk.fast, _NO_ATTRS
        count = len(doc)
        for raw in raw_nodes:
            # The fast path takes the common well-formed node; anything else, valid or not, is
            # decided by `_node`, the one place every error is worded.
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
                            if consume:  # the ids of error messages (chk.ids) are then in metas
                                raw_nodes[len(nodes)] = None
                            append(new_node(nid, op, tuple(inputs), shape_t, dtype, dict(attrs), name))
                            continue
            append(_node(raw, len(nodes), chk.ids, chk.metas, chk.feeds))
            if consume:
                raw_nodes[len(nodes) - 1] = None
        _check_outputs(outputs, chk.metas)
        return Graph(nodes, list(outputs), doc.get("name")), count


def validate_graph(graph: Graph) -> None:
    """The checks of `validate(graph.to_dict())`, run on the Node objects without the round trip:
    raises the same GraphError for the same fault."""
    with gc_paused():
        nodes = graph.nodes
        top: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if graph.name is not None:
            top["name"] = graph.name
        top.update(nodes=[], outputs=list(graph.outputs))
        _check_top(top)
        chk = _Checker(lambda: {n.id for n in nodes if _is_int(n.id)})
        fast = chk.fast
        for index, n in enumerate(nodes):
            inputs, shape, attrs, name = n.inputs, n.shape, n.attrs, n.name
            if ((type(inputs) is tuple or type(inputs) is list) and (type(shape) is tuple or type(shape) is list)
                    and type(attrs) is dict and (name is None or type(name) is str)
                    and fast(n.id, n.op, inputs, shape, n.dtype, attrs) is not None):
                continue
            _node(n.to_dict(), index, chk.ids, chk.metas, chk.feeds)  # the document's node, as written
        _check_outputs(top["outputs"], chk.metas)


def _check_top(doc: Any) -> None:
    """The document object and its top-level keys (not the nodes, nor the outputs' ids)."""
    if not isinstance(doc, dict):
        raise GraphError(f"a graph document must be a JSON object, got {type(doc).__name__}")
    for key in doc:
        if key not in _TOP_KEYS:
            raise GraphError(f"unknown top-level key {_r(key)}")
    for key in ("format", "version", "nodes", "outputs"):
        if key not in doc:
            raise GraphError(f"missing top-level key {_r(key)}")
    if doc["format"] != FORMAT:
        raise GraphError(f"format is {_r(doc['format'])}, expected {FORMAT!r}")
    if not _is_int(doc["version"]) or doc["version"] != VERSION:
        raise GraphError(f"version is {_r(doc['version'])}; this reader knows version {VERSION}")
    if "name" in doc and not isinstance(doc["name"], str):
        raise GraphError(f"the graph's name must be a string, got {_r(doc['name'])}")
    if not isinstance(doc["nodes"], list):
        raise GraphError("'nodes' must be a list of node objects")
    if not isinstance(doc["outputs"], list):
        raise GraphError("'outputs' must be a list of node ids")


def _check_outputs(outputs: list[Any], metas: dict[int, Meta]) -> None:
    for i, out in enumerate(outputs):
        if not _is_int(out) or out not in metas:
            raise GraphError(f"outputs[{i}] is {_r(out)}, not the id of a node")


_NO_ATTRS: dict[str, Any] = {}
_NAMED = (object(),)  # the attributes key of every {"name": a valid name}
_ARITY = {name: spec.arity for name, spec in ops.OPS.items()}


class _Checker:
    """The state of one validation: the nodes so far, and memos of the checks already passed.

    A graph repeats a few shapes and (op, attributes, input metas) combinations many times, and
    every check of a node's shape, attributes, inferred shape and dtype is a function of exactly
    those (and its declared shape and dtype): each distinct combination is checked once."""

    def __init__(self, all_ids: Callable[[], set[int]]) -> None:
        self.metas: dict[int, Meta] = {}
        self.feeds: dict[str, tuple[int, Meta]] = {}
        self._all_ids = all_ids
        self._ids: set[int] | None = None
        self.fast = _fast_path(self.metas, self.feeds)

    def ids(self) -> set[int]:
        """The ids of every node of the document (only error messages need them)."""
        if self._ids is None:
            self._ids = self._all_ids()
        return self._ids


def _fast_path(metas: dict[int, Meta], feeds: dict[str, tuple[int, Meta]]) -> Callable[..., tuple[int, ...] | None]:
    """The per-node check of a validation recording into metas and feeds (a closure: the hot loop
    reads its memos as cell variables)."""
    shapes: dict[tuple[int, ...], tuple[int, ...]] = {}  # the shapes check_shape passed, interned
    passed: dict[tuple[Any, ...], Meta] = {}  # (op, attrs key, shape, dtype, input metas) -> meta
    arity = _ARITY

    def fast(nid: Any, op: Any, inputs: list[Any] | tuple[Any, ...], shape: list[Any] | tuple[Any, ...],
             dtype: Any, attrs: Any) -> tuple[int, ...] | None:
        """A node's shape (interned) when it passes every check of `_node`, recorded as `_node`
        records it; None when this cannot tell quickly, with nothing recorded.

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
        if not attrs:
            akey: tuple[Any, ...] | None = ()
        elif len(akey := tuple(attrs.items())) != 1 or type(akey[0][1]) is not str:  # else: as attrs_key
            if (akey := attrs_key(attrs)) is None:
                return None
        elif (op == "Input" or op == "Param") and akey[0][0] == "name":
            # check_attrs of {"name": v} is the check of v: made here, and the rest memoised once, not
            # once for every name of a graph's thousands of weights
            try:
                _NAME(akey[0][1])
            except ValueError:
                return None
            akey = _NAMED
        key = (op, akey, shape_t, dtype, ins)
        meta = passed.get(key)
        if meta is None:
            if dtype not in DTYPES:
                return None
            meta = (shape_t, dtype)
            try:
                check_attrs(op, attrs)
                if op == "Constant":
                    _constant(attrs["value"], shape_t, dtype)
                elif op not in ops.LEAF_OPS and infer(op, attrs, list(ins)) != meta:
                    return None
            except Exception:  # ValueError, or anything else: `_node` raises it as it always did
                return None
            passed[key] = meta
        if op == "Input" or op == "Param":
            try:
                _feed(attrs["name"], nid, meta, feeds)
            except ValueError:
                return None
        metas[nid] = meta
        return shape_t

    return fast


def _node(raw: Any, index: int, ids: Callable[[], set[int]], metas: dict[int, Meta],
          feeds: dict[str, tuple[int, Meta]]) -> Node:
    """One node of a document after every check (GraphError otherwise), recorded in metas and feeds."""
    if not isinstance(raw, dict):
        raise GraphError(f"nodes[{index}] must be an object, got {type(raw).__name__}")
    if "id" not in raw:
        raise GraphError(f"nodes[{index}] has no 'id'")
    nid = raw["id"]
    if not _is_int(nid) or nid < 0:
        raise GraphError(f"nodes[{index}] has id {_r(nid)}, not a non-negative integer")
    op = raw.get("op")
    if not isinstance(op, str) or op not in ops.OPS:
        raise GraphError("missing key 'op'" if "op" not in raw else f"unknown op {_r(op)}", node=nid)

    def fail(message: str) -> GraphError:
        return GraphError(message, node=nid, op=op)

    for key in raw:
        if key not in _NODE_KEYS:
            raise fail(f"unknown key {_r(key)}")
    for key in _REQUIRED_NODE_KEYS:
        if key not in raw:
            raise fail(f"missing key {_r(key)}")
    if nid in metas:
        raise fail(f"duplicate id {nid}")
    spec = ops.OPS[op]
    inputs = raw["inputs"]
    if not isinstance(inputs, list) or not all(_is_int(i) and i >= 0 for i in inputs):
        raise fail(f"'inputs' must be a list of node ids, got {_r(inputs)}")
    if len(inputs) != spec.arity:
        names = f" ({', '.join(spec.inputs)})" if spec.inputs else ""
        raise fail(f"takes {spec.arity} input{'s' * (spec.arity != 1)}{names}, got {len(inputs)}")
    for i in inputs:
        if i == nid:
            raise fail(f"input {i} is the node itself (a cycle)")
        if i not in metas:
            if i in ids():
                raise fail(f"input {i} is not defined before it (nodes must be in topological order)")
            raise fail(f"input {i} is not the id of any node")
    dtype = raw["dtype"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise fail(f"unknown dtype {_r(dtype)} (expected one of {', '.join(DTYPES)})")
    if "name" in raw and not isinstance(raw["name"], str):
        raise fail(f"name must be a string, got {_r(raw['name'])}")
    attrs = raw.get("attrs", {})
    if not isinstance(attrs, dict):
        raise fail(f"attrs must be an object, got {_r(attrs)}")
    try:
        shape = check_shape(raw["shape"])
        check_attrs(op, attrs)
        meta = (shape, dtype)
        if op == "Constant":
            _constant(attrs["value"], shape, dtype)
        elif op in ops.LEAF_OPS:
            _feed(attrs["name"], nid, meta, feeds)
        else:
            want = infer(op, attrs, [metas[i] for i in inputs])
            if want[0] != shape:
                raise ValueError(f"declared shape {_s(shape)}, but the inputs give {_s(want[0])}")
            if want[1] != dtype:
                raise ValueError(f"declared dtype {dtype}, but the inputs give {want[1]}")
    except ValueError as e:
        raise fail(str(e)) from None
    metas[nid] = meta
    return Node(nid, op, tuple(inputs), shape, dtype, dict(attrs), raw.get("name"))


def _feed(name: str, nid: int, meta: Meta, feeds: dict[str, tuple[int, Meta]]) -> None:
    """Inputs and Params are fed by name: two nodes may share a name only if they agree on it."""
    other = feeds.setdefault(name, (nid, meta))
    if other[1] != meta:
        raise ValueError(f"name {_r(name)} is also fed to node {other[0]} as {_s(other[1][0])} {other[1][1]}")
