"""The e-graph language: the format's ops as egglog constructors.

Each op's declaration (`opdefs/`) says how it becomes an e-node: its constructors,
which attributes become primitive fields (of which egglog sort, how they encode and
decode) and how many child expressions it takes. `CTORS` collects them; the egglog
declarations, the bulk-loading relations and rules, the decoding of frozen rows,
and the conversion back to the format are all derived from it.

Two constructors are not format ops:
- `Ref i`   the e-class of original node `i`; only used to load the graph and to
            find the classes of its nodes again (never extracted);
- `Scalar v` a literal broadcast scalar; its dtype is that of the op using it.
And `Leaf i` stands for an original `Input`, `Param` or `Constant` node, copied as is.

Kernel constructors: a backend's fused kernel (`backends/kernels.py`) gets one constructor per output,
made when the backend is loaded (or a `Kernel` node is), named after a digest of what it stands for
(`kernel_ctor`): its fields are the pattern's primitive variables, its children the kernel's inputs,
and it decodes to a `Kernel` node carrying the name, the pattern and those values.

Kernel-only twins: every constructor of an op that some rule may rewrite away (its
declaration names a checker `domain`) has a twin, `<name>Kernel`, with the same fields and
children, that decodes to the same format op and that no rule matches. A half-precision
node is loaded as its twin (the backend's kernel, run in the low precision) next to the
op computed in float32 and rounded once (`egraph/load.py`); the rules expand only the latter.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..graph import Node
from ..opdefs import CTORS as _CTORS
from ..opdefs import OPDEFS
from ..opdefs.base import F64, I64, INPUTS, STRING, WHOLE, Ctor, Field, OpDef, same

__all__ = ["ALL_SHAPES", "Ctor", "CTORS", "KERNEL", "LEAF", "SCALAR", "REF", "TWINS", "declarations", "encode",
           "decode", "input_shapes", "kernel_ctor", "kernel_key", "plain"]

TWIN_SUFFIX = "Kernel"
# plain constructor -> its kernel-only twin, for the ops some rule may rewrite away
TWINS: dict[str, str] = {c.name: c.name + TWIN_SUFFIX for d in OPDEFS.values() if d.domain is not None
                         for c in d.ctors}
_PLAIN: dict[str, str] = {twin: name for name, twin in TWINS.items()}
CTORS: dict[str, Ctor] = {**_CTORS, **{twin: replace(_CTORS[name], name=twin, heads=())
                                       for name, twin in TWINS.items()}}
LEAF, SCALAR, REF = "Leaf", "Scalar", "Ref"
KERNEL = "Kernel"  # the format op of a backend's fused kernel (opdefs/kernel.py)
_PARAM_SORTS = {str: STRING, int: I64, float: F64}


def kernel_ctor(name: str, inputs: Sequence[str], pattern: str, output: int,
                sorts: Mapping[str, str]) -> Ctor:
    """The constructor of one output of a fused kernel (made once, then found by its name): fields the
    primitive variables `sorts` (name -> egglog sort, in name order), children the `inputs`."""
    params = tuple(sorted(sorts.items()))
    key = json.dumps([name, list(inputs), pattern, output, params], separators=(",", ":"))
    cname = "Kernel_" + hashlib.sha256(key.encode()).hexdigest()[:16]
    found = CTORS.get(cname)
    if found is None:
        fields = tuple(Field(p, sort, same, _same) for p, sort in params)
        found = CTORS[cname] = Ctor(cname, KERNEL, fields, len(inputs),
                                    implies=(("name", name), ("inputs", tuple(inputs)), ("pattern", pattern),
                                             ("output", output)))
    return found


def _same(v: Any) -> Any:
    return v


def kernel_key(attrs: Mapping[str, Any]) -> str:
    """The constructor name of a `Kernel` node's attributes (its kind: what backends are asked about)."""
    params = attrs.get("params", {})
    sorts = {k: _PARAM_SORTS.get(type(v), STRING) for k, v in params.items()}
    return kernel_ctor(attrs["name"], attrs["inputs"], attrs["pattern"], int(attrs.get("output", 0)), sorts).name


