"""The saturated e-graph as plain Python tables, read from egglog's frozen rows.

No terms are built and nothing recurses: every e-node becomes a row
(constructor, primitive fields, child e-classes, e-class). E-classes keep
egglog's own integer ids (they are dense enough to index lists directly).
Extraction and conversion work on these tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from egglog import bindings

from .language import CTORS, LEAF, REF, SCALAR

_FIELDS = {LEAF: 1, SCALAR: 1, **{name: len(c.fields) for name, c in CTORS.items()}}
MAX_ARITY = max(c.arity for c in CTORS.values())


class Members:
    """E-nodes by class, as one list sorted by class: `members[c]` is a slice of it,
    made when asked for, so a million mostly one-node classes cost no million lists."""

    def __init__(self, order: list[int], starts: list[int]) -> None:
        self.order, self.starts = order, starts

    def __getitem__(self, c: int) -> list[int]:
        return self.order[self.starts[c]:self.starts[c + 1]]

    def __len__(self) -> int:
        return len(self.starts) - 1

    def size(self, c: int) -> int:
        return self.starts[c + 1] - self.starts[c]


@dataclass
class Tables:
    ctor: list[str] = field(default_factory=list)
    fields: list[tuple[Any, ...]] = field(default_factory=list)
    children: list[tuple[int, ...]] = field(default_factory=list)
    eclass: list[int] = field(default_factory=list)
    n_classes: int = 0  # one more than the largest e-class id (ids index lists directly)
    ref: dict[int, int] = field(default_factory=dict)  # original node id -> e-class
    sig: list[int] = field(default_factory=list)  # per e-node: id of its (constructor, fields)
    sigs: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)  # id -> (constructor, fields)
    # (e-nodes, MAX_ARITY) child classes, -1 past an e-node's arity: the children for NumPy
    kids_array: np.ndarray = field(default_factory=lambda: np.empty((0, MAX_ARITY), dtype=np.int64))

    @property
    def n_nodes(self) -> int:
        return len(self.ctor)

    def nodes_by_class(self) -> Members:
        """The e-nodes of each class id (empty for ids no class has)."""
        return self._members

    @cached_property
    def _members(self) -> Members:
        order = np.argsort(self.eclass_array, kind="stable").tolist()
        starts = [0, *np.cumsum(np.bincount(self.eclass_array, minlength=self.n_classes)).tolist()]
        return Members(order, starts)

    @cached_property
    def live_classes(self) -> int:
        return int(np.count_nonzero(np.bincount(self.eclass_array, minlength=self.n_classes)))

    # The same tables as NumPy arrays, for the passes that work per distinct signature.
    @cached_property
    def eclass_array(self) -> np.ndarray:
        return np.asarray(self.eclass, dtype=np.int64)

    @cached_property
    def sig_array(self) -> np.ndarray:
        return np.asarray(self.sig, dtype=np.int64)


def read(egraph: bindings.EGraph) -> Tables:
    frozen = egraph.freeze()
    t = Tables()
    to_i64 = egraph.value_to_i64
    strings: dict[Any, str] = {}

    def string(v: bindings.Value) -> str:
        s = strings.get(v)
        if s is None:
            s = strings[v] = egraph.value_to_string(v)
        return s

    decoders = {"i64": to_i64, "f64": egraph.value_to_f64, "String": string}
    largest = -1
    blocks: list[tuple[int, np.ndarray]] = []  # (first e-node, its function's child classes)
    functions = frozen.functions
    del frozen
    for name in list(functions):
        fn = functions.pop(name)  # dropped once read: its rows' memory goes back before the next
        if fn.output_sort != "Expr":
            continue
        rows = fn.rows  # nothing is ever subsumed: the lowering rules only add
        if not rows:
            continue
        outs = [to_i64(r.output) for r in rows]
        largest = max(largest, max(outs))
        if name == REF:
            t.ref.update(zip((to_i64(r.inputs[0]) for r in rows), outs))
            continue
        k = _FIELDS[name]
        arity = len(fn.input_sorts) - k
        decs = [decoders[s] for s in fn.input_sorts[:k]]
        d0 = decs[0] if k == 1 else None
        fields: list[tuple[Any, ...]] = []
        kids: list[tuple[int, ...]] = []
        for r in rows:  # row by row, so each row's Values are freed at once
            ins = r.inputs
            if k == 0:
                fields.append(())
            elif d0 is not None:
                fields.append((d0(ins[0]),))
            else:
                fields.append(tuple([d(v) for d, v in zip(decs, ins)]))
            kids.append((to_i64(ins[k]),) if arity == 1 else tuple(map(to_i64, ins[k:])))
        start = len(t.ctor)
        t.fields.extend(fields)
        t.children.extend(kids)
        t.ctor.extend([name] * len(rows))
        t.eclass.extend(outs)
        if arity:
            blocks.append((start, np.asarray(kids, dtype=np.int64).reshape(len(rows), arity)))
    t.n_classes = largest + 1
    kids_array = np.full((t.n_nodes, MAX_ARITY), -1, dtype=np.int64)
    for start, block in blocks:
        kids_array[start:start + len(block), :block.shape[1]] = block
    t.kids_array = kids_array
    sig_ids: dict[tuple[str, tuple[Any, ...]], int] = {}
    t.sig = [sig_ids.setdefault(key, len(sig_ids)) for key in zip(t.ctor, t.fields)]
    t.sigs = list(sig_ids)
    return t
