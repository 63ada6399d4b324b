"""The node graph of the interchange format: its data classes, and its JSON written and parsed.

`Node` and `Graph` are plain data; `Graph.to_json` writes the document (one node a
line, `node_line`), `parse_json` reads JSON text strictly. Turning a document into
a checked `Graph` is `document.py`'s (`from_json`, `from_dict`, `load_graph`,
`validated`), which builds on this module and on `validate.py`. What each call
computes is defined plainly; the ways the calls take for large graphs (caches,
the garbage collector paused) are in `fast/`, where each module names the tests
that hold it to the definition.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .errors import GraphError
from .fast import collector, keys
from .fast.nodes import without_init
from .versions import LATEST, required_version

if TYPE_CHECKING:
    from .fast.columns import NodeColumns

FORMAT = "egraph-lower/graph"
VERSION = LATEST  # the newest version this package reads and writes (versions.py)


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    op: str
    inputs: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "op": self.op}
        if self.attrs:
            d["attrs"] = self.attrs
        d.update(inputs=list(self.inputs), shape=list(self.shape), dtype=self.dtype)
        if self.name is not None:
            d["name"] = self.name
        return d


# The speed helpers the pipeline imports from here; fast/ defines them.
new_node = without_init(Node)  # Node(...) in the hot loops of reading and converting graphs
attrs_key = keys.attrs_key
gc_paused = collector.gc_paused


def node_line(n: Node) -> str:
    """A node as a document writes it: `n.to_dict()` as JSON on one line, ", " and ": " between items."""
    return json.dumps(n.to_dict(), separators=(", ", ": "))


@dataclass
class Graph:
    nodes: list[Node]  # a property (below): made from `columns` when first read
    outputs: list[int]
    name: str | None = None
    sizes: dict[str, int] | None = None  # a specialisation of symbolic sizes: each size's name and value

    @classmethod
    def from_columns(cls, columns: NodeColumns, outputs: list[int], name: str | None = None) -> Graph:
        """A graph whose nodes are `columns` (what conversion makes): written, counted, versioned
        and checked from them; `nodes` makes them into `Node`s the first time it is read."""
        g = cls([], outputs, name)
        g.__dict__["_columns"] = columns
        return g

    @property
    def columns(self) -> NodeColumns | None:
        """The nodes as columns, if the graph was made from them and `nodes` has not been read since."""
        columns: NodeColumns | None = self.__dict__.get("_columns")
        return columns

    @property
    def n_nodes(self) -> int:
        columns = self.columns
        return len(columns) if columns is not None else len(self.nodes)

    @cached_property
    def by_id(self) -> dict[int, Node]:
        return {n.id: n for n in self.nodes}

    def node(self, node_id: int) -> Node:
        return self.by_id[node_id]

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": FORMAT, "version": required_version(self.nodes)}
        if self.name is not None:
            d["name"] = self.name
        if self.sizes is not None:
            d["sizes"] = dict(self.sizes)
        d["nodes"] = [n.to_dict() for n in self.nodes]
        d["outputs"] = list(self.outputs)
        return d

    def to_json(self) -> str:
        """The document, one node a line (`node_line`, indented): diffable and still plain JSON."""
        return "".join(self.json_chunks())

    def json_chunks(self, nodes_per_chunk: int = 1 << 16) -> Iterator[str]:
        """`to_json()` in pieces, to write a large graph without holding its whole text: the head,
        the node lines `nodes_per_chunk` at a time, the tail."""
        from .fast.writer import node_line_chunks

        columns = self.columns
        head = {"format": FORMAT, "version": required_version(self.nodes if columns is None else columns.combos())}
        if self.name is not None:
            head["name"] = self.name
        if self.sizes is not None:
            head["sizes"] = dict(self.sizes)
        yield "\n".join(["{", *(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), '  "nodes": [']) + "\n"
        if columns is None:
            yield from node_line_chunks(self.nodes, nodes_per_chunk, node_line)
        else:
            yield from columns.json_chunks(node_line, nodes_per_chunk)
        yield f'\n  ],\n  "outputs": {json.dumps(list(self.outputs))}\n}}\n'


def _get_nodes(self: Graph) -> list[Node]:
    d = self.__dict__
    columns = d.pop("_columns", None)
    if columns is not None:  # from now on the list is what the graph holds (and may be changed)
        d["_nodes"] = columns.nodes(Node)
    nodes: list[Node] = d["_nodes"]
    return nodes


def _set_nodes(self: Graph, nodes: list[Node]) -> None:
    self.__dict__.pop("_columns", None)
    self.__dict__["_nodes"] = nodes


# `nodes` stays a dataclass field (the constructor, ==, repr and dataclasses.replace see it)
# stored as "_nodes", so that a graph made from columns makes its nodes only when they are read.
Graph.nodes = property(_get_nodes, _set_nodes)  # type: ignore[assignment]


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise GraphError(f"duplicate key {k!r} in a JSON object")
        d[k] = v
    return d


def _no_constant(name: str) -> Any:
    raise GraphError(f"{name} is not JSON (non-finite numbers are not allowed)")


def parse_json(text: str) -> Any:
    """A document's JSON, read strictly: malformed text, a key repeated in an object, a NaN or
    Infinity token, nesting too deep for the interpreter or a number too long to convert is a
    one-line GraphError."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise GraphError(f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise GraphError("JSON nested too deeply") from None
    except ValueError as e:  # a number beyond Python's int-string conversion limit (4300 digits)
        raise GraphError(f"malformed JSON: {str(e).split(';')[0]}") from None
