"""A converted graph's nodes as columns, made into `Node` objects only when someone asks for them.

Conversion (`convert.py`) knows every output node as a few columns: an op, an attribute dict, a
shape and a dtype shared by all the nodes of one signature or class meta, the inputs as an int
matrix and a name per node. A million-op lowering writes 5.25M nodes; as `Node` objects (with an
input tuple and an attribute dict each) they took 2.2 GB and most of the convert, check and write
stages' time. `Graph.from_columns` keeps them as columns: the writer formats the lines from them
(`json_chunks`), the legality check and the format version look at each distinct (op, attributes,
dtype) once, and `Graph.nodes` makes the very `Node`s conversion used to make (each its own
attribute dict) the first time it is read, after which the columns are dropped.

What this computes is what the plain definitions compute from the nodes: tests/test_columns.py holds
`json_chunks` to `graph.node_line` of the materialised nodes, and the versions and legality to
theirs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import is_not
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .collector import gc_paused
from .nodes import without_init

if TYPE_CHECKING:
    from ..graph import Node

_SEPARATORS = (", ", ": ")
_json_str = json.encoder.encode_basestring_ascii  # json.dumps of a str (ensure_ascii)


class Combo(NamedTuple):
    """One distinct (op, attributes, dtype) of the columns: what the version and legality ask of a node."""

    id: int  # the first node with it
    op: str
    attrs: dict[str, Any]
    dtype: str


@dataclass
class NodeColumns:
    """Nodes `head` (made as nodes: the few constants), then one node per row of the columns, with
    ids counting on from `len(head)`. `op`, `attrs`, `shape`, `dtype` and `name` are object arrays
    (an attribute dict is shared by the rows of one signature: each materialised node gets its own
    copy); `inputs` holds each row's input ids, -1 past its arity."""

    head: list[Node]
    op: np.ndarray
    attrs: np.ndarray
    inputs: np.ndarray
    shape: np.ndarray
    dtype: np.ndarray
    name: np.ndarray

    def __len__(self) -> int:
        return len(self.head) + len(self.op)

    def nodes(self, node_class: type[Node]) -> list[Node]:
        """The nodes, as conversion made them before the columns: one int object per node id,
        shared by every input tuple that names it."""
        make = without_init(node_class)
        first = len(self.head)
        ids = np.fromiter(range(len(self)), dtype=object)
        with gc_paused():
            ins = _tuples(self.inputs, ids)
            return self.head + list(map(make, ids[first:].tolist(), self.op.tolist(), ins.tolist(),
                                        self.shape.tolist(), self.dtype.tolist(), map(dict, self.attrs.tolist()),
                                        self.name.tolist()))

    def combos(self) -> list[Combo]:
        """Each distinct (op, attribute dict, dtype) once, in the order of its first node."""
        out = [Combo(n.id, n.op, n.attrs, n.dtype) for n in self.head]
        if not len(self.op):
            return out
        _, first = _first_rows(_joint(_codes(self.op), _codes(self.attrs), _codes(self.dtype)))
        base = len(self.head)
        op, attrs, dtype = self.op[first].tolist(), self.attrs[first].tolist(), self.dtype[first].tolist()
        return out + [Combo(base + i, o, a, d) for i, o, a, d in zip(first.tolist(), op, attrs, dtype)]

    def json_chunks(self, node_line: Callable[[Node], str], per_chunk: int) -> Iterator[str]:
        """`"    " + node_line(n)` of every node, joined by ",\\n", `per_chunk` nodes a piece (each
        piece after the first starting with the ",\\n" that joins it to the one before: what
        `writer.node_line_chunks` yields). Each row goes through the `%` template of its (op and
        attributes, arity, shape and dtype, named or not), one template's rows of a piece at a
        time in C-level passes; the constant parts are json.dumps's, as in `node_line`."""
        rows, base = len(self.op), len(self.head)
        arity = _arity(self.inputs)
        named = np.fromiter(map(is_not, self.name.tolist(), repeat(None)), dtype=bool, count=rows)
        which, first = _first_rows(_joint(_codes(self.op), _codes(self.attrs), _codes(self.shape),
                                          _codes(self.dtype), arity, named.astype(np.int64)))
        templates = [_template(self.op[f], self.attrs[f], self.shape[f], self.dtype[f], int(arity[f]), bool(named[f]))
                     for f in first.tolist()]
        lines = [f"    {node_line(n)}" for n in self.head]
        start = 0
        with gc_paused():
            while start < base + rows:
                stop = min(start + per_chunk, base + rows)
                lines += self._lines(max(start, base) - base, stop - base, which, templates, arity, named)
                yield ("" if start == 0 else ",\n") + ",\n".join(lines[:stop - start])
                lines = lines[stop - start:]
                start = stop

    def _lines(self, lo: int, hi: int, which: np.ndarray, templates: list[str], arity: np.ndarray,
               named: np.ndarray) -> list[str]:
        """The lines of rows lo to hi, formatted one template at a time."""
        if hi <= lo:
            return []
        part = which[lo:hi]
        order = np.argsort(part, kind="stable")
        kinds, bounds = np.unique(part[order], return_index=True)
        bounds = np.append(bounds, len(part))
        out = np.empty(hi - lo, dtype=object)
        for g, b0, b1 in zip(kinds.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
            at = order[b0:b1] + lo
            f = at[0]
            columns: list[Any] = [(at + len(self.head)).tolist(), *(self.inputs[at, j].tolist() for j in range(int(arity[f])))]
            if named[f]:
                columns.append(map(_json_str, self.name[at].tolist()))
            out[at - lo] = np.fromiter(map(templates[g].__mod__, zip(*columns)), dtype=object, count=len(at))
        return out.tolist()


def _template(op: str, attrs: dict[str, Any], shape: tuple[int, ...], dtype: str, arity: int, named: bool) -> str:
    """A node line with `%d` for its id and inputs and `%s` for its name (already JSON), the rest
    as `node_line` writes it (json.dumps of the node's dict, ", " and ": " between items)."""
    def part(value: Any) -> str:
        return json.dumps(value, separators=_SEPARATORS).replace("%", "%%")

    attrs_part = f'"attrs": {part(attrs)}, ' if attrs else ""
    inputs = "[" + ", ".join(["%d"] * arity) + "]"
    return (f'    {{"id": %d, "op": {part(op)}, {attrs_part}"inputs": {inputs}, "shape": {part(list(shape))}, '
            f'"dtype": {part(dtype)}' + (', "name": %s}' if named else "}"))


def _codes(values: np.ndarray) -> np.ndarray:
    """Per row of an object column, a dense code of its object (compared by identity: the rows of
    one signature or class share their objects, so equal codes mean equal values)."""
    from ..egraph.tables import group  # (the e-graph's module: loaded by any lowering that made columns)

    ids = np.fromiter(map(id, values.tolist()), dtype=np.int64, count=len(values))
    return group(ids)[1]


def _joint(*codes: np.ndarray) -> np.ndarray:
    """A dense code per row of the tuple of its `codes` (each dense), one column at a time."""
    from ..egraph.tables import group

    key = np.zeros(len(codes[0]), dtype=np.int64)
    n_keys = 1
    for c in codes:
        span = int(c.max()) + 1 if len(c) else 1
        distinct, key = group(key * span + c, n_keys * span)
        n_keys = len(distinct)
    return key


def _first_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group numbered in the order of the groups' first rows, and those first rows."""
    n_groups = int(key.max()) + 1 if len(key) else 0
    first = np.full(n_groups, len(key), dtype=np.int64)
    np.minimum.at(first, key, np.arange(len(key)))
    rank = np.empty(n_groups, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(n_groups)
    return rank[key], np.sort(first)


def _arity(inputs: np.ndarray) -> np.ndarray:
    """Each row's number of inputs (they come first, -1 past them)."""
    return (inputs >= 0).sum(axis=1).astype(np.int64) if inputs.shape[1] else np.zeros(len(inputs), dtype=np.int64)


def _tuples(inputs: np.ndarray, node_ids: np.ndarray) -> np.ndarray:
    """Each row's inputs (the ids before its first -1) as a tuple of the `node_ids` objects they
    index, in an object array."""
    arity = _arity(inputs)
    out = np.empty(len(inputs), dtype=object)
    for a in np.flatnonzero(np.bincount(arity)).tolist():  # (not np.unique: see tables.SORT_KEYS)
        rows = np.flatnonzero(arity == a)
        columns = [node_ids[inputs[rows, j]].tolist() for j in range(a)]
        out[rows] = np.fromiter(zip(*columns) if a else iter([()] * len(rows)), dtype=object, count=len(rows))
    return out
