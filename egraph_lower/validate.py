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
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from . import ops
from .dtypes import DTYPES, FLOAT_DTYPES, INT_DTYPES
from .errors import GraphError
from .graph import FORMAT, VERSION, Graph, Node

Meta = tuple[tuple[int, ...], str | None]
MAX_ELEMENTS = 1 << 62  # a bound on every dimension and element count: int64 arithmetic stays safe
_FLOAT_MAX = {name: float(ml_dtypes.finfo(DTYPES[name]).max) for name in FLOAT_DTYPES}
_INT_RANGE = {"i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1)}
_TOP_KEYS = {"format", "version", "name", "nodes", "outputs"}
_NODE_KEYS = {"id", "op", "attrs", "inputs", "shape", "dtype", "name"}
_REQUIRED_NODE_KEYS = ("inputs", "shape", "dtype")


_repr = reprlib.Repr()
_repr.maxlist = _repr.maxstring = _repr.maxother = 40
_r = _repr.repr  # a user's value in a message: one line of bounded length


def _s(shape: Sequence[int]) -> str:
    return _r(list(shape))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_int_list(v: Any) -> bool:
    return isinstance(v, list) and all(_is_int(a) for a in v)


# ---- shape and dtype inference ------------------------------------------------------------------


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes; ValueError when they do not broadcast."""
    result = tuple(shapes[0]) if shapes else ()
    for shape in shapes[1:]:
        if shape == result:
            continue
        n = max(len(result), len(shape))
        a = (1,) * (n - len(result)) + result
        b = (1,) * (n - len(shape)) + tuple(shape)
        if any(x != y and x != 1 and y != 1 for x, y in zip(a, b)):
            raise ValueError(f"shapes {' and '.join(_s(s) for s in shapes)} do not broadcast")
        result = tuple(y if x == 1 else x for x, y in zip(a, b))
    return result


def _elementwise_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        shown = " and ".join(_s(s) for s in shapes)
        raise ValueError(f"inputs have shapes {shown} that do not broadcast") from None


def _shape2(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape of two operands, fast where one is a scalar (a literal) or both agree."""
    if sa == sb or not sb:
        return sa
    return sb if not sa else _elementwise_shape((sa, sb))


def _join(dtypes: Sequence[str | None]) -> str | None:
    """The one dtype of operands that must agree; literals (None) take it."""
    dt = None
    for d in dtypes:
        if d is not None:
            dt = d if dt is None else _same(dt, d)
    return dt


def _same(da: str | None, db: str | None) -> str | None:
    """`_join` of two operands, the hot path of every elementwise e-node."""
    if da is None or da == db:
        return db
    if db is None:
        return da
    raise ValueError(f"inputs have different dtypes {da} and {db} (no implicit promotion: insert a Cast)")


def _activation(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt, kind = ins[0][1], attrs["kind"]
    if dt is not None and dt not in FLOAT_DTYPES and not (dt in INT_DTYPES and kind in ops.INTEGER_KINDS):
        allowed = ", ".join(sorted(ops.INTEGER_KINDS))
        raise ValueError(f"{kind} needs a float dtype, got {dt} (on integers only {allowed})")
    return ins[0]


def _binary(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    dt = _same(da, db)
    if dt == "bool":
        raise ValueError(f"{attrs['op']} on bool: no arithmetic on bool (Cast first)")
    return _shape2(sa, sb), dt


def _compare(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    _same(da, db)
    return _shape2(sa, sb), "bool"


def _where(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sc, dc), (sa, da), (sb, db) = ins
    if dc is not None and dc != "bool":
        raise ValueError(f"cond must be bool, got {dc}")
    return (sa if sc == sa == sb else _elementwise_shape((sc, sa, sb))), _same(da, db)


def _cast(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return ins[0][0], attrs["to"]


def _expand(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), target = ins[0], tuple(attrs["shape"])
    n = len(target) - len(shape)
    if n < 0 or any(x != 1 and x != t for x, t in zip(shape, target[n:])):
        raise ValueError(f"cannot expand shape {_s(shape)} to {_s(target)} (NumPy broadcasting)")
    return target, dt


def _reshape(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), target = ins[0], tuple(attrs["shape"])
    if math.prod(shape) != math.prod(target):
        raise ValueError(f"cannot reshape {_s(shape)} ({math.prod(shape)} elements) "
                         f"to {_s(target)} ({math.prod(target)} elements)")
    return target, dt


def _transpose(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), perm = ins[0], attrs["perm"]
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"perm {list(perm)} is not a permutation of the {len(shape)} axes of {_s(shape)}")
    return tuple(shape[p] for p in perm), dt


def _reduce(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), op, rank = ins[0], attrs["op"], len(ins[0][0])
    for a in attrs["axes"]:
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for rank {rank}")
    axes = {a % rank for a in attrs["axes"]}  # NumPy: a negative axis counts from the end
    if len(axes) != len(attrs["axes"]):
        raise ValueError(f"axes {_r(attrs['axes'])} repeat an axis")
    if dt is not None and dt not in FLOAT_DTYPES and (op == "Mean" or (op == "Sum" and dt == "bool")):
        raise ValueError(f"{op} on {dt}: Cast to a float dtype first")
    if attrs.get("keep_dim", False):
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), dt
    return tuple(d for i, d in enumerate(shape) if i not in axes), dt


def _matmul(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    dt = _same(da, db)
    if dt == "bool":
        raise ValueError("operands are bool: no arithmetic on bool (Cast first)")
    if not sa or not sb:
        raise ValueError(f"operands must have rank >= 1, got {_s(sa)} and {_s(sb)}")
    a = (1,) + sa if len(sa) == 1 else sa  # NumPy: a 1-D operand is a row (a) or a column (b), dropped after
    b = sb + (1,) if len(sb) == 1 else sb
    if a[-1] != b[-2]:
        raise ValueError(f"operands {_s(sa)} and {_s(sb)}: inner dimensions {a[-1]} and {b[-2]} differ")
    try:
        shape = broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise ValueError(f"operands {_s(sa)} and {_s(sb)}: batch dimensions do not broadcast") from None
    if len(sa) > 1:
        shape += (sa[-2],)
    if len(sb) > 1:
        shape += (sb[-1],)
    return shape, dt


def _float_dtype(ins: Sequence[Meta]) -> str | None:
    dt = _join([d for _, d in ins])
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"inputs need a float dtype, got {dt}")
    return dt


def _same_shape(x: tuple[int, ...], dy: tuple[int, ...], first: str = "x") -> None:
    if x != dy:
        raise ValueError(f"{first} has shape {_s(x)} but dy has shape {_s(dy)} (they must be equal)")


def _pointwise_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    first = "y" if attrs.get("wrt") == "output" else "x"
    _same_shape(ins[0][0], ins[1][0], first)
    return ins[1][0], _float_dtype(ins)


def _channels(op: str, ins: Sequence[Meta]) -> Meta:
    """Batch-norm ops: x (the first input, rank >= 1), dy of the same shape, every other input of
    shape [C] with C the last axis of x, one float dtype. Gives x's shape and the dtype."""
    x = ins[0][0]
    if not x:
        raise ValueError(f"{ops.OPS[op].inputs[0]} must have rank >= 1 (channels are on the last axis)")
    for name, (shape, _) in zip(ops.OPS[op].inputs[1:], ins[1:]):
        if name == "dy":
            _same_shape(x, shape)
        elif shape != x[-1:]:
            raise ValueError(f"{name} has shape {_s(shape)}, expected [{x[-1]}] (the last axis of x {_s(x)})")
    return x, _float_dtype(ins)


def _per_channel(op: str) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    def infer_op(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape, dt = _channels(op, ins)
        return shape[-1:], dt
    return infer_op


def _leaf(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    raise ValueError("a leaf has no inputs to infer from: its shape and dtype are declared")


_INFER: dict[str, Callable[[Mapping[str, Any], Sequence[Meta]], Meta]] = {
    "Input": _leaf, "Param": _leaf, "Constant": _leaf,
    "Activation": _activation, "Binary": _binary, "Compare": _compare, "Where": _where, "Cast": _cast,
    "Expand": _expand, "Reshape": _reshape, "Transpose": _transpose, "Reduce": _reduce, "MatMul": _matmul,
    "BatchNormInference": lambda attrs, ins: _channels("BatchNormInference", ins),
    "ReluBackward": _pointwise_backward, "ActivationBackward": _pointwise_backward,
    "BatchNormInferenceBackwardInput": lambda attrs, ins: _channels("BatchNormInferenceBackwardInput", ins),
    "BatchNormInferenceBackwardGamma": _per_channel("BatchNormInferenceBackwardGamma"),
    "BatchNormInferenceBackwardBeta": _per_channel("BatchNormInferenceBackwardBeta"),
}


def infer(op: str, attrs: Mapping[str, Any], inputs: Sequence[Meta]) -> Meta:
    """The (shape, dtype) of an `op` node with these inputs; ValueError on a mismatch.

    Attributes are assumed checked (`check_attrs`) and the arity right. Leaves raise: theirs is declared."""
    rule = _INFER.get(op)
    if rule is None:
        raise ValueError(f"unknown op {_r(op)}")
    return rule(attrs, inputs)


# ---- attributes ---------------------------------------------------------------------------------


def check_shape(value: Any, what: str = "shape") -> tuple[int, ...]:
    """A shape as written in a document: a list of non-negative ints of a sane element count."""
    if not _is_int_list(value):
        raise ValueError(f"{what} {_r(value)} is not a list of non-negative integers")
    if any(d < 0 for d in value):
        hint = " (-1 is not allowed: give every dimension)" if -1 in value else ""
        raise ValueError(f"{what} {_r(value)} has a negative dimension{hint}")
    count = 1
    for d in value:  # stops early: a shape of a million huge dims is rejected in linear time
        count = min(count * d, MAX_ELEMENTS + 1)
    if count > MAX_ELEMENTS or any(d > MAX_ELEMENTS for d in value):
        raise ValueError(f"{what} {_r(value)} is too large (over 2**62 elements, or a dimension over 2**62)")
    return tuple(value)


def _one_of(choices: Sequence[str], what: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if not isinstance(v, str) or v not in choices:
            raise ValueError(f"unknown {what} {_r(v)} (expected one of {', '.join(choices)})")
    return check


def _attr(key: str, ok: Callable[[Any], bool], expected: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if not ok(v):
            raise ValueError(f"attribute {_r(key)} must be {expected}, got {_r(v)}")
    return check


def _is_eps(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _shape_attr(v: Any) -> None:
    check_shape(v, "attribute 'shape'")


_NAME = _attr("name", lambda v: isinstance(v, str) and v != "", "a non-empty string")
_EPS = _attr("eps", _is_eps, "a finite number >= 0")
_KIND = _one_of(ops.ACTIVATION_KINDS, "kind")
_INT_LIST = "a list of integers"
_ATTR_CHECKS: dict[str, dict[str, Callable[[Any], None]]] = {
    "Input": {"name": _NAME}, "Param": {"name": _NAME},
    "Constant": {"value": lambda v: None},  # checked against the node's shape and dtype by _constant
    "Activation": {"kind": _KIND},
    "Binary": {"op": _one_of(ops.BINARY_OPS, "binary op")},
    "Compare": {"op": _one_of(ops.COMPARE_OPS, "compare op")},
    "Cast": {"to": _one_of(tuple(DTYPES), "'to' dtype")},
    "Expand": {"shape": _shape_attr}, "Reshape": {"shape": _shape_attr},
    "Transpose": {"perm": _attr("perm", _is_int_list, _INT_LIST)},
    "Reduce": {"op": _one_of(ops.REDUCE_OPS, "reduce op"), "axes": _attr("axes", _is_int_list, _INT_LIST),
               "keep_dim": _attr("keep_dim", lambda v: isinstance(v, bool), "true or false")},
    "ActivationBackward": {"kind": _KIND, "wrt": _one_of(ops.WRT, "wrt")},
    "BatchNormInference": {"eps": _EPS}, "BatchNormInferenceBackwardInput": {"eps": _EPS},
    "BatchNormInferenceBackwardGamma": {"eps": _EPS},
}


def check_attrs(op: str, attrs: Mapping[str, Any], inputs: Sequence[Meta] | None = None) -> None:
    """The attributes of an `op` node: keys, types and values; with `inputs`, also their fit to them."""
    spec = ops.OPS.get(op)
    if spec is None:
        raise ValueError(f"unknown op {_r(op)}")
    for key in attrs:
        if key not in spec.attrs:
            takes = ", ".join(spec.attrs) or "no attributes"
            raise ValueError(f"unknown attribute {_r(key)} ({op} takes {takes})")
    for key, required in spec.attrs.items():
        if key in attrs:
            _ATTR_CHECKS[op][key](attrs[key])
        elif required:
            raise ValueError(f"missing attribute {_r(key)}")
    if attrs.get("wrt") == "output" and attrs["kind"] not in ops.OUTPUT_FORM_KINDS:
        raise ValueError(f"wrt 'output' is not defined for kind {_r(attrs['kind'])} "
                         f"(only {', '.join(ops.OUTPUT_FORM_KINDS)})")
    if inputs is not None and op not in ops.LEAF_OPS:
        infer(op, attrs, inputs)


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
# `check_document` is the definition: the document object, then every node in order (`check_node`,
# the one place a node's errors are worded), then the outputs. `validate` and `validate_graph` decide
# exactly as it does, by fast/validator.py, which checks what a graph repeats once.


def validate(doc: Any) -> Graph:
    """The Graph of a parsed document, after every check of the format (GraphError otherwise)."""
    from .fast.validator import validate_counting_keys

    return validate_counting_keys(doc)[0]


def validate_graph(graph: Graph) -> None:
    """The checks of `validate(graph.to_dict())`, run on the Node objects without the round trip:
    raises the same GraphError for the same fault."""
    from .fast.validator import validate_nodes

    validate_nodes(graph)


def check_document(doc: Any) -> Graph:
    """What `validate(doc)` gives, or the GraphError it raises, worked out node by node."""
    check_top(doc)
    seen = Seen(lambda: {r["id"] for r in doc["nodes"] if isinstance(r, dict) and _is_int(r.get("id"))})
    nodes = [check_node(raw, index, seen) for index, raw in enumerate(doc["nodes"])]
    check_outputs(doc["outputs"], seen.metas)
    return Graph(nodes, list(doc["outputs"]), doc.get("name"))


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
    if not _is_int(doc["version"]) or doc["version"] != VERSION:
        raise GraphError(f"version is {_r(doc['version'])}; this reader knows version {VERSION}")
    if "name" in doc and not isinstance(doc["name"], str):
        raise GraphError(f"the graph's name must be a string, got {_r(doc['name'])}")
    if not isinstance(doc["nodes"], list):
        raise GraphError("'nodes' must be a list of node objects")
    if not isinstance(doc["outputs"], list):
        raise GraphError("'outputs' must be a list of node ids")


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
    if len(inputs) != spec.arity:
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
