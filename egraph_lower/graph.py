"""The node graph of the interchange format: data classes, reading and writing JSON.

Reading goes through `validate.validate`, so a `Graph` built from a document has
passed every check of the format; `Graph` objects built in code are checked by
calling `graph.validated()`.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from .errors import GraphError
from .reading import read_text

FORMAT = "egraph-lower/graph"
VERSION = 1


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


_new = object.__new__
_set_id, _set_op, _set_inputs, _set_shape, _set_dtype, _set_attrs, _set_name = (
    getattr(Node, f.name).__set__ for f in fields(Node))


def new_node(nid: int, op: str, inputs: tuple[int, ...], shape: tuple[int, ...], dtype: str,
             attrs: dict[str, Any], name: str | None) -> Node:
    """`Node(...)` for the hot loop of reading a graph: the same object, built without the frozen
    dataclass's `__init__` (seven `object.__setattr__` calls looked up by name)."""
    n = _new(Node)
    _set_id(n, nid)
    _set_op(n, op)
    _set_inputs(n, inputs)
    _set_shape(n, shape)
    _set_dtype(n, dtype)
    _set_attrs(n, attrs)
    _set_name(n, name)
    return n


@dataclass
class Graph:
    nodes: list[Node]
    outputs: list[int]
    name: str | None = None

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
        d: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if self.name is not None:
            d["name"] = self.name
        d["nodes"] = [n.to_dict() for n in self.nodes]
        d["outputs"] = list(self.outputs)
        return d

    def to_json(self) -> str:
        """The document, one node a line: diffable and still plain JSON."""
        return "".join(self.json_chunks())

    def json_chunks(self, nodes_per_chunk: int = 1 << 16) -> Iterator[str]:
        """`to_json()` in pieces, to write a large graph without holding its whole text."""
        head = {"format": FORMAT, "version": VERSION}
        if self.name is not None:
            head["name"] = self.name
        yield "\n".join(["{", *(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), '  "nodes": [']) + "\n"
        lines = _NodeLines()
        with gc_paused():
            for start in range(0, len(self.nodes), nodes_per_chunk):
                yield ("" if start == 0 else ",\n") + ",\n".join(lines(self.nodes[start:start + nodes_per_chunk]))
        yield f'\n  ],\n  "outputs": {json.dumps(list(self.outputs))}\n}}\n'

    @classmethod
    def from_dict(cls, doc: Any) -> Graph:
        from .validate import validate

        return validate(doc)

    @classmethod
    def from_json(cls, text: str) -> Graph:
        """The Graph of a document's text: `Graph.from_dict(parse_json(text))`, taking a shortcut
        for the duplicate-key check of `parse_json` (a Python call for every JSON object).

        The text is parsed without that check, which keeps the last of duplicate keys, and
        validated. Each key of the text is followed by a ':' outside strings, so the text has at
        most `text.count(":")` keys, and at least as many as the parsed objects have (fewer if a
        key repeats). When the objects counted have as many keys as there are colons, no key can
        repeat. Otherwise (a ':' in a string, or a duplicate), and on any error, the text is read
        again the checked way, which words the error as it always did."""
        from .validate import validate_counting_keys

        with gc_paused(long_lived=True):  # across parsing and validating: not a scan of the parsed text between
            try:
                graph, keys = validate_counting_keys(json.loads(text, parse_constant=_no_constant), consume=True)
                if keys == text.count(":"):
                    return graph
            except Exception:
                pass
            return cls.from_dict(parse_json(text))

    def validated(self) -> Graph:
        """This graph, after a full round of the format's checks (raises GraphError)."""
        from .validate import validate_graph

        validate_graph(self)
        return self


_NODE_SEPARATORS = (", ", ": ")
# inputs (exact ints) by arity: "%d" writes what str() and json.dumps write, at half the cost of str(list(...))
_INPUTS_JSON = ["[" + ", ".join(["%d"] * k) + "]" for k in range(8)]
_INT = frozenset({int})
_json_str = json.encoder.encode_basestring_ascii  # what json.dumps writes for a str (ensure_ascii)


