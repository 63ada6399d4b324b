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
from .graph import FORMAT, VERSION, Graph, Node, attrs_key, gc_paused, new_node

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