def declarations(ctors: Collection[str] | None = None) -> str:
    """The egglog datatype of expressions: `Ref`, `Leaf`, `Scalar` and the constructors `ctors`
    (None: every one), in `CTORS`' order."""
    lines = ["(datatype Expr", f"  ({REF} i64)", f"  ({LEAF} i64)", f"  ({SCALAR} f64)"]
    lines += [f"  ({c.name} {' '.join(c.sorts)})" for c in CTORS.values() if ctors is None or c.name in ctors]
    return "\n".join(lines) + ")\n"


Encoder = Callable[[Mapping[str, Any], int, tuple[int, ...]], tuple[str, tuple[Any, ...]]]


def _fields_encoder(name: str, fields: tuple[Field, ...]) -> Encoder:
    """(name, fields) of one constructor; specialised by field count (this runs once per loaded node).
    A field gets the first input's rank, or its shape if the field is `shaped`."""
    if not fields:
        empty: tuple[str, tuple[Any, ...]] = (name, ())
        return lambda attrs, rank, shape: empty
    if any(f.attr == WHOLE for f in fields):  # a field derived from all the attributes (SliceBackward's)
        wspecs = [(f.encode, f.attr, f.default, f.shaped) for f in fields]
        return lambda attrs, rank, shape: (name, tuple([enc(attrs if key == WHOLE else attrs.get(key, default),
                                                            shape if sh else rank)
                                                        for enc, key, default, sh in wspecs]))
    if any(f.shaped for f in fields):
        sspecs = [(f.encode, f.attr, f.default, f.shaped) for f in fields]
        return lambda attrs, rank, shape: (name, tuple([enc(attrs.get(key, default), shape if sh else rank)
                                                        for enc, key, default, sh in sspecs]))
    if len(fields) == 1:
        (f,) = fields
        enc, key, default = f.encode, f.attr, f.default
        if enc is same:  # a string kept as it is
            return lambda attrs, rank, shape: (name, (attrs.get(key, default),))
        return lambda attrs, rank, shape: (name, (enc(attrs.get(key, default), rank),))
    specs = [(f.encode, f.attr, f.default) for f in fields]
    return lambda attrs, rank, shape: (name, tuple([enc(attrs.get(key, default), rank)
                                                    for enc, key, default in specs]))


def _encoder(d: OpDef) -> Encoder:
    """How a node of `d` encodes: its constructor (the one whose `implies` it matches with the most
    entries, among those whose `accepts` takes the attributes) and the constructor's fields, from the
    attributes and the first input's rank (or shape). The choice is cached by the implied attributes'
    values (`kind`, `wrt`); only where a candidate has `accepts` (a parametrised Elu or Softplus) is it
    cached by the parameters' values too."""
    if len(d.ctors) == 1:
        return _fields_encoder(d.ctors[0].name, d.ctors[0].fields)
    keys = sorted({k for c in d.ctors for k, _ in c.implies})
    ctors = sorted(d.ctors, key=lambda c: -len(c.implies))

    def pick(attrs: Mapping[str, Any]) -> Encoder:
        c = next((c for c in ctors if all(attrs.get(k) == v for k, v in c.implies)
                  and (c.accepts is None or c.accepts(attrs))), None)
        if c is None:
            raise KeyError(f"{d.name}: no constructor for {dict(attrs)}")
        return _fields_encoder(c.name, c.fields)

    def for_implied(values: tuple[Any, ...]) -> Encoder:
        implied = dict(zip(keys, values))
        candidates = [c for c in ctors if all(implied.get(k) == v for k, v in c.implies)]
        params = sorted({f.attr for c in candidates if c.accepts is not None for f in c.fields})
        if not params:
            return pick(implied)
        by_params: dict[tuple[Any, ...], Encoder] = {}

        def encode_params(attrs: Mapping[str, Any], rank: int, shape: tuple[int, ...]) -> tuple[str, tuple[Any, ...]]:
            pv = tuple([attrs.get(k) for k in params])
            enc = by_params.get(pv)
            if enc is None:
                enc = by_params[pv] = pick({**implied, **dict(zip(params, pv))})
            return enc(attrs, rank, shape)
        return encode_params

    cache: dict[Any, Encoder] = {}
    if len(keys) == 1:  # Activation: kind; batch norm's: axis
        (key,) = keys

        def encode_by(attrs: Mapping[str, Any], rank: int, shape: tuple[int, ...]) -> tuple[str, tuple[Any, ...]]:
            value = attrs.get(key)
            enc = cache.get(value)
            if enc is None:
                enc = cache[value] = for_implied((value,))
            return enc(attrs, rank, shape)
        return encode_by

    if len(keys) == 2:  # ActivationBackward: kind, wrt
        k0, k1 = keys

        def encode_by2(attrs: Mapping[str, Any], rank: int, shape: tuple[int, ...]) -> tuple[str, tuple[Any, ...]]:
            values = (attrs.get(k0), attrs.get(k1))
            enc = cache.get(values)
            if enc is None:
                enc = cache[values] = for_implied(values)
            return enc(attrs, rank, shape)
        return encode_by2

    def encode_any(attrs: Mapping[str, Any], rank: int, shape: tuple[int, ...]) -> tuple[str, tuple[Any, ...]]:
        values = tuple([attrs.get(k) for k in keys])
        enc = cache.get(values)
        if enc is None:
            enc = cache[values] = for_implied(values)
        return enc(attrs, rank, shape)
    return encode_any


