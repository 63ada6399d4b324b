"""Versions of the format: version-1 documents keep loading, a version-1 document cannot hold what
version 2 added, and a graph is written as the lowest version that covers it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from egraph_lower.errors import GraphError
from egraph_lower.document import from_json
from egraph_lower.graph import Graph, parse_json
from egraph_lower.opdefs import OPDEFS
from egraph_lower.ops import ACTIVATION_KINDS
from egraph_lower.validate import check_document
from egraph_lower.versions import FROZEN, LATEST, V1_KINDS, V1_OPS, V2_KINDS, V2_OPS, newer_than, newer_than_v1, required_version


def document(version: int, *extra: dict[str, Any]) -> dict[str, Any]:
    nodes = [{"id": 0, "op": "Input", "attrs": {"name": "x"}, "inputs": [], "shape": [2, 3], "dtype": "f32"},
             {"id": 1, "op": "Activation", "attrs": {"kind": "Tanh"}, "inputs": [0], "shape": [2, 3], "dtype": "f32"},
             *extra]
    return {"format": "egraph-lower/graph", "version": version, "nodes": nodes, "outputs": [nodes[-1]["id"]]}


SOFTMAX = {"id": 7, "op": "Softmax", "attrs": {"axis": -1}, "inputs": [1], "shape": [2, 3], "dtype": "f32"}


def both_readers(doc: dict[str, Any]) -> Graph:
    """The graph by the fast reader, checked to be what the plain definition gives."""
    text = json.dumps(doc)
    graph = from_json(text)
    assert check_document(parse_json(text)) == graph
    return graph


def test_version_1_documents_load_and_are_written_as_version_1() -> None:
    graph = both_readers(document(1))
    assert json.loads(graph.to_json())["version"] == 1 and graph.to_dict()["version"] == 1


def test_a_version_2_document_of_version_1_ops_loads_and_is_written_as_version_1() -> None:
    assert json.loads(both_readers(document(2)).to_json())["version"] == 1


def test_a_version_2_op_needs_a_version_2_document() -> None:
    graph = both_readers(document(2, SOFTMAX))
    assert json.loads(graph.to_json())["version"] == 2 and graph.to_dict()["version"] == 2
    for read in (lambda text: from_json(text), lambda text: check_document(parse_json(text))):
        with pytest.raises(GraphError) as e:
            read(json.dumps(document(1, SOFTMAX)))
        message = str(e.value)
        assert message.startswith("node 7 (Softmax): op Softmax is new in version 2") and '"version": 2' in message


@pytest.mark.parametrize("version", [0, 4, -1, "2", 2.0, True, None])
def test_unknown_versions_are_refused(version: Any) -> None:
    with pytest.raises(GraphError, match="this reader knows versions 1, 2, 3$"):
        from_json(json.dumps(document(1) | {"version": version}))


def test_version_1_is_the_frozen_table() -> None:
    """Version 1's ops, attributes and kinds are what the version-1 spec lists; every op declared
    beyond them is version 2, and every declared op of version 1 still takes its version-1 attributes."""
    assert len(V1_OPS) == 19 and len(V1_KINDS) == 29 and V1_KINDS <= set(ACTIVATION_KINDS)
    for op, takes in V1_OPS.items():
        assert takes <= {a.name for a in OPDEFS[op].attrs}, op
    assert newer_than_v1("Softmax", {"axis": 0})
    assert not newer_than_v1("ActivationBackward", {"kind": "Gelu", "wrt": "input"})
    assert newer_than_v1("Activation", {"kind": "Gelu", "approximate": "tanh"})  # an attribute version 1 lacks


def test_version_2_is_frozen_as_declared_then() -> None:
    """Version 2's table is what the declarations held when it was frozen: every op of it is still
    declared and still takes its attributes, each version holds the one before it, and what no frozen
    version holds is the latest version's."""
    assert len(V2_OPS) == 79 and V2_KINDS <= set(ACTIVATION_KINDS) and LATEST == 3
    for op, takes in V2_OPS.items():
        assert takes <= {a.name for a in OPDEFS[op].attrs}, op
    for older, newer in zip(FROZEN, FROZEN[1:]):
        assert all(takes <= newer.ops[op] for op, takes in older.ops.items())
        assert all(v <= newer.values[k] for k, v in older.values.items()) and older.dtypes <= newer.dtypes
    v2 = FROZEN[1]
    assert newer_than(v2, "Softmax", {"axis": 0}, "f32") is None
    assert newer_than(v2, "Cumsum", {"axis": 0}, "f32") == "op Cumsum"
    assert newer_than(v2, "Softmax", {"axis": 0, "dtype": "f32"}, "f32") == "attribute 'dtype' of Softmax"
    assert newer_than(v2, "Activation", {"kind": "Sinh"}, "f32") == "activation kind 'Sinh'"
    assert newer_than(v2, "Binary", {"op": "Remainder"}, "f32") == "Binary op 'Remainder'"
    assert newer_than(v2, "Input", {"name": "x"}, "u8") == "dtype u8"


def test_a_version_3_document_of_version_2_ops_is_written_as_version_2() -> None:
    graph = both_readers(document(3, SOFTMAX))
    assert json.loads(graph.to_json())["version"] == 2 and graph.to_dict()["version"] == 2


def test_required_version_is_the_lowest_that_covers_the_nodes() -> None:
    assert required_version([]) == 1
    assert required_version(both_readers(document(1)).nodes) == 1
    assert required_version(both_readers(document(2, SOFTMAX)).nodes) == 2
