"""Every check of the graph format, and shape/dtype inference for one node.

`infer` is the single source of truth for what an op computes from its inputs'
shapes and dtypes (each op's own inference is declared in `opdefs/`); validation
calls it for every non-leaf node and the e-graph side for every e-node it builds.
A dtype of None marks a broadcast scalar literal whose dtype is decided by the op
that uses it. `check_document` is the definition of a valid document, node by
node; `document.py` reads and checks graphs by it (through `fast/`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import ops
from .dtypes import DTYPES, FLOAT_MAX, INT_DTYPES
from .errors import GraphError
from .graph import FORMAT, Graph, Node
from .versions import VERSIONS, first_newer
from .opdefs import OPDEFS
from .opdefs.base import Meta
from .opdefs.meta import MAX_ELEMENTS, broadcast_shapes, check_shape
from .opdefs.meta import is_int as _is_int
from .opdefs.meta import show as _r
from .opdefs.meta import show_shape as _s

_INT_RANGE = {"i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1)}
_TOP_KEYS = {"format", "version", "name", "sizes", "nodes", "outputs"}
_NODE_KEYS = {"id", "op", "attrs", "inputs", "shape", "dtype", "name"}
_REQUIRED_NODE_KEYS = ("inputs", "shape", "dtype")

__all__ = ["Meta", "MAX_ELEMENTS", "broadcast_shapes", "check_shape", "infer", "check_attrs", "check_document"]


def infer(op: str, attrs: Mapping[str, Any], inputs: Sequence[Meta]) -> Meta:
    """The (shape, dtype) of an `op` node with these inputs; ValueError on a mismatch.

    Attributes are assumed checked (`check_attrs`) and the arity right. Leaves raise: theirs is declared."""
    d = OPDEFS.get(op) if isinstance(op, str) else None
    if d is None:
        raise ValueError(f"unknown op {_r(op)}")
    if d.infer is None:
        raise ValueError("a leaf has no inputs to infer from: its shape and dtype are declared")
    if op == "Kernel":
        from . import patterns  # noqa: F401  (installs the Kernel op's pattern machinery)
    return d.infer(attrs, inputs)


def check_attrs(op: str, attrs: Mapping[str, Any], inputs: Sequence[Meta] | None = None) -> None:
    """The attributes of an `op` node: keys, types and values; with `inputs`, also their fit to them."""
    d = OPDEFS.get(op) if isinstance(op, str) else None
    if d is None:
        raise ValueError(f"unknown op {_r(op)}")
    if op == "Kernel":
        from . import patterns  # noqa: F401  (installs the Kernel op's pattern machinery)
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
    limit = FLOAT_MAX.get(dtype, math.inf)
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
# `check_document` is the definition: the document object, then every node in order (`check_node`,
# the one place a node's errors are worded), then the outputs and the version. `document.from_dict`
# and `document.validated` decide exactly as it does, by fast/validator.py, which checks what a graph
# repeats once.


def check_document(doc: Any) -> Graph:
    """The Graph of a parsed document after every check of the format, node by node (GraphError
    otherwise): the definition that `document.from_dict` and `document.validated` meet faster."""
    check_top(doc)
    seen = Seen(lambda: {r["id"] for r in doc["nodes"] if isinstance(r, dict) and _is_int(r.get("id"))})
    nodes = [check_node(raw, index, seen) for index, raw in enumerate(doc["nodes"])]
    check_outputs(doc["outputs"], seen.metas)
    check_version(nodes, doc["version"])
    return Graph(nodes, list(doc["outputs"]), doc.get("name"), sizes_of(doc))


def check_version(nodes: list[Node], version: int) -> None:
    """A document's nodes against the version it declares (versions.py): a document of a
    released version holds only what that version has."""
    found = first_newer(nodes, version)
    if found is not None:
        n, what, needs = found
        raise GraphError(f"{what} is new in version {needs}, but the document says version {version} "
                         f"(write \"version\": {needs})", node=n.id, op=n.op)


class Seen:
    """What a validation knows of the nodes checked so far: each one's (shape, dtype), and which
    node each Input/Param name feeds."""

    def __init__(self, all_ids: Callable[[], set[int]]) -> None:
        """`all_ids`: the ids of every node of the document, asked for only to word an error."""
        self.metas: dict[int, Meta] = {}
        self.feeds: dict[str, tuple[int, Meta]] = {}
        self._all_ids = all_ids
        self._ids: set[int] | None = None

    def ids(self) -> set[int]:
        if self._ids is None:
            self._ids = self._all_ids()
        return self._ids


def check_top(doc: Any) -> None:
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
    if not _is_int(doc["version"]) or doc["version"] not in VERSIONS:
        known = ", ".join(str(v) for v in VERSIONS)
        raise GraphError(f"version is {_r(doc['version'])}; this reader knows versions {known}")
    if "name" in doc and not isinstance(doc["name"], str):
        raise GraphError(f"the graph's name must be a string, got {_r(doc['name'])}")
    if "sizes" in doc:
        check_sizes(doc["sizes"])
    if not isinstance(doc["nodes"], list):
        raise GraphError("'nodes' must be a list of node objects")
    if not isinstance(doc["outputs"], list):
        raise GraphError("'outputs' must be a list of node ids")


def check_sizes(sizes: Any) -> None:
    """The optional `sizes` of a graph specialised from one with symbolic sizes: an object from each
    symbolic size's name to the non-negative integer it was specialised to."""
    if not isinstance(sizes, dict):
        raise GraphError(f"'sizes' must be an object of size names to integers, got {_r(sizes)}")
    for name, value in sizes.items():
        if not _is_int(value) or value < 0:
            raise GraphError(f"sizes[{_r(name)}] is {_r(value)}, not a non-negative integer")


