"""A graph document read into a checked `Graph`, and a `Graph` built in code checked.

    graph = load_graph("graph.json")          # bounded read (reading.py), parsed, every check made
    graph = from_json(text)                   # the same from text
    graph = from_dict(doc)                    # the same from a parsed document
    graph = validated(Graph(nodes, outputs))  # a graph built in code, checked as a document would be

The definitions are plain: `graph.parse_json` reads JSON strictly and
`validate.check_document` makes every check of the format node by node. These
calls give exactly what those give (the same Graph, or the same GraphError in the
same words) by the ways in `fast/`, which check what a graph repeats once.
"""

from __future__ import annotations

import os
from typing import Any

from .fast.reader import read_graph
from .fast.validator import validate_counting_keys, validate_nodes
from .graph import Graph
from .reading import read_text

__all__ = ["from_dict", "from_json", "load_graph", "validated"]


def from_dict(doc: Any) -> Graph:
    """The Graph of a parsed document, after every check of the format (GraphError otherwise):
    `validate.check_document(doc)`."""
    return validate_counting_keys(doc)[0]


def from_json(text: str) -> Graph:
    """`from_dict(parse_json(text))`: the same graph, or the same error."""
    return read_graph(text)


def load_graph(path: str | os.PathLike[str]) -> Graph:
    """Read (with a size cap, `reading.read_text`) and check a graph document; a one-line
    LowerError for anything wrong with the file or the document."""
    return from_json(read_text(path))


def validated(graph: Graph) -> Graph:
    """`graph` after a full round of the format's checks, as if read from `graph.to_dict()`
    (raises GraphError)."""
    validate_nodes(graph)
    return graph
