"""The saturated e-graph as plain Python tables, read from egglog's frozen rows.

No terms are built and nothing recurses: every e-node becomes a row
(constructor, primitive fields, child e-classes, e-class), with e-classes
renumbered densely. Extraction and conversion work on these tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from egglog import bindings

from .language import CTORS, LEAF, REF, SCALAR

_SORTS = {LEAF: ("i64",), SCALAR: ("f64",)}


@dataclass
class Tables:
    ctor: list[str] = field(default_factory=list)
    fields: list[tuple[Any, ...]] = field(default_factory=list)
    children: list[tuple[int, ...]] = field(default_factory=list)
    eclass: list[int] = field(default_factory=list)
    n_classes: int = 0
    ref: dict[int, int] = field(default_factory=dict)  # original node id -> e-class

    @property
    def n_nodes(self) -> int:
        return len(self.ctor)

    def nodes_by_class(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n_classes)]
        for n, c in enumerate(self.eclass):
            out[c].append(n)
        return out

    def parents_by_class(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n_classes)]
        for n, kids in enumerate(self.children):
            for c in set(kids):
                out[c].append(n)
        return out


def read(egraph: bindings.EGraph) -> Tables:
    frozen = egraph.freeze()
    t = Tables()
    dense: dict[int, int] = {}
    to_i64 = egraph.value_to_i64
    strings: dict[Any, str] = {}

    def cls(v: bindings.Value) -> int:
        raw = to_i64(v)
        d = dense.get(raw)
        if d is None:
            d = dense[raw] = len(dense)
        return d

    def string(v: bindings.Value) -> str:
        s = strings.get(v)
        if s is None:
            s = strings[v] = egraph.value_to_string(v)
        return s

    decoders = {"i64": to_i64, "f64": egraph.value_to_f64, "String": string}
    for name, fn in frozen.functions.items():
        if fn.output_sort != "Expr":
            continue
        if name == REF:
            for row in fn.rows:
                t.ref[to_i64(row.inputs[0])] = cls(row.output)
            continue
        if name in _SORTS:
            n_fields, n_kids = 1, 0
        else:
            c = CTORS[name]
            n_fields, n_kids = len(c.fields), c.arity
        decs = [decoders[s] for s in fn.input_sorts[:n_fields]]
        for row in fn.rows:
            if row.subsumed:
                continue
            ins = row.inputs
            t.ctor.append(name)
            t.fields.append(tuple(d(v) for d, v in zip(decs, ins)))
            t.children.append(tuple(cls(v) for v in ins[n_fields:]))
            t.eclass.append(cls(row.output))
    t.n_classes = len(dense)
    return t