class _NodeLines:
    """`json.dumps(n.to_dict(), separators=(", ", ": "))` of each node, indented: the same text,
    built from per-value caches (kept from call to call) where a node's values have the types of a
    valid graph's (ints and strings); json.dumps writes any other node whole, and any attributes
    without a cache key."""

    def __init__(self) -> None:
        self.strs: dict[str, str] = {}  # op and dtype -> their JSON
        self.shapes: dict[tuple[int, ...], tuple[tuple[int, ...], str]] = {}  # shape -> (a tuple of ints, JSON)
        self.attrs_json: dict[tuple[Any, ...], str] = {}

    def __call__(self, nodes: list[Node]) -> list[str]:
        lines: list[str] = []
        append = lines.append
        strs, shapes, attrs_json = self.strs, self.shapes, self.attrs_json
        for n in nodes:
            nid, op, inputs, shape, dtype, attrs, name = n.id, n.op, n.inputs, n.shape, n.dtype, n.attrs, n.name
            if (type(nid) is int and type(op) is str and type(dtype) is str and type(inputs) is tuple
                    and type(shape) is tuple and (name is None or type(name) is str)):
                # Of exact ints (not bools), str() writes what json.dumps writes.
                for i in inputs:
                    if type(i) is not int:
                        break
                else:
                    try:
                        s_shape = shapes.get(shape)
                    except TypeError:  # unhashable dimensions: json.dumps says what they are
                        s_shape = None
                    if s_shape is None or s_shape[0] is not shape:  # a shape seen as this very tuple is checked
                        for d in shape:
                            if type(d) is not int:
                                break
                        else:
                            s_shape = shapes[shape] = (shape, str(list(shape)))
                    if s_shape is not None and s_shape[0] is shape:
                        s_attrs: str | None
                        if not attrs:
                            s_attrs = ""
                        elif type(attrs) is dict:
                            key = tuple(attrs.items())
                            if len(key) == 1 and type(k := key[0][0]) is str and type(v := key[0][1]) is str:
                                # the common case, one string attribute (an op's kind, a weight's name)
                                s_attrs = attrs_json.get(key)
                                if s_attrs is None:
                                    s_attrs = attrs_json[key] = f'"attrs": {{{_json_str(k)}: {_json_str(v)}}}, '
                            else:
                                json_key = attrs_key(attrs, floats=False)
                                s_attrs = attrs_json.get(json_key) if json_key is not None else None
                                if s_attrs is None:
                                    s_attrs = f'"attrs": {json.dumps(attrs, separators=_NODE_SEPARATORS)}, '
                                    if json_key is not None:
                                        attrs_json[json_key] = s_attrs
                        else:
                            s_attrs = None
                        if s_attrs is not None:
                            s_op = strs.get(op) or strs.setdefault(op, _json_str(op))
                            s_dtype = strs.get(dtype) or strs.setdefault(dtype, _json_str(dtype))
                            s_inputs = _INPUTS_JSON[len(inputs)] % inputs if len(inputs) < 8 else str(list(inputs))
                            append(f'    {{"id": {nid}, "op": {s_op}, {s_attrs}"inputs": {s_inputs}, '
                                   f'"shape": {s_shape[1]}, "dtype": {s_dtype}'
                                   + ("}" if name is None else f', "name": {_json_str(name)}}}'))
                            continue
            append(f"    {json.dumps(n.to_dict(), separators=_NODE_SEPARATORS)}")
        return lines


def attrs_key(attrs: dict[str, Any], floats: bool = True) -> tuple[Any, ...] | None:
    """A hashable key equal only for attributes that are alike value and type (1, 1.0 and true are
    equal in Python, not to the format), or None where there is none: string keys, and values that
    are strings, ints, bools, lists of ints and (with `floats`) floats. JSON caching passes
    floats=False: 0.0 and -0.0 are equal but written apart."""
    key: list[Any] = []
    for k, v in attrs.items():
        t = type(v)
        if type(k) is not str:
            return None
        if t is str:
            key.append((k, v))
        elif t is int or t is bool or (floats and t is float):
            key.append((k, t, v))
        elif t is list and set(map(type, v)) <= _INT:
            key.append((k, list, tuple(v)))
        else:
            return None
    return tuple(key)


@contextmanager
def gc_paused(long_lived: bool = False) -> Iterator[None]:
    """The cyclic garbage collector off for a burst of allocation that makes no cycles.

    Reading a million-node graph allocates millions of lists, dicts and tuples; CPython's collector
    would rescan the growing heap over and over (parsing and validating took 3 to 5 times as long).
    With `long_lived` (what was made is a graph, kept), the young generations are then moved into
    the oldest, as surviving two collections would move them, without the two scans of every node
    those collections cost (the first took 0.5 s at a million nodes). Not when the program froze
    objects itself: unfreezing would undo that."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if long_lived and not gc.get_freeze_count():
            gc.freeze()  # everything tracked into the permanent generation,
            gc.unfreeze()  # and back, into the oldest
        gc.enable()


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
    try:
        with gc_paused(long_lived=True):
            return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise GraphError(f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise GraphError("JSON nested too deeply") from None
    except ValueError as e:  # a number beyond Python's int-string conversion limit (4300 digits)
        raise GraphError(f"malformed JSON: {str(e).split(';')[0]}") from None


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Read (bounded, `reading.read_text`) and validate a graph document (raises LowerError
    with a one-line message)."""
    return Graph.from_json(read_text(path))