def sizes_of(doc: Mapping[str, Any]) -> dict[str, int] | None:
    """A checked document's `sizes` (a copy), or None."""
    sizes = doc.get("sizes")
    return None if sizes is None else dict(sizes)


def check_outputs(outputs: list[Any], metas: Mapping[int, Meta]) -> None:
    for i, out in enumerate(outputs):
        if not _is_int(out) or out not in metas:
            raise GraphError(f"outputs[{i}] is {_r(out)}, not the id of a node")


def check_node(raw: Any, index: int, seen: Seen) -> Node:
    """Node `index` of a document after every check (GraphError otherwise), recorded in `seen`."""
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
    metas = seen.metas
    if nid in metas:
        raise fail(f"duplicate id {nid}")
    spec = ops.OPS[op]
    inputs = raw["inputs"]
    if not isinstance(inputs, list) or not all(_is_int(i) and i >= 0 for i in inputs):
        raise fail(f"'inputs' must be a list of node ids, got {_r(inputs)}")
    if spec.max_inputs is not None and not spec.takes(len(inputs)):
        raise fail(f"takes 1 to {spec.max_inputs} inputs, got {len(inputs)}")
    if spec.max_inputs is None and len(inputs) != spec.arity:
        names = f" ({', '.join(spec.inputs)})" if spec.inputs else ""
        raise fail(f"takes {spec.arity} input{'s' * (spec.arity != 1)}{names}, got {len(inputs)}")
    for i in inputs:
        if i == nid:
            raise fail(f"input {i} is the node itself (a cycle)")
        if i not in metas:
            if i in seen.ids():
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
        meta = (shape, dtype)
        check_values(op, attrs, shape, dtype, [metas[i] for i in inputs])
        if op == "Input" or op == "Param":
            check_feed(attrs["name"], nid, meta, seen.feeds)
    except ValueError as e:
        raise fail(str(e)) from None
    metas[nid] = meta
    return Node(nid, op, tuple(inputs), shape, dtype, dict(attrs), raw.get("name"))


def check_values(op: str, attrs: Mapping[str, Any], shape: tuple[int, ...], dtype: str,
                 inputs: Sequence[Meta]) -> None:
    """The checks of a node that depend on nothing but its op, attributes, declared shape and dtype
    and its inputs' (shape, dtype): ValueError, in the words of the first that fails."""
    check_attrs(op, attrs)
    if op == "Constant":
        _constant(attrs["value"], shape, dtype)
    elif op not in ops.LEAF_OPS:
        want = infer(op, attrs, inputs)
        if want[0] != shape:
            raise ValueError(f"declared shape {_s(shape)}, but the inputs give {_s(want[0])}")
        if want[1] != dtype:
            raise ValueError(f"declared dtype {dtype}, but the inputs give {want[1]}")


def check_feed(name: str, nid: int, meta: Meta, feeds: dict[str, tuple[int, Meta]]) -> None:
    """Inputs and Params are fed by name: two nodes may share a name only if they agree on it."""
    other = feeds.setdefault(name, (nid, meta))
    if other[1] != meta:
        raise ValueError(f"name {_r(name)} is also fed to node {other[0]} as {_s(other[1][0])} {other[1][1]}")