_ENCODERS: dict[str, Encoder] = {name: _encoder(d) for name, d in OPDEFS.items() if d.ctors}


# the ops with a field that reads every input's shape (`Field.shaped == INPUTS`: the scatter and
# index-put expansions need the index's shape as well as the first input's)
ALL_SHAPES: frozenset[str] = frozenset(d.name for d in OPDEFS.values() for c in d.ctors for f in c.fields
                                       if f.shaped == INPUTS)


def input_shapes(op: str, shapes: Callable[[], tuple[tuple[int, ...], ...]]) -> tuple[tuple[int, ...], ...] | None:
    """Every input's shape (`shapes()`) for an op of `ALL_SHAPES`, else None (nothing else reads them)."""
    return shapes() if op in ALL_SHAPES else None


def encode(node: Node, rank_of_first_input: int, shape_of_first_input: tuple[int, ...] = (),
           shapes: tuple[tuple[int, ...], ...] | None = None) -> tuple[str, tuple[Any, ...]]:
    """The constructor and primitive fields of an original (non-leaf) node. Only a constructor with a
    `shaped` field reads the first input's shape (batch norm's [C, 1, ..., 1]); an op of `ALL_SHAPES`
    reads every input's (`shapes`), and each of its shaped fields gets them all."""
    if node.op == KERNEL:
        c = CTORS[kernel_key(node.attrs)]
        params = node.attrs.get("params", {})
        return c.name, tuple(params[f.name] for f in c.fields)
    if node.op in ALL_SHAPES:
        if shapes is None:
            raise ValueError(f"{node.op}: encoding needs every input's shape")
        return _ENCODERS[node.op](node.attrs, rank_of_first_input, shapes)  # type: ignore[arg-type]
    return _ENCODERS[node.op](node.attrs, rank_of_first_input, shape_of_first_input)


def decode(ctor: str, fields: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """The format op and attributes of an e-node (inverse of `encode`)."""
    c = CTORS[ctor]
    if c.op == KERNEL:
        implied = dict(c.implies)
        out = {"name": implied["name"], "inputs": list(implied["inputs"]), "pattern": implied["pattern"],
               "output": implied["output"]}
        return KERNEL, out | ({"params": {f.name: v for f, v in zip(c.fields, fields)}} if c.fields else {})
    attrs: dict[str, Any] = {}
    for f, value in zip(c.fields, fields):
        if f.decode is not None:  # a derived field is no attribute
            attrs[f.name] = f.decode(value)
    attrs.update((k, v) for k, v in c.implies if v is not None)  # None: the attribute is absent
    return c.op, attrs


def plain(ctor: str) -> str:
    """The constructor the rules match for `ctor` (itself unless a kernel-only twin)."""
    return _PLAIN.get(ctor, ctor)
