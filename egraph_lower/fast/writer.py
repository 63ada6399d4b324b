"""A graph's node lines for `Graph.json_chunks`, built from per-value caches.

Each line is `"    " + graph.node_line(n)`, the plain definition; tests/test_graph.py holds every
line to it (`test_to_json_writes_what_json_dumps_writes` and the generated graphs)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .collector import gc_paused
from .keys import attrs_key

if TYPE_CHECKING:
    from ..graph import Node

_NODE_SEPARATORS = (", ", ": ")
# inputs (exact ints) by arity: "%d" writes what str() and json.dumps write, at half the cost of str(list(...))
_INPUTS_JSON = ["[" + ", ".join(["%d"] * k) + "]" for k in range(8)]
_json_str = json.encoder.encode_basestring_ascii  # what json.dumps writes for a str (ensure_ascii)


def node_line_chunks(nodes: Sequence[Node], per_chunk: int, node_line: Callable[[Node], str]) -> Iterator[str]:
    """The node lines of a document, indented and joined by ",\\n", `per_chunk` nodes a piece
    (every piece after the first starts with the ",\\n" that joins it to the one before).
    `node_line` is the plain definition of a line (graph.py's), used for any node the caches do not take."""
    lines = NodeLines(node_line)
    with gc_paused():
        for start in range(0, len(nodes), per_chunk):
            yield ("" if start == 0 else ",\n") + ",\n".join(lines(nodes[start:start + per_chunk]))


class NodeLines:
    """`"    " + node_line(n)` of each node: the same text, built from per-value caches (kept from
    call to call) where a node's values have the types of a valid graph's (ints and strings);
    `node_line` writes any other node whole, and any attributes without a cache key are written
    by json.dumps."""

    def __init__(self, node_line: Callable[[Node], str]) -> None:
        self.node_line = node_line
        self.strs: dict[str, str] = {}  # op and dtype -> their JSON
        self.shapes: dict[tuple[int, ...], tuple[tuple[int, ...], str]] = {}  # shape -> (a tuple of ints, JSON)
        self.attrs_json: dict[tuple[Any, ...], str] = {}

    def __call__(self, nodes: Sequence[Node]) -> list[str]:
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
            append(f"    {self.node_line(n)}")
        return lines
