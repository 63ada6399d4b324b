"""The e-graph language: the format's ops as egglog constructors.

One table, `CTORS`, says how each format op becomes an e-node: which attributes
become primitive fields (and of which egglog sort) and how many child
expressions it takes. The egglog declarations, the bulk-loading relations and
rules, the decoding of frozen rows, and the conversion back to the format are
all derived from it.

Two constructors are not format ops:
- `Ref i`   the e-class of original node `i`; only used to load the graph and to
            find the classes of its nodes again (never extracted);
- `Scalar v` a literal broadcast scalar; its dtype is that of the op using it.
And `Leaf i` stands for an original `Input`, `Param` or `Constant` node, copied as is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..graph import Node


@dataclass(frozen=True)
class Ctor:
    name: str  # the egglog constructor
    op: str  # the format op it stands for
    fields: tuple[tuple[str, str], ...]  # primitive fields (attribute name, egglog sort), in order
    arity: int  # child expressions, after the fields

    @property
    def sorts(self) -> tuple[str, ...]:
        return tuple(sort for _, sort in self.fields) + ("Expr",) * self.arity


def _ctor(name: str, op: str, arity: int, *fields: tuple[str, str]) -> Ctor:
    return Ctor(name, op, fields, arity)


S, F, I = "String", "f64", "i64"
CTORS: dict[str, Ctor] = {
    c.name: c
    for c in (
        _ctor("Act", "Activation", 1, ("kind", S)),
        _ctor("Bin", "Binary", 2, ("op", S)),
        _ctor("Cmp", "Compare", 2, ("op", S)),
        _ctor("Where", "Where", 3),
        _ctor("Cast", "Cast", 1, ("to", S)),
        _ctor("Expand", "Expand", 1, ("shape", S)),
        _ctor("Reshape", "Reshape", 1, ("shape", S)),
        _ctor("Transpose", "Transpose", 1, ("perm", S)),
        _ctor("Reduce", "Reduce", 1, ("op", S), ("axes", S), ("keep_dim", I)),
        _ctor("MatMul", "MatMul", 2),
        _ctor("BN", "BatchNormInference", 5, ("eps", F)),
        _ctor("ReluBwd", "ReluBackward", 2),
        _ctor("ActBwd", "ActivationBackward", 2, ("kind", S)),
        _ctor("ActBwdOut", "ActivationBackward", 2, ("kind", S)),
        _ctor("BnBwdInput", "BatchNormInferenceBackwardInput", 5, ("eps", F)),
        # `axes` (all but the last axis) is derived from x's rank when loading, so the
        # rules can state the reduction; it is not an attribute of the format's op.
        _ctor("BnBwdGamma", "BatchNormInferenceBackwardGamma", 4, ("eps", F), ("axes", S)),
        _ctor("BnBwdBeta", "BatchNormInferenceBackwardBeta", 1, ("axes", S)),
    )
}
LEAF, SCALAR, REF = "Leaf", "Scalar", "Ref"
DERIVED_FIELDS = {("BnBwdGamma", "axes"), ("BnBwdBeta", "axes")}


def declarations() -> str:
    """The egglog datatype of expressions."""
    lines = ["(datatype Expr", f"  ({REF} i64)", f"  ({LEAF} i64)", f"  ({SCALAR} f64)"]
    lines += [f"  ({c.name} {' '.join(c.sorts)})" for c in CTORS.values()]
    return "\n".join(lines) + ")\n"


def ints_text(values: Any) -> str:
    """A list of ints as compact JSON: the String field for shapes, perms and axes."""
    return json.dumps([int(v) for v in values], separators=(",", ":"))


def all_but_last(rank: int) -> str:
    return ints_text(range(rank - 1))


def encode(node: Node, rank_of_first_input: int) -> tuple[str, tuple[Any, ...]]:
    """The constructor and primitive fields of an original (non-leaf) node."""
    a = node.attrs
    op = node.op
    if op == "Activation":
        return "Act", (a["kind"],)
    if op == "Binary":
        return "Bin", (a["op"],)
    if op == "Compare":
        return "Cmp", (a["op"],)
    if op in ("Where", "MatMul", "ReluBackward"):
        return {"Where": "Where", "MatMul": "MatMul", "ReluBackward": "ReluBwd"}[op], ()
    if op == "Cast":
        return "Cast", (a["to"],)
    if op in ("Expand", "Reshape"):
        return op, (ints_text(a["shape"]),)
    if op == "Transpose":
        return "Transpose", (ints_text(a["perm"]),)
    if op == "Reduce":
        rank = rank_of_first_input
        axes = sorted({ax % rank if rank else ax for ax in a["axes"]})
        return "Reduce", (a["op"], ints_text(axes), int(bool(a.get("keep_dim", False))))
    if op == "BatchNormInference":
        return "BN", (float(a["eps"]),)
    if op == "ActivationBackward":
        return ("ActBwdOut" if a.get("wrt", "input") == "output" else "ActBwd"), (a["kind"],)
    if op == "BatchNormInferenceBackwardInput":
        return "BnBwdInput", (float(a["eps"]),)
    if op == "BatchNormInferenceBackwardGamma":
        return "BnBwdGamma", (float(a["eps"]), all_but_last(rank_of_first_input))
    if op == "BatchNormInferenceBackwardBeta":
        return "BnBwdBeta", (all_but_last(rank_of_first_input),)
    raise KeyError(op)


def decode(ctor: str, fields: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """The format op and attributes of an e-node (inverse of `encode`)."""
    c = CTORS[ctor]
    attrs: dict[str, Any] = {}
    for (name, _sort), value in zip(c.fields, fields):
        if (ctor, name) in DERIVED_FIELDS:
            continue
        if name in ("shape", "perm", "axes"):
            value = json.loads(value)
        elif name == "keep_dim":
            value = bool(value)
        attrs[name] = value
    if ctor == "ActBwdOut":
        attrs["wrt"] = "output"
    return c.op, attrs
